"""Torch-function modes the program enters (``with SomeMode():``, a ``torch.overrides.TorchFunctionMode``).

In eager, a mode on torch's stack sees every overridable torch call made inside its region: torch calls the
mode's ``__torch_function__(func, types, args, kwargs)`` (with the mode popped while it runs) and the call's
result is what that returns. Under capture the VM must see what the mode does, so a mode the program
enters is not pushed on torch's own stack: it is kept on a stack of the VM's (``ModeStack``), and

* torch's Python code that asks about the stack (``has_torch_function``, ``handle_torch_function``'s
  ``_is_torch_function_mode_enabled`` / ``_pop_mode_temporarily``, ``_len_torch_function_stack`` …) is
  answered from it (lookasides below), so Python torch functions and Tensor methods dispatch to the mode
  as in eager;
* every native operation of the program (a call, an operator, a subscript) runs through the VM's
  ``native_hook`` while the stack holds a mode: a probe mode is pushed on torch's own stack for that one
  operation, and when torch dispatches to it, the program's mode's ``__torch_function__`` is run by the VM
  (interpreted) with the func, types and arguments torch hands over. What it does is recorded as what it
  does; the operation's result is what it returned (``dispatched``: the observer takes that provenance
  instead of recording the operation itself).

Capture's own torch calls never see the program's modes (they are not on torch's stack), and modes torch
or the harness pushed before the call stay on torch's stack, below the program's.
"""
import torch
from torch.overrides import TorchFunctionMode

from ..errors import Unsupported
from ..interp import register_lookaside
from ..interp.calls import call
from .names import callable_name
from .values import _Abandon, _NOT_WRITTEN

_native_push = torch._C._push_on_torch_function_stack
_native_pop = torch._C._pop_torch_function_stack
_native_len = torch._C._len_torch_function_stack
_native_at = torch._C._get_function_stack_at
_native_enabled = torch._C._is_torch_function_mode_enabled
HAS_TORCH_FUNCTION = (torch._C._has_torch_function, torch._C._has_torch_function_unary,
                       torch._C._has_torch_function_variadic)


class ModeStack:
    """The modes the program entered under one VM, innermost last, each with its provenance; installed as
    the VM's ``native_hook`` while it holds any."""

    def __init__(self, vm):
        self.vm = vm
        self.modes = []          # (mode, provenance)

    def push(self, mode, prov):
        self.modes.append((mode, prov))
        self.vm.native_hook = self

    def pop(self):
        mode, prov = self.modes.pop()
        return mode, prov

    def __call__(self, fn, args, kwargs, provs):
        """Run the native operation ``fn(*args, **kwargs)`` as torch would with the modes on its stack."""
        if not self.modes:
            return fn(*args, **(kwargs or {}))
        probe = _Probe(self, fn, args, kwargs, provs)
        _native_push(probe)
        try:
            return fn(*args, **(kwargs or {}))
        finally:
            _native_pop()

    def dispatch(self, func, types, args, kwargs, provs):
        """torch dispatched ``func`` to the innermost mode: run its ``__torch_function__`` in the VM, with
        the mode popped meanwhile (as torch's ``_pop_mode_temporarily``)."""
        vm = self.vm
        mode, mode_prov = self.pop()
        observer = vm.observer
        watching = hasattr(observer, "dispatched_result")
        try:
            if watching:
                vm.call_provs = observer.dispatch_provs(mode, mode_prov, args, kwargs, provs)
            vm.returned = None
            result = call(vm, mode.__torch_function__, (func, types, args, kwargs), {})
        finally:
            self.modes.append((mode, mode_prov))
            vm.call_provs = None
        if watching:
            observer.dispatched_result(result, vm.returned)
        return result


def _matched(values, value_provs, wanted):
    """The provenance of each of ``wanted`` (torch's arguments of the dispatch): that of the same object
    among the operation's own inputs ``values``, else ``UNMATCHED`` (the observer's ``opaque`` decides)."""
    out = []
    for w in wanted:
        for v, p in zip(values, value_provs):
            if v is w:
                out.append(p)
                break
        else:
            out.append(UNMATCHED)
    return out


