"""What ``torch.compiler`` promises programs and libraries about the functions they mark, kept by capture.

* A memoized function (``functools.lru_cache`` / ``cache``: a C wrapper) given tensors runs as the
  function it wraps, interpreted: the cache is the library's optimisation, not its meaning, as under
  torch.compile (its key would be the tensors' identities). Given plain values, it is called natively:
  a plain result is guarded by the arguments as any pure call's (a library's ``warning_once`` still
  warns once); tensors (a sine position table built from ints) are graph inputs the entry gets by
  calling it again on each call — the cache's own tensors, as eager gets them (so what the program
  writes into them stays in the cache, as in eager). Where an argument is not one the entry can
  compute, it is interpreted instead.
* ``torch.compiler.allow_in_graph(fn)``: a call whose arguments are what an fx graph can take (tensors,
  numbers, ``None``, dtypes, devices, lists and tuples of them) and hold a tensor runs natively and
  becomes one node of the graph calling ``fn`` (a backend traces through it); as torch documents, what
  ``fn`` does besides computing its result from its arguments is not the compiler's to keep. Any other
  call of it is interpreted, as any function.
* ``torch.compiler.assume_constant_result(fn)``: ``fn`` runs once, natively, when the call is captured;
  its result is a constant of the entry, guarded on nothing (torch: "the compiler will not attempt to
  validate whether the constant assumption is true").
* ``torch._dynamo.mark_dynamic`` / ``maybe_mark_dynamic`` / ``mark_unbacked`` / ``mark_static`` /
  ``mark_static_address`` called inside captured code: hints that mark a tensor; they run natively and
  each compiled call marks its own tensor again. Marks on an input tensor are read as
  ``magpy.mark_dynamic`` / ``mark_static`` are (``markers``).
"""
import functools
import operator
import sys
import types

import torch

from . import vf
from ..interp import register_native_code, register_type_lookaside
from ..interp.calls import call, native_call
from ..interp.identity import IdentitySet
from .sources import Const, Expr
from .values import _NOT_WRITTEN, _item_of, _replayable_path


# ---- memoized functions ---------------------------------------------------------------------------------

def _holds_tensors(value, depth=0):
    if isinstance(value, torch.Tensor):
        return True
    if depth > 4:
        return False
    if type(value) in (list, tuple):
        return any(_holds_tensors(v, depth + 1) for v in value)
    if type(value) is dict:
        return any(_holds_tensors(v, depth + 1) for v in value.values())
    return False


def _memoized_call(vm, fn, args, kwargs):
    """A call of a memoized function: see the module's docstring."""
    provs, vm.lookaside_provs = vm.lookaside_provs, None
    wrapped = getattr(fn, "__wrapped__", None)
    if vm.observer is None or not callable(wrapped):
        return native_call(vm, fn, args, kwargs)  # (outside capture the cache is the program's own)
    if not _holds_tensors(args) and not _holds_tensors(kwargs):
        result = fn(*args, **kwargs)
        again = _call_again(fn, args, kwargs, provs) if _holds_tensors(result) else None
        if again is not None or not _holds_tensors(result):
            vm.observer.memoized = (result, again)
            vm.observer.native_call(fn, args, kwargs, result)
            return result
    if provs is not None:
        vm.call_provs = (provs[0], provs[1], None)
    return call(vm, wrapped, args, kwargs)


def _call_again(fn, args, kwargs, provs):
    """The call as an expression the entry evaluates on each call (the cache's own tensors, as eager gets
    them), or None where an argument is not one the entry can compute."""
    if kwargs or provs is None or len(provs[0]) != len(args):
        return None
    fn_prov = provs[2] if len(provs) > 2 else None
    parts = [fn_prov if fn_prov is not None else Const(fn)]
    for value, prov in zip(args, provs[0]):
        if prov is not None and not _replayable_path(prov):
            return None
        parts.append(prov if prov is not None else Const(value))
    if not _replayable_path(parts[0]) and type(parts[0]) is not Const:
        return None
    return Expr(operator.call, parts)


register_type_lookaside(functools._lru_cache_wrapper, _memoized_call)


# ---- hints to torch's compiler --------------------------------------------------------------------------

