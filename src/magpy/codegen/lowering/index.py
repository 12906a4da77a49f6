"""Lowerings that pick elements by position: cat, constant padding, gather, index, embedding.

Reads that may fall outside their source go through ``ops.masked`` so no handler ever loads out
of bounds; data-dependent positions go through ``ops.indirect_indexing``. Their counterparts that
put elements at positions from data (``index_put``, ``scatter_add``) are in ``scatter.py``.
"""
from __future__ import annotations

import sympy
import torch

from ..checks import GATHER, INDEX, INDEX_SELECT, IndexCheck
from ..ir import Pointwise, TensorValue, as_size
from ..ops import ops
from .registry import Unsupported, aten, broadcast_loader, broadcast_shapes, normalize_dim, register_lowering, scalar


def _in_range(i, lo, hi):
    """A bool ops value: lo <= i < hi (i an index expression; lo, hi sizes, lo >= 0)."""
    checks = []
    if lo != 0:
        checks.append(ops.ge(ops.index_expr(i, torch.int64), scalar(lo, torch.int64)))
    checks.append(ops.lt(ops.index_expr(i, torch.int64), scalar(hi, torch.int64)))
    mask = checks[0]
    for c in checks[1:]:
        mask = ops.logical_and(mask, c)
    return mask


@register_lowering(aten.cat.default)
def lower_cat(ctx, tensors, dim=0):
    size = ctx.size
    dtype = ctx.dtype
    dim = normalize_dim(dim, len(size))
    pieces = []  # (start, end, loader, source dtype)
    start = 0
    for t in tensors:
        if not isinstance(t, TensorValue):
            raise Unsupported("cat of a non-tensor")
        if t.ndim == 1 and t.size[0] == 0 and len(size) != 1:
            continue  # legacy empty tensors take no part
        length = t.size[dim]
        if length != 0:
            pieces.append((start, as_size(start + length), t.make_loader(), t.dtype))
        start = as_size(start + length)
    if not pieces:
        return Pointwise(size, dtype, lambda index: ops.constant(0, dtype))

    def load_piece(piece, index):
        lo, _, loader, source = piece
        shifted = list(index)
        shifted[dim] = index[dim] - lo
        value = loader(shifted)
        return value if source == dtype else ops.to_dtype(value, dtype)

    def inner_fn(index):
        last = pieces[-1]
        value = load_piece(last, index) if len(pieces) == 1 else ops.masked(
            _in_range(index[dim], last[0], last[1]), lambda: load_piece(last, index), 0)
        for piece in reversed(pieces[:-1]):
            inside = _in_range(index[dim], piece[0], piece[1])
            value = ops.where(inside, ops.masked(inside, lambda p=piece: load_piece(p, index), 0), value)
        return value

    return Pointwise(size, dtype, inner_fn)


