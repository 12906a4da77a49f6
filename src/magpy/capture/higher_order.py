"""torch's higher-order operators (``torch.cond``, ``while_loop``, ``scan``, ``map``, ``associative_scan``'s
pointwise mode, ``invoke_subgraph`` …) under capture.

Run eagerly, their entry points compile the operator's call: ``_maybe_compile_and_run_fn(fn, *args)`` and
``_hop_compile_and_call(fn, args)`` are ``torch.compile(fn, backend="eager", fullgraph=True)(*args)`` inside
``setup_compilation_env`` (torch's compiler's environment: its config, the fx tracing flag, proxy_tensor's
pre-dispatch and metadata modes taken off the function-mode stack, a frame counter of Dynamo's); under Dynamo
they call ``fn(*args)``. Under capture MagPy is the compiler: the call is ``fn(*args)``, interpreted, as
under Dynamo (and as a function a library ``torch.compile``d is followed as its original).

The operator itself (``HigherOrderOperator.__call__``) dispatches in Python on torch's dispatch keys to a
kernel for each of torch's systems (autograd, functionalization, fake and proxy tensors, functorch,
autocast). Where none of them is at work — plain tensors, no dispatch mode, no functorch transform, no
torch-function mode of the program's, and nothing requiring grad while grad is on (the autograd kernel
then dispatches below itself) — torch runs the kernel below autograd, its dense one: that kernel is
interpreted, so its ops join the graph and its Python decisions are guarded (``cond``'s predicate is a
branch on tensor data like any other).

Otherwise the call runs as in eager, a graph break: an operator called directly, natively; one reached from
an entry point unwinds to it (``_EntryRunsNatively``), which then runs natively, compiling as in eager —
torch's compiler lifts the tensors the operator's functions read from outside into its inputs, which the
operator's own dispatch does not (a closure over a tensor that requires grad fails there). That includes
what shows only once the kernel ran: functions that changed outside state or drew random numbers (which
torch's entry points refuse: their Python effects have then happened once, before eager's error), or a
result that requires grad (tensors they read from outside do).
"""
import torch
from torch._C import DispatchKey
import torch._higher_order_ops.utils as _utils
from torch._ops import HigherOrderOperator, _compute_keyset, resolve_key
import torch.utils._pytree as pytree

from ..interp import InterpreterError, register_lookaside
from ..interp.calls import call
from . import predicates
from .values import _Abandon

_hop_call = HigherOrderOperator.__call__
_AUTOGRAD = torch._C._to_functionality_key(DispatchKey.AutogradCPU)


class _EntryRunsNatively(InterpreterError):
    """Internal: a higher-order operator's call capture cannot take, inside an entry point being followed:
    unwinds to that entry point (untouched by the program's handlers), which then runs as in eager."""

    def __init__(self):
        super().__init__("a higher-order operator runs as in eager")


#: id(VM) -> how many entry points of higher-order operators it is following now
_FOLLOWING = {}


def _follow_entry(vm, entry, args, kwargs, fn, fn_args, fn_kwargs, fn_prov, arg_provs, kw_provs):
    """``fn(*fn_args, **fn_kwargs)`` in the VM, in place of the entry point ``entry(*args, **kwargs)``; the
    entry point itself, natively, where capture is not watching or the operator's call cannot be taken (as
    in eager: torch.compile lifts what the operator's functions read from outside, which its dispatch alone
    does not)."""
    observer = vm.observer
    if hasattr(observer, "unsupported") and observer.cap.unsupported is None:
        key = id(vm)
        _FOLLOWING[key] = _FOLLOWING.get(key, 0) + 1
        try:
            if arg_provs is not None:
                vm.call_provs = (tuple(arg_provs), dict(kw_provs or {}), fn_prov)
            return call(vm, fn, tuple(fn_args), dict(fn_kwargs or {}))
        except _EntryRunsNatively:
            pass
        finally:
            _FOLLOWING[key] -= 1
            if not _FOLLOWING[key]:
                del _FOLLOWING[key]
    return _native(vm, entry, args, kwargs)


def _maybe_compile_and_run(vm, args, kwargs):
    """``_maybe_compile_and_run_fn(fn, *args)``: ``fn(*args)``."""
    provs, vm.lookaside_provs = vm.lookaside_provs, None
    if kwargs or not args:
        return _native(vm, _maybe_compile_and_run_fn, args, kwargs)
    positional = provs[0] if provs is not None else None
    return _follow_entry(vm, _maybe_compile_and_run_fn, args, kwargs, args[0], args[1:], None,
                         positional[0] if positional else None, positional[1:] if positional else None, None)


def _hop_compile_and_call(vm, args, kwargs):
    """``_hop_compile_and_call(fn, args, kwargs=None)``: ``fn(*args, **kwargs)``."""
    provs, vm.lookaside_provs = vm.lookaside_provs, None
    bound = dict(zip(("fn", "args", "kwargs"), args), **kwargs)
    fn, fn_args, fn_kwargs = bound.get("fn"), bound.get("args"), bound.get("kwargs")
    if len(bound) != len(args) + len(kwargs) or not callable(fn) or type(fn_args) is not tuple or \
            not (fn_kwargs is None or type(fn_kwargs) is dict):
        return _native(vm, _hop_compile_and_call_fn, args, kwargs)
    arg_provs = kw_provs = fn_prov = None
    observer = vm.observer
    if provs is not None and hasattr(observer, "unpacked"):
        named = dict(zip(("fn", "args", "kwargs"), provs[0]), **provs[1])
        fn_prov = named.get("fn")
        arg_provs = observer.unpacked(fn_args, named.get("args"))
        kw_provs = observer.unpacked_mapping(fn_kwargs, named.get("kwargs")) if fn_kwargs else {}
    return _follow_entry(vm, _hop_compile_and_call_fn, args, kwargs, fn, fn_args, fn_kwargs, fn_prov, arg_provs,
                         kw_provs)


