"""Cold first two CPU training steps of zoo models (fresh caches, 1 thread for the steps): seconds per
step, and how many of them gcc took (kernels compiled, gcc processes, their wall seconds).

Usage: scratch/first_cpu.py MODEL [MODEL ...] [--profile]"""
import cProfile, os, pstats, sys, tempfile, time
root = tempfile.mkdtemp()
for var in ("MAGPY_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"):
    os.environ[var] = os.path.join(root, var.lower())
import torch
import magpy
from cpu_step import training_step
from magpy import zoo
from magpy.codegen import compile_cache

torch.set_num_threads(1)
gcc = {"seconds": 0.0, "calls": 0, "sources": 0}
_orig = compile_cache._finish


def timed(job):
    t = time.perf_counter()
    try:
        return _orig(job)
    finally:
        gcc["seconds"] += time.perf_counter() - t   # (the waits for gcc: what it did not overlap)
        gcc["sources"] += 1


compile_cache._finish = timed
profile = "--profile" in sys.argv or "--profile2" in sys.argv
only_second = "--profile2" in sys.argv
for name in [a for a in sys.argv[1:] if not a.startswith("--")]:
    magpy.reset()
    m, inp = zoo.get(name).make("small", "cpu")
    step = training_step(m, inp, magpy.compile(m))

    prof = cProfile.Profile() if profile else None
    times = []
    for i in range(3):
        if prof and i < 2 and (i == 1 or not only_second):
            prof.enable()
        t = time.perf_counter(); step(); times.append(time.perf_counter() - t)
        if prof and i < 2:
            prof.disable()
    print(f"{name}: steps {' '.join(f'{s:.2f}' for s in times)} s; first two {sum(times[:2]):.1f} s; "
          f"waited {gcc['seconds']:.1f} s for {gcc['sources']} gcc processes", flush=True)
    gcc.update(seconds=0.0, calls=0, sources=0)
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(45)
