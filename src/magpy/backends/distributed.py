"""Graphs compiled while DistributedDataParallel runs its module: one compiled piece per gradient bucket.

DDP all-reduces gradients bucket by bucket (``bucket_cap_mb``; the bucket of the last parameters of the
forward, whose gradients come first in backward, is smaller by default), each as soon as every gradient of
its bucket is ready, so that communication overlaps the rest of the backward. A graph compiled as one
autograd Function makes all its parameters' gradients ready at once, when its whole backward ends: no
all-reduce could start before. So a graph compiled while a DDP module runs its forward
(``DistributedDataParallel._get_active_ddp_module()``), with grad enabled and parameters of that DDP among
its inputs, is split (``torch.fx.passes.split_module``) into pieces that each use one bucket's parameters,
and each piece is compiled by the backend on its own: its own autograd Function, whose backward ends (and
fires DDP's hooks for its parameters) while the backward of the pieces before it is still to run.

The buckets are found the way DDP's Reducer fills them when it rebuilds them after the first iteration, in
the order gradients become ready: walking the graph from its end, a parameter joins the open bucket at its
last use, and a bucket closes once it holds at least its cap of bytes. Pieces are compiled over fake tensors
propagated through the split graph (no op runs twice: no random draw, no running statistic, moves on).
"""
from __future__ import annotations

import sys
from typing import Callable, Optional

def active_ddp():
    """The DistributedDataParallel module whose forward is running (None: none, or torch.distributed is not
    loaded)."""
    module = sys.modules.get("torch.nn.parallel.distributed")
    get = getattr(getattr(module, "DistributedDataParallel", None), "_get_active_ddp_module", None)
    return get() if get is not None else None


def split_at_buckets(backend: Callable, example_inputs) -> Callable:
    """``backend`` itself, or — while a DDP module runs its forward with grad enabled and some of its
    parameters requiring grad are among ``example_inputs`` (the graph's real inputs) — a backend of the
    same convention that compiles one piece per gradient bucket with ``backend`` (its result's ``pieces``
    says how many)."""
    import torch

    ddp = active_ddp()
    if ddp is None or not torch.is_grad_enabled():
        return backend
    sizes = parameter_bytes(ddp, example_inputs)
    if not any(sizes):
        return backend

    def compile_pieces(gm, inputs):
        assignment = bucket_pieces(gm, sizes, bucket_caps(ddp))
        if assignment is None:
            return backend(gm, inputs)
        return _compiled_pieces(gm, inputs, assignment, backend)
    return compile_pieces


def parameter_bytes(ddp, example_inputs) -> list[int]:
    """Per graph input: the bytes of its gradient where it is a parameter DDP reduces that requires grad,
    else 0."""
    import torch

    reduced = getattr(ddp, "_module_parameters", None)
    if reduced is None:
        ignored = getattr(ddp, "parameters_to_ignore", ())
        reduced = [p for name, p in ddp.module.named_parameters() if name not in ignored]
    ids = {id(p) for p in reduced if p.requires_grad}
    return [x.numel() * x.element_size() if isinstance(x, torch.Tensor) and id(x) in ids else 0
            for x in example_inputs]


def bucket_caps(ddp) -> tuple[int, int]:
    """(bytes of the first bucket, of the others) as DDP's Reducer fills them."""
    import torch.distributed as dist

    cap = ddp.bucket_bytes_cap
    first = getattr(getattr(ddp, "_bucket_config", None), "first_bucket_bytes_cap", None)
    if first is None:  # (torch before the bucket config: the small first bucket where the cap is the default)
        first = dist._DEFAULT_FIRST_BUCKET_BYTES if getattr(ddp, "bucket_bytes_cap_default", False) else cap
    return first, cap