UNMATCHED = object()  # (an argument of a dispatch that is none of the operation's inputs)


class _Probe(TorchFunctionMode):
    """Pushed on torch's stack around one native operation of the program: torch dispatching to it means
    the program's innermost mode must see the call."""

    def __init__(self, stack, fn, args, kwargs, provs):
        super().__init__()
        self.stack, self.fn, self.args, self.kwargs, self.provs = stack, fn, args, kwargs, provs
        self.fired = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self.fired += 1
        observer = self.stack.vm.observer
        watching = hasattr(observer, "dispatched_result")
        provs = None
        if watching and self.provs is not None and self.fired == 1:
            # torch's arguments are the operation's own (a method's self first): their provenance, by identity
            positional, keyword, fn_prov = self.provs
            values = [*self.args, *(self.kwargs or {}).values()]
            value_provs = [*positional, *(keyword.get(k) for k in (self.kwargs or {}))]
            owner = getattr(self.fn, "__self__", None)
            if owner is not None and not isinstance(owner, type) and type(owner).__name__ != "module":
                values.append(owner)
                value_provs.append(observer.bound_self(self.fn, fn_prov))
            provs = (_matched(values, value_provs, args), _matched(values, value_provs, kwargs.values()))
        if self.fired > 1 and watching:
            # (a native function running torch code of its own: each of its calls goes to the mode, as in
            # eager, but the function's result is not what the mode's calls computed)
            observer.mode_in_native_code(self.fn)
        return self.stack.dispatch(func, types, args, kwargs, provs)


# ---- torch's questions about its stack, answered with the program's modes on top --------------------------

def _stack_of(vm, create=False):
    stack = vm.native_hook
    if type(stack) is ModeStack:
        return stack
    if not create or vm.observer is None:
        return None
    stack = ModeStack(vm)
    return stack


def _push(vm, args, kwargs):
    provs, vm.lookaside_provs = vm.lookaside_provs, None
    if vm.observer is None or kwargs or len(args) != 1:
        return _native_push(*args, **kwargs)  # (a VM running without observer: torch's own stack)
    stack = _stack_of(vm, create=True)
    stack.push(args[0], provs[0][0] if provs is not None and provs[0] else None)
    return None


def _pop(vm, args, kwargs):
    vm.lookaside_provs = None
    stack = _stack_of(vm)
    if stack is None or not stack.modes or args or kwargs:
        return _native_pop(*args, **kwargs)
    mode, _ = stack.pop()
    if not stack.modes:
        vm.native_hook = None
    return mode


def _length(vm, args, kwargs):
    vm.lookaside_provs = None
    stack = _stack_of(vm)
    return _native_len(*args, **kwargs) + (len(stack.modes) if stack is not None else 0)


def _at(vm, args, kwargs):
    vm.lookaside_provs = None
    stack = _stack_of(vm)
    below = _native_len()
    if stack is None or kwargs or len(args) != 1 or type(args[0]) is not int or args[0] < below:
        return _native_at(*args, **kwargs)
    index = args[0] - below
    if index >= len(stack.modes):
        return _native_at(*args, **kwargs)  # (its own error)
    return stack.modes[index][0]


def _enabled(vm, args, kwargs):
    vm.lookaside_provs = None
    stack = _stack_of(vm)
    return _native_enabled(*args, **kwargs) or (stack is not None and bool(stack.modes) and
                                                 torch._C._get_torch_function_state() == _ENABLED)


def _has_torch_function(native):
    def handler(vm, args, kwargs):
        vm.lookaside_provs = None
        stack = _stack_of(vm)
        if stack is not None and stack.modes and torch._C._get_torch_function_state() == _ENABLED:
            native(*args, **kwargs)  # (its own argument errors)
            return True
        return native(*args, **kwargs)
    return handler


