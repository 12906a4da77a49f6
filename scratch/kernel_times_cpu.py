"""Time every generated C++ kernel of a zoo model's CPU training step (1 thread): per-kernel totals per step.

Usage: scratch/kernel_times_cpu.py MODEL [STEPS] [TOP]
Patches ``WrapperWriter.write`` so each kernel callable is wrapped by a timer (adds ~1 us a call).
"""
import collections
import sys
import time

import torch

import magpy
from cpu_step import training_step
from magpy import zoo
from magpy.codegen import wrapper

torch.set_num_threads(1)
name = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 50
top = int(sys.argv[3]) if len(sys.argv) > 3 else 40
TIMES = collections.Counter()
CALLS = collections.Counter()
ON = [False]
original = wrapper.WrapperWriter.write


def timed(kname, fn):
    def call(*args):
        if not ON[0]:
            return fn(*args)
        t0 = time.perf_counter_ns()
        r = fn(*args)
        TIMES[kname] += time.perf_counter_ns() - t0
        CALLS[kname] += 1
        return r
    return call


def write(self, kernels, eager, general=None):
    kernels = {k: timed(k, v) for k, v in kernels.items()}
    return original(self, kernels, eager, general)


wrapper.WrapperWriter.write = write
m, inp = zoo.get(name).make("small", "cpu")
step = training_step(m, inp, magpy.compile(m))


for _ in range(5):
    step()
ON[0] = True
t0 = time.perf_counter()
for _ in range(steps):
    step()
total = (time.perf_counter() - t0) / steps * 1e3
kern = sum(TIMES.values()) / steps / 1e6
print(f"{name}: {total:.2f} ms/step, kernels {kern:.2f} ms/step ({len(TIMES)} kernels)")
for k, v in TIMES.most_common(top):
    print(f"  {v / steps / 1e3:8.1f} us  x{CALLS[k] // steps}  {k}")
