#!/usr/bin/env python
"""Sequences of calls whose sizes or numbers change: how many compiles each compiler makes, and whether
every call stayed compiled — MagPy and ``torch.compile`` side by side in one run.

Each sequence calls one function or module on inputs of changing sizes (a batch, a sequence length, an
image size, an int used in slicing, a module counter in arithmetic, a reshape by a size; a transformers
BERT over six sequence lengths when transformers is installed). Columns per compiler: graphs compiled
over the sequence (and the time the whole sequence took, compiles included), calls that ran eagerly
(MagPy: counted; torch.compile: every call after its recompile limit), and whether every result
equalled eager's. Both compilers run with the same graph executor (``--backend eager`` by default,
so the numbers compare capture, not code generation); ``--backend magpy`` / ``inductor`` compile for real.

    python benchmarks/dynamic_shapes.py                  # about a minute
    python benchmarks/dynamic_shapes.py --backend inductor
"""
import argparse
import sys
import time
import warnings
from pathlib import Path

try:
    import magpy
except ImportError:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import magpy

import torch
from torch import nn


def _mlp():
    lin = nn.Linear(16, 8)
    return (lambda x: torch.relu(lin(x)).sum(-1)), [(torch.randn(b, 16),) for b in (8, 13, 3, 17, 32, 5, 9, 21,
                                                                              2, 11, 7, 30, 6)]


def _attention():
    def fn(x):
        b, t, c = x.shape
        q = x.view(b, t, 4, c // 4).transpose(1, 2)
        w = (q @ q.transpose(-1, -2)) / (c // 4) ** 0.5
        w = w.masked_fill(torch.tril(torch.ones(t, t)) == 0, float("-inf")).softmax(-1)
        return (w @ q).transpose(1, 2).reshape(b, t, c)
    return fn, [(torch.randn(2, t, 16),) for t in (7, 9, 12, 16, 23, 31, 40, 64)]


def _image():
    conv = nn.Conv2d(3, 8, 3, padding=1)
    return (lambda x: nn.functional.adaptive_avg_pool2d(torch.relu(conv(x)), 1).flatten(1)), \
        [(torch.randn(2, 3, h, w),) for h, w in ((32, 32), (40, 48), (64, 56), (28, 28), (96, 80))]


def _slice_by_int():
    return (lambda x, n: x[:, :n] * 2 + x[:, n:].sum()), [(torch.randn(4, 64), n) for n in (3, 5, 9, 17, 33, 40, 50)]


class _Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)
        self.step = 0

    def forward(self, x):
        self.step += 1
        return self.lin(x) * (1 + self.step / 100)


def _counter():
    return _Counter(), [(torch.randn(4, 8),) for _ in range(12)]


def _reshape_by_size():
    return (lambda x: x.reshape(x.size(0) * 4, -1).softmax(-1)), [(torch.randn(b, 8, 6),) for b in (3, 5, 7, 9, 11, 13)]


def _bert():
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
    model = BertModel(config).eval()
    return model, [(torch.randint(0, 128, (2, t)),) for t in (5, 8, 11, 16, 23, 31)]


SEQUENCES = {"batch": _mlp, "sequence length": _attention, "image size": _image, "int in slicing": _slice_by_int,
             "module counter": _counter, "reshape by a size": _reshape_by_size}


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return torch.allclose(a, b, atol=1e-4, rtol=1e-4)
    if hasattr(a, "to_tuple"):
        a, b = a.to_tuple(), b.to_tuple()
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def _run(make, compile_fn):
    """Build the sequence's function twice alike (one to compile, one as the reference) and make its calls:
    (the compiled function, whether every call equalled the reference)."""
    torch.manual_seed(0)
    fn, calls = make()
    torch.manual_seed(0)
    reference, _ = make()
    compiled = compile_fn(fn)
    return compiled, all(_same(reference(*a), compiled(*a)) for a in calls)


def run_magpy(make, backend):
    compiled, ok = _run(make, lambda fn: magpy.compile(fn, backend=backend))
    stats = compiled._magpy_compiled.stats if isinstance(compiled, nn.Module) else compiled.stats
    return stats.graphs, stats.eager_calls + stats.fallbacks, ok


def run_dynamo(make, backend):
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    _, ok = _run(make, lambda fn: torch.compile(fn, backend=backend))
    graphs = counters["stats"]["unique_graphs"]
    # (past the recompile limit Dynamo runs the function eagerly for good: it says so once)
    limit = any("recompile limit" in k for k in counters["unimplemented"])
    return graphs, "after the limit" if limit else 0, ok


def _quiet_dynamo():
    import logging

    torch._logging.set_logs(dynamo=logging.ERROR)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="eager", help="graph executor for both compilers (eager, magpy, inductor)")
    args = parser.parse_args(argv)
    _quiet_dynamo()
    sequences = dict(SEQUENCES)
    try:
        import transformers  # noqa: F401
        sequences["BERT, 6 sequence lengths"] = _bert
    except ImportError:
        pass
    dynamo_backend = "inductor" if args.backend == "magpy" else args.backend
    print(f"torch {torch.__version__}; magpy backend {args.backend!r}, torch.compile backend {dynamo_backend!r}")
    print("| sequence | calls | magpy graphs (time) | magpy calls run eagerly | torch.compile graphs (time) "
          "| torch.compile calls run eagerly | both equal eager |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, make in sequences.items():
        calls = len(make()[1])
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            started = time.perf_counter()
            m = run_magpy(make, args.backend)
            m_seconds = time.perf_counter() - started
            started = time.perf_counter()
            d = run_dynamo(make, dynamo_backend)
            d_seconds = time.perf_counter() - started
        print(f"| {name} | {calls} | {m[0]} ({m_seconds:.1f} s) | {m[1]} | {d[0]} ({d_seconds:.1f} s) | {d[1]} "
              f"| {'yes' if m[2] and d[2] else f'magpy {m[2]}, torch.compile {d[2]}'} |")


if __name__ == "__main__":
    main()
