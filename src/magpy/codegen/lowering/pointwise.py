"""Lowerings of elementwise math, comparisons, casts and factories (tables first, then the odd ones)."""
from __future__ import annotations

import math

import sympy
import torch

from ..checks import ZERO_DIVISION
from ..ir import Pointwise, TensorValue
from ..ops import ops
from ..sizes import SizeAsFloat
from .registry import (
    Unsupported,
    aten,
    broadcast_loader,
    operand_loader,
    check_device,
    pointwise,
    prims,
    promote,
    register_lowering,
    scalar,
)

# aten op -> ops name. Computed in the result dtype (inputs converted to it first).
UNARY = {
    aten.abs: "abs",
    aten.neg: "neg",
    aten.exp: "exp",
    aten.exp2: "exp2",
    aten.expm1: "expm1",
    aten.log: "log",
    aten.log2: "log2",
    aten.log10: "log10",
    aten.log1p: "log1p",
    aten.sqrt: "sqrt",
    aten.rsqrt: "rsqrt",
    aten.sin: "sin",
    aten.cos: "cos",
    aten.tan: "tan",
    aten.asin: "asin",
    aten.acos: "acos",
    aten.atan: "atan",
    aten.sinh: "sinh",
    aten.cosh: "cosh",
    aten.tanh: "tanh",
    aten.asinh: "asinh",
    aten.acosh: "acosh",
    aten.atanh: "atanh",
    aten.erf: "erf",
    aten.erfc: "erfc",
    aten.sigmoid: "sigmoid",
    aten.reciprocal: "reciprocal",
    aten.floor: "floor",
    aten.ceil: "ceil",
    aten.trunc: "trunc",
    aten.sign: "sign",
    aten.lgamma: "lgamma",
    aten.relu: "relu",
    aten.bitwise_not: "bitwise_not",
    aten.square: "square",
}
# aten op -> ops name; the result is bool, computed in the input dtype.
UNARY_PREDICATES = {
    aten.isnan: "isnan",
    aten.isinf: "isinf",
    aten.signbit: "signbit",
}
# Computed in the promoted dtype of the operands; the result dtype comes from the node.
BINARY = {
    aten.mul: "mul",
    aten.maximum: "maximum",
    aten.minimum: "minimum",
    aten.atan2: "atan2",
    aten.copysign: "copysign",
    aten.hypot: "hypot",
    aten.remainder: "remainder",
    aten.fmod: "fmod",
    aten.bitwise_and: "bitwise_and",
    aten.bitwise_or: "bitwise_or",
    aten.bitwise_xor: "bitwise_xor",
}
# Divisions eager refuses a zero divisor for on integers (RuntimeError "ZeroDivisionError"; on
# floats they give inf or NaN).
INTEGER_DIVISIONS = frozenset({"floordiv", "truncdiv", "remainder", "fmod"})


COMPARISONS = {
    aten.eq: "eq",
    aten.ne: "ne",
    aten.lt: "lt",
    aten.le: "le",
    aten.gt: "gt",
    aten.ge: "ge",
}
LOGICAL = {
    aten.logical_and: "logical_and",
    aten.logical_or: "logical_or",
    aten.logical_xor: "logical_xor",
}


# Ops whose result element i depends on their operands' elements i alone (same size in and out):
# a value used several times through them alone can be recomputed in the one kernel they meet in.
ELEMENTWISE = frozenset(
    [*UNARY, *UNARY_PREDICATES, *BINARY, *COMPARISONS, *LOGICAL]
    + [aten.add, aten.sub, aten.rsub, aten.div, aten.where, aten.clamp, aten.clamp_min, aten.clamp_max,
       aten.pow, aten.logical_not, aten._to_copy, prims.convert_element_type]
)


def _unary(name):
    def lower(ctx, x):
        return pointwise(getattr(ops, name), [x], ctx.dtype, ctx.dtype)

    return lower


def _predicate(name):
    def lower(ctx, x):
        return pointwise(getattr(ops, name), [x], x.dtype, torch.bool)

    return lower


def _binary(name):
    def lower(ctx, a, b):
        compute = ctx.dtype if ctx.dtype != torch.bool else promote(a, b)
        return pointwise(getattr(ops, name), [a, b], compute, ctx.dtype)

    return lower


def _comparison(name):
    def lower(ctx, a, b):
        return pointwise(getattr(ops, name), [a, b], promote(a, b), torch.bool)

    return lower


def _logical(name):
    def lower(ctx, a, b):
        return pointwise(getattr(ops, name), [a, b], torch.bool, torch.bool)

    return lower


