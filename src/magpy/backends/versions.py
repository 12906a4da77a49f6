"""Version counters of batch norm's running statistics, kept as eager keeps them.

Eager's batch-norm kernel updates ``running_mean`` and ``running_var`` in place without bumping their
version counters; AOTAutograd functionalizes the update, keeps the write in the compiled forward (our
kernels store the new values, ``codegen/input_writes.py``) and bumps the version of every input the graph
writes after the call, as its own ``copy_`` of them would. An autograd graph recorded before (the capturing call's eager batch
norm saves the statistics for its backward) then fails its backward ("modified by an inplace operation")
where eager's runs. So a compiled graph that takes them puts their versions back after each call. Only
tensors the graph passes as a batch norm's statistics and writes no other way (``num_batches_tracked``'s
``add_`` bumps in eager too).
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

#: batch norm's callables -> positions and names of (running_mean, running_var)
STATISTICS = {
    F.batch_norm: ((1, "running_mean"), (2, "running_var")),
    torch.batch_norm: ((3, "running_mean"), (4, "running_var")),
}


def batch_norm_statistics(gm: torch.fx.GraphModule) -> list[int]:
    """Positions among ``gm``'s inputs of the tensors it passes only as batch norm's running statistics."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    found = set()
    for node in gm.graph.nodes:
        for position, name in STATISTICS.get(node.target, ()) if node.op == "call_function" else ():
            arg = node.args[position] if len(node.args) > position else node.kwargs.get(name)
            if isinstance(arg, torch.fx.Node) and arg.op == "placeholder":
                found.add(arg)
    return [i for i, p in enumerate(placeholders) if p in found and all(_reads_only(u, p) for u in p.users)]


def _reads_only(user: torch.fx.Node, placeholder: torch.fx.Node) -> bool:
    """Is ``user`` a batch norm taking ``placeholder`` as its statistics, or an op that cannot write it?"""
    if user.op == "call_function" and user.target in STATISTICS:
        return True
    name = user.target if isinstance(user.target, str) else getattr(user.target, "__name__", "")
    return not name.endswith("_") and "out" not in user.kwargs


def keeping_versions(fn: Callable, positions: list[int]) -> Callable:
    """``fn``, with the version counters of its inputs at ``positions`` as they were before each call."""
    preserve = getattr(torch.autograd, "_unsafe_preserve_version_counter", None)
    if not positions or preserve is None:
        return fn

    def call(*args):
        with preserve(tuple(args[i] for i in positions)):
            return fn(*args)

    return call
