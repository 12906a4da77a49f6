"""Count the ``aten::copy_`` calls of one warm training step of a zoo model under magpy (CPU by default): in
the forward and backward (AOTAutograd's copies of batch norm's new running statistics, when the graph does not
store them itself, are among them), and in the eager AdamW step after them.

    PYTHONPATH=src python scratch/copies_per_step.py resnet [small] [cpu]
"""
import copy
import sys

import torch

import magpy
from magpy import zoo

name = sys.argv[1]
size = sys.argv[2] if len(sys.argv) > 2 else "small"
device = sys.argv[3] if len(sys.argv) > 3 else "cpu"
model, inputs = zoo.get(name).make(size, device)
model.train()
compiled = magpy.compile(copy.deepcopy(model))
optimizer = torch.optim.AdamW(compiled.parameters(), lr=1e-4)


def forward_backward():
    optimizer.zero_grad(set_to_none=True)
    out = compiled(*inputs)
    out = out if isinstance(out, torch.Tensor) else out[0]
    out.float().pow(2).mean().backward()


for _ in range(3):
    forward_backward()
    optimizer.step()
compiles = compiled.stats.compiles
with torch.profiler.profile(record_shapes=True) as profile:
    with torch.profiler.record_function("forward_backward"):
        forward_backward()
    with torch.profiler.record_function("optimizer"):
        optimizer.step()
assert compiled.stats.compiles == compiles, "recompiled in the profiled step"
events = profile.events()
ranges = {e.name: (e.time_range.start, e.time_range.end) for e in events if e.name in ("forward_backward", "optimizer")}
copies = [e for e in events if e.name == "aten::copy_"]


def within(name):
    start, end = ranges[name]
    return sum(start <= e.time_range.start and e.time_range.end <= end for e in copies)


print(f"{name} ({size}, {device}): {len(copies)} aten::copy_ a step: {within('forward_backward')} in the forward "
      f"and backward, {within('optimizer')} in the eager AdamW step ({len(list(compiled.buffers()))} buffers)")
