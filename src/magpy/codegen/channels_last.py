"""Channels-last layouts for the operands of 2-d convolutions.

oneDNN's CPU convolution works in channels-last (NHWC) order: given NCHW tensors it reorders
input and weight on every call and the output back. So the graph hands convolutions
channels-last operands: a value computed here for a convolution is stored channels-last, an
input or weight that arrives NCHW is copied (a small kernel), and the convolution's result is
then channels-last too — its layout is asked of torch's fake tensors, not of the fx graph.
Results whose layout differs from the graph's (``GraphLowering.relaid``) are copied back
before they leave the graph or meet a view the wrapper would make.
"""
from __future__ import annotations

import operator
from typing import Optional

import sympy
import torch
import torch.fx

from .ir import BufferRef, Layout, as_size

aten = torch.ops.aten

CONVOLUTIONS = frozenset({aten.convolution.default})
# Device type -> the positions among a convolution's arguments of the tensors made channels-last:
# input and weight for oneDNN; the input alone for cuDNN, which then reorders the weight itself
# inside the library call (a copy kernel of ours per weight and call costs more launch time).
OPERANDS = {"cpu": (0, 1), "cuda": (0,)}
DTYPES = frozenset({torch.float32, torch.bfloat16, torch.float16})


def channels_last(size, dtype: torch.dtype) -> Layout:
    n, c, h, w = (as_size(s) for s in size)
    stride = tuple(as_size(sympy.expand(st)) for st in (h * w * c, 1, w * c, c))
    return Layout((n, c, h, w), stride, dtype)


def is_channels_last(layout: Optional[Layout]) -> bool:
    return (layout is not None and len(layout.size) == 4 and layout.offset == 0
            and all(sympy.expand(a - b) == 0
                    for a, b in zip(channels_last(layout.size, layout.dtype).stride, layout.stride)))


def wants_channels_last(node: torch.fx.Node) -> bool:
    """True for a 2-d, non-transposed convolution of float tensors."""
    if node.op != "call_function" or node.target not in CONVOLUTIONS:
        return False
    meta = node.meta.get("val")
    if not isinstance(meta, torch.Tensor) or meta.dim() != 4 or meta.dtype not in DTYPES:
        return False
    transposed = node.args[6] if len(node.args) > 6 else node.kwargs.get("transposed", False)
    return not transposed


def preferred_operands(graph: torch.fx.Graph, operands: tuple) -> set:
    """Keys ``(node, item)`` of the values to store channels-last (the convolutions' arguments at
    ``operands``): ``item`` is None for a node's single result, else the position in its tuple
    result (read through ``getitem``)."""
    keys = set()
    for node in graph.nodes:
        if not wants_channels_last(node):
            continue
        for position in operands:
            arg = node.args[position] if position < len(node.args) else None
            if not isinstance(arg, torch.fx.Node):
                continue
            if arg.op == "call_function" and arg.target is operator.getitem:
                keys.add((arg.args[0], arg.args[1]))
            else:
                keys.add((arg, None))
    return keys


def result_layout(target, args, kwargs, layouts, fake_mode=None, size=None) -> Optional[Layout]:
    """The layout of ``target``'s result for arguments laid out as ``layouts`` says, from torch's
    fake CPU tensors (None when they cannot tell).

    With symbolic layouts no fake tensor is made (its meta function could add guards): a
    convolution of a channels-last input gives a channels-last result of ``size`` (if it does
    not, the wrapper copies the result into that layout).
    """
    from torch._subclasses.fake_tensor import FakeTensorMode

    if not all(layouts[a.name].is_static for a in args if isinstance(a, BufferRef)):
        source = args[0] if args and isinstance(args[0], BufferRef) else None
        if target in CONVOLUTIONS and size is not None and source and is_channels_last(layouts[source.name]):
            return channels_last(size, layouts[source.name].dtype)
        return None
    mode = fake_mode or FakeTensorMode()

    def fake(a):
        if isinstance(a, BufferRef):
            layout = layouts[a.name]
            return torch.empty_strided(layout.size, layout.stride, dtype=layout.dtype, device="cpu")
        if isinstance(a, (list, tuple)):
            return type(a)(fake(x) for x in a)
        return a

    try:
        with mode:
            out = target(*fake(args), **{k: fake(v) for k, v in kwargs.items()})
    except Exception:  # no fake kernel for it: keep the graph's layout
        return None
    if not isinstance(out, torch.Tensor):
        return None
    return Layout(tuple(out.shape), tuple(out.stride()), out.dtype)
