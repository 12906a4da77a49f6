"""Objects whose death is their effect (a room of the capture observer).

A ``__del__``, a weak reference's callback, torch's guard objects: what they do happens when the object
dies, natively, during the call or after it. A replay cannot redo it, and a graph break does not help (a
resume function's caller holds its live values past their death): such calls run eagerly, refused before
capture holds the object, so that it dies when eager's does (``values.WeaklyHeld``, ``VM.run_frame``).
"""
import types
import weakref

from .names import callable_name
from .places import short_path
from .sources import Expr
from .values import _replayable_path


class Lifetimes:

    def refuse_finalizer(self, obj):
        """An object whose class has a Python ``__del__``: the call runs eagerly (refused before its
        ``__init__`` runs, nothing capture keeps holds it)."""
        finalizer = getattr(type(obj), "__del__", None)
        if type(finalizer) is types.FunctionType:
            code = finalizer.__code__
            self.unsupported(f"{type(obj).__qualname__} has a __del__ ({short_path(code.co_filename)}:"
                             f"{code.co_firstlineno}): what it does when the object dies is not seen by capture "
                             f"(runs eagerly)", split=False)

    def weak_reference(self, fn, args, arg_provs):
        """``weakref.ref(obj)``: no effect, calling it later reads ``obj`` again (its provenance; for other
        weak references without a callback, NOT_A_REFERENCE: the rules for native calls decide). With a
        callback (``weakref.finalize``, a weak dictionary's entry) the call runs eagerly."""
        ref_args = args[1:] if fn is _NEW_REFERENCE else args  # (``ref.__new__(cls, obj, callback)``: KeyedRef)
        if len(ref_args) > 1 and ref_args[1] is not None:
            self.unsupported(f"a weak reference with a callback ({callable_name(ref_args[1])}): what it does when "
                             f"the object dies is not seen by capture (runs eagerly)", split=False)
        if fn is not weakref.ref or len(args) != 1:
            return NOT_A_REFERENCE
        prov = arg_provs[0]
        if prov is None:
            return None  # an object made here: its reference is too
        if not _replayable_path(prov):
            self.unsupported("a weak reference to a value of unknown origin")
        return Expr(weakref.ref, (prov,))


NOT_A_REFERENCE = object()
_NEW_REFERENCE = weakref.ref.__new__


def makes_weak_reference(fn):
    return fn is _NEW_REFERENCE or (isinstance(fn, type) and issubclass(fn, weakref.ref))
