"""Lowerings of pooling windows: max_pool2d as a pointwise maximum over each window.

Each output element loads its window directly (the producer's body is inlined, so a
BatchNorm + ReLU before the pool costs no buffer). Window positions that may fall in the
padding are loaded under ``ops.masked``. Values and indices follow eager's CPU kernel: the
window is scanned row by row, a larger value or a NaN takes the lead, and the index is
``h * W + w`` in the input plane.
"""
from __future__ import annotations

import torch

from ..ir import Pointwise
from ..ir import is_static
from ..ops import ops
from .registry import Unsupported, aten, register_lowering, scalar

# Windows larger than this stay an extern call (the body would grow with the window).
MAX_WINDOW = 64


def _pair(value, name: str) -> tuple[int, int]:
    if isinstance(value, int):
        return value, value
    value = tuple(value)
    if len(value) == 1:
        return value[0], value[0]
    if len(value) != 2:
        raise Unsupported(f"{name} {value}")
    return value


@register_lowering(aten.max_pool2d_with_indices.default)
def lower_max_pool2d_with_indices(ctx, x, kernel_size, stride=(), padding=0, dilation=1,
                                  ceil_mode=False):
    if x.ndim not in (3, 4) or not x.dtype.is_floating_point:
        raise Unsupported("max_pool2d of a non-float or not 3/4-d input")
    kh, kw = _pair(kernel_size, "kernel_size")
    sh, sw = _pair(stride, "stride") if stride else (kh, kw)
    ph, pw = _pair(padding, "padding")
    dh, dw = _pair(dilation, "dilation")
    if kh * kw > MAX_WINDOW:
        raise Unsupported(f"window of {kh * kw} elements")
    if not isinstance(ctx.meta, (tuple, list)) or len(ctx.meta) != 2:
        raise Unsupported("unexpected result")
    size = ctx.graph.sizes.shape(ctx.meta[0])
    height, width = x.size[-2:]
    out_h, out_w = size[-2:]
    # Some window reaches outside the input: its positions there are masked.
    if is_static([height, width, out_h, out_w]):
        masked_h = ph > 0 or (out_h - 1) * sh - ph + (kh - 1) * dh >= height
        masked_w = pw > 0 or (out_w - 1) * sw - pw + (kw - 1) * dw >= width
    else:
        # Symbolic sizes. Without padding, floor mode's output size keeps every window inside
        # (the last one starts at (out - 1) * stride <= size - 1 - (k - 1) * dilation);
        # ceil mode's may not: masks unless the ShapeEnv knows better.
        masked_h = ph > 0 or ceil_mode and not ctx.known((out_h - 1) * sh + (kh - 1) * dh < height)
        masked_w = pw > 0 or ceil_mode and not ctx.known((out_w - 1) * sw + (kw - 1) * dw < width)
    loader = x.make_loader()
    dtype = x.dtype

    def positions(index):
        """(h, w, inside-mask or None) of the window of the output element at ``index``."""
        oh, ow = index[-2], index[-1]
        for i in range(kh):
            for j in range(kw):
                h = oh * sh - ph + i * dh
                w = ow * sw - pw + j * dw
                checks = []
                if masked_h:
                    checks.append(_inside(h, height))
                if masked_w:
                    checks.append(_inside(w, width))
                mask = None
                for c in checks:
                    mask = c if mask is None else ops.logical_and(mask, c)
                yield h, w, mask

    def load(index, h, w, mask):
        where = list(index[:-2]) + [h, w]
        if mask is None:
            return loader(where)
        return ops.masked(mask, lambda: loader(where), float("-inf"))

    def values(index):
        best = None
        for h, w, mask in positions(index):
            v = load(index, h, w, mask)
            best = v if best is None else ops.maximum(best, v)
        return best

    def indices(index):
        window = list(positions(index))
        best = ops.constant(float("-inf"), dtype)
        # Eager starts from the window's first position inside the input.
        first = ops.index_expr(window[-1][0] * width + window[-1][1], torch.int64)
        for h, w, mask in reversed(window[:-1]):
            here = ops.index_expr(h * width + w, torch.int64)
            first = here if mask is None else ops.where(mask, here, first)
        chosen = first
        for h, w, mask in window:
            v = load(index, h, w, mask)
            take = ops.logical_or(ops.gt(v, best), ops.isnan(v))
            if mask is not None:
                take = ops.logical_and(mask, take)
            best = ops.where(take, v, best)
            chosen = ops.where(take, ops.index_expr(h * width + w, torch.int64), chosen)
        return chosen

    return Pointwise(size, dtype, values), Pointwise(size, torch.int64, indices)


def _inside(i, n: int):
    """A bool ops value: 0 <= i < n (i an index expression)."""
    expr = ops.index_expr(i, torch.int64)
    return ops.logical_and(ops.ge(expr, ops.constant(0, torch.int64)),
                           ops.lt(expr, scalar(n, torch.int64)))
