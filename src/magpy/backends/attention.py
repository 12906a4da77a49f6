"""Attention written out by hand becomes one ``scaled_dot_product_attention`` call.

Models spell attention as ``softmax(q @ k.transpose(-2, -1) * scale + mask) @ v`` (BERT adds a float
mask, GPT fills a boolean one with ``-inf``). Left as is, the scores are a full ``L x S`` tensor written and
read back by every step; the fused kernel (flash / memory-efficient attention, on CPU and GPU) never
materialises them. The rewrite works on the captured graph, before AOTAutograd, and only where it is
exact: the scores feed nothing else, the scale is applied before the mask, the softmax is over the last
dim, and query, key and value agree in dtype and rank.
"""
import math
import operator

import torch
import torch.nn.functional as F
from torch._guards import detect_fake_mode
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

_MATMULS = (torch.matmul, operator.matmul)
_ADDS = (operator.add, torch.add)
_SCALES = {operator.mul: lambda c: c, torch.mul: lambda c: c, operator.truediv: lambda c: 1.0 / c,
           torch.div: lambda c: 1.0 / c}
_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def fuse_attention(gm: torch.fx.GraphModule, example_inputs) -> int:
    """Rewrite each attention pattern of ``gm`` in place; returns how many were rewritten."""
    if not any(_is_softmax(n) for n in gm.graph.nodes):
        return 0
    try:  # (on fake tensors: running the graph for real would repeat its writes into its inputs)
        given = detect_fake_mode(example_inputs)
        if given is not None:  # (fake inputs with symbolic sizes: a mode of our own would make them concrete)
            FakeTensorProp(gm, given).propagate_dont_convert_inputs(*example_inputs)
        else:
            mode = FakeTensorMode(allow_non_fake_inputs=True)
            FakeTensorProp(gm, mode).propagate(*[mode.from_tensor(x) if isinstance(x, torch.Tensor) else x
                                                 for x in example_inputs])
    except Exception:  # noqa: BLE001 - a graph the shape pass cannot run: left as it is
        return 0
    count = 0
    for node in list(gm.graph.nodes):
        if _is_softmax(node) and _rewrite(gm.graph, node):
            count += 1
    if count:
        gm.graph.eliminate_dead_code()
        gm.recompile()
    return count


def _is_softmax(node):
    if not (node.op == "call_method" and node.target == "softmax" or
            node.op == "call_function" and node.target in (F.softmax, torch.softmax)):
        return False
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
    return dim == -1 and set(node.kwargs) <= {"dim"} and len(node.args) <= 2


def _meta(node):
    value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return value if isinstance(value, torch.Tensor) else None


def _only_user(node, user):
    return isinstance(node, torch.fx.Node) and list(node.users) == [user]


def _rewrite(graph, softmax):
    users = list(softmax.users)
    if len(users) != 1 or users[0].op != "call_function" or users[0].target not in _MATMULS or \
            users[0].args[0] is not softmax or users[0].kwargs:
        return False
    out = users[0]
    v = out.args[1]
    x = softmax.args[0]
    mask, keep, consumer = None, False, softmax   # (consumer: the node that takes ``x``)
    if _only_user(x, softmax) and x.op == "call_method" and x.target == "masked_fill" and len(x.args) == 3 \
            and x.args[2] == -math.inf and not x.kwargs:
        mask, keep, consumer, x = x.args[1], True, x, x.args[0]
    elif _only_user(x, softmax) and x.op == "call_function" and x.target in _ADDS and len(x.args) == 2 \
            and not x.kwargs and isinstance(x.args[1], torch.fx.Node):
        mask, consumer, x = x.args[1], x, x.args[0]
    scale = 1.0
    if _only_user(x, consumer) and x.op == "call_function" and x.target in _SCALES and len(x.args) == 2 \
            and isinstance(x.args[1], (int, float)) and not isinstance(x.args[1], bool) and not x.kwargs:
        scale, consumer, x = _SCALES[x.target](float(x.args[1])), x, x.args[0]
    if not (_only_user(x, consumer) and x.op == "call_function" and x.target in _MATMULS and not x.kwargs):
        return False
    q, kt = x.args
    if not (_only_user(kt, x) and kt.op == "call_method" and kt.target == "transpose" and len(kt.args) == 3
            and {kt.args[1], kt.args[2]} == {-1, -2}):
        return False
    k = kt.args[0]
    metas = [_meta(n) for n in (q, k, v)]
    if any(m is None for m in metas) or len({(m.dtype, len(m.shape)) for m in metas}) != 1 or \
            metas[0].dtype not in _DTYPES or len(metas[0].shape) < 3:
        return False
    if mask is not None:
        m = _meta(mask)
        wanted = (torch.bool,) if keep else (metas[0].dtype,)
        if m is None or m.dtype not in wanted or m.requires_grad or len(m.shape) > len(metas[0].shape):
            return False
        if m.device.type == "cuda" and any(isinstance(s, torch.SymInt) and s.node.maybe_as_int() is None
                                           for s in m.shape):
            # (CUDA's memory-efficient attention aligns a mask's rows by fixing the size it is given:
            # a graph traced for every length would serve one)
            return False
    with graph.inserting_before(out):
        attn_mask = graph.call_function(torch.logical_not, (mask,)) if keep else mask
        fused = graph.call_function(F.scaled_dot_product_attention, (q, k, v),
                                    {"attn_mask": attn_mask, "scale": scale})
    out.replace_all_uses_with(fused)
    return True
