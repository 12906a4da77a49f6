"""Lowerings that put elements at positions taken from data: index_put, index_add, index_copy,
scatter_add, scatter_reduce (sum).

Each becomes a ``ScatterBuffer``: a copy of the tensor written into (a buffer made for it alone),
then a kernel of its own updating that copy in place (``cpp/scatter.py``, ``triton/scatter.py``).
Positions are checked as gathers check theirs (``checks.py``): one out of range raises eager's
exception, after the kernel, which clamps it meanwhile.

Two shapes of graph make fewer kernels:

* an ``index_put`` into the result of another one that nothing else reads updates that buffer in
  place, without a copy — and adds over the same indices join its kernel (``ScatterBuffer.add_update``);
* gradients of several gathers from one tensor, ``index_put(zeros, ...) + index_put(zeros, ...)``,
  are accumulated into one buffer (``accumulate_scatters``, on the fx graph before lowering): the
  backward of ``F.interpolate(mode="bilinear")`` is four such gradients, one kernel here.
"""
from __future__ import annotations

import torch

from ..checks import INDEX, INDEX_SELECT, SCATTER
from ..ir import BufferValue, Pointwise, Scatter, ScatterBuffer, TensorValue
from ..ops import ops
from .index import _advanced_index, _indirect, _picks_from
from .registry import Unsupported, aten, broadcast_loader, normalize_dim, register_lowering, scalar

# Dtypes an update may add into: every kernel adds with a plain or an atomic add of the element's
# own type (no atomic add of half floats on a CPU; bools add as a logical or in eager).
ADD_DTYPES = (torch.float32, torch.float64, torch.int32, torch.int64)

def _check_add(dtype: torch.dtype) -> None:
    if dtype not in ADD_DTYPES:
        raise Unsupported(f"adding into {dtype} at positions from data")
    if torch.are_deterministic_algorithms_enabled():
        # (our parallel adds may take another order from run to run; eager's kernel for this mode
        # does not)
        raise Unsupported("deterministic algorithms asked for")


def _values(value: TensorValue, size, dtype):
    load = broadcast_loader(value, size)
    if value.dtype == dtype:
        return load
    return lambda index: ops.to_dtype(load(index), dtype)


def _written_in_place(ctx, x) -> ScatterBuffer | None:
    """The ScatterBuffer whose result ``x`` is, when nothing but this node reads it (it is the
    node's first argument, read by it alone, or was made by this node's own lowering): then this
    node may update it in place."""
    graph, arg = ctx.graph, ctx.node.args[0]
    if not isinstance(x, BufferValue):
        return None
    owner = graph.owner.get(x.name)
    if owner is not ctx.node and not (owner is arg and graph.read_only_by(arg, ctx.node)):
        return None
    for node in reversed(graph.nodes):
        if isinstance(node, ScatterBuffer) and node.name == x.name:
            return node
    return None


def scatter(ctx, x, size, mode: str, indexer, inner_fn, disjoint) -> BufferValue:
    """``x`` with ``inner_fn(index)`` stored into (``mode`` "store") or added to (``mode`` "add") its
    element at ``indexer(index)``, for each index over ``size`` (see ``ir.Scatter``)."""
    graph = ctx.graph
    previous = _written_in_place(ctx, x)
    if previous is not None and mode == previous.data.mode == "add" and previous.data.size == tuple(size):
        # (adds commute: one loop over the indices does both — run after whatever the new values read,
        # realized since)
        previous.add_update(indexer, inner_fn, disjoint)
        graph.nodes.remove(previous)
        graph.nodes.append(previous)
        graph.owner[previous.name] = ctx.node
        return BufferValue(previous.name, previous.layout)
    if previous is not None:
        base = x
    else:
        base = graph.realize(Pointwise(x.size, x.dtype, x.make_loader()), ctx.node)
    name = graph.new_name()
    data = Scatter(size, x.dtype, mode, [(indexer, inner_fn)], tuple(disjoint))
    graph.nodes.append(ScatterBuffer(name, base.name, base.layout, data))
    graph.layouts[name] = base.layout
    graph.owner[name] = ctx.node
    return BufferValue(name, base.layout)


