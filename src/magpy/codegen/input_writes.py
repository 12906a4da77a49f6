"""Writes into the graph's inputs: ``aten.copy_(placeholder, value)``, stored by our kernels.

AOTAutograd, asked to keep the mutations of inputs that need no gradient in the graph
(``keep_inference_input_mutations``), ends a graph that updates buffers (batch norm's running
statistics, ``num_batches_tracked``) with one ``copy_`` per written input, of its new value. The write
is an ``InputWrite``: a pointwise node named as the input and laid out as it is, stored into the input's
memory. A kernel reads the old values and stores the new ones through one pointer (the C++ kernels'
pointers are ``__restrict__``), and the scheduler fuses the write like any pointwise node (the running
mean's update is stored by the kernel whose sums give the batch mean), under rules that keep the graph's
order:

* what reads the old values runs first: no item scheduled after the kernel the write joins reads the
  input or a view of it, and inside that kernel every read of the input is of the element the write
  stores, by the same loop iteration, before the store;
* what reads the new values runs after: never in the write's kernel nor in one before it.

A value that reads the input at other elements than the ones it is stored to (``x.copy_(x.flip(0))``)
is computed into a buffer of its own first, and lazy values that read the old values and are used after
the write are computed before it. Where no write can be made (the destination is a view, not a
placeholder; its elements overlap; the input is written twice; the value is no tensor of ours),
``copy_`` stays the library call, counted as unlowered ops are.
"""
from __future__ import annotations

import operator
from typing import Optional

import sympy
import torch
import torch.fx

from .ir import BufferValue, ComputedBuffer, ExternCall, GetItem, Layout, Pointwise, TensorValue, WrapperView
from .ir import index_vars, is_static, returns_alias
from .ops import DependencyHandler, set_handler

COPY = torch.ops.aten.copy_.default


class InputWrite(ComputedBuffer):
    """Graph input ``name`` written over in place with the values of a ``Pointwise``: its layout is
    the input's; the kernel that computes it stores into the input's memory."""

    def __init__(self, name: str, layout: Layout, data: Pointwise):
        super().__init__(name, layout, data)

    def __repr__(self):
        return f"InputWrite({self.name}, size={list(self.layout.size)})"


def lower_input_write(graph, node: torch.fx.Node) -> bool:
    """Lower ``copy_`` ``node`` of ``graph`` (a ``GraphLowering``) as an ``InputWrite``; False where it
    cannot be one (the caller makes it a library call)."""
    destination, source = node.args[0], node.args[1]
    if not isinstance(destination, torch.fx.Node) or destination.op != "placeholder":
        return False
    target = graph.env.get(destination)
    value = graph.env.get(source) if isinstance(source, torch.fx.Node) else None
    if not isinstance(target, BufferValue) or target.name not in graph.inputs or target.name in graph.written:
        return False
    if not isinstance(value, TensorValue) or not non_overlapping(target.layout):
        return False
    from .lowering.registry import Unsupported, pointwise

    name, layout = target.name, target.layout
    _keep_old_values(graph, node, destination, name)
    try:
        value = pointwise(lambda v: v, [value], layout.dtype, layout.dtype, size=layout.size)
    except Unsupported:
        return False
    if not _reads_only_its_own_elements(value, name, layout, aliases(graph.nodes, name)):
        value = Pointwise(layout.size, layout.dtype, graph.realize(value, node).make_loader())
    graph.nodes.append(InputWrite(name, layout, value))
    graph.written.add(name)
    graph.env[node] = BufferValue(name, layout)
    graph.extern_names[node] = name  # (``copy_`` returns its destination: the input itself)
    return True


def non_overlapping(layout: Layout) -> bool:
    """Does every index of ``layout`` address an element of its own (a store to each is one write)?"""
    if not is_static(layout.size) or not is_static(layout.stride):
        return layout.is_dense()
    extent = 1
    for stride, size in sorted((abs(st), sz) for sz, st in zip(layout.size, layout.stride) if sz != 1):
        if size == 0:
            return True
        if stride < extent:
            return False
        extent = stride * (size - 1) + extent
    return True


def _keep_old_values(graph, node, destination, name: str) -> None:
    """Compute now, into buffers, the lazy values that read input ``name`` and are used after ``node``
    writes it (a view of it reads the new values, as eager's views do: it stays lazy); forget the
    reductions and channels-last copies made of its old values."""
    if graph._order is None:
        graph._order = {n: i for i, n in enumerate(graph.gm.graph.nodes)}
    order = graph._order
    here = order[node]
    for other, value in list(graph.env.items()):
        if not isinstance(value, Pointwise) or not any(order[u] > here for u in other.users):
            continue
        if aliases_placeholder(other, destination):
            continue
        if any(read == name for read, _, _ in _reads(value)):
            graph.env[other] = graph.realize(value, other)
    graph._reductions.clear()
    graph._channels_last_copies.pop(name, None)


