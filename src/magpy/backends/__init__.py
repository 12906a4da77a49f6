"""Backend registry: name -> ``fn(gm, example_inputs) -> callable`` (the torch.compile convention).

Built-ins:
    "eager"     runs the fx graph as it is
    "inductor"  torch's own compiler (``torch._inductor.compile_fx``)
    "magpy"     AOTAutograd + our decompositions + ``magpy.codegen.compile_aten_graph`` for the
                forward and backward graphs

"magpy" and "inductor" trace with AOTAutograd, which is not thread-safe: they compile holding
``magpy.compile_lock.LOCK`` (whoever calls them: our own compiles, or ``torch.compile``).

Importing this module also registers "magpy" with ``torch.compile`` (``torch._dynamo``'s
registry), so ``torch.compile(model, backend="magpy")`` works.
"""
from __future__ import annotations

from typing import Callable

from ..compile_lock import LOCK

_BACKENDS: dict[str, Callable] = {}


def register_backend(name: str, fn: Callable = None):
    """Register ``fn`` as backend ``name`` (usable as a decorator). Re-registering replaces."""
    if fn is None:
        return lambda f: register_backend(name, f)
    if not callable(fn):
        raise TypeError(f"backend {name!r} must be callable, got {type(fn).__name__}")
    _BACKENDS[name] = fn
    return fn


def lookup_backend(name_or_fn) -> Callable:
    """The backend callable for a name (or the callable itself). Raises KeyError for unknown names."""
    if callable(name_or_fn):
        return name_or_fn
    try:
        return _BACKENDS[name_or_fn]
    except KeyError:
        known = ", ".join(sorted(_BACKENDS))
        raise KeyError(f"unknown backend {name_or_fn!r}; known backends: {known}") from None


def list_backends() -> list[str]:
    return sorted(_BACKENDS)


@register_backend("eager")
def eager_backend(gm, example_inputs):
    return gm.forward


@register_backend("inductor")
def inductor_backend(gm, example_inputs):
    from torch._inductor.compile_fx import compile_fx

    with LOCK:
        return compile_fx(gm, example_inputs)


def _aten_compiler(gm, example_inputs):
    from torch._functorch.aot_autograd import make_boxed_func

    from ..codegen import compile_aten_graph

    # AOTAutograd calls compiled graphs with one list argument ("boxed").
    return make_boxed_func(compile_aten_graph(gm, example_inputs))


@register_backend("magpy")
def magpy_backend(gm, example_inputs):
    """AOTAutograd (forward and backward) + our decompositions + our codegen."""
    from torch._dynamo.backends.common import aot_autograd
    from ..codegen.decompositions import decomposition_table

    backend = aot_autograd(
        fw_compiler=_aten_compiler,
        bw_compiler=_aten_compiler,
        decompositions=decomposition_table(),
    )
    with LOCK:
        return backend(gm, example_inputs)


def _register_with_dynamo() -> None:
    try:
        from torch._dynamo.backends.registry import _COMPILER_FNS, register_backend as dynamo_register
    except ImportError:  # very old torch: nothing to register with
        return
    try:  # an installed MagPy declares the backend as an entry point: Dynamo registers it itself
        from importlib.metadata import entry_points
        if any(ep.name == "magpy" for ep in entry_points(group="torch_dynamo_backends")):
            return
    except Exception:  # noqa: BLE001 - no metadata: register directly
        pass
    if "magpy" not in _COMPILER_FNS:
        dynamo_register(name="magpy")(magpy_backend)


_register_with_dynamo()
