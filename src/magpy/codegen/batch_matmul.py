"""One matrix product where a graph multiplies every slice of one tensor by the same matrix.

A recurrent model applied step by step (``for t in range(T): cell(x[t], h)``) multiplies each
``x[t]`` by the same input weight: T small products whose inputs are all known before the first
runs, each a library call of its own. They become one product of the whole ``x`` (its first two
dims flattened), and each step reads its rows of the result, a view. The recurrent products
(``h @ W_hh``, whose left side the previous step computes) are left alone.

Rewritten: ``mm(x_k, w)`` and ``addmm(b, x_k, w)`` over every slice ``x_k`` of a 3-d x along its first
or second dim (``x[k]``, ``x[:, k]``, ``for x_k in x``), with the same ``w`` (the same node, or the same
transpose of one), the same ``b``, and x's first two dims flattening into one without a copy. Graphs
with in-place ops are left alone, but for the copies into inputs that end them (AOTAutograd's
writes of buffers: ``input_writes``).
"""
from __future__ import annotations

import collections

import torch
from torch import fx

from .input_writes import trailing_input_writes

aten = torch.ops.aten
# (op, position of the sliced operand)
PRODUCTS = {aten.mm.default: 0, aten.addmm.default: 1}


def _operand_key(node):
    """Nodes computing the same matrix compare equal: a transpose of one weight made once per step."""
    if isinstance(node, fx.Node) and node.target is aten.permute.default:
        return ("permute", node.args[0], tuple(node.args[1]))
    return node


def _slice_of(node):
    """(x, d, k) where ``node`` is x's k-th slice along dim d of 0 and 1 (``select(x, d, k)``, or
    ``squeeze(slice(x, d, k, k + 1), [d])`` as ``for x_t in x`` traces), with a static k; else None."""
    if not isinstance(node, fx.Node) or node.op != "call_function":
        return None
    if node.target is aten.select.int:
        x, d, k = node.args
    elif node.target is aten.squeeze.dims and isinstance(node.args[0], fx.Node) and \
            node.args[0].target is aten.slice.Tensor and len(node.args[0].args) in (4, 5):
        x, d, k, end, *step = node.args[0].args
        if list(node.args[1]) != [d] or not isinstance(k, int) or end != k + 1 or step not in ([], [1]):
            return None
    else:
        return None
    if d not in (0, 1) or not isinstance(k, int) or k < 0:
        return None
    return x, d, k


def _flattens(x: fx.Node) -> bool:
    """Whether x's first two dims view as one (static sizes, no copy)."""
    value = x.meta.get("val")
    if not isinstance(value, torch.Tensor) or value.dim() != 3 or value.layout != torch.strided:
        return False
    sizes, strides = value.shape, value.stride()
    if not all(isinstance(s, int) for s in (*sizes, *strides)):
        return False
    return sizes[1] == 1 or strides[0] == sizes[1] * strides[1]


def _mutates(gm) -> bool:
    """Does an op of ``gm`` write a tensor before its end? (The copies into inputs ending an AOTAutograd
    graph come after every product, wherever the rewrite puts them.)"""
    trailing = trailing_input_writes(gm)
    return any(n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload) and
               n.target._schema.is_mutable and n not in trailing for n in gm.graph.nodes)


def batch_shared_matmuls(gm: fx.GraphModule) -> int:
    """Rewrite ``gm`` in place (see the module's text); the number of products it replaced."""
    if _mutates(gm):
        return 0
    groups = collections.defaultdict(list)
    for node in gm.graph.nodes:
        at = PRODUCTS.get(node.target) if node.op == "call_function" else None
        if at is None or node.kwargs:
            continue
        sliced = _slice_of(node.args[at])
        if sliced is None:
            continue
        x, d, k = sliced
        others = tuple(_operand_key(a) for i, a in enumerate(node.args) if i != at)
        groups[(node.target, x, d, others)].append((k, node))
    replaced = 0
    for (op, x, d, _), members in groups.items():
        steps = x.meta["val"].shape[d] if _flattens(x) else None
        if steps is None or len(members) < 2 or sorted(k for k, _ in members) != list(range(steps)):
            continue
        outer, inner, width = x.meta["val"].shape
        first = members[0][1]
        at = PRODUCTS[op]
        with gm.graph.inserting_before(first):
            flat = _node(gm, aten.view.default, (x, [outer * inner, width]))
            args = list(first.args)
            args[at] = flat
            product = _node(gm, op, tuple(args))
            out = _node(gm, aten.view.default, (product, [outer, inner, product.meta["val"].shape[1]]))
        for k, node in members:
            with gm.graph.inserting_before(node):
                step = _node(gm, aten.select.int, (out, d, k))
            node.replace_all_uses_with(step)
            gm.graph.erase_node(node)
            replaced += 1
    if replaced:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return replaced


def _node(gm, target, args):
    """A new node with its fake value (what the lowering reads)."""
    node = gm.graph.call_function(target, args)
    fake = [a.meta["val"] if isinstance(a, fx.Node) else a for a in args]
    node.meta["val"] = target(*fake)
    return node
