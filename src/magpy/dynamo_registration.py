"""``torch.compile(model, backend="magpy")`` without importing Dynamo when MagPy is imported.

Dynamo (``torch._dynamo``) takes as long to import as torch itself (it brings sympy and triton), and
most programs that import MagPy never call ``torch.compile``. So MagPy registers its backend with
Dynamo only once Dynamo is loaded anyway:

- an installed MagPy declares the backend as an entry point (``pyproject.toml``,
  ``[project.entry-points.torch_dynamo_backends]``), which Dynamo reads itself on its first lookup of
  a name it does not know;
- ``import magpy`` also watches for Dynamo's backend registry to be imported, and registers "magpy"
  there right after it is (a source checkout on ``sys.path`` has no entry point); when the registry is
  loaded already, it registers at once.

Both name the same function, ``magpy.backends.magpy_backend``. This module imports neither torch nor
the rest of MagPy until Dynamo loads.
"""
import sys

REGISTRY = "torch._dynamo.backends.registry"


def register_when_loaded() -> None:
    """Register "magpy" with Dynamo's backend registry now if it is loaded, else right after it is."""
    registry = sys.modules.get(REGISTRY)
    if registry is not None:
        _register(registry)
    elif not any(isinstance(finder, _RegistryWatcher) for finder in sys.meta_path):
        sys.meta_path.insert(0, _RegistryWatcher())


def _register(registry) -> None:
    # Known already: registered, or found as the entry point (which Dynamo loads and registers itself:
    # registering it here too, while Dynamo imports MagPy to load it, would make Dynamo's own
    # registration a duplicate, which it refuses).
    if "magpy" in getattr(registry, "_BACKENDS", {}) or "magpy" in getattr(registry, "_COMPILER_FNS", {}):
        return
    from .backends import magpy_backend

    registry.register_backend(magpy_backend, name="magpy")


class _RegistryWatcher:
    """A finder on ``sys.meta_path`` that finds nothing itself: when Dynamo's registry is about to be
    imported, it has the finder that would have found it find it, and registers "magpy" in it as soon
    as it has run. Then it leaves ``sys.meta_path``."""

    def find_spec(self, name, path=None, target=None):
        if name != REGISTRY:
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find is not None else None
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        run = getattr(loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module):
            run(module)
            _register(module)

        # (on the loader object itself, not a wrapper: the module's ``__loader__`` stays the real one,
        # which ``inspect`` and ``linecache`` ask for its source)
        loader.exec_module = exec_module
        return spec
