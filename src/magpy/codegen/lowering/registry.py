"""The lowering table: aten overload -> function building IR values, plus shared helpers.

A lowering is ``fn(ctx, *args, **kwargs)``: tensors arrive as ``TensorValue`` and everything else
as the Python value the fx node held. It returns a ``TensorValue`` (or a tuple of them). Raising
``Unsupported`` makes the graph run the op as an ``ExternCall`` instead — never a wrong answer.

``ctx`` (a ``LoweringContext``) knows the fx node's result (shape, dtype, strides from its fake
value) and lets a lowering realize values into buffers.

Sizes and integer arguments may be symbolic (sympy expressions over the graph's size symbols,
see ``sizes.py``): a lowering compares them structurally, asks ``ctx.known(relation)``, or
refuses with ``Unsupported`` — it never assumes a relation the ShapeEnv did not record.

Broadcasting and type promotion are done once, here, in ``pointwise``.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Sequence

import sympy
import torch

from ..ir import BufferValue, Pointwise, TensorValue, is_static
from ..ops import AnalysisHandler, Opaque, ops, set_handler
from ..sizes import SizeAsFloat, is_float_symbol, to_torch

aten = torch.ops.aten
prims = torch.ops.prims

LOWERINGS: dict[Any, Callable] = {}


class Unsupported(Exception):
    """Raised by a lowering for arguments it does not handle; the op becomes an ExternCall."""


def register_lowering(*targets):
    """Register the decorated function as the lowering of every overload in ``targets``.

    A target is an ``OpOverload`` or an ``OpOverloadPacket`` (all its functional overloads).
    """

    def decorate(fn):
        for target in targets:
            for overload in _overloads(target):
                LOWERINGS[overload] = fn
        return fn

    return decorate


def _overloads(target):
    if isinstance(target, torch._ops.OpOverloadPacket):
        found = []
        for name in target.overloads():
            overload = getattr(target, name)
            schema = overload._schema
            if name.endswith("out") or schema.is_mutable:
                continue
            found.append(overload)
        return found
    return [target]


def lookup_lowering(target) -> Optional[Callable]:
    return LOWERINGS.get(target)


@dataclasses.dataclass
class LoweringContext:
    """What a lowering may know about the node it lowers, and the graph it lowers into."""

    graph: Any
    node: Any
    meta: Any  # the node's fake result: a tensor, a tuple of tensors, or None

    @property
    def tensor_meta(self) -> torch.Tensor:
        if not isinstance(self.meta, torch.Tensor):
            raise Unsupported("result is not a single tensor")
        return self.meta

    @property
    def size(self) -> tuple:
        return self.graph.sizes.shape(self.tensor_meta)

    def known(self, relation) -> bool:
        """True when ``relation`` between sizes holds for every size the ShapeEnv allows."""
        return self.graph.sizes.known(relation)

    def require(self, relation) -> None:
        """Lower for the sizes where ``relation`` holds: unless the ShapeEnv knows it (a size from
        data may be anything torch's trace took it to be), the wrapper checks it once its sizes are
        read, and a call where it fails runs eagerly — doing what eager does there."""
        if not self.known(relation):
            self.graph.sizes.add_assertion(to_torch(relation))

    @property
    def dtype(self) -> torch.dtype:
        return self.tensor_meta.dtype

    def realize(self, value: TensorValue) -> BufferValue:
        return self.graph.realize(value)


# ----------------------------------------------------------------------------------------------
# Broadcasting and promotion


def broadcast_shapes(*sizes) -> tuple:
    if all(is_static(s) for s in sizes):
        return tuple(torch.broadcast_shapes(*[torch.Size(s) for s in sizes]))
    ndim = max(len(s) for s in sizes)
    out = []
    for d in range(ndim):
        dims = {s[len(s) - ndim + d] for s in sizes if len(s) - ndim + d >= 0} - {1}
        if len(dims) > 1:
            raise Unsupported(f"cannot broadcast sizes {sizes}")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def broadcast_loader(value: TensorValue, size: Sequence[int]):
    """A loader over ``size`` that reads ``value`` broadcast to that shape."""
    loader = value.make_loader()
    offset = len(size) - value.ndim
    if offset < 0:
        raise Unsupported(f"cannot broadcast {value.size} to {tuple(size)}")
    vsize = value.size

    def load(index):
        idx = []
        for d in range(value.ndim):
            i = index[offset + d]
            idx.append(sympy.Integer(0) if vsize[d] == 1 else i)
        return loader(idx)

    return load


def _probe(x):
    """An object torch.result_type promotes like ``x`` (a TensorValue or a Python scalar)."""
    if isinstance(x, TensorValue):
        return torch.empty([] if x.ndim == 0 else [0], dtype=x.dtype)
    if isinstance(x, sympy.Expr):
        return 1  # a symbolic int
    if isinstance(x, SizeAsFloat):
        return 1.0
    return x


def scalar(value, dtype: torch.dtype):
    """The ops value of a Python number, a symbolic int (a size) or a float input, as ``dtype``."""
    if isinstance(value, SizeAsFloat):
        value = value.size
        if any(is_float_symbol(s) for s in value.free_symbols):
            # a float input: the kernel's double argument, cast to the type ``dtype`` computes in
            # (float for half and bfloat16, as eager casts a number operand to its opmath type)
            return ops.index_expr(value, dtype)
    if isinstance(value, sympy.Expr):
        if not value.is_integer:
            raise Unsupported(f"symbolic scalar {value}")
        return ops.to_dtype(ops.index_expr(value, torch.int64), dtype)
    return ops.constant(value, dtype)


def promote(*args) -> torch.dtype:
    """torch's elementwise type promotion over tensor values and Python scalars."""
    probes = [_probe(a) for a in args if a is not None]
    if len(probes) == 1:
        p = probes[0]
        return p.dtype if isinstance(p, torch.Tensor) else torch.tensor(p).dtype
    dtype = torch.result_type(probes[0], probes[1])
    current = torch.empty([0], dtype=dtype) if any(
        isinstance(p, torch.Tensor) and p.dim() > 0 for p in probes[:2]
    ) else torch.empty([], dtype=dtype)
    for p in probes[2:]:
        dtype = torch.result_type(current, p)
        current = torch.empty(list(current.shape), dtype=dtype)
    return dtype


def operand_loader(x, size, dtype: torch.dtype):
    """Loader of a tensor value (broadcast) or Python scalar, converted to ``dtype``."""
    if isinstance(x, TensorValue):
        load = broadcast_loader(x, size)
        if x.dtype == dtype:
            return load
        return lambda index: ops.to_dtype(load(index), dtype)
    if isinstance(x, (bool, int, float, sympy.Expr, SizeAsFloat)):
        value = x
        return lambda index: scalar(value, dtype)
    raise Unsupported(f"operand of type {type(x).__name__}")


def pointwise(
    fn: Callable,
    args: Sequence[Any],
    compute_dtype: torch.dtype,
    out_dtype: torch.dtype,
    size: Optional[Sequence[int]] = None,
) -> Pointwise:
    """``fn(*operands)`` elementwise over the broadcast of ``args``, computed in ``compute_dtype``
    and converted to ``out_dtype`` when ``fn`` yields another dtype."""
    tensors = [a for a in args if isinstance(a, TensorValue)]
    if size is None:
        size = broadcast_shapes(*[t.size for t in tensors]) if tensors else ()
    loaders = [operand_loader(a, size, compute_dtype) for a in args]
    with set_handler(AnalysisHandler()):
        natural = fn(*[Opaque(compute_dtype) for _ in args]).dtype
    convert = natural != out_dtype

    def inner_fn(index):
        value = fn(*[load(index) for load in loaders])
        return ops.to_dtype(value, out_dtype) if convert else value

    return Pointwise(size, out_dtype, inner_fn)


def is_float(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point


def check_device(ctx, device) -> None:
    """Refuse a factory or copy to a device other than the graph's."""
    if device is not None and not _same_device(torch.device(device), ctx.graph.device):
        raise Unsupported(f"device {device}")


def _same_device(a: torch.device, b: torch.device) -> bool:
    if a.type != b.type:
        return False
    return a.index is None or b.index is None or a.index == b.index


def normalize_dim(dim: int, ndim: int) -> int:
    if ndim == 0 and dim in (0, -1):
        return 0
    if not -max(ndim, 1) <= dim < max(ndim, 1):
        raise Unsupported(f"dim {dim} out of range for rank {ndim}")
    return dim % max(ndim, 1)