@register_lowering(aten.constant_pad_nd.default)
def lower_constant_pad_nd(ctx, x, pad, value=0):
    size = ctx.size
    dtype = x.dtype
    ndim = x.ndim
    loader = x.make_loader()
    pads = []  # (dim, before)
    for k in range(len(pad) // 2):
        pads.append((ndim - 1 - k, pad[2 * k]))

    def needs_mask(d, before):
        if isinstance(before, int) and isinstance(x.size[d], int) and isinstance(size[d], int):
            return before > 0 or before + x.size[d] < size[d] or before < 0
        # Symbolic: no mask only where the padding is known to be nothing on both sides.
        return not (before == 0 and ctx.known(sympy.Le(size[d], x.size[d])))

    def inner_fn(index):
        source = list(index)
        masks = []
        for d, before in pads:
            source[d] = index[d] - before
            if needs_mask(d, before):
                masks.append((source[d], x.size[d]))
        if not masks:
            return loader(source)
        mask = None
        for i, n in masks:
            expr = ops.index_expr(i, torch.int64)
            inside = ops.logical_and(ops.ge(expr, ops.constant(0, torch.int64)),
                                     ops.lt(expr, scalar(n, torch.int64)))
            mask = inside if mask is None else ops.logical_and(mask, inside)
        return ops.masked(mask, lambda: loader(source), value)

    return Pointwise(size, dtype, inner_fn)


def _indirect(loader, index, size, check: IndexCheck):
    """An index symbol for the integer value ``loader(index)`` into a dim of ``size``: a position
    out of range is reported as eager's ``check.error`` (and clamped, so nothing reads out of
    bounds before the wrapper raises)."""
    position = loader(index)
    if position.dtype != torch.int64:
        position = ops.to_dtype(position, torch.int64)
    zero, n = ops.constant(0, torch.int64), scalar(size, torch.int64)
    if check.negative:
        position = ops.where(ops.lt(position, zero), ops.add(position, n), position)
    ops.check(ops.logical_and(ops.ge(position, zero), ops.lt(position, n)), check.error)
    return ops.indirect_indexing(position, size)


def _picks_from(ctx, *sizes):
    """Positions from data pick along dims of ``sizes``: each must have an element (its positions are
    clamped into it; eager raises for one out of range, and any is out of an empty dim)."""
    for size in sizes:
        ctx.require(sympy.Ge(size, 1))


@register_lowering(aten.gather.default)
def lower_gather(ctx, x, dim, index, sparse_grad=False):
    dim = normalize_dim(dim, x.ndim)
    x_load = x.make_loader()
    index_load = index.make_loader()
    if x.ndim == 0:
        raise Unsupported("gather from a scalar")
    _picks_from(ctx, x.size[dim])

    def inner_fn(idx):
        position = _indirect(index_load, idx, x.size[dim], GATHER)
        source = list(idx)
        source[dim] = position
        return x_load(source)

    return Pointwise(ctx.size, x.dtype, inner_fn)


def _advanced_index(x, indices, check: IndexCheck):
    """Where ``x[indices]`` (tensors, or None for a whole dim) takes its elements from: (its size, a
    function from an index over that size to a position per dim of x, per dim of that size whether
    it is one of x's own dims taken as it is, the sizes of the dims picked from data). None when
    no index is a tensor."""
    indices = list(indices) + [None] * (x.ndim - len(indices))
    used = [d for d, t in enumerate(indices) if t is not None]
    if not used:
        return None
    for d in used:
        t = indices[d]
        if not isinstance(t, TensorValue) or t.dtype in (torch.bool, torch.uint8):
            raise Unsupported("boolean or non-tensor index")
    index_shape = broadcast_shapes(*[indices[d].size for d in used])
    # Tensor indices next to each other put the indexed dims where they are; apart, first.
    adjacent = used == list(range(used[0], used[-1] + 1))
    before = list(range(used[0])) if adjacent else []
    after = [d for d in range(x.ndim) if d not in used and d not in before]
    k = len(index_shape)
    size = tuple(x.size[d] for d in before) + tuple(index_shape) + tuple(x.size[d] for d in after)
    loaders = {d: broadcast_loader(indices[d], index_shape) for d in used}

    def position(idx):
        idx = list(idx)
        broadcast_index = idx[len(before):len(before) + k]
        source = [None] * x.ndim
        for i, d in enumerate(before):
            source[d] = idx[i]
        for i, d in enumerate(after):
            source[d] = idx[len(before) + k + i]
        for d in used:
            source[d] = _indirect(loaders[d], broadcast_index, x.size[d], check)
        return source

    disjoint = (True,) * len(before) + (False,) * k + (True,) * len(after)
    return size, position, disjoint, [x.size[d] for d in used]


@register_lowering(aten.index.Tensor)
def lower_index(ctx, x, indices):
    geometry = _advanced_index(x, indices, INDEX)
    if geometry is None:
        return x
    size, position, _, picked = geometry
    if size != ctx.size:
        raise Unsupported(f"index result {size} != {ctx.size}")
    _picks_from(ctx, *picked)
    x_load = x.make_loader()
    return Pointwise(size, x.dtype, lambda idx: x_load(position(idx)))


@register_lowering(aten.embedding.default)
def lower_embedding(ctx, weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    if weight.ndim != 2:
        raise Unsupported("embedding weight must be 2-D")
    _picks_from(ctx, weight.size[0])
    w_load = weight.make_loader()
    i_load = indices.make_loader()
    k = indices.ndim

    def inner_fn(idx):
        row = _indirect(i_load, list(idx[:k]), weight.size[0], INDEX_SELECT)
        return w_load([row, idx[k]])

    return Pointwise(ctx.size, weight.dtype, inner_fn)


@register_lowering(aten.index_select.default)
def lower_index_select(ctx, x, dim, index):
    dim = normalize_dim(dim, x.ndim)
    _picks_from(ctx, x.size[dim])
    x_load = x.make_loader()
    i_load = index.make_loader()

    def inner_fn(idx):
        source = list(idx)
        source[dim] = _indirect(i_load, [idx[dim]] if index.ndim else [], x.size[dim], INDEX_SELECT)
        return x_load(source)

    return Pointwise(ctx.size, x.dtype, inner_fn)
