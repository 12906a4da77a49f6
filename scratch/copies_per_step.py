"""Count the ``aten::copy_`` calls of one warm training step of a zoo model under magpy (CPU by default):
all of them, and those into tensors shaped as the model's buffers (AOTAutograd's copies of batch norm's
new running statistics when the graph does not store them itself).

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


def step():
    optimizer.zero_grad(set_to_none=True)
    out = compiled(*inputs)
    out = out if isinstance(out, torch.Tensor) else out[0]
    out.float().pow(2).mean().backward()
    optimizer.step()


for _ in range(3):
    step()
compiles = compiled.stats.compiles
with torch.profiler.profile(record_shapes=True) as profile:
    step()
assert compiled.stats.compiles == compiles, "recompiled in the profiled step"
shapes = {tuple(b.shape) for b in compiled.buffers()}
copies = [e for e in profile.events() if e.name == "aten::copy_"]
into_buffers = [e for e in copies if e.input_shapes and tuple(e.input_shapes[0]) in shapes]
print(f"{name} ({size}, {device}): {len(copies)} aten::copy_ a step, {len(into_buffers)} of them into "
      f"buffer-shaped tensors ({len(list(compiled.buffers()))} buffers)")
