"""Run by ``test_precompile.py`` in a process of its own (Triton compiling, not interpreting), on a
machine without a GPU: a graph's kernels made for CUDA with a stand-in Triton driver (an H100's
target), their block configs compiled by the worker pool, then every launch's compile asked of
Triton's JIT entry again. Prints one JSON line: the kernels, jobs, and the cache hits and misses
of the second round (Triton's compilation listener).

    python precompile_check.py            (TRITON_CACHE_DIR and MAGPY_CACHE_DIR: empty folders)
"""
import json
import os
import sys

os.environ.pop("TRITON_INTERPRET", None)

import torch  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402
from triton import knobs  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.runtime import driver  # noqa: E402

from magpy.codegen import compile_aten_graph, last_report  # noqa: E402
from magpy.codegen.decompositions import decomposition_table  # noqa: E402
from magpy.codegen.triton import precompile  # noqa: E402


class StandInDriver:
    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)


def graph(x, y):
    # kernels of every kind, most large enough to time several configs; a bf16 pointer, and sizes
    # of 1 (which Triton specialises on)
    return (x.sin() * y + 1, (x.t() * 2).contiguous(), torch.softmax(x, -1), x.sum(0), x[:1].cos())


def main():
    driver.set_active(StandInDriver())
    made = []
    jobs = precompile.jobs

    def recording(launcher, pointers, numbers=()):
        found = jobs(launcher, pointers, numbers)
        made.append((launcher, pointers, numbers, len(found)))
        return found

    precompile.jobs = recording
    x, y = torch.randn(4096, 1024), torch.randn(4096, 1024, dtype=torch.bfloat16)
    gm = make_fx(graph, decomposition_table=decomposition_table(), tracing_mode="fake")(x, y)
    compile_aten_graph(gm, [x, y], mode="triton")
    report = last_report()
    for launcher, *_ in made:
        precompile.settle(launcher.pending or [])
    hits = []
    knobs.compilation.listener = lambda **event: hits.append(event["cache_hit"])
    for launcher, pointers, numbers, _ in made:
        for config in launcher.plan.configs:
            launcher.warmup(config, pointers, numbers)
    print(json.dumps({"kernels": len(report.kernels), "launchers": len(made),
                      "configs": sum(len(launcher.plan.configs) for launcher, *_ in made),
                      "jobs": sum(count for *_, count in made), "hits": hits.count(True),
                      "misses": hits.count(False), "fallback": report.graph_fallback}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
