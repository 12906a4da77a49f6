"""Distributed training's wrappers: their bookkeeping runs natively, the work they wrap is compiled.

DistributedDataParallel's forward drives a C++ Reducer around its inner module's call (``_pre_forward``,
``_post_forward``, the ``_inside_ddp_forward`` context that torch keeps its own compiler out of: "dynamo
only kicks in for the module underneath"); FSDP2's hooks all-gather a module's parameters before its
``forward`` and free them after (``_dynamo_disable``d). Neither is a program over tensors: it is
bookkeeping of processes and buffers whose state lives in C++ objects. So a call of such a module
(``rules.DISTRIBUTED_WRAPPERS``) runs its own call natively, and for the duration of that call the work
underneath goes through a compiled function:

* DDP's inner module through ``nn.Module._compiled_call_impl``, torch's own hook for "this module's calls
  go through a compiled callable" (what ``Module.compile()`` sets; ``_wrapped_call_impl`` reads it);
* an FSDP module's ``forward`` as an attribute of the instance (``_call_impl`` reads ``self.forward``), so its
  hooks run around the compiled forward as around the eager one.

Both are put back as they were when the call ends: the user's modules are left unchanged. The compiled
work is made once per inner module and kept (its entries, its recompile limit), its stats counting into the
wrapper's call.
"""
import types
import weakref

import torch

from .capture import rules
from .cache import ChildStats, Stats


class DistributedCall:
    """Calls of a distributed wrapper: ``call`` (the wrapper's own ``__call__``, bound) run natively, with the
    work under ``module`` compiled by ``compile_work(target, stats)`` (a CompiledFunction of ``target`` whose
    stats count into ``stats``).

    ``stats``: its calls, and the compiles, graphs, breaks and fallbacks of the compiled work (those count
    into ``parent`` too, when given: a call at a graph break of a compiled function)."""

    def __init__(self, call, module, compile_work, parent=None):
        self.call = call
        self.module = weakref.ref(module)  # (the wrapper holds this object: no cycle through it)
        self.compile_work = compile_work
        self.stats = ChildStats(parent) if parent is not None else Stats()
        self.name = type(module).__qualname__
        self._works = {}  # (id(module), attribute) -> (weak reference to the module, its compiled work)

    def __call__(self, *args, **kwargs):
        self.stats.count("calls")
        undo = self._install()
        try:
            return self.call(*args, **kwargs)
        finally:
            undo()

    def _install(self):
        """Put the compiled work in place for one call; returns what puts back what was there."""
        module = self.module()
        _, inner_name = rules.distributed_wrapper(module)
        if inner_name is None:
            if "forward" in vars(module) or type(getattr(type(module), "forward", None)) is not types.FunctionType:
                return _nothing  # (a forward the user set on the instance, or no Python one: left as it is)
            return _set_for_call(module, "forward", self._work(module, "forward"))
        inner = getattr(module, inner_name, None)
        if not isinstance(inner, torch.nn.Module) or type(inner).__call__ is not torch.nn.Module.__call__ or \
                inner._compiled_call_impl is not None:
            # (already compiled by the user: ``DDP(magpy.compile(m))``, ``m.compile()``: theirs runs)
            return _nothing
        return _set_for_call(inner, "_compiled_call_impl", self._work(inner, "_call_impl"))

    def _work(self, module, name):
        key = (id(module), name)
        known = self._works.get(key)
        if known is not None and known[0]() is module:
            return known[1]
        work = self.compile_work(types.MethodType(getattr(type(module), name), module), self.stats)
        self._works[key] = (weakref.ref(module, lambda _, works=self._works: works.pop(key, None)), work)
        return work


def _set_for_call(obj, name, value):
    """``obj.name = value`` in its ``__dict__`` (nn.Module's own ``__setattr__`` is not needed for plain
    values); returns what restores it, absent again if it was. (Already in place — a call inside the call, or
    one of another thread — the outermost call restores it.)"""
    d = vars(obj)
    missing = object()
    old = d.get(name, missing)
    if old is value:
        return _nothing
    d[name] = value

    def undo():
        if old is missing:
            d.pop(name, None)
        else:
            d[name] = old
    return undo


def _nothing():
    pass
