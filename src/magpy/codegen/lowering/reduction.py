"""Lowerings of reductions. Every reduction is realized into its own buffer (the scheduler fuses)."""
from __future__ import annotations

import sympy
import torch

from ..ir import Pointwise, Reduction, TensorValue, as_size, prod
from ..ops import ops
from .registry import Unsupported, aten, normalize_dim, pointwise, register_lowering, scalar

LOW_PRECISION = (torch.float16, torch.bfloat16)


def _reduction_dims(x: TensorValue, dims) -> list[int]:
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return list(range(x.ndim))
    if isinstance(dims, int):
        dims = [dims]
    return sorted({normalize_dim(d, x.ndim) for d in dims}) if x.ndim else []


def make_reduction(ctx, x: TensorValue, dims, keepdim: bool, reduction_type: str,
                   dtype: torch.dtype, input_dtype=None):
    """Reduce ``x`` over ``dims`` with ``reduction_type``; the result has ``dtype``.

    Elements are converted to ``input_dtype`` (default ``dtype``) before reducing; argmax/argmin
    keep the input dtype.
    """
    if not isinstance(x, TensorValue):
        raise Unsupported("reduction of a non-tensor")
    dims = _reduction_dims(x, dims)
    kept = [d for d in range(x.ndim) if d not in dims]
    if keepdim:
        out_size = tuple(1 if d in dims else x.size[d] for d in range(x.ndim))
    else:
        out_size = tuple(x.size[d] for d in kept)
    reduction_size = tuple(x.size[d] for d in dims)
    arg = reduction_type in ("argmax", "argmin")
    if input_dtype is None:
        input_dtype = x.dtype if arg or reduction_type in ("any", "all") else dtype
    if reduction_type in ("any", "all"):
        input_dtype = torch.bool
    loader = x.make_loader()
    source_dtype = x.dtype

    def load(index, rindex):
        full = [None] * x.ndim
        if keepdim:
            for d in kept:
                full[d] = index[d]
        else:
            for i, d in enumerate(kept):
                full[d] = index[i]
        for i, d in enumerate(dims):
            full[d] = rindex[i]
        value = loader(full)
        return value if source_dtype == input_dtype else ops.to_dtype(value, input_dtype)

    if len(reduction_size) == 0 or all(s == 1 for s in reduction_size):
        # Reducing over nothing (or size-1 dims): an elementwise copy.
        zeros = [0] * len(reduction_size)
        if arg:
            return Pointwise(out_size, dtype, lambda index: ops.constant(0, dtype))

        def inner_fn(index):
            value = load(index, zeros)
            return value if input_dtype == dtype else ops.to_dtype(value, dtype)

        return Pointwise(out_size, dtype, inner_fn)
    if reduction_type in NO_IDENTITY:  # (eager raises where they reduce no element)
        ctx.require(sympy.Ge(prod(reduction_size), 1))
    reduction = Reduction(out_size, reduction_size, reduction_type, dtype, input_dtype, load)
    return ctx.graph.realize_reduction(reduction)


# Reductions with no value for no element.
NO_IDENTITY = ("max", "min", "argmax", "argmin")


@register_lowering(aten.sum.dim_IntList, aten.sum.default)
def lower_sum(ctx, x, dim=None, keepdim=False, dtype=None):
    return make_reduction(ctx, x, dim, keepdim, "sum", ctx.dtype)


@register_lowering(aten.prod.dim_int, aten.prod.default)
def lower_prod(ctx, x, dim=None, keepdim=False, dtype=None):
    return make_reduction(ctx, x, dim, keepdim, "prod", ctx.dtype)


@register_lowering(aten.mean.dim, aten.mean.default)
def lower_mean(ctx, x, dim=None, keepdim=False, dtype=None):
    out = ctx.dtype
    if not out.is_floating_point:
        raise Unsupported("integer mean")
    accumulate = torch.float32 if out in LOW_PRECISION else out
    total = make_reduction(ctx, x, dim, keepdim, "sum", accumulate)
    count = prod([x.size[d] for d in _reduction_dims(x, dim)])
    return pointwise(lambda s: ops.truediv(s, _count(count, accumulate)), [total], accumulate, out)