#: functions of ``torch._dynamo.decorators`` that mark a tensor for torch's compiler
HINTS = frozenset({"mark_dynamic", "maybe_mark_dynamic", "mark_unbacked", "mark_static", "mark_static_address"})
_HINT_FILE = "torch/_dynamo/decorators.py"
#: their code objects, as they are decoded (torch._dynamo is imported by the program, if at all)
_HINT_CODES = IdentitySet()


@register_native_code
def _is_hint(code):
    if code.co_name in HINTS and code.co_filename.replace("\\", "/").endswith(_HINT_FILE):
        _HINT_CODES.add(code)
        return True
    return False


# ---- functions torch's compiler is told not to trace ------------------------------------------------------

def _proxyable(value, depth=0):
    """What an fx graph can take or give, as ``allow_in_graph`` requires of ``fn``'s arguments and result."""
    if isinstance(value, (torch.Tensor, int, float, bool, type(None), torch.dtype, torch.device)):
        return True
    return type(value) in (list, tuple) and depth < 4 and all(_proxyable(v, depth + 1) for v in value)


def opaque_functions():
    """The predicate for ``VM.opaque`` (functions capture calls natively: ``assume_constant_result``'s,
    and ``allow_in_graph``'s over tensors), or None while torch's compiler is not loaded (nothing can
    be marked)."""
    if "torch._dynamo.decorators" not in sys.modules:
        return None
    trace_rules = sys.modules.get("torch._dynamo.trace_rules")
    try:
        allowed = trace_rules._allowed_callable_ids() if trace_rules is not None else ()
    except Exception:  # noqa: BLE001 - a torch without that table: nothing is allowed
        allowed = ()

    def opaque(func, args, kwargs):
        if getattr(func, "_dynamo_marked_constant", False) is True:
            return True
        return id(func) in allowed and _proxyable(args) and _proxyable(list((kwargs or {}).values())) and \
            (_holds_tensors(args) or _holds_tensors(kwargs))
    return opaque


class CompilerContract:
    """Native calls of functions marked for torch's compiler (a room of the capture observer)."""

    memoized = None  # (result, the call again or None) of the memoized call the VM just ran natively

    def contract_call(self, fn, args, arg_provs, kwargs, kw_provs, result):
        """The provenance of what a native call returned where the module's docstring says what it is (a
        function marked for torch's compiler, a memoized function); else ``_NOT_WRITTEN``."""
        if type(fn) is types.FunctionType:  # (one the VM ran natively)
            prov = self._marked_call(fn, args, arg_provs, kwargs, kw_provs, result)
            if prov is not _NOT_WRITTEN:
                return prov
        return self._memoized_result(result) if self.memoized is not None else _NOT_WRITTEN

    def _memoized_result(self, result):
        """The provenance of what a memoized function the VM called natively returned: None for a plain
        value (guarded by its arguments, as any pure call's), the call again for tensors; else
        ``_NOT_WRITTEN`` (not such a call)."""
        memoized, self.memoized = self.memoized, None
        if memoized[0] is not result or memoized[1] is None:
            return _NOT_WRITTEN
        again = memoized[1]
        # (its tensors are graph inputs the entry computes, from here on: a method call on one
        # names its tensor by identity)
        for k, item in enumerate(result if type(result) in (tuple, list) else (result,)):
            if isinstance(item, torch.Tensor):
                self.tensor_input(item, again if item is result else _item_of(again, k))
        return again

    def _marked_call(self, fn, args, arg_provs, kwargs, kw_provs, result):
        if fn.__code__ in _HINT_CODES:
            self.cap.side_effects.append(("call", fn, [self.frozen_template(a, p) for a, p in zip(args, arg_provs)],
                                          {k: self.frozen_template(v, kw_provs.get(k)) for k, v in kwargs.items()}))
            return None
        if getattr(fn, "_dynamo_marked_constant", False) is True:
            if _holds_tensors(result):
                self.unsupported(f"{fn.__qualname__}() (torch.compiler.assume_constant_result) returned tensors")
            return None  # (a constant: called once, guarded on nothing)
        opaque = self.vm.opaque
        if opaque is None or not opaque(fn, args, kwargs):
            return _NOT_WRITTEN
        if not _proxyable(result) or not _holds_tensors(result):
            self.unsupported(f"{fn.__qualname__}() (torch.compiler.allow_in_graph) returned a "
                             f"{type(result).__name__}, not tensors a graph can hold")
        self.record(vf.calling(fn, f"allowed_{fn.__name__}"), args, arg_provs, kwargs, kw_provs, result)
        return None
