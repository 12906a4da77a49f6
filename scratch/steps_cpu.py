"""Run N warm CPU training steps of a zoo model (1 thread), eager or magpy: a target for perf.

Usage: scratch/steps_cpu.py MODEL eager|magpy [STEPS] [SIZE]
"""
import sys
import time

import torch

import magpy
from cpu_step import training_step
from magpy import zoo

torch.set_num_threads(1)
name, mode = sys.argv[1], sys.argv[2]
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 200
size = sys.argv[4] if len(sys.argv) > 4 else "small"
m, inp = zoo.get(name).make(size, "cpu")
step = training_step(m, inp, magpy.compile(m) if mode == "magpy" else m)


for _ in range(5):
    step()
print("warm", file=sys.stderr, flush=True)
t0 = time.perf_counter()
for _ in range(steps):
    step()
print(f"{name} {mode}: {(time.perf_counter() - t0) / steps * 1e3:.2f} ms/step", file=sys.stderr)
