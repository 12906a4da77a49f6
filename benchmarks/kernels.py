"""Kernel benchmarks, side by side: eager vs magpy vs torch.compile (Inductor), on CPU or a GPU.

    PYTHONPATH=src python benchmarks/kernels.py [--device cuda] [--quick] [--only NAME,...] [--no-inductor]
                                                [--profile] [--symbolic]

For each workload: the median runtime of each backend (measured in alternating rounds), magpy's
ratio to eager and to Inductor, and the compile time of the first call with a cold cache (a
fresh, empty cache directory for each backend). Every row's result is checked against eager
("ok"), and a row says when some of magpy's graphs ran eagerly (an op without a lowering, or a
whole graph it could not compile). Ends with geometric means. ``--profile`` adds, under each row, where each backend's time goes:
the aten ops taking the most time per call (magpy's own kernels are not listed; they are the
rest of the call's time).

``--symbolic`` adds magpy compiled once with symbolic sizes (``torch.compile(dynamic=True)``: one
graph for every size), timed at the same size as the static one, beside it: its time and its
ratio to the static graph's ("sym/stat", 1.00 is as fast), and whether every graph really
compiled symbolically ("sym ok").

``--device cuda`` runs GPU-sized workloads (the same functions, bigger, plus bfloat16 ones), times
each backend with CUDA events (``triton.testing.do_bench``, median, L2 flushed between calls) and
adds the achieved bandwidth of each: the bytes a single pass must move (inputs read once,
outputs written once) over the time.
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time

import torch
import torch._dynamo
import torch.nn as nn
import torch.nn.functional as F


def pointwise_chain(x, y):
    z = x * y + 1.0
    z = torch.sin(z) * torch.cos(x)
    z = torch.exp(-z * z) + torch.tanh(y)
    return torch.relu(z) * 0.5 + torch.sigmoid(x)


def row_reductions(x):
    return x.sum(-1), x.amax(-1)


def softmax(x):
    return torch.softmax(x, -1)


def layer_norm_gelu(x, w, b):
    return F.gelu(F.layer_norm(x, x.shape[-1:], w, b))


def layer_norm(x, w, b):
    return F.layer_norm(x, x.shape[-1:], w, b)


def transpose_add(x, y):
    return x + y.t()


class MLP(nn.Module):
    def __init__(self, d=256):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d), nn.LayerNorm(d))

    def forward(self, x):
        return self.layers(x) + x


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 16 * 16, 10))

    def forward(self, x):
        return self.body(x)


class TransformerBlock(nn.Module):
    def __init__(self, d=256, heads=4):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, -1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // self.heads), -1) @ v
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


def sin2_cos2(x):
    return torch.sin(x) ** 2 + torch.cos(x) ** 2


def gpu_workloads(quick: bool):
    """Workloads sized for a GPU: large enough that memory, not launches, sets the time."""
    d = torch.device("cuda")
    n = 4096 if not quick else 2048
    rows = (8192, 4096) if not quick else (4096, 4096)
    wide = (8192, 8192) if not quick else (4096, 4096)
    w, b = torch.randn(rows[1], device=d), torch.randn(rows[1], device=d)
    half = torch.bfloat16
    return [
        ("sin2_cos2_4096sq", sin2_cos2, (torch.randn(n, n, device=d),)),
        ("pointwise_64M", pointwise_chain, (torch.randn(64 * 2**20, device=d), torch.randn(64 * 2**20, device=d))),
        ("row_reductions", row_reductions, (torch.randn(*rows, device=d),)),
        ("softmax_8192sq", softmax, (torch.randn(*wide, device=d),)),
        ("softmax_short_rows", softmax, (torch.randn(2**18, 128, device=d),)),
        ("layer_norm", layer_norm, (torch.randn(*rows, device=d), w, b)),
        ("layer_norm_gelu", layer_norm_gelu, (torch.randn(*rows, device=d), w, b)),
        ("layer_norm_gelu_bf16", layer_norm_gelu,
         (torch.randn(*rows, device=d, dtype=half), w.to(half), b.to(half))),
        ("transpose_add", transpose_add, (torch.randn(*wide, device=d), torch.randn(*wide, device=d))),
        ("mlp", MLP(1024).eval().to(d), (torch.randn(8192, 1024, device=d),)),
        ("transformer_block", TransformerBlock(1024, 16).eval().to(d), (torch.randn(16, 512, 1024, device=d),)),
    ]


def workloads(quick: bool):
    big = 64 * 2**20 if not quick else 16 * 2**20
    rows = (4096, 1024)
    w, b = torch.randn(1024), torch.randn(1024)
    return [
        ("pointwise_4M", pointwise_chain, (torch.randn(4 * 2**20), torch.randn(4 * 2**20))),
        (f"pointwise_{big >> 20}M", pointwise_chain, (torch.randn(big), torch.randn(big))),
        ("row_reductions", row_reductions, (torch.randn(*rows),)),
        ("softmax", softmax, (torch.randn(*rows),)),
        ("layer_norm", layer_norm, (torch.randn(*rows), w, b)),
        ("layer_norm_gelu", layer_norm_gelu, (torch.randn(*rows), w, b)),
        ("transpose_add", transpose_add, (torch.randn(2048, 2048), torch.randn(2048, 2048))),
        ("mlp", MLP().eval(), (torch.randn(512, 256),)),
        ("cnn", CNN().eval(), (torch.randn(8, 3, 32, 32),)),
        ("transformer_block", TransformerBlock().eval(), (torch.randn(4, 128, 256),)),
    ]


def measure(fns, args, budget_s: float, rounds: int = 5) -> list[float]:
    """Median seconds per call of each of ``fns`` (after warm-up), within about ``budget_s`` each.

    The calls are taken in ``rounds`` turns, one backend after another, so that a drift of the
    machine's speed (other jobs, clocks) falls on every backend alike.
    """
    times = [[] for _ in fns]
    with torch.no_grad():
        for fn in fns:
            for _ in range(2):
                fn(*args)
        for _ in range(rounds):
            for fn, samples in zip(fns, times):
                deadline = time.perf_counter() + budget_s / rounds
                count = 0
                while count < 2 or (time.perf_counter() < deadline and count < 200 // rounds):
                    start = time.perf_counter()
                    fn(*args)
                    samples.append(time.perf_counter() - start)
                    count += 1
    return [statistics.median(samples) for samples in times]


def measure_gpu(fns, args) -> list[float]:
    """Median seconds per call of each of ``fns`` on the GPU (CUDA events, L2 flushed)."""
    from triton.testing import do_bench

    with torch.no_grad():
        return [do_bench(lambda fn=fn: fn(*args), warmup=50, rep=300, return_mode="median") / 1e3
                for fn in fns]


def bytes_moved(args, result) -> int:
    """Bytes a single pass must move: every tensor input read once, every output written once."""
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if isinstance(args, tuple) and not tensors:
        return 0
    outputs = result if isinstance(result, (tuple, list)) else [result]
    return sum(t.numel() * t.element_size() for t in tensors + [o for o in outputs if isinstance(o, torch.Tensor)])


def profile(fn, args, label: str, calls: int = 20) -> None:
    """Print the aten ops taking the most self time per call of ``fn``."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch.no_grad():
        for _ in range(3):
            fn(*args)
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            start = time.perf_counter()
            for _ in range(calls):
                fn(*args)
            wall = (time.perf_counter() - start) / calls
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    top = ", ".join(f"{e.key} {e.self_cpu_time_total / calls / 1e3:.3f}" for e in events[:6])
    print(f"    {label:9} {wall * 1e3:8.3f} ms/call profiled; top self ms: {top}")


