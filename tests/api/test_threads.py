"""Compiled functions called from several threads at once: one capture and compile per function, no
warning, every result equal to eager's, counters that add up."""
import threading
import warnings

import pytest
import torch
import torch.nn as nn

import magpy
from magpy.backends import magpy_backend

THREADS = 8


def race(call, threads=THREADS):
    """``call(k)`` in ``threads`` threads started together; their results, in thread order (re-raising
    the first exception a thread hit)."""
    barrier = threading.Barrier(threads)
    results, errors = [None] * threads, []

    def work(k):
        barrier.wait()
        try:
            results[k] = call(k)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            errors.append(e)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]
    return results


def mixed(x, y):
    return (x * 2 + y).sin().sum(0) + 1


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 2


def assert_counted(stats, calls):
    """Each call was counted once: the one that compiled, a cache hit, or run eagerly meanwhile."""
    assert stats.calls == calls
    assert stats.compiles == 1 and stats.fallbacks == 0 and stats.graph_breaks == 0
    assert 1 + stats.cache_hits + stats.eager_while_compiling == calls


@pytest.mark.parametrize("backend", ["magpy", "eager"])
def test_racing_first_calls_compile_once_and_match_eager(backend):
    f = magpy.compile(mixed, backend=backend)
    x, y = torch.randn(8, 16), torch.randn(16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = race(lambda k: f(x, y))
    expected = mixed(x, y)
    for r in results:
        torch.testing.assert_close(r, expected)
    assert_counted(f.stats, THREADS)
    torch.testing.assert_close(f(x, y), expected)
    assert f.stats.cache_hits >= 1


def test_racing_first_calls_of_a_module_compile_once():
    block = Block()
    compiled = magpy.compile(block, backend="eager")
    xs = [torch.randn(3, 6) for _ in range(THREADS)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = race(lambda k: compiled(xs[k]))
    for x, r in zip(xs, results):
        torch.testing.assert_close(r, block(x))
    assert_counted(compiled._magpy_compiled.stats, THREADS)


def test_different_functions_compiled_in_different_threads_each_compile_once():
    def scaled(x):
        return x * 3 - 1

    def shifted(x):
        return (x + 2).cos()
    fns = [scaled, shifted]
    compiled = [magpy.compile(fn, backend="eager") for fn in fns]
    x = torch.randn(5)

    def loop(k):
        # calls made while the other function is being captured run eagerly: go on until compiled
        f, outs = compiled[k % 2], []
        while len(outs) < 6 or (not f.stats.compiles and len(outs) < 10_000):
            outs.append(f(x))
        return outs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        results = race(loop, threads=4)
    for k, outs in enumerate(results):
        for r in outs:
            torch.testing.assert_close(r, fns[k % 2](x))
    for c, calls in zip(compiled, [len(results[0]) + len(results[2]), len(results[1]) + len(results[3])]):
        assert_counted(c.stats, calls)


def test_magpy_backend_compiles_graphs_from_several_threads():
    def graph_of(k):
        def fn(a):
            return ((a * (k + 1)).exp() + a,)
        return torch.fx.symbolic_trace(fn)
    graphs = [graph_of(k) for k in range(4)]
    a = torch.randn(4, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled = race(lambda k: magpy_backend(graphs[k], [a]), threads=4)
    for gm, fn in zip(graphs, compiled):
        torch.testing.assert_close(fn(a)[0], gm(a)[0])


def test_concurrent_calls_keep_every_entry_of_the_cache():
    """Hits that move an entry to the front, in many threads, lose none of the entries."""
    f = magpy.compile(mixed, backend="eager")
    inputs = [(torch.randn(4, 3, dtype=dtype), torch.randn(3, dtype=dtype))  # (three dtypes: three entries)
              for dtype in (torch.float32, torch.float64, torch.float16)]
    for x, y in inputs:
        f(x, y)
    assert f.stats.compiles == 3
    race(lambda k: [f(*inputs[(k + j) % 3]) for j in range(9)])
    assert f.stats.compiles == 3 and len(f.cache.entries) == 3
    assert f.stats.cache_hits == THREADS * 9
