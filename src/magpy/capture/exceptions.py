"""Exceptions the program raises and catches inside the call: replayable when what makes them raise is
fixed by the guards (a ``raise`` statement, a pure native call, a missing key, an exhausted iterator).
"""
import operator

from . import rules
from .guards import TruthGuard, ValueGuard
from .sources import Const, Expr, Source
from .values import UNKNOWN, _RUN_ITERATORS, _bound_self, _event, _holds_tensor


class Raising:

    """Exceptions the program raises and catches: replayable when the guards decide them."""



    # ---- exceptions ------------------------------------------------------------------------------------
    # An exception the call catches itself is replayable when raising it was decided by what the
    # guards fix: a ``raise`` statement reached by guarded control flow, a pure native call on guarded
    # arguments, ``next`` on an iterator whose length is known, a missing key of a guarded mapping.
    # ``raises``: id(exc) -> (exc, determined, provenance it is caught with).

    @_event(None)
    def raise_statement(self, frame, value, prov):
        self.raising = (value, prov)

    @_event(None)
    def call_raised(self, frame, fn, fn_prov, args, arg_provs, kwargs, kw_provs, exc):
        known = self.raises.get(id(exc))
        if known is None or known[0] is not exc:  # (else judged where it arose: a frame of the callee)
            self.raises[id(exc)] = (exc, self._call_raise_determined(fn, args, arg_provs, kwargs or {},
                                                                     kw_provs or {}), UNKNOWN)

    def _call_raise_determined(self, fn, args, arg_provs, kwargs, kw_provs):
        if fn is next and len(args) == 1 and not kwargs:
            it = args[0]
            entry = self.iterators.get(id(it))
            if entry is not None and entry[0] is it and entry[1] is not None:
                return entry[2] >= len(entry[1])  # its length is guarded
            made = self.contents.get(id(it))
            return type(it) in _RUN_ITERATORS and made is not None and made[0] is it
        self_obj = _bound_self(fn)
        if type(self_obj) is list and getattr(fn, "__name__", "") in ("remove", "index"):
            # (bound: the list's provenance is where the method was read, or it is one the call made)
            entry, bound = self.contents.get(id(self_obj)), self.bound_from.get(id(fn))
            lst_prov = bound[1] if bound is not None and bound[0] is fn else \
                None if entry is not None and entry[0] is self_obj else UNKNOWN
            fn, args, arg_provs = getattr(list, fn.__name__), (self_obj, *args), (lst_prov, *arg_provs)
        if (fn is list.remove or fn is list.index) and len(args) == 2 and not kwargs and type(args[0]) is list:
            # ``filters.remove(item)`` of an item not there (``warnings.simplefilter``): decided by
            # whether the list holds it
            prov = self.effective(args[0], arg_provs[0])
            if prov is UNKNOWN or _holds_tensor(args[0]) or _holds_tensor(args[1]):
                return False
            self.need(args[1], arg_provs[1])
            if prov is not None:
                item = arg_provs[1] if arg_provs[1] is not None else Const(args[1])
                self.guard(TruthGuard(Expr(operator.contains, (prov, item)), args[1] in args[0]))
            return True
        if type(args) not in (tuple, list) or not rules.is_pure(fn):
            return False  # (``f(*x)`` of a non-iterable ``x`` raises before any call)
        values = (*args, *kwargs.values())
        if any(_holds_tensor(v) for v in values):
            return False
        for value, prov in zip(values, (*arg_provs, *kw_provs.values())):
            self.need(value, prov)  # the same arguments raise the same way
        return True

    @_event(None)
    def item_raised(self, obj, obj_prov, key, key_prov, exc):
        known = self.raises.get(id(exc))
        if known is not None and known[0] is exc:
            return  # raised inside a Python ``__getitem__`` the VM ran: decided where it was raised
        determined = False
        if type(obj) in (dict, list, tuple) and not _holds_tensor(key) and type(key) is not slice:
            self.need(key, key_prov)
            if obj_prov is None:
                determined = self.effective(obj, None) is None  # made here from constants
            elif isinstance(obj_prov, Source) and (self.contents.changed_outside(obj) or type(obj) is list and (
                    id(obj) in self.contents.grown or self.outside_state.before.get(id(obj), (None,))[0] is obj)):
                # changed by the call: what it holds now follows from its guarded state on entry
                self.outside_state.shadow(obj, "a failed lookup")
                determined = True
            elif isinstance(obj_prov, Source):
                self.deref(obj, obj_prov)
                self.guard(TruthGuard(Expr(operator.contains, (obj_prov, Const(key))), False)
                           if type(obj) is dict else ValueGuard(Expr(len, (obj_prov,)), len(obj)))
                determined = True
        self.raises[id(exc)] = (exc, determined, UNKNOWN)

    @_event(UNKNOWN)
    def raised(self, frame, exc, opname, caught):
        known = self.raises.get(id(exc))
        if known is None or known[0] is not exc:
            raising = self.raising
            if opname == "RAISE_VARARGS" and raising is not None and raising[0] is exc:
                known = (exc, True, raising[1])
            elif opname == "RAISE_VARARGS" and raising is not None and raising[0] is type(exc):
                known = (exc, True, None)  # (``raise KeyError``: the VM made it from constants)
            elif type(exc) is GeneratorExit:
                known = (exc, True, None)  # a generator of the call closed where the program drops it
            elif opname in rules.SHAPE_ERROR_OPS and type(exc) is RuntimeError and \
                    (not self.dynamic or not (self.cap.data_values or self.cap.data_shapes)) and rules.SHAPE_ERROR.fullmatch(str(exc)):
                # tensors that do not broadcast (``try: x + pos except: x + resized``): every shape in
                # the graph is fixed by the guards (none depends on data; symbolic sizes are pinned
                # here), so the op raises again
                self.pin_symbolic_sizes()
                known = (exc, True, None)
            else:
                known = (exc, False, UNKNOWN)
            self.raises[id(exc)] = known
        if caught and not known[1]:
            self.unsupported(f"a {type(exc).__name__} raised by {opname} is caught inside the call (what "
                             "makes it raise is not guarded)", frame)
        return known[2]