def aliases_placeholder(node, placeholder) -> bool:
    """Is fx ``node`` ``placeholder`` or a view of it (through views and items of views)?"""
    while isinstance(node, torch.fx.Node):
        if node is placeholder:
            return True
        if node.op != "call_function" or not node.args:
            return False
        base = node.args[0]
        if node.target is operator.getitem:
            if not isinstance(base, torch.fx.Node) or not getattr(base.target, "is_view", False):
                return False
            base = base.args[0] if base.args else None
        elif not getattr(node.target, "is_view", False):
            return False
        node = base
    return False


def _reads(value: Pointwise) -> list:
    handler = DependencyHandler()
    with set_handler(handler):
        value.inner_fn(index_vars("x", len(value.size)))
    return handler.reads


def _reads_only_its_own_elements(value: Pointwise, name: str, layout: Layout, views: set) -> bool:
    """Does ``value`` read input ``name`` only at the element it is stored to (and no view of it)?"""
    store = sympy.expand(layout.index(index_vars("x", len(layout.size))))
    for read, index, indirect in _reads(value):
        if read in views or read == name and (indirect or sympy.expand(index) != store):
            return False
    return True


def aliases(items, name: str) -> set:
    """Names among ``items`` (IR nodes or scheduled items, in program order) that may share input
    ``name``'s memory: views the wrapper makes of it, items of those, library results that may alias
    an argument."""
    found = {name}
    for item in items:
        if isinstance(item, (WrapperView, GetItem)) and item.base in found:
            found.add(item.name)
        elif isinstance(item, ExternCall) and returns_alias(item.target) and item.buffer_reads() & found:
            found.add(item.name)
    return found - {name}


def written_placeholders(gm: torch.fx.GraphModule) -> list[int]:
    """Positions of ``gm``'s placeholders that an op writes into (through views of them too)."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    written = set()
    for node in gm.graph.nodes:
        schema = getattr(node.target, "_schema", None) if node.op == "call_function" else None
        if schema is None or not schema.is_mutable:
            continue
        for position, argument in enumerate(schema.arguments):
            if argument.alias_info is None or not argument.alias_info.is_write:
                continue
            value = node.args[position] if position < len(node.args) else node.kwargs.get(argument.name)
            written.update(p for p in placeholders if aliases_placeholder(value, p))
    return [i for i, p in enumerate(placeholders) if p in written]


def trailing_input_writes(gm: torch.fx.GraphModule) -> set:
    """The ``copy_`` nodes into placeholders that end ``gm`` (after them come only such copies and the
    output): the writes AOTAutograd leaves in a graph, which no rewrite of what comes before can reorder."""
    found = set()
    for node in reversed(gm.graph.nodes):
        if node.op == "output":
            continue
        if node.op == "call_function" and node.target is COPY and isinstance(node.args[0], torch.fx.Node) \
                and node.args[0].op == "placeholder":
            found.add(node)
            continue
        break
    return found


def last_old_reader(items, name: str) -> tuple[int, set]:
    """(the index of the last of ``items`` that reads input ``name`` or a view of it, -1 for none; the
    names of its views): a write of ``name`` joins no kernel before that item (it reads the old values)."""
    views = aliases(items, name)
    old = views | {name}
    last = -1
    for i, item in enumerate(items):
        if _item_reads(item) & old:
            last = i
    return last, views


def write_fits(trial, kernel, node: InputWrite, level: str, views: set) -> bool:
    """Inside ``kernel`` (as ``trial`` lays it out, ``node`` at ``level``), is each read of the input
    ``node`` writes, its own reads included, of the element it stores, and none of a view of it?"""
    name = node.name
    store = trial.store_index(node, level)
    for other in [*kernel.nodes, node]:
        for read, index, indirect in trial.reads(other, level if other is node else trial.levels[other.name]):
            if read in views or read == name and (indirect or index != store):
                return False
    return True


def _item_reads(item) -> set:
    nodes = getattr(item, "nodes", None)
    if nodes is not None:
        return set().union(*(n.buffer_reads() for n in nodes)) if nodes else set()
    return item.buffer_reads()


def written_by(kernel) -> Optional[list]:
    """The inputs ``kernel`` writes in place (None when it writes none)."""
    names = [n.name for n in kernel.nodes if isinstance(n, InputWrite)]
    return names or None
