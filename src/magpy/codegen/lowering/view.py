"""Lowerings of views: each is an index remap over the viewed value (no data moves).

``VIEW_OPS`` lists the overloads lowered here: when such a node is a graph output or feeds an
extern call, the graph makes a real torch view in the wrapper instead of copying.
"""
from __future__ import annotations

import sympy

from ..ir import BufferValue, FloorDiv, ModIndex, Pointwise, TensorValue, as_size, is_static, prod
from .registry import Unsupported, aten, normalize_dim, prims, register_lowering

VIEW_OPS: set = set()


def register_view(*targets):
    def decorate(fn):
        register_lowering(*targets)(fn)
        from .registry import _overloads

        for t in targets:
            VIEW_OPS.update(_overloads(t))
        return fn

    return decorate


def remap(x: TensorValue, size, index_fn) -> Pointwise:
    """The value of ``size`` whose element at ``index`` is ``x[index_fn(index)]``."""
    loader = x.make_loader()
    return Pointwise(size, x.dtype, lambda index: loader(index_fn(list(index))))


def _divides(a, b) -> bool:
    """Whether a reshape group whose old product is ``a`` and new one ``b`` grows on the old side
    (``a`` < ``b``). For symbolic sizes: ``b / a`` is a polynomial, not 1 (if that guess is wrong
    the products never meet and the reshape is Unsupported — never a wrong index)."""
    if isinstance(a, int) and isinstance(b, int):
        return a < b
    quotient = sympy.cancel(sympy.sympify(b) / a)
    numerator, denominator = sympy.fraction(quotient)
    return quotient != 1 and denominator == 1 and not (quotient.is_Integer and quotient < 1)


def reshape_indexer(old_size, new_size):
    """index over ``new_size`` -> index over ``old_size`` for a row-major reshape.

    Symbolic sizes are grouped structurally (``s0*s1`` is ``s0`` then ``s1``); sizes whose
    products cannot be matched that way are Unsupported.
    """
    old_size = [as_size(s) for s in old_size]
    new_size = [as_size(s) for s in new_size]
    static = is_static(old_size) and is_static(new_size)
    if sympy.expand(prod(old_size) - prod(new_size)) != 0:
        raise Unsupported(f"reshape {old_size} -> {new_size}")
    if prod(old_size) == 0:
        return lambda index: [sympy.Integer(0)] * len(old_size)
    old_dims = [d for d, s in enumerate(old_size) if s != 1]
    new_dims = [d for d, s in enumerate(new_size) if s != 1]
    groups = []  # (old dims, new dims) with equal products
    i = j = 0
    while i < len(old_dims) and j < len(new_dims):
        og, ng = [old_dims[i]], [new_dims[j]]
        po, pn = old_size[old_dims[i]], new_size[new_dims[j]]
        i, j = i + 1, j + 1
        while sympy.expand(po - pn) != 0:
            if _divides(po, pn) and i < len(old_dims):
                og.append(old_dims[i])
                po = as_size(po * old_size[old_dims[i]])
                i += 1
            elif _divides(pn, po) and j < len(new_dims):
                ng.append(new_dims[j])
                pn = as_size(pn * new_size[new_dims[j]])
                j += 1
            else:
                raise Unsupported(f"reshape {old_size} -> {new_size}")
        groups.append((og, ng))
    if not static and (i < len(old_dims) or j < len(new_dims)):
        raise Unsupported(f"reshape {old_size} -> {new_size}")

    def index_fn(index):
        old = [sympy.Integer(0)] * len(old_size)
        for og, ng in groups:
            if len(og) == 1 and len(ng) == 1:
                old[og[0]] = index[ng[0]]
                continue
            flat = sympy.Integer(0)
            for d in ng:
                flat = flat * new_size[d] + index[d]
            stride = prod([old_size[d] for d in og])
            for k, d in enumerate(og):
                stride = as_size(stride // old_size[d] if is_static([stride, old_size[d]])
                                 else sympy.cancel(sympy.sympify(stride) / old_size[d]))
                part = FloorDiv(flat, sympy.sympify(stride))
                old[d] = part if k == 0 else ModIndex(part, sympy.sympify(old_size[d]))
        return old

    return index_fn


@register_view(aten.view.default, aten._unsafe_view.default, aten.reshape.default)
def lower_view(ctx, x, size):
    new_size = ctx.size
    return remap(x, new_size, reshape_indexer(x.size, new_size))


@register_view(aten.permute.default)
def lower_permute(ctx, x, dims):
    dims = [normalize_dim(d, x.ndim) for d in dims]
    size = tuple(x.size[d] for d in dims)

    def index_fn(index):
        old = [None] * x.ndim
        for i, d in enumerate(dims):
            old[d] = index[i]
        return old

    return remap(x, size, index_fn)