for _op, _name in UNARY.items():
    register_lowering(_op)(_unary(_name))
for _op, _name in UNARY_PREDICATES.items():
    register_lowering(_op)(_predicate(_name))
for _op, _name in BINARY.items():
    if _name not in INTEGER_DIVISIONS:
        register_lowering(_op)(_binary(_name))
for _op, _name in COMPARISONS.items():
    register_lowering(_op)(_comparison(_name))
for _op, _name in LOGICAL.items():
    register_lowering(_op)(_logical(_name))


def division(ctx, name, a, b, dtype):
    """``ops.<name>(a, b)`` elementwise in ``dtype``, raising as eager does for an integer divisor 0:
    a tensor divisor is checked by the kernel (``ops.check``), a symbolic int one by the wrapper
    before any kernel runs (a call where it is 0 runs eagerly, which raises), a constant 0 is left
    to eager (an extern call)."""
    op = getattr(ops, name)
    if name not in INTEGER_DIVISIONS or dtype.is_floating_point or dtype == torch.bool:
        return pointwise(op, [a, b], dtype, dtype)
    if isinstance(b, TensorValue):
        def checked(x, y):
            ops.check(ops.ne(y, ops.constant(0, dtype)), ZERO_DIVISION)
            return op(x, y)

        return pointwise(checked, [a, b], dtype, dtype)
    if isinstance(b, sympy.Expr) and b.free_symbols:
        ctx.require(sympy.Ne(b, 0))
    elif b == 0:
        raise Unsupported("integer division by zero (eager raises)")
    return pointwise(op, [a, b], dtype, dtype)


def _integer_division(name):
    def lower(ctx, a, b):
        return division(ctx, name, a, b, ctx.dtype)

    return lower


for _op, _name in BINARY.items():
    if _name in INTEGER_DIVISIONS:
        register_lowering(_op)(_integer_division(_name))


@register_lowering(aten.logical_not)
def lower_logical_not(ctx, x):
    return pointwise(ops.logical_not, [x], torch.bool, torch.bool)


@register_lowering(aten.round.default)
def lower_round(ctx, x):
    return pointwise(ops.round, [x], ctx.dtype, ctx.dtype)


@register_lowering(aten.isfinite)
def lower_isfinite(ctx, x):
    if not x.dtype.is_floating_point:
        return pointwise(lambda v: ops.constant(True, torch.bool), [x], x.dtype, torch.bool)
    return pointwise(lambda v: ops.logical_not(ops.logical_or(ops.isnan(v), ops.isinf(v))),
                     [x], x.dtype, torch.bool)


@register_lowering(aten.add.Tensor, aten.add.Scalar, aten.sub.Tensor, aten.sub.Scalar)
def lower_add_sub(ctx, a, b, alpha=1):
    name = ctx.node.target.overloadpacket.__name__
    combine = ops.add if name == "add" else ops.sub
    if ctx.dtype == torch.bool:
        if alpha != 1 or name != "add":
            raise Unsupported("bool sub or alpha")
        return pointwise(ops.logical_or, [a, b], torch.bool, torch.bool)
    if alpha == 1:
        return pointwise(combine, [a, b], ctx.dtype, ctx.dtype)
    dtype = ctx.dtype
    return pointwise(lambda x, y: combine(x, ops.mul(y, scalar(alpha, dtype))),
                     [a, b], dtype, dtype)


@register_lowering(aten.rsub.Scalar, aten.rsub.Tensor)
def lower_rsub(ctx, a, b, alpha=1):
    dtype = ctx.dtype
    return pointwise(lambda x, y: ops.sub(y, ops.mul(x, scalar(alpha, dtype))), [a, b], dtype, dtype)


@register_lowering(aten.div.Tensor, aten.div.Scalar, aten.true_divide)
def lower_div(ctx, a, b):
    return pointwise(ops.truediv, [a, b], ctx.dtype, ctx.dtype)


@register_lowering(aten.div.Tensor_mode, aten.div.Scalar_mode)
def lower_div_mode(ctx, a, b, rounding_mode=None):
    dtype = ctx.dtype
    if rounding_mode is None:
        return pointwise(ops.truediv, [a, b], dtype, dtype)
    if dtype.is_floating_point and rounding_mode == "trunc":
        return pointwise(lambda x, y: ops.trunc(ops.truediv(x, y)), [a, b], dtype, dtype)
    # (float floor division is ``ops.floordiv`` too: eager's is not floor(a / b), whose rounded
    # quotient is off by one where a / b rounds up to an integer — 3.0 // 0.3 is 9)
    return division(ctx, "floordiv" if rounding_mode == "floor" else "truncdiv", a, b, dtype)


