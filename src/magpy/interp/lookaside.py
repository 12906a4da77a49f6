"""The lookaside table: callables the VM runs with its own handler instead of calling them.

The call decision point (``calls``) reads it; the entries live above it: Python's own builtins in
``builtin_lookasides``, the layers above the VM (capture) through :func:`register_lookaside`.
A handler is ``handler(vm, args, kwargs) -> result``.
"""
from types import FunctionType

from .identity import IdentityDict, IdentitySet

LOOKASIDE = IdentityDict()
#: the entries whose target is a Python function (checked where such calls are interpreted)
PY_LOOKASIDE = IdentityDict()
#: attribute a wrapper function carries -> ``unwrap(function)``: the callable the VM interprets instead
#: (None: the wrapper itself). For wrappers whose own code must not run under the VM — another compiler's
#: entry point, which would hook the VM's own frames — where what they wrap is the program.
WRAPPED_BY_ATTRIBUTE = {}


def wrapped_by(func):
    """What the VM interprets in place of the Python function ``func`` (``WRAPPED_BY_ATTRIBUTE``), or None."""
    attributes = func.__dict__
    if attributes:
        for name, unwrap in WRAPPED_BY_ATTRIBUTE.items():
            if name in attributes:
                return unwrap(func)
    return None
#: called after each registration (compiled call sites forget the callables they took as native)
ON_REGISTER = []
#: targets whose handler hands the call on to one interpreted function: what that function returns
#: (with its provenance) is what the target returned
DELEGATES = IdentitySet()


def register_lookaside(target, handler, delegates=False):
    """Make the VM run ``handler(vm, args, kwargs)`` whenever user code calls ``target``
    (``delegates``: the handler's result is what one interpreted call it makes returns)."""
    LOOKASIDE[target] = handler
    if delegates:
        DELEGATES.add(target)
    for hook in ON_REGISTER:
        hook()
    if type(target) is FunctionType:
        PY_LOOKASIDE[target] = handler
    return handler


#: a built-in callable type -> ``handler(vm, fn, args, kwargs)`` for calls of its instances (see
#: ``register_type_lookaside``)
TYPE_LOOKASIDE = {}


def register_type_lookaside(cls, handler):
    """Calls of instances of the built-in type ``cls`` (a C wrapper of Python code, as a memoizing
    wrapper) run ``handler(vm, fn, args, kwargs)``; what it returns is either a native call's result or
    what one interpreted call it makes returned."""
    TYPE_LOOKASIDE[cls] = handler
    for hook in ON_REGISTER:
        hook()
    return handler


#: type -> ``unwrap(callable) -> the callable to run instead, or None`` (see ``register_call_instead``)
CALL_INSTEAD = {}


def register_call_instead(cls, unwrap):
    """Calls of instances of ``cls`` run ``unwrap(instance)`` in their place when that returns a
    callable (a wrapper whose Python original the VM can follow: a TorchScript function's source
    function), as ``__vm_call_instead__`` does for classes that define it."""
    CALL_INSTEAD[cls] = unwrap


def called_instead(fn):
    """The callable the VM runs in place of ``fn`` (``register_call_instead``, ``__vm_call_instead__``),
    or None."""
    tp = type(fn)
    instead = CALL_INSTEAD.get(tp) or getattr(tp, "__vm_call_instead__", None)
    return instead(fn) if instead is not None else None


def lookaside(*targets):
    def register(fn):
        for t in targets:
            register_lookaside(t, fn)
        return fn
    return register