_ENABLED = torch._C._TorchFunctionState.ENABLED

#: the stack's edits, and its queries whose answers inside a region of the program's modes are decided by
#: what the program entered (fixed by the guards of its own code); outside one, the queries keep their
#: own rules (torch's global state, a predicate of tensor types)
MODE_EDITS = (_native_push, _native_pop)
STACK_QUERIES = (_native_len, _native_at, _native_enabled, *HAS_TORCH_FUNCTION)

for _target, _handler in ((_native_push, _push), (_native_pop, _pop), (_native_len, _length), (_native_at, _at),
                          (_native_enabled, _enabled),
                          *((f, _has_torch_function(f)) for f in HAS_TORCH_FUNCTION)):
    register_lookaside(_target, _handler)


class FunctionModes:

    """The capture observer's side of the program's torch-function modes (a room of the observer)."""

    dispatched = None  # (result, provenance) of the mode's ``__torch_function__`` for the native op just run

    def dispatch_provs(self, mode, mode_prov, args, kwargs, provs):
        """``vm.call_provs`` for ``mode.__torch_function__(func, types, args, kwargs)``: the tuple and dict
        torch made hold the operation's inputs with their provenance."""
        if provs is not None:
            positional, keyword = provs
            opaque = self.opaque
            self.contents[id(args)] = (args, [opaque(a) if p is UNMATCHED else p for a, p in zip(args, positional)])
            self.contents[id(kwargs)] = (kwargs, {k: opaque(v) if p is UNMATCHED else p
                                                  for (k, v), p in zip(kwargs.items(), keyword)})
        else:
            self.contents[id(args)] = (args, list(self.by_identity(args)))
            self.contents[id(kwargs)] = (kwargs, dict(zip(kwargs, self.by_identity(list(kwargs.values())))))
        if mode_prov is not None:
            self.sources_of.setdefault(id(mode), (mode, mode_prov))
        return (None, None, None, None), {}, None

    def dispatched_result(self, result, returned):
        """The mode's ``__torch_function__`` returned ``result`` (``returned``: the VM's last interpreted
        return): the native operation's result, with that provenance."""
        prov = returned[2] if returned is not None and returned[1] is result else self.opaque(result)
        self.dispatched = (result, prov)

    def take_dispatched(self, result):
        """The provenance of ``result`` if a mode computed it for the native operation that just ran, else
        ``_NOT_WRITTEN`` (the operation is the program's own, recorded as usual)."""
        entry = self.dispatched
        if entry is None:
            return _NOT_WRITTEN
        self.dispatched = None
        return entry[1] if entry[0] is result else _NOT_WRITTEN

    def mode_in_native_code(self, fn):
        try:
            self.unsupported(f"{callable_name(fn)}() ran natively inside a torch-function mode's region: the "
                             "mode saw its torch calls, which MagPy cannot record as that call")
        except _Abandon:
            pass

    def in_mode_region(self) -> bool:
        stack = self.vm.native_hook
        return type(stack) is ModeStack and bool(stack.modes)

    def stack_result(self, fn, result):
        """The provenance of what a stack function answered (``MODE_EDITS``, ``STACK_QUERIES``): a mode the program
        entered, or a fact of the stack that its own code decided."""
        return self.provenance_of(result) if isinstance(result, TorchFunctionMode) else None

    def finish_function_modes(self):
        """A call that leaves modes entered (no ``__exit__``): eager leaves them on torch's stack, so they
        go there now, and later calls run eagerly."""
        stack = self.vm.native_hook
        if type(stack) is not ModeStack or not stack.modes:
            return
        self.vm.native_hook = None
        for mode, _ in stack.modes:
            _native_push(mode)
        stack.modes.clear()
        self.cap.unsupported = self.cap.unsupported or Unsupported(
            "the call leaves a torch-function mode entered (runs eagerly)")
