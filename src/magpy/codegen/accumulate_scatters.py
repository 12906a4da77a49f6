"""Sums of scattered gradients accumulated into one buffer.

The gradient of a gather ``x[idx]`` is an ``index_put`` of the incoming gradient into zeros with
``accumulate=True``; where a graph gathers from one tensor several times (the four corners of a
bilinear ``F.interpolate``, an embedding read twice) autograd adds those gradients up:
``index_put(zeros, i1, g1, True) + index_put(zeros, i2, g2, True) + ...``. Each such sum
``a + index_put(zeros, i, g, True)`` is ``index_put(a, i, g, True)``: the rewritten graph has one
zero-filled buffer that every gradient adds into (and ``lowering.scatter`` joins the adds over the
same indices into one kernel), instead of a buffer per gradient and the sums of them.

Rewritten: ``add.Tensor(a, s)`` and ``add.Tensor(s, a)`` (no ``alpha``) where ``s`` is such an
``index_put`` read by the sum alone, into a zero-filled tensor, and ``a``, ``s`` and
the sum have one shape, dtype and strides. The result differs from the graph's only in the order
floats are added.
"""
from __future__ import annotations

import torch
from torch import fx

aten = torch.ops.aten

SCATTERS = (aten.index_put.default, aten._unsafe_index_put.default)
ZEROS = {aten.full.default: 1, aten.zeros.default: None, aten.new_zeros.default: None,
         aten.zeros_like.default: None, aten.full_like.default: 1}  # op -> the fill's position (None: 0)


def _is_zeros(node) -> bool:
    if not isinstance(node, fx.Node) or node.op != "call_function" or node.target not in ZEROS:
        return False
    position = ZEROS[node.target]
    return position is None or (len(node.args) > position and node.args[position] == 0)


def _accumulated_scatter(node, total) -> bool:
    """True for ``index_put(zeros, indices, values, True)`` that only ``total`` reads (the zeros may be
    shared: the partitioner's common-subexpression pass makes one ``full`` of every gradient's)."""
    if not isinstance(node, fx.Node) or node.op != "call_function" or node.target not in SCATTERS:
        return False
    args = list(node.args) + [node.kwargs.get("accumulate", False)] * (4 - len(node.args))
    if args[3] is not True or set(node.users) != {total}:
        return False
    return _is_zeros(args[0])


def _same_tensor_meta(*nodes) -> bool:
    values = [n.meta.get("val") if isinstance(n, fx.Node) else None for n in nodes]
    if not all(isinstance(v, torch.Tensor) and v.layout == torch.strided for v in values):
        return False
    first = values[0]
    return all(v.dtype == first.dtype and tuple(v.shape) == tuple(first.shape) and v.stride() == first.stride()
               for v in values[1:])


def accumulate_scatters(gm: fx.GraphModule) -> int:
    """Rewrite ``gm`` in place (see the module's text); the number of sums it replaced."""
    replaced = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target is not aten.add.Tensor or len(node.args) != 2:
            continue
        if node.kwargs.get("alpha", 1) != 1:
            continue
        a, s = node.args
        if not _accumulated_scatter(s, node):
            a, s = s, a
            if not _accumulated_scatter(s, node):
                continue
        if a is s or not _same_tensor_meta(a, s, node):
            continue
        zeros, indices, values = s.args[:3]
        with gm.graph.inserting_before(node):
            accumulated = gm.graph.call_function(s.target, (a, indices, values, True))
        accumulated.meta.update(node.meta)
        node.replace_all_uses_with(accumulated)
        for dead in (node, s, zeros):  # (users first)
            if not dead.users:
                gm.graph.erase_node(dead)
        replaced += 1
    if replaced:
        gm.recompile()
    return replaced