def magpy_symbolic(gm, example_inputs):
    """The "magpy" backend under another name: Dynamo keeps the graphs it compiles apart from
    those of "magpy" (a static graph would otherwise serve the symbolic variant's calls)."""
    from magpy.backends import magpy_backend

    return magpy_backend(gm, example_inputs)


def compile_cold(fn, args, backend: str, dynamic=None):
    """(compiled fn, seconds of the first call) with an empty cache for ``backend``.

    Dynamo's own cache is not reset here (``main`` resets it once per workload), so that the
    backends compiled for one workload stay usable side by side.
    """
    name = backend if isinstance(backend, str) else "magpy"
    cache = tempfile.mkdtemp(prefix=f"bench-{name}-")
    if name == "magpy":
        os.environ["MAGPY_CACHE_DIR"] = cache
    else:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cache, "triton")
    compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
    start = time.perf_counter()
    with torch.no_grad():
        compiled(*args)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return compiled, time.perf_counter() - start


def eager_graphs(since: int) -> int:
    """How many graphs magpy compiled since report ``since`` run eagerly, wholly or in part."""
    from magpy.codegen import reports

    return sum(1 for r in reports(since=since) if r.graph_fallback or r.fallbacks)


def all_symbolic(since: int) -> bool:
    """True when magpy compiled graphs since report ``since``, each one with symbolic sizes and
    none of them run eagerly."""
    from magpy.codegen import reports

    new = reports(since=since)
    return bool(new) and all(r.symbolic and not r.graph_fallback and not r.fallbacks for r in new)


