"""Profile one zoo model's CPU float32 training step (1 thread) under eager and magpy; print top ops.

Usage: scratch/prof_train_cpu.py MODEL [SIZE] [ROWS]
"""
import copy
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

import magpy
from magpy import zoo
from magpy.measure.bench.runners import tensors_of

torch.set_num_threads(1)
name = sys.argv[1]
size = sys.argv[2] if len(sys.argv) > 2 else "small"
rows = int(sys.argv[3]) if len(sys.argv) > 3 else 30
m, inp = zoo.get(name).make(size, "cpu")
m.train()
outs = [t for t in tensors_of(copy.deepcopy(m)(*inp)) if t.requires_grad]
targets = [torch.randn_like(t) for t in outs]
for mode in sys.argv[4].split(",") if len(sys.argv) > 4 else ("eager", "magpy"):
    model = copy.deepcopy(m)
    fwd = {"magpy": magpy.compile, "inductor": torch.compile}.get(mode, lambda x: x)(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        out = [t for t in tensors_of(fwd(*inp)) if t.requires_grad]
        loss = sum(F.mse_loss(o, t) for o, t in zip(out, targets))
        loss.backward()
        opt.step()
    for _ in range(5):
        step()
    with profile(activities=[ProfilerActivity.CPU]) as p:
        for _ in range(10):
            step()
    print(f"===== {name} {mode} (10 steps)")
    print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=70))
