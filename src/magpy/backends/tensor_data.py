"""Tensors made from symbolic numbers (``torch.tensor(n)``), traced as ops over those numbers.

A backend traces a graph with symbolic inputs by running it on SymInts and SymFloats. ``torch.tensor``
(``as_tensor``, ``asarray``, ``Tensor.new_tensor``) on such data does not record an op: torch fixes each
number to its traced value (a guard) and makes a constant tensor — and it stores an int's value through a
32-bit conversion, so ``torch.tensor(2**40 + 5)`` becomes the constant 5, compiled and guarded as right
for 2**40 + 5. Traced as ``aten.scalar_tensor`` (``stack`` of them for a list), the number stays a
symbolic input of the graph: right for every value, and one compile for all of them.

``symbolic_data_kept()`` does that while a backend traces. A graph without such calls never meets it.
"""
from __future__ import annotations

import contextlib
import functools

#: keyword arguments the rewritten call can honour (``requires_grad``, ``pin_memory`` … keep torch's path)
_KEPT_KWARGS = frozenset({"dtype", "device"})


def _leaves(data, out):
    """The numbers in ``data`` (a number or nested lists and tuples of them) into ``out``; False where
    ``data`` holds anything else (a tensor, a SymBool, a complex, an empty list)."""
    import torch

    if isinstance(data, (list, tuple)):
        return bool(data) and all(_leaves(item, out) for item in data)
    if type(data) in (bool, int, float, torch.SymInt, torch.SymFloat):
        out.append(data)
        return True
    return False


def _inferred_dtype(leaves):
    """The dtype ``torch.tensor`` gives these numbers: the default float dtype if one is a float, else
    int64 if one is an int, else bool."""
    import torch

    if any(type(x) in (float, torch.SymFloat) for x in leaves):
        return torch.get_default_dtype()
    if any(type(x) in (int, torch.SymInt) for x in leaves):
        return torch.int64
    return torch.bool


def _built(data, dtype, device):
    import torch

    if isinstance(data, (list, tuple)):
        return torch.stack([_built(item, dtype, device) for item in data])
    return torch.scalar_tensor(data, dtype=dtype, device=device)


def _rewritten(func, args, kwargs):
    """The tensor ``func(*args, **kwargs)`` makes, built from ops over its symbolic numbers; None
    where the call is not one of ours or holds no symbolic number."""
    import torch

    if func is torch.Tensor.new_tensor:
        if len(args) != 2:
            return None
        this, data = args
        default_dtype, default_device = this.dtype, this.device
    elif func in (torch.tensor, torch.as_tensor, torch.asarray):
        if len(args) != 1:
            return None
        data, default_dtype, default_device = args[0], None, None
    else:
        return None
    leaves = []
    if not set(kwargs) <= _KEPT_KWARGS or not _leaves(data, leaves) or \
            not any(isinstance(x, (torch.SymInt, torch.SymFloat)) for x in leaves):
        return None
    dtype = kwargs.get("dtype") or default_dtype or _inferred_dtype(leaves)
    return _built(data, dtype, kwargs.get("device") or default_device)


@functools.cache
def _mode_class():
    from torch.overrides import TorchFunctionMode

    class SymbolicDataKept(TorchFunctionMode):
        """``torch.tensor`` and its kin on symbolic numbers, as ``scalar_tensor`` (and ``stack``)."""

        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            built = _rewritten(func, args, kwargs)
            return func(*args, **kwargs) if built is None else built

    return SymbolicDataKept


@contextlib.contextmanager
def symbolic_data_kept(gm):
    """While a backend traces ``gm`` over symbolic inputs: tensors made from its symbolic numbers are
    traced as ops over them (a no-op for a graph that makes no tensor from data)."""
    import torch

    makers = (torch.tensor, torch.as_tensor, torch.asarray, "new_tensor")
    if not any(node.target in makers for node in gm.graph.nodes if node.op in ("call_function", "call_method")):
        yield
        return
    with _mode_class()():
        yield
