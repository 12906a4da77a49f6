"""MagPy: a JIT compiler for PyTorch, written in Python.

``import magpy.interp`` stays torch-free: the torch-facing API below is loaded on first use. Importing
MagPy imports neither torch nor Dynamo; "magpy" becomes a ``torch.compile`` backend once Dynamo loads.
"""
__version__ = "0.1.0"

_LAZY = {
    "compile": ("magpy.api", "compile"),
    "explain": ("magpy.explaining", "explain"),
    "trace": ("magpy.api", "trace"),
    "reset": ("magpy.api", "reset"),
    "graph_break": ("magpy.api", "graph_break"),
    "mark_dynamic": ("magpy.markers", "mark_dynamic"),
    "mark_static": ("magpy.markers", "mark_static"),
    "register_backend": ("magpy.backends", "register_backend"),
    "minify": ("magpy.minifier", "minify"),
    "Stats": ("magpy.api", "Stats"),
    "Explanation": ("magpy.explaining", "Explanation"),
    "Trace": ("magpy.tracing.trace", "Trace"),
    "GraphBreakError": ("magpy.errors", "GraphBreakError"),
    "SettingError": ("magpy.errors", "SettingError"),
    "testing": ("magpy.testing", None),   # a submodule: the module itself
}


def __getattr__(name):
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'magpy' has no attribute {name!r}")
    import importlib
    module = importlib.import_module(target[0])
    value = module if target[1] is None else getattr(module, target[1])
    globals()[name] = value
    return value


from .dynamo_registration import register_when_loaded as _register_when_loaded  # noqa: E402

_register_when_loaded()