@register_view(aten.transpose.int)
def lower_transpose(ctx, x, dim0, dim1):
    if x.ndim == 0:
        return x
    a, b = normalize_dim(dim0, x.ndim), normalize_dim(dim1, x.ndim)
    dims = list(range(x.ndim))
    dims[a], dims[b] = dims[b], dims[a]
    return lower_permute(ctx, x, dims)


@register_view(aten.t.default)
def lower_t(ctx, x):
    return x if x.ndim < 2 else lower_permute(ctx, x, [1, 0])


@register_view(aten.expand.default)
def lower_expand(ctx, x, size, implicit=False):
    new_size = ctx.size
    offset = len(new_size) - x.ndim

    def index_fn(index):
        return [sympy.Integer(0) if x.size[d] == 1 else index[offset + d] for d in range(x.ndim)]

    return remap(x, new_size, index_fn)


@register_view(aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims)
def lower_squeeze(ctx, x, dim=None):
    if dim is None:
        dims = {d for d in range(x.ndim) if x.size[d] == 1}
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = {normalize_dim(d, x.ndim) for d in dims} if x.ndim else set()
        dims = {d for d in dims if x.size[d] == 1}
    kept = [d for d in range(x.ndim) if d not in dims]

    def index_fn(index):
        old = [sympy.Integer(0)] * x.ndim
        for i, d in enumerate(kept):
            old[d] = index[i]
        return old

    return remap(x, tuple(x.size[d] for d in kept), index_fn)


@register_view(aten.unsqueeze.default)
def lower_unsqueeze(ctx, x, dim):
    dim = dim % (x.ndim + 1)
    size = x.size[:dim] + (1,) + x.size[dim:]
    return remap(x, size, lambda index: index[:dim] + index[dim + 1:])


@register_view(aten.slice.Tensor)
def lower_slice(ctx, x, dim=0, start=None, end=None, step=1):
    dim = normalize_dim(dim, x.ndim)
    n = x.size[dim]
    start = 0 if start is None else start
    end = n if end is None else end
    if is_static([n, start, end, step]):
        start = max(0, min(n, start + n if start < 0 else start))
        end = max(start, min(n, end + n if end < 0 else end))
        length = (end - start + step - 1) // step
    else:
        start, end = _symbolic_bounds(ctx, n, start, end, step)
        length = as_size(FloorDiv(sympy.sympify(end - start + step - 1), sympy.Integer(step)))
    size = x.size[:dim] + (length,) + x.size[dim + 1:]
    if not all(ctx.graph.sizes.equal(a, b) for a, b in zip(size, ctx.size)):
        raise Unsupported(f"slice size {size} != {ctx.size}")

    def index_fn(index):
        return index[:dim] + [start + index[dim] * step] + index[dim + 1:]

    return remap(x, size, index_fn)


def _symbolic_bounds(ctx, n, start, end, step):
    """(start, end) of a slice of a dim of ``n`` elements, 0 <= start <= end <= n, where some of
    them are symbolic: what Python's clamping gives, where the ShapeEnv knows which way each
    comparison goes (else Unsupported: the slice runs as a torch view)."""
    if not isinstance(step, int) or step < 1:
        raise Unsupported(f"slice step {step}")
    start = _slice_position(ctx, n, start)
    if isinstance(end, int) and end >= 2**62:
        end = n
    end = _slice_position(ctx, n, end)
    if not ctx.known(sympy.Ge(end, start)):
        raise Unsupported(f"slice end {end} before start {start}")
    return start, end


def _slice_position(ctx, n, position):
    """``position`` counted from the end if negative, clamped to [0, n]."""
    if isinstance(position, int) and position < 0 or ctx.known(sympy.Lt(position, 0)):
        position = as_size(position + n)
        if not ctx.known(sympy.Ge(position, 0)):
            raise Unsupported(f"slice position {position} may be negative")
        return position
    if ctx.known(sympy.Ge(position, n)):
        return n
    if not (ctx.known(sympy.Ge(position, 0)) and ctx.known(sympy.Le(position, n))):
        raise Unsupported(f"slice position {position} not known within [0, {n}]")
    return position


@register_view(aten.select.int)
def lower_select(ctx, x, dim, index):
    dim = normalize_dim(dim, x.ndim)
    if isinstance(index, int) and isinstance(x.size[dim], int):
        position = index + x.size[dim] if index < 0 else index
    elif ctx.known(sympy.Ge(index, 0)):
        position = index
    elif ctx.known(sympy.Lt(index, 0)):
        position = as_size(index + x.size[dim])
    else:
        raise Unsupported(f"select at {index}, of unknown sign")
    size = x.size[:dim] + x.size[dim + 1:]
    return remap(x, size, lambda idx: idx[:dim] + [sympy.sympify(position)] + idx[dim:])