def close(a, b) -> bool:
    if isinstance(a, (tuple, list)):
        return all(close(x, y) for x, y in zip(a, b))
    loose = a.dtype in (torch.float16, torch.bfloat16) or a.is_cuda  # TF32 matmuls on a GPU
    return torch.allclose(a.float(), b.float(), rtol=2e-2 if loose else 1e-3, atol=2e-2 if loose else 1e-4)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, shorter timing")
    parser.add_argument("--only", default="", help="comma-separated workload names")
    parser.add_argument("--no-inductor", action="store_true")
    parser.add_argument("--profile", action="store_true", help="aten-op breakdown under each row")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--symbolic", action="store_true",
                        help="also magpy compiled once with symbolic sizes, beside the static graph")
    opts = parser.parse_args(argv)
    import magpy.backends  # noqa: F401  (registers "magpy" with torch.compile)

    gpu = opts.device == "cuda"
    if gpu and not torch.cuda.is_available():
        parser.error("--device cuda: no CUDA device is available to this torch build")
    budget = 0.5 if opts.quick else 1.5
    only = set(filter(None, opts.only.split(",")))
    rows = []
    for name, fn, args in (gpu_workloads if gpu else workloads)(opts.quick):
        if only and name not in only:
            continue
        from magpy.codegen import mark

        torch._dynamo.reset()
        before = mark()
        magpy_fn, magpy_compile = compile_cold(fn, args, "magpy")
        partly_eager = eager_graphs(before)
        with torch.no_grad():
            ok = close(magpy_fn(*args), fn(*args))
        fns = [fn, magpy_fn]
        inductor_t = inductor_compile = float("nan")
        if not opts.no_inductor:
            inductor_fn, inductor_compile = compile_cold(fn, args, "inductor")
            fns.append(inductor_fn)
        symbolic = None
        if opts.symbolic:
            since = mark()
            symbolic_fn, _ = compile_cold(fn, args, magpy_symbolic, dynamic=True)
            with torch.no_grad():
                symbolic_ok = all_symbolic(since) and close(symbolic_fn(*args), fn(*args))
            fns.append(symbolic_fn)
        eager_t, magpy_t, *rest = measure_gpu(fns, args) if gpu else measure(fns, args, budget)
        if not opts.no_inductor:
            inductor_t = rest.pop(0)
        if opts.symbolic:
            symbolic = (rest.pop(0), symbolic_ok)
        with torch.no_grad():
            moved = bytes_moved(args, fn(*args)) if gpu else 0
        rows.append((name, eager_t, magpy_t, inductor_t, magpy_compile, inductor_compile,
                     (ok, partly_eager), moved, symbolic))
        print_row(rows[-1])
        sys.stdout.flush()
        if opts.profile:
            profile(fn, args, "eager")
            profile(magpy_fn, args, "magpy")
            if not opts.no_inductor:
                profile(inductor_fn, args, "inductor")
    print_summary(rows)


HEADER = (f"{'workload':20} {'eager ms':>9} {'magpy ms':>9} {'ind. ms':>9} {'vs eager':>9} "
          f"{'vs ind.':>8} {'magpy cc s':>11} {'ind. cc s':>10} {'cc ratio':>9} {'GB/s e/m/i':>16}  ok")
SYMBOLIC_HEADER = f" {'sym ms':>9} {'sym/stat':>9} {'sym ok':>7}"
_printed_header = False


def print_row(row):
    global _printed_header
    name, e, m, i, mc, ic, (ok, partly_eager), moved, symbolic = row
    header = HEADER + (SYMBOLIC_HEADER if symbolic else "")
    if not _printed_header:
        print(header)
        print("-" * len(header))
        _printed_header = True
    note = f" ({partly_eager} graph(s) partly eager)" if partly_eager else ""
    bandwidth = "/".join(f"{moved / t / 1e9:.0f}" if t == t else "-" for t in (e, m, i)) if moved else ""
    extra = ""
    if symbolic:
        s, symbolic_ok = symbolic
        extra = f" {s * 1e3:9.3f} {s / m:9.2f} {'yes' if symbolic_ok else 'NO':>7}"
    print(f"{name:20} {e * 1e3:9.3f} {m * 1e3:9.3f} {i * 1e3:9.3f} {e / m:8.2f}x {i / m:7.2f}x "
          f"{mc:11.2f} {ic:10.2f} {mc / ic:9.2f} {bandwidth:>16}  {'yes' if ok else 'NO'}{extra}{note}")


def geomean(values):
    values = [v for v in values if v == v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def print_summary(rows):
    if not rows:
        return
    print("-" * len(HEADER))
    speed_eager = geomean([e / m for _, e, m, *_ in rows])
    speed_ind = geomean([i / m for _, _, m, i, *_ in rows])
    cc = geomean([mc / ic for _, _, _, _, mc, ic, *_ in rows])
    print(f"geomean: magpy is {speed_eager:.2f}x eager's speed and {speed_ind:.2f}x Inductor's "
          f"(>1 is faster); cold compile time is {cc:.2f}x Inductor's (<1 is faster)")
    symbolic = [(row[-1][0], row[2]) for row in rows if row[-1]]
    if symbolic:
        print(f"geomean: magpy's symbolic graphs take {geomean([s / m for s, m in symbolic]):.2f}x the "
              f"static graphs' time (1.00 is as fast)")


if __name__ == "__main__":
    main()
