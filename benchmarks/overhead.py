#!/usr/bin/env python
"""Per-call overhead of a compiled call over eager, side by side in one run.

Rows: a tiny function (one add), the same with one graph break in the middle (each compiler's own
marker: ``magpy.graph_break()`` / ``torch._dynamo.graph_break()``), and a ResNet-18-sized module at a tiny spatial size (so that Python
overhead, not arithmetic, dominates). Columns: eager, ``magpy.compile(backend="eager")`` and
``torch.compile(backend="eager")`` — the same graph executor behind both compilers, so the difference
is the cost of guards, dispatch and replay. Ratios are times over eager (lower is better).

    python benchmarks/overhead.py            # about a minute
    python benchmarks/overhead.py --quick
"""
import argparse
import statistics
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


def tiny(x, y):
    return x + y


def one_break(x, y):
    z = x + y
    magpy.graph_break()
    return z * y


def one_break_dynamo(x, y):
    z = x + y
    torch._dynamo.graph_break()
    return z * y


def resnet18(width=16, classes=10):
    """A ResNet-18-shaped network (4 stages x 2 basic blocks), narrow so that it runs on a 2-core CPU."""
    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.down is None else self.down(x)
            return self.relu(out + identity)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width),
                                      nn.ReLU(inplace=True))
            layers, cin = [], width
            for k, cout in enumerate([width, 2 * width, 4 * width, 8 * width]):
                layers += [Block(cin, cout, 1 if k == 0 else 2), Block(cout, cout, 1)]
                cin = cout
            self.layers = nn.Sequential(*layers)
            self.head = nn.Linear(cin, classes)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    return ResNet().eval()


def timed(fn, args, repeats, inner):
    for _ in range(3):
        fn(*args)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(inner):
            fn(*args)
        samples.append((time.perf_counter() - start) / inner)
    return min(samples), statistics.median(samples)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    opts = parser.parse_args(argv)
    torch.set_num_threads(1)
    repeats = 5 if opts.quick else 11
    rows = []
    x, y = torch.randn(4), torch.randn(4)
    net = resnet18()
    image = torch.randn(1, 3, 8, 8)
    # (name, function, the same for torch.compile, arguments, calls per sample, compiles MagPy makes)
    workloads = [("tiny function", tiny, tiny, (x, y), 2000, 1),
                 ("one graph break", one_break, one_break_dynamo, (x, y), 2000, 2),
                 ("resnet18-sized module", net, net, (image,), 50, 1)]
    print(f"Python {sys.version.split()[0]}, torch {torch.__version__}, 1 thread; best of {repeats}")
    print(f"{'workload':24} {'eager us':>10} {'magpy us':>10} {'dynamo us':>10} {'magpy/eager':>12} "
          f"{'dynamo/eager':>13} {'magpy/dynamo':>13}")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, fn, dynamo_fn, args, inner, compiles in workloads:
            compiled = magpy.compile(fn, backend="eager")
            dynamo = torch.compile(dynamo_fn, backend="eager")
            compiled(*args)  # (a call with a graph break finds it; the next compiles both sides)
            expected = fn(*args)
            assert torch.allclose(compiled(*args), expected) and torch.allclose(dynamo(*args), expected)
            eager_t, _ = timed(fn, args, repeats, inner)
            magpy_t, _ = timed(compiled, args, repeats, inner)
            dynamo_t, _ = timed(dynamo, args, repeats, inner)
            stats = compiled.stats if hasattr(compiled, "stats") else compiled._magpy_compiled.stats
            assert stats.compiles == compiles and stats.fallbacks == 0, stats
            rows.append((name, eager_t, magpy_t, dynamo_t))
            print(f"{name:24} {eager_t * 1e6:10.1f} {magpy_t * 1e6:10.1f} {dynamo_t * 1e6:10.1f} "
                  f"{magpy_t / eager_t:11.2f}x {dynamo_t / eager_t:12.2f}x {magpy_t / dynamo_t:12.2f}x")
    return rows


if __name__ == "__main__":
    main()
