"""What libraries are promised of a compiler (``torch.compiler``): ``is_compiling()`` is True in what MagPy
captures and compiles (libraries take their compile-friendly paths by it, as under torch.compile), and a
function ``torch.compiler.disable``d runs natively, a graph break at the call, never traced.
"""
import warnings

import torch

import magpy
from twin import differential, expect, fresh, plain


def t():
    return torch.randn(3)


def branches_on_compiling(x):
    if torch.compiler.is_compiling():
        return x + 1
    return x - 1


def test_is_compiling_is_true_in_every_compiled_call_and_needs_no_guard():
    compiled = magpy.compile(branches_on_compiling)
    for _ in range(3):
        x = t()
        assert torch.equal(compiled(x), x + 1)
    assert compiled.stats.compiles == 1 and compiled.stats.cache_hits == 2
    assert "is_compiling()" not in compiled.cache.entries[0].text   # (no guard calls it)
    assert torch.compiler.is_compiling() is False   # (outside, as ever)


def test_the_older_spellings_of_is_compiling_agree():
    def fn(x):
        return x + int(torch._dynamo.is_compiling()) + int(torch._dynamo.external_utils.is_compiling())

    compiled = magpy.compile(fn)
    for _ in range(2):
        x = t()
        assert torch.equal(compiled(x), x + 1 + 1)


class _Memo:
    """transformers' ``compile_compatible_method_lru_cache``: a cache skipped while compiling."""

    def __init__(self):
        self.cache = {}

    def table(self, n):
        if torch.compiler.is_compiling():
            return torch.arange(n, dtype=torch.float32)
        if n not in self.cache:
            self.cache[n] = torch.arange(n, dtype=torch.float32)
        return self.cache[n]


def test_a_library_cache_skipped_while_compiling_keeps_the_call_in_one_graph():
    memo = _Memo()

    def fn(x):
        return x * memo.table(x.shape[0])

    compiled = magpy.compile(fn)
    for _ in range(3):
        x = t()
        assert torch.equal(compiled(x), x * torch.arange(3.0))
    assert compiled.stats.graph_breaks == 0 and compiled.stats.fallbacks == 0
    assert memo.cache == {}


CALLS = []


@torch.compiler.disable
def logged_sin(x):
    CALLS.append(x.sum().item())
    return x.sin() + len(CALLS)


def uses_disabled(x):
    y = x * 2
    return logged_sin(y) + 1


def test_a_disabled_function_runs_natively_at_a_graph_break():
    def make():
        CALLS.clear()
        return uses_disabled, None

    stats = differential(make, fresh(lambda: (t(),), n=4), observe=lambda env: list(CALLS))
    expect(stats, graph_breaks=1, compiles=2, cache_hits=3)
    assert stats.reasons == [("a function torch.compiler.disable()d (runs natively: graph break)",
                              f"{__file__}:{uses_disabled.__code__.co_firstlineno + 2}")]


def test_compiling_a_disabled_function_runs_it_eagerly_saying_why():
    compiled = magpy.compile(logged_sin)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            x = t()
            CALLS.clear()
            assert torch.equal(compiled(x), x.sin() + 1)
    said = [str(w.message) for w in caught if str(w.message).startswith("magpy:")]
    assert len(said) == 1 and "torch.compiler.disable()d (runs eagerly)" in said[0], said