@register_lowering(aten.floor_divide)
def lower_floor_divide(ctx, a, b):
    return division(ctx, "floordiv", a, b, ctx.dtype)


@register_lowering(aten.pow)
def lower_pow(ctx, base, exponent):
    dtype = ctx.dtype
    if isinstance(exponent, (int, float)) and not isinstance(exponent, bool):
        if exponent == 2:
            return pointwise(lambda x: ops.mul(x, x), [base], dtype, dtype)
        if exponent == 1:
            return pointwise(lambda x: x, [base], dtype, dtype)
        if exponent == 0.5 and dtype.is_floating_point:
            return pointwise(ops.sqrt, [base], dtype, dtype)
        if exponent == 3:
            return pointwise(lambda x: ops.mul(ops.mul(x, x), x), [base], dtype, dtype)
    if not dtype.is_floating_point and isinstance(exponent, (int, float)) and exponent < 0:
        raise Unsupported("negative integer power")
    if not dtype.is_floating_point and isinstance(exponent, sympy.Expr) and exponent.free_symbols:
        # eager raises for an integer base to a negative number power: the wrapper runs such a
        # call eagerly (a tensor exponent gives 0, 1 or -1, as the kernels do)
        ctx.require(sympy.Ge(exponent, 0))
    if isinstance(exponent, SizeAsFloat) and dtype.is_floating_point:
        # a float input as exponent: eager takes sqrt and rsqrt for 0.5 and -0.5, which differ from
        # pow at -0.0 and -inf
        def fn(x, e):
            pow_ = ops.where(ops.eq(e, ops.constant(-0.5, dtype)), ops.rsqrt(x), ops.pow(x, e))
            return ops.where(ops.eq(e, ops.constant(0.5, dtype)), ops.sqrt(x), pow_)

        return pointwise(fn, [base, exponent], dtype, dtype)
    return pointwise(ops.pow, [base, exponent], dtype, dtype)


@register_lowering(aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther, aten.where.Scalar)
def lower_where(ctx, cond, a, b):
    dtype = ctx.dtype
    size = ctx.size
    cond_load = broadcast_loader(cond, size) if isinstance(cond, TensorValue) else None
    if cond_load is None:
        raise Unsupported("scalar condition")
    load_a = operand_loader(a, size, dtype)
    load_b = operand_loader(b, size, dtype)
    cond_dtype = cond.dtype

    def inner_fn(index):
        c = cond_load(index)
        if cond_dtype != torch.bool:
            c = ops.to_dtype(c, torch.bool)
        return ops.where(c, load_a(index), load_b(index))

    return Pointwise(size, dtype, inner_fn)


def _clamp(ctx, x, lo, hi):
    dtype = ctx.dtype

    def fn(v, *bounds):
        bounds = list(bounds)
        if lo is not None:
            v = ops.maximum(v, bounds.pop(0))
        if hi is not None:
            v = ops.minimum(v, bounds.pop(0))
        return v

    args = [x] + [b for b in (lo, hi) if b is not None]
    return pointwise(fn, args, dtype, dtype, size=ctx.size)


@register_lowering(aten.clamp.default, aten.clamp.Tensor)
def lower_clamp(ctx, x, min=None, max=None):
    return _clamp(ctx, x, min, max)


@register_lowering(aten.clamp_min)
def lower_clamp_min(ctx, x, min):
    return _clamp(ctx, x, min, None)


@register_lowering(aten.clamp_max)
def lower_clamp_max(ctx, x, max):
    return _clamp(ctx, x, None, max)


@register_lowering(aten.nan_to_num)
def lower_nan_to_num(ctx, x, nan=None, posinf=None, neginf=None):
    dtype = ctx.dtype
    if not dtype.is_floating_point:
        return pointwise(lambda v: v, [x], dtype, dtype)
    info = torch.finfo(dtype)
    nan_value = 0.0 if nan is None else nan
    pos = info.max if posinf is None else posinf
    neg = info.min if neginf is None else neginf

    def fn(v):
        zero = ops.constant(0.0, dtype)
        inf = ops.isinf(v)
        replaced = ops.where(ops.gt(v, zero), ops.constant(pos, dtype), ops.constant(neg, dtype))
        v = ops.where(inf, replaced, v)
        return ops.where(ops.isnan(v), ops.constant(nan_value, dtype), v)

    return pointwise(fn, [x], dtype, dtype)


# ----------------------------------------------------------------------------------------------
# Casts and copies


