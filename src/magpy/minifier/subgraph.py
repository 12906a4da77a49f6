"""Subgraphs of one captured graph.

Any set of the graph's ops is a graph of its own: the values its ops read from outside the set become
its inputs (their eager values, from one run of the whole graph on its example inputs), and its outputs
are the ops of the set that nothing in the set reads, or that the whole graph returned. So one
representation covers every reduction the minifier tries: dropping ops at the end truncates the graph
(an op becomes an output), dropping ops at the start turns intermediate values into inputs, and the
whole set is the captured graph itself.
"""
from __future__ import annotations

import torch
from torch import fx

from .tensors import copied

#: the node kinds that are ops. ``call_module`` nodes (magpy's capture makes none) and ``get_attr``
#: nodes are never kept: where an op reads one, its value is an input, like any value cut off
OPS = ("call_function", "call_method")

#: values a subgraph takes as constants where it cuts an op off (a size it computed, a dtype): fx puts
#: them in the arguments of the ops that read them
_CONSTANTS = (int, float, bool, complex, str, type(None), type(Ellipsis), slice, torch.dtype, torch.device,
              torch.layout, torch.memory_format)


class Subgraph:
    """Some ops of a captured graph as a graph (``module``) with its example inputs (``inputs``:
    tensors; keep them unchanged, run on copies)."""

    def __init__(self, gm: fx.GraphModule, inputs: list, grad_enabled: bool):
        self.gm = gm
        self.inputs = inputs
        self.grad_enabled = grad_enabled   # (the grad mode it was captured and is compiled in)

    @property
    def op_count(self) -> int:
        return count_ops(self.gm)

    def module(self) -> fx.GraphModule:
        """A fresh copy of the graph (backends rewrite the graph they are given)."""
        return fx.GraphModule(self.gm, _copied_graph(self.gm.graph))


class Cutter:
    """Cuts one captured graph (``gm``, run eagerly once on ``inputs`` to know every value) into
    subgraphs: ``ops`` lists its ops in order, ``subgraph(some_ops)`` makes one."""

    def __init__(self, gm: fx.GraphModule, inputs: list, grad_enabled: bool):
        self.gm = gm
        self.grad_enabled = grad_enabled
        self.ops = [n for n in gm.graph.nodes if n.op in OPS]
        output = next(n for n in gm.graph.nodes if n.op == "output")
        self.returned = set(output.all_input_nodes)
        self.values = _eager_values(gm, inputs, grad_enabled)

    def subgraph(self, ops: list) -> Subgraph | None:
        """The graph of ``ops`` (in graph order); None when a value it would read is neither a tensor
        nor a constant (a tuple of tensors from an op it cuts off: no backend takes one as an input)."""
        kept = set(ops)
        graph = fx.Graph()
        env, inputs = {}, []
        for node in ops:
            for used in node.all_input_nodes:
                if used in kept or used in env:
                    continue
                value = self.values.get(used)
                if isinstance(value, torch.Tensor):
                    env[used] = graph.placeholder(used.name)
                    inputs.append(value)
                elif _is_constant(value):
                    env[used] = value
                else:
                    return None
        for node in ops:
            env[node] = graph.node_copy(node, env.__getitem__)
        graph.output(tuple(env[n] for n in ops if n in self.returned or not kept.intersection(n.users)))
        return Subgraph(fx.GraphModule(self.gm, graph), inputs, self.grad_enabled)


def count_ops(gm: fx.GraphModule) -> int:
    return sum(1 for n in gm.graph.nodes if n.op in OPS)


def _copied_graph(graph: fx.Graph) -> fx.Graph:
    made = fx.Graph()
    output = made.graph_copy(graph, {})
    made.output(output)
    return made


def _is_constant(value) -> bool:
    if isinstance(value, (tuple, list)):  # (torch.Size too)
        return all(_is_constant(v) for v in value)
    return isinstance(value, _CONSTANTS)


class _Recorder(fx.Interpreter):
    """Runs the graph op by op and keeps a copy of every node's value as it was made (a later in-place
    op may change it)."""

    def __init__(self, gm):
        super().__init__(gm)
        self.values = {}

    def run_node(self, node):
        value = super().run_node(node)
        self.values[node] = copied(value)
        return value


def _eager_values(gm, inputs, grad_enabled) -> dict:
    recorder = _Recorder(gm)
    with torch.random.fork_rng(), torch.set_grad_enabled(grad_enabled):
        torch.manual_seed(0)
        recorder.run(*copied(list(inputs)))
    return recorder.values
