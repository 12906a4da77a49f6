"""Scalar arguments given as 0-dim tensors become tensor arithmetic.

``x.addcdiv_(a, b, value=v)`` takes ``value`` as a number; given a 0-dim tensor, eager reads it with
``.item()``. Optimizers take that path while a compiler traces them (``torch.compiler.is_compiling()``:
AdamW's step size is a tensor of the step count), and the read is data a trace cannot see: the graph
would run as captured. Written out as the arithmetic eager's kernel does, in its order (``x + v * a / b``,
``x + v * a * b``), the value is one more tensor operand, and the step fuses into one kernel per
parameter.
"""
from __future__ import annotations

import operator

import torch
from torch import fx

#: method or function name -> (the second operation, in place)
REWRITTEN = {
    "addcdiv": (operator.truediv, False),
    "addcdiv_": (operator.truediv, True),
    "addcmul": (operator.mul, False),
    "addcmul_": (operator.mul, True),
}
_FUNCTIONS = {torch.addcdiv: "addcdiv", torch.addcmul: "addcmul", torch.Tensor.addcdiv: "addcdiv",
              torch.Tensor.addcdiv_: "addcdiv_", torch.Tensor.addcmul: "addcmul", torch.Tensor.addcmul_: "addcmul_"}


def _name(node: fx.Node):
    if node.op == "call_method":
        return node.target if node.target in REWRITTEN else None
    if node.op == "call_function":
        return _FUNCTIONS.get(node.target)
    return None


def tensor_values_as_arithmetic(gm: fx.GraphModule) -> int:
    """Rewrite ``gm`` in place (see the module's text); the number of calls rewritten."""
    count = 0
    for node in list(gm.graph.nodes):
        name = _name(node)
        value = node.kwargs.get("value")
        if name is None or not isinstance(value, fx.Node) or len(node.args) != 3:
            continue
        second, in_place = REWRITTEN[name]
        x, a, b = node.args
        with gm.graph.inserting_before(node):
            scaled = gm.graph.call_function(operator.mul, (value, a))
            term = gm.graph.call_function(second, (scaled, b))
            if in_place:
                result = gm.graph.call_method("add_", (x, term))
            else:
                result = gm.graph.call_function(operator.add, (x, term))
        result.meta.update(node.meta)
        node.replace_all_uses_with(result)
        gm.graph.erase_node(node)
        count += 1
    if count:
        gm.recompile()
    return count