def _count(count, dtype):
    """An element count as a float ``dtype`` ops value (a symbolic one converted at run time)."""
    return scalar(count, dtype) if isinstance(count, sympy.Expr) else ops.constant(float(count), dtype)


@register_lowering(aten.amax, aten.max.default)
def lower_amax(ctx, x, dim=None, keepdim=False):
    return make_reduction(ctx, x, dim, keepdim, "max", ctx.dtype)


@register_lowering(aten.amin, aten.min.default)
def lower_amin(ctx, x, dim=None, keepdim=False):
    return make_reduction(ctx, x, dim, keepdim, "min", ctx.dtype)


@register_lowering(aten.argmax.default)
def lower_argmax(ctx, x, dim=None, keepdim=False):
    return make_reduction(ctx, x, dim, keepdim, "argmax", torch.int64)


@register_lowering(aten.argmin.default)
def lower_argmin(ctx, x, dim=None, keepdim=False):
    return make_reduction(ctx, x, dim, keepdim, "argmin", torch.int64)


@register_lowering(aten.max.dim)
def lower_max_dim(ctx, x, dim, keepdim=False):
    values = make_reduction(ctx, x, dim, keepdim, "max", x.dtype)
    indices = make_reduction(ctx, x, dim, keepdim, "argmax", torch.int64)
    return values, indices


@register_lowering(aten.min.dim)
def lower_min_dim(ctx, x, dim, keepdim=False):
    values = make_reduction(ctx, x, dim, keepdim, "min", x.dtype)
    indices = make_reduction(ctx, x, dim, keepdim, "argmin", torch.int64)
    return values, indices


@register_lowering(aten.any.default, aten.any.dim, aten.any.dims)
def lower_any(ctx, x, dim=None, keepdim=False):
    return make_reduction(ctx, x, dim, keepdim, "any", ctx.dtype)


@register_lowering(aten.all.default, aten.all.dim, aten.all.dims)
def lower_all(ctx, x, dim=None, keepdim=False):
    return make_reduction(ctx, x, dim, keepdim, "all", ctx.dtype)


@register_lowering(torch.ops.prims.sum.default)
def lower_prims_sum(ctx, x, dims, output_dtype=None):
    return make_reduction(ctx, x, list(dims), False, "sum", ctx.dtype)


@register_lowering(torch.ops.prims.var.default)
def lower_prims_var(ctx, x, dims, correction=1, output_dtype=None):
    """Two-pass variance: mean, then the mean of squared deviations (same rows: one kernel)."""
    out = ctx.dtype
    compute = torch.float32 if out in LOW_PRECISION else out
    dims = _reduction_dims(x, list(dims))
    count = prod([x.size[d] for d in dims])
    if isinstance(count, int):
        divisor = max(count - correction, 0)
    elif float(correction).is_integer() and ctx.known(sympy.Ge(count, int(correction))):
        divisor = as_size(count - int(correction))
    else:
        raise Unsupported(f"variance correction {correction} of {count} elements")
    total = make_reduction(ctx, x, dims, True, "sum", compute)
    mean = pointwise(lambda s: ops.truediv(s, _count(count, compute)), [total], compute, compute)
    from .registry import broadcast_loader

    x_load = x.make_loader()
    mean_load = broadcast_loader(mean, x.size)
    source = x.dtype

    def deviation(index):
        v = x_load(index)
        v = v if source == compute else ops.to_dtype(v, compute)
        return ops.sub(v, mean_load(index))

    def squared_deviation(index):
        d = deviation(index)
        return ops.mul(d, d)

    # The corrected two-pass formula (Chan, Golub and LeVeque): the sum of deviations from the
    # computed mean, zero but for that mean's rounding, takes its error out of the sum of squares
    # (float32 rows around 1e6: 6e-4 relative error without it, eager's Welford ~1e-7). Both sums
    # walk the same rows: one more add per element in the same loop.
    squares = make_reduction(ctx, Pointwise(x.size, compute, squared_deviation), dims, False, "sum", compute)
    drift = make_reduction(ctx, Pointwise(x.size, compute, deviation), dims, False, "sum", compute)

    def variance(sq, dr):
        corrected = ops.sub(sq, ops.truediv(ops.mul(dr, dr), _count(count, compute)))
        return ops.truediv(corrected, _count(divisor, compute))

    return pointwise(variance, [squares, drift], compute, out)