def _native(vm, fn, args, kwargs):
    hook = vm.native_hook
    return fn(*args, **kwargs) if hook is None else hook(fn, args, kwargs, None)


def _dense_kernel(vm, op, args, kwargs):
    """The kernel torch runs for ``op(*args, **kwargs)`` when none of its systems is at work, or a reason
    why one is (then torch's dispatch must run as it is)."""
    stack = vm.native_hook
    if stack is not None and getattr(stack, "modes", None):
        return "inside a torch-function mode"
    tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    if torch.overrides.has_torch_function(tensors) or torch._C._len_torch_dispatch_stack() or \
            torch._C._functorch.peek_interpreter_stack() is not None:
        return "with a tensor subclass, a dispatch mode or a functorch transform at work"
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return "on tensors that require grad"
    key = _compute_keyset(args, kwargs, op.non_fallthrough_keys).highestPriorityTypeId()
    if torch._C._to_functionality_key(key) == _AUTOGRAD:
        with torch._C._AutoDispatchBelowAutograd():
            key = _compute_keyset(args, kwargs, op.non_fallthrough_keys).highestPriorityTypeId()
    kernel = op.py_kernels.get(resolve_key(op, key))
    if kernel is None or kernel is not op.py_kernels.get(DispatchKey.CompositeExplicitAutograd):
        return f"at dispatch key {key}"
    return kernel


def _effects_mark(observer):
    """Where the capture stands: the effects it replays so far, and the graph's last node."""
    return len(observer.cap.side_effects), next(iter(reversed(observer.cap.graph.nodes)), None)


def _has_effects(observer, mark):
    """Did what ran since ``mark`` change outside state (a write to outside objects or into a tensor from
    before it), or draw random numbers? (torch's entry points refuse both in an operator's functions.)"""
    effects, last = mark
    if len(observer.cap.side_effects) != effects:
        return True
    node = last.next if last is not None else next(iter(observer.cap.graph.nodes), None)
    made = set()
    while node is not None and node.op != "root":
        made.add(node)
        if predicates._impure(node) and not (predicates._writes_fresh(node) and
                                              predicates._base(node.args[0]) in made):
            return True
        node = node.next
    return False


def _higher_order_call(vm, args, kwargs):
    """``HigherOrderOperator.__call__(op, *args, **kwargs)``: its dense kernel, interpreted (see the module's
    docstring); else as in eager, a graph break."""
    provs, vm.lookaside_provs = vm.lookaside_provs, None
    if not args or not isinstance(args[0], HigherOrderOperator):
        return _native(vm, _hop_call, args, kwargs)  # (its own error)
    op, rest = args[0], args[1:]
    kernel = _dense_kernel(vm, op, rest, kwargs)
    observer = vm.observer
    watching = hasattr(observer, "unsupported") and observer.cap.unsupported is None
    if not callable(kernel):
        _refuse(observer, watching, op, kernel)
        if _FOLLOWING.get(id(vm)):
            raise _EntryRunsNatively()
        return _native(vm, _hop_call, args, kwargs)
    before = _effects_mark(observer) if watching else None
    if provs is not None:
        vm.call_provs = (tuple(provs[0][1:]), dict(provs[1]), None)
    result = call(vm, kernel, rest, kwargs)
    if not watching or observer.cap.unsupported is not None:
        return result
    if _has_effects(observer, before):
        why = "whose functions change outside state or draw random numbers"  # (torch's entry points refuse both)
    elif torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad
                                         for t in pytree.tree_leaves(result)):
        why = "over tensors that require grad"  # (its functions read them: torch's autograd kernel is at work)
    else:
        return result
    # (the kernel ran once, as an operator called directly runs: that call keeps its result; an entry point
    # runs again as in eager, where torch's compiler takes the operator's functions as they are)
    _refuse(observer, watching, op, why)
    if _FOLLOWING.get(id(vm)):
        raise _EntryRunsNatively()
    return result


def _refuse(observer, watching, op, why):
    if watching:
        try:
            observer.unsupported(f"torch.ops.higher_order.{op.name()} {why} runs as in eager (graph break)")
        except _Abandon:
            pass


register_lookaside(_hop_call, _higher_order_call, delegates=True)

_maybe_compile_and_run_fn = getattr(_utils, "_maybe_compile_and_run_fn", None)
_hop_compile_and_call_fn = getattr(_utils, "_hop_compile_and_call", None)
if _maybe_compile_and_run_fn is not None:
    register_lookaside(_maybe_compile_and_run_fn, _maybe_compile_and_run, delegates=True)
if _hop_compile_and_call_fn is not None:
    register_lookaside(_hop_compile_and_call_fn, _hop_compile_and_call, delegates=True)
