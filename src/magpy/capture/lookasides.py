"""Calls capture runs its own way (through the VM's lookaside table): library functions run natively,
``checkpoint(f, *args)`` as ``f(*args)``, TorchScript functions as their Python source.
"""
import inspect
import sys

import torch
import torch.utils.checkpoint

from . import rules
from ..interp import register_call_instead, register_lookaside
from ..interp.identity import IdentitySet
from ..interp.builtin_lookasides import HIDDEN_CODE
from ..interp.lookaside import LOOKASIDE, WRAPPED_BY_ATTRIBUTE


def _run_natively(target):
    """A lookaside that runs ``target`` natively: a library function the rules table treats as pure
    over its arguments (interpreting its introspection internals gains nothing)."""
    def run(vm, args, kwargs):
        hook = vm.native_hook  # (torch-function modes the program entered see its torch calls)
        return target(*args, **kwargs) if hook is None else hook(target, args, kwargs, None)
    return run


for _target in (inspect.signature,):
    register_lookaside(_target, _run_natively(_target))

# ``SomeFunction.apply`` (a custom autograd.Function) runs natively: the call is one graph op (``calls``), and
# its Python preamble (binding defaults through ``inspect.signature`` where ``setup_context`` is defined, the
# functorch path under ``torch.vmap``) is torch's own bookkeeping, not the program's.
_function_apply = torch.autograd.Function.apply.__func__
register_lookaside(_function_apply, _run_natively(_function_apply))


def _checkpoint_as_call(vm, args, kwargs):
    """``torch.utils.checkpoint.checkpoint(fn, *args)`` runs as ``fn(*args)``: the same values and
    gradients (activations are kept rather than recomputed in backward). Its own options are dropped;
    other keywords go to ``fn``, as checkpoint passes them."""
    from ..interp.calls import call
    provs, vm.lookaside_provs = vm.lookaside_provs, None
    if not args:
        return torch.utils.checkpoint.checkpoint(*args, **kwargs)  # (its own error)
    passed = {k: v for k, v in kwargs.items() if k not in rules.CHECKPOINT_OPTIONS}
    if provs is not None:
        vm.call_provs = (provs[0][1:], {k: p for k, p in provs[1].items() if k in passed}, provs[0][0])
    return call(vm, args[0], args[1:], passed)


register_lookaside(torch.utils.checkpoint.checkpoint, _checkpoint_as_call, delegates=True)

# A TorchScript function runs as the Python function it was scripted from (the same semantics, and
# its tensor ops then join the graph); TorchScript keeps that function for torch's own compiler.
register_call_instead(torch.jit.ScriptFunction, lambda f: getattr(f, "_torchdynamo_inline", None))

# A function ``torch.compile``d by a library (``@torch.compile`` on a kernel-like helper) is its original
# under capture: we are the compiler, and the nested one inlines the same way. Its own entry point
# would hook every Python frame it sees — the VM's included. Disabled functions keep their own rule.
WRAPPED_BY_ATTRIBUTE["_torchdynamo_orig_callable"] = lambda f: (
    None if rules.disabled(f) else f._torchdynamo_orig_callable)

#: bookkeeping functions torch's own compiler installs (Dynamo tags every new nn.Module in its
#: ``__init__``): run natively, and nothing to replay
_BOOKKEEPING = IdentitySet()


def _register_bookkeeping():
    guard = sys.modules.get("torch._dynamo.mutation_guard")
    tag = getattr(getattr(guard, "GenerationTracker", None), "tag", None)
    if tag is not None and tag.__func__ not in _BOOKKEEPING:
        _BOOKKEEPING.add(tag.__func__)
        register_lookaside(tag.__func__, _run_natively(tag.__func__))


def _compiling(vm, args, kwargs):
    """``torch.compiler.is_compiling()`` is True in what MagPy captures (and so in what its compiled code
    runs): libraries pick their compile-friendly paths by it (transformers' memoized helpers skip their
    cache, as under torch.compile). A native step at a graph break runs eagerly, where it is False."""
    return True


register_lookaside(torch.compiler.is_compiling, _compiling)


# ``max(t, 1)`` / ``min(n, t)`` of several arguments, one a tensor: Python's own definition, run as Python
# (``item > best`` / ``item < best`` from the left, keeping the first of equals), so each comparison is a
# branch on tensor data the graph computes and the result is the very argument Python would return (a
# tensor or the number: which, depends on data). Other calls keep their handler.
exec(compile("def _greatest(best, *rest):\n"
             "    for item in rest:\n"
             "        if item > best:\n"
             "            best = item\n"
             "    return best\n"
             "def _least(best, *rest):\n"
             "    for item in rest:\n"
             "        if item < best:\n"
             "            best = item\n"
             "    return best\n", "<magpy: max/min>", "exec"), globals())
HIDDEN_CODE.update((_greatest.__code__, _least.__code__))


def _extremum_over_tensors(code, native):
    def handler(vm, args, kwargs):
        if kwargs or len(args) < 2 or not any(isinstance(a, torch.Tensor) for a in args):
            return native(vm, args, kwargs)
        vm.call_provs, vm.lookaside_provs = vm.lookaside_provs, None
        return vm.call_function(code, args, None)
    return handler


for _fn, _code in ((max, _greatest), (min, _least)):
    register_lookaside(_fn, _extremum_over_tensors(_code, LOOKASIDE[_fn]))