@register_view(aten.alias.default, aten.detach.default, aten.lift_fresh.default)
def lower_alias(ctx, x):
    return x


@register_view(aten.as_strided.default)
def lower_as_strided(ctx, x, size, stride, storage_offset=None):
    # Only a buffer that owns its whole storage, laid out as eager lays it out, can be re-strided.
    if not (isinstance(x, BufferValue) and ctx.graph.owns_storage(ctx.node.args[0], x)):
        raise Unsupported("as_strided of a value without its own storage")
    offset = storage_offset or 0
    name, dtype = x.name, x.dtype
    from ..ops import ops

    def inner_fn(index):
        expr = sympy.Integer(offset)
        for i, st in zip(index, stride):
            expr = expr + i * st
        return ops.load(name, expr)

    return Pointwise(ctx.size, dtype, inner_fn)


@register_view(prims.broadcast_in_dim.default)
def lower_broadcast_in_dim(ctx, x, shape, broadcast_dimensions):
    dims = list(broadcast_dimensions)

    def index_fn(index):
        return [sympy.Integer(0) if x.size[i] == 1 else index[d] for i, d in enumerate(dims)]

    return remap(x, ctx.size, index_fn)


@register_view(prims.rev.default)
def lower_rev(ctx, x, dims):
    flipped = {normalize_dim(d, x.ndim) for d in dims}

    def index_fn(index):
        return [x.size[d] - 1 - i if d in flipped else i for d, i in enumerate(index)]

    return remap(x, x.size, index_fn)


@register_view(aten.diagonal.default)
def lower_diagonal(ctx, x, offset=0, dim1=0, dim2=1):
    d1, d2 = normalize_dim(dim1, x.ndim), normalize_dim(dim2, x.ndim)
    if d1 == d2:
        raise Unsupported("diagonal of one dim")
    kept = [d for d in range(x.ndim) if d not in (d1, d2)]
    size = ctx.size

    def index_fn(index):
        old = [None] * x.ndim
        for i, d in enumerate(kept):
            old[d] = index[i]
        i = index[-1]
        old[d1] = i + max(-offset, 0)
        old[d2] = i + max(offset, 0)
        return old

    return remap(x, size, index_fn)


@register_lowering(aten.repeat.default)
def lower_repeat(ctx, x, repeats):
    offset = len(repeats) - x.ndim

    def index_fn(index):
        return [sympy.Integer(0) if x.size[d] == 1 else ModIndex(index[offset + d], sympy.sympify(x.size[d]))
                for d in range(x.ndim)]

    return remap(x, ctx.size, index_fn)


@register_view(aten.split_with_sizes.default)
def lower_split_with_sizes(ctx, x, split_sizes, dim=0):
    dim = normalize_dim(dim, x.ndim)
    pieces, start = [], 0
    for length in split_sizes:
        pieces.append(_slice(x, dim, start, length))
        start = as_size(start + length)
    return tuple(pieces)


@register_view(aten.split.Tensor)
def lower_split(ctx, x, split_size, dim=0):
    dim = normalize_dim(dim, x.ndim)
    n = x.size[dim]
    if not is_static([n, split_size]):
        # How many pieces, and how long: what torch traced (its guards chose the count).
        if not isinstance(ctx.meta, (tuple, list)):
            raise Unsupported("split without a tuple result")
        lengths = [ctx.graph.sizes.shape(m)[dim] for m in ctx.meta]
        return lower_split_with_sizes(ctx, x, lengths, dim)
    if split_size <= 0:
        raise Unsupported("split size 0")
    starts = list(range(0, n, split_size)) or [0]
    return tuple(_slice(x, dim, s, min(split_size, n - s)) for s in starts)


@register_view(aten.unbind.int)
def lower_unbind(ctx, x, dim=0):
    dim = normalize_dim(dim, x.ndim)
    if not isinstance(x.size[dim], int):
        raise Unsupported("unbind of a symbolic dim")
    pieces = []
    for i in range(x.size[dim]):
        pieces.append(remap(x, x.size[:dim] + x.size[dim + 1:],
                            lambda idx, i=i: idx[:dim] + [sympy.Integer(i)] + idx[dim:]))
    return tuple(pieces)


def _slice(x, dim, start, length):
    size = x.size[:dim] + (length,) + x.size[dim + 1:]
    return remap(x, size, lambda index: index[:dim] + [start + index[dim]] + index[dim + 1:])