@register_lowering(aten.index_put.default, aten._unsafe_index_put.default)
def lower_index_put(ctx, x, indices, values, accumulate=False):
    geometry = _advanced_index(x, indices, INDEX)
    if geometry is None:
        raise Unsupported("index_put without a tensor index")
    size, position, disjoint, picked = geometry
    if accumulate:
        _check_add(x.dtype)
    _picks_from(ctx, *picked)
    return scatter(ctx, x, size, "add" if accumulate else "store", position,
                   _values(values, size, x.dtype), disjoint)


def _put_slices(ctx, x, dim, index, source, mode, alpha=1):
    """``x`` with ``alpha * source``'s slice i along ``dim`` put into (``mode``) its slice ``index[i]``;
    a negative position raises, as eager's index_add and index_copy do."""
    if index.ndim > 1 or x.ndim == 0 or source.ndim != x.ndim:
        raise Unsupported("into a scalar, or by a multi-dimensional index")
    dim = normalize_dim(dim, x.ndim)
    _picks_from(ctx, x.size[dim])
    index_load = index.make_loader()
    load = _values(source, source.size, x.dtype)

    def position(idx):
        target = list(idx)
        target[dim] = _indirect(index_load, [idx[dim]] if index.ndim else [], x.size[dim], INDEX_SELECT)
        return target

    def value(idx):
        return load(idx) if alpha == 1 else ops.mul(load(idx), scalar(alpha, x.dtype))

    disjoint = tuple(d != dim for d in range(x.ndim))
    return scatter(ctx, x, source.size, mode, position, value, disjoint)


@register_lowering(aten.index_add.default)
def lower_index_add(ctx, x, dim, index, source, alpha=1):
    _check_add(x.dtype)
    return _put_slices(ctx, x, dim, index, source, "add", alpha)


@register_lowering(aten.index_copy.default)
def lower_index_copy(ctx, x, dim, index, source):
    return _put_slices(ctx, x, dim, index, source, "store")


def _scatter_along(ctx, x, dim, index, src, mode):
    """``x`` with ``src[i]`` put at ``i`` but for ``i[dim]``, which is ``index[i]``, for each ``i``
    over index's size (src: a tensor at least that large, or a number)."""
    if x.ndim == 0 or index.ndim != x.ndim:
        raise Unsupported("scatter into a scalar, or an index of another rank")
    if index.dtype != torch.int64:
        raise Unsupported(f"scatter index of dtype {index.dtype}")
    dim = normalize_dim(dim, x.ndim)
    _picks_from(ctx, x.size[dim])
    index_load = index.make_loader()

    def position(idx):
        target = list(idx)
        target[dim] = _indirect(index_load, idx, x.size[dim], SCATTER)
        return target

    if isinstance(src, TensorValue):
        if src.ndim != x.ndim:
            raise Unsupported("scatter source of another rank")
        load = src.make_loader()
        value = load if src.dtype == x.dtype else (lambda idx: ops.to_dtype(load(idx), x.dtype))
    else:
        value = lambda idx: ops.constant(src, x.dtype)  # noqa: E731
    disjoint = tuple(d != dim for d in range(x.ndim))
    return scatter(ctx, x, index.size, mode, position, value, disjoint)


@register_lowering(aten.scatter_add.default)
def lower_scatter_add(ctx, x, dim, index, src):
    _check_add(x.dtype)
    return _scatter_along(ctx, x, dim, index, src, "add")


@register_lowering(aten.scatter_reduce.two)
def lower_scatter_reduce(ctx, x, dim, index, src, reduce, include_self=True):
    if reduce != "sum":
        raise Unsupported(f"scatter_reduce {reduce!r}")
    _check_add(x.dtype)
    if not include_self:
        # The elements scattered into start from zero: zeros stored there first, then the adds
        # (another loop: every store must land before the first add).
        x = _scatter_along(ctx, x, dim, index, 0, "store")
    return _scatter_along(ctx, x, dim, index, src, "add")