def _cast(x, dtype):
    if not isinstance(x, TensorValue):
        raise Unsupported("cast of a non-tensor")
    return pointwise(lambda v: v, [x], dtype, dtype)


@register_lowering(aten._to_copy.default)
def lower_to_copy(ctx, x, dtype=None, layout=None, device=None, pin_memory=None,
                  non_blocking=False, memory_format=None):
    check_device(ctx, device)
    if layout not in (None, torch.strided):
        raise Unsupported(f"layout {layout}")
    return _cast(x, ctx.dtype)


@register_lowering(prims.convert_element_type.default)
def lower_convert_element_type(ctx, x, dtype):
    return _cast(x, dtype)


@register_lowering(aten.clone.default, aten.lift_fresh_copy.default)
def lower_clone(ctx, x, memory_format=None):
    return _cast(x, x.dtype)


@register_lowering(aten.copy.default)
def lower_copy(ctx, dst, src, non_blocking=False):
    return pointwise(lambda v: v, [src], dst.dtype, dst.dtype, size=dst.size)


@register_lowering(aten.fill.Scalar)
def lower_fill(ctx, x, value):
    dtype = ctx.dtype
    return Pointwise(x.size, dtype, lambda index: scalar(value, dtype))


# ----------------------------------------------------------------------------------------------
# Factories (size and dtype come from the node's result)


def _factory(ctx, value, device=None):
    check_device(ctx, device)
    dtype = ctx.dtype
    return Pointwise(ctx.size, dtype, lambda index: scalar(value, dtype))


@register_lowering(aten.full.default)
def lower_full(ctx, size, fill_value, dtype=None, layout=None, device=None, pin_memory=None):
    return _factory(ctx, fill_value, device)


@register_lowering(aten.full_like.default)
def lower_full_like(ctx, x, fill_value, dtype=None, layout=None, device=None, pin_memory=None,
                    memory_format=None):
    return _factory(ctx, fill_value, device)


@register_lowering(aten.scalar_tensor.default)
def lower_scalar_tensor(ctx, value, dtype=None, layout=None, device=None, pin_memory=None):
    return _factory(ctx, value, device)


@register_lowering(aten.zeros.default, aten.empty.memory_format, aten.new_zeros.default,
                   aten.zeros_like.default, aten.empty_like.default)
def lower_zeros(ctx, *args, device=None, **kwargs):
    # ``empty`` has unspecified contents: zeros are a valid choice.
    return _factory(ctx, 0, device)


@register_lowering(aten.empty_strided.default)
def lower_empty_strided(ctx, size, stride, dtype=None, layout=None, device=None, pin_memory=None):
    return _factory(ctx, 0, device)


@register_lowering(aten.ones.default, aten.ones_like.default, aten.new_ones.default)
def lower_ones(ctx, *args, device=None, **kwargs):
    return _factory(ctx, 1, device)


@register_lowering(aten.arange.start_step, aten.arange.default, aten.arange.start)
def lower_arange(ctx, *args, dtype=None, layout=None, device=None, pin_memory=None):
    check_device(ctx, device)
    numbers = list(args)
    if len(numbers) == 1:
        start, end, step = 0, numbers[0], 1
    elif len(numbers) == 2:
        (start, end), step = numbers, 1
    else:
        start, end, step = numbers
    out = ctx.dtype
    if all(isinstance(v, int) for v in (start, step)) and not out.is_floating_point:
        return Pointwise(ctx.size, out, lambda index: ops.index_expr(start + index[0] * step, out))

    def inner_fn(index):
        i = ops.to_dtype(ops.index_expr(index[0], torch.int64), torch.float64)
        value = ops.add(ops.mul(i, scalar(step, torch.float64)), scalar(start, torch.float64))
        return ops.to_dtype(value, out)

    return Pointwise(ctx.size, out, inner_fn)


@register_lowering(prims.iota.default)
def lower_iota(ctx, length, *, start, step, dtype, device, requires_grad):
    check_device(ctx, device)
    return Pointwise(ctx.size, dtype, lambda index: ops.index_expr(start + index[0] * step, dtype))


@register_lowering(prims.div.default)
def lower_prims_div(ctx, a, b):
    dtype = ctx.dtype
    if dtype.is_floating_point:
        return pointwise(ops.truediv, [a, b], dtype, dtype)
    return division(ctx, "truncdiv", a, b, dtype)


@register_lowering(prims.hypot.default)
def lower_prims_hypot(ctx, a, b):
    return pointwise(ops.hypot, [a, b], ctx.dtype, ctx.dtype)