def bucket_pieces(gm, sizes: list[int], caps: tuple[int, int]) -> Optional[dict]:
    """Node -> piece (0 first, in the graph's order) for the graph's ops, one piece per bucket of the
    parameters at input positions with ``sizes`` bytes; None where the graph stays whole (one bucket, or
    ops that change global state part-way)."""
    from ..capture import rules

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    size_of = {n: size for n, size in zip(placeholders, sizes) if size}
    ops = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output", "get_attr")]
    if any(n.op == "call_function" and n.target in rules.GRAPH for n in ops):
        return None  # (each piece would be traced in the state its own ops leave: autocast, grad mode)
    bucket, filled, cap = 0, 0, caps[0]
    counted = set()
    from_end = {}
    for node in reversed(ops):
        if filled >= cap:  # (the bucket closed at the op after this one: this one opens the next)
            bucket, filled, cap = bucket + 1, 0, caps[1]
        from_end[node] = bucket
        for arg in node.all_input_nodes:
            if arg in size_of and arg not in counted:
                counted.add(arg)
                filled += size_of[arg]
    if filled == 0 and bucket > 0:
        # (the graph's first ops use no parameter: they join the piece after them)
        from_end = {node: min(b, bucket - 1) for node, b in from_end.items()}
        bucket -= 1
    if bucket == 0:
        return None
    return {node: bucket - b for node, b in from_end.items()}


def piece_count(assignment: Optional[dict]) -> int:
    return 1 + max(assignment.values()) if assignment else 1


class Pieces:
    """A graph run as its compiled pieces, in order (the split GraphModule with each piece's compiled
    callable in place of its submodule); ``pieces``: how many."""

    def __init__(self, split, pieces: int):
        self.split = split
        self.pieces = pieces
        self.forward = split.forward

    def __call__(self, *args):
        return self.forward(*args)


def _compiled_pieces(gm, example_inputs, assignment: dict, backend: Callable) -> Pieces:
    from torch.fx.passes.split_module import split_module

    split = split_module(gm, gm, lambda node: assignment[node], keep_original_order=True)
    _tuple_outputs(split)
    for name, compiled in _compile_in_order(split, example_inputs, backend):
        delattr(split, name)  # (the submodule; its compiled callable then answers ``self.<name>``)
        vars(split)[name] = compiled
    return Pieces(split, piece_count(assignment))


def _tuple_outputs(split) -> None:
    """Every piece returns a tuple (the convention backends take), its single value read back with ``[0]``
    where split_module made it return the value itself."""
    import operator

    for node in list(split.graph.nodes):
        if node.op != "call_module":
            continue
        piece = getattr(split, node.target)
        output = next(n for n in piece.graph.nodes if n.op == "output")
        if isinstance(output.args[0], (tuple, list)):
            continue
        output.args = ((output.args[0],),)
        piece.recompile()
        with split.graph.inserting_after(node):
            value = split.graph.call_function(operator.getitem, (node, 0))
        node.replace_all_uses_with(value, delete_user_cb=lambda user: user is not value)
    split.recompile()


def _compile_in_order(split, example_inputs, backend: Callable):
    """(name, compiled callable) of each piece, compiled by ``backend`` over fake inputs: the graph's inputs
    as fakes (theirs, where they are fake already) propagated through the pieces before it."""
    import torch
    from torch._guards import detect_fake_mode
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = detect_fake_mode(example_inputs)
    if mode is None:
        mode = FakeTensorMode()
        values = [mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for x in example_inputs]
    else:
        values = list(example_inputs)
    env = {}
    compiled = []
    placeholders = iter(values)
    for node in split.graph.nodes:
        if node.op == "placeholder":
            env[node] = next(placeholders)
        elif node.op == "call_module":
            piece = getattr(split, node.target)
            args = [env[a] for a in node.args]
            compiled.append((node.target, backend(piece, args)))
            with mode:
                env[node] = piece(*args)
        elif node.op == "call_function":
            args = torch.fx.node.map_arg(node.args, env.__getitem__)
            env[node] = node.target(*args, **node.kwargs)
    return compiled
