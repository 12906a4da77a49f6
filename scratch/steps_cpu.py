"""Run N warm CPU training steps of a zoo model (1 thread), eager or magpy: a target for perf.

Usage: scratch/steps_cpu.py MODEL eager|magpy [STEPS] [SIZE]
"""
import copy
import sys
import time

import torch
import torch.nn.functional as F

import magpy
from magpy import zoo
from magpy.measure.bench.runners import tensors_of

torch.set_num_threads(1)
name, mode = sys.argv[1], sys.argv[2]
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 200
size = sys.argv[4] if len(sys.argv) > 4 else "small"
m, inp = zoo.get(name).make(size, "cpu")
m.train()
outs = [t for t in tensors_of(copy.deepcopy(m)(*inp)) if t.requires_grad]
targets = [torch.randn_like(t) for t in outs]
fwd = magpy.compile(m) if mode == "magpy" else m
opt = torch.optim.AdamW(m.parameters(), lr=1e-4)


def step():
    opt.zero_grad(set_to_none=True)
    out = [t for t in tensors_of(fwd(*inp)) if t.requires_grad]
    loss = sum(F.mse_loss(o, t) for o, t in zip(out, targets))
    loss.backward()
    opt.step()


for _ in range(5):
    step()
print("warm", file=sys.stderr, flush=True)
t0 = time.perf_counter()
for _ in range(steps):
    step()
print(f"{name} {mode}: {(time.perf_counter() - t0) / steps * 1e3:.2f} ms/step", file=sys.stderr)
