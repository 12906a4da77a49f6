"""A user's script named on the command line (``python -m magpy explain|trace FILE.py:FUNC``): the callable
to run and the example inputs to run it on.

The convention: ``FILE.py`` defines ``FUNC`` — a function, an ``nn.Module`` instance, or an ``nn.Module``
class that takes no arguments — and ``example_inputs()``, which returns the positional arguments as a
tuple, or a pair ``(args, kwargs)`` of a tuple and a dict. The script is imported as a module (so its
``if __name__ == "__main__":`` block does not run), with its folder first on ``sys.path``.
"""
import importlib.util
import os
import sys
import traceback

INPUTS = "example_inputs"


class ScriptError(Exception):
    """The script cannot be used as asked (no such file, function or example inputs); the message says
    which, in the user's terms."""


class Target:
    """``fn(*args, **kwargs)``: what the command runs (``name``: ``FUNC`` as given)."""

    def __init__(self, fn, args, kwargs, name):
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.name = name


def load(spec, inputs=INPUTS):
    """The ``Target`` that ``FILE.py:FUNC`` names, called on what ``FILE.py``'s ``inputs()`` returns.

    Raises ``ScriptError`` for a malformed spec, a missing file, a script that fails to import, a
    missing ``FUNC`` or ``inputs`` function, or inputs of the wrong shape."""
    path, sep, name = spec.rpartition(":")
    if not sep or not path or not name:
        raise ScriptError(f"expected FILE.py:FUNC, got {spec!r}")
    if not os.path.isfile(path):
        raise ScriptError(f"no such file: {path}")
    module = _import(path)
    fn = _callable(module, path, name)
    make_inputs = getattr(module, inputs, None)
    if not callable(make_inputs):
        raise ScriptError(f"{path} defines no {inputs}() (it returns the arguments to call {name} with: "
                          f"a tuple, or a pair (args, kwargs))")
    args, kwargs = _arguments(_run(make_inputs, f"{inputs}()"), inputs)
    return Target(fn, args, kwargs, name)


def _import(path):
    folder = os.path.dirname(os.path.abspath(path))
    if folder not in sys.path:
        sys.path.insert(0, folder)
    stem = os.path.splitext(os.path.basename(path))[0]
    name = stem if stem.isidentifier() and stem not in sys.modules else f"__magpy_script_{len(sys.modules)}__"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None:
        raise ScriptError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (pickling, dataclasses and typing find their module there)
    _run(lambda: spec.loader.exec_module(module), f"importing {path}")
    return module


def _callable(module, path, name):
    fn = module
    for part in name.split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            raise ScriptError(f"{path} defines no {name}")
    torch = sys.modules.get("torch")  # (a script that never imported torch defines no module class)
    if torch is not None and isinstance(fn, type) and issubclass(fn, torch.nn.Module):
        fn = _run(fn, f"{name}()")  # (a module class: one instance, made without arguments)
    if not callable(fn):
        raise ScriptError(f"{name} in {path} is a {type(fn).__name__}, not a function or module")
    return fn


def _arguments(value, inputs):
    if type(value) is tuple and len(value) == 2 and isinstance(value[0], (tuple, list)) and \
            isinstance(value[1], dict):
        return tuple(value[0]), dict(value[1])
    if isinstance(value, (tuple, list)):
        return tuple(value), {}
    raise ScriptError(f"{inputs}() must return a tuple of arguments, or a pair (args, kwargs); it returned "
                      f"a {type(value).__name__} (for one argument: return (x,))")


def _run(fn, what):
    """``fn()``; what it raises becomes a ScriptError naming the script's line that raised it."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - told to the user as a message, not a traceback
        frames = traceback.extract_tb(exc.__traceback__)
        where = next((f"{f.filename}:{f.lineno}" for f in reversed(frames)
                      if not f.filename.startswith("<frozen") and f.filename != __file__), None)
        raise ScriptError(f"{what} failed: {type(exc).__name__}: {exc}" + (f" ({where})" if where else "")) \
            from None
