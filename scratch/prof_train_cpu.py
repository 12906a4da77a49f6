"""Profile one zoo model's CPU float32 training step (1 thread) under eager and magpy; print top ops.

Usage: scratch/prof_train_cpu.py MODEL [SIZE] [ROWS]
"""
import copy
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import magpy
from cpu_step import training_step
from magpy import zoo

torch.set_num_threads(1)
name = sys.argv[1]
size = sys.argv[2] if len(sys.argv) > 2 else "small"
rows = int(sys.argv[3]) if len(sys.argv) > 3 else 30
m, inp = zoo.get(name).make(size, "cpu")
for mode in sys.argv[4].split(",") if len(sys.argv) > 4 else ("eager", "magpy"):
    torch.manual_seed(0)  # (the same targets for each mode)
    model = copy.deepcopy(m)
    step = training_step(model, inp, {"magpy": magpy.compile, "inductor": torch.compile}.get(mode, lambda x: x)(model))
    for _ in range(5):
        step()
    with profile(activities=[ProfilerActivity.CPU]) as p:
        for _ in range(10):
            step()
    print(f"===== {name} {mode} (10 steps)")
    print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=70))
