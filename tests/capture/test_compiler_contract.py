"""What libraries are promised of a compiler (``torch.compiler``): ``is_compiling()`` is True in what MagPy
captures and compiles (libraries take their compile-friendly paths by it, as under torch.compile), a
function ``torch.compiler.disable``d runs natively, a graph break at the call, never traced; memoized
functions of tensors are interpreted (their cache is an optimisation); ``allow_in_graph`` functions over
tensors are one node of the graph; ``assume_constant_result`` functions run once; torch's marks on tensors
are hints (``mark_dynamic`` makes a dim symbolic).
"""
import functools
import math
import warnings

import pytest
import torch
import torch._dynamo

import magpy
from twin import FromEnv, differential, expect, expect_one_graph, fresh, plain


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


# ---- memoized functions: the cache is an optimisation, not the program's meaning ---------------------------

def _sine_table(n, d):
    position = torch.arange(n, dtype=torch.float32)[:, None]
    frequency = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    table = torch.zeros(n, d)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)
    return table


class _Embedded(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(8, 8)
        self.table = functools.lru_cache(maxsize=None)(_sine_table)  # (each side its own cache)

    def forward(self, x):
        return self.lin(x + self.table(x.shape[0], x.shape[1]))


def test_a_memoized_table_of_tensors_built_from_ints_is_one_graph():
    def make():
        m = _Embedded()
        return m, m

    stats = differential(make, fresh(lambda: (torch.randn(5, 8),)), observe=lambda m: m.lin)
    expect_one_graph(stats)


def test_what_the_program_writes_into_a_memoized_tensor_stays_in_the_cache():
    # (eager gets the cache's own tensor on every call: it accumulates)
    def make():
        @functools.lru_cache(None)
        def counts(n):
            return torch.zeros(n)

        def fn(x):
            seen = counts(3)
            seen.add_(1)
            return x * seen + counts(3)
        return fn, None

    expect_one_graph(differential(make, fresh(lambda: (t(),), 4)), calls=4)


class _Tables:
    @functools.lru_cache(maxsize=None)
    def pair(self, n):
        return torch.arange(n, dtype=torch.float32), torch.ones(n)


def test_a_memoized_method_returning_tensors():
    def fn(tables, x):
        a, b = tables.pair(3)
        return x * a + b

    calls = [(FromEnv(), t()) for _ in range(3)]
    expect_one_graph(differential(lambda: (fn, _Tables()), calls))


def test_a_memoized_function_given_tensors_is_interpreted():
    def make():
        scaled = functools.cache(lambda x, k: x * k + 1)
        return (lambda x: scaled(x, 3).relu()), None

    expect_one_graph(differential(make, fresh(lambda: (t(),))))


def test_a_memoized_plain_value_keeps_its_cache():
    # (``warning_once``: the cache is what makes it warn once; the call keeps calling it natively)
    def make():
        @functools.lru_cache(None)
        def warn_once(message):
            warnings.warn(message)

        def fn(x):
            warn_once("only once")
            return x + 1
        return fn, None

    stats = differential(make, fresh(lambda: (t(),)))
    expect_one_graph(stats)
    assert [w for o in stats.side.outcomes for w in o.user_warnings] == [(UserWarning, "only once")]


# ---- allow_in_graph: one opaque node of the graph ---------------------------------------------------------

def _opaque_mix(x, y):
    return x * 2 + y.sin()


torch.compiler.allow_in_graph(_opaque_mix)


def _uses_opaque(x):
    return _opaque_mix(x, x + 1).relu()


@pytest.mark.parametrize("backend", ["eager", "magpy"])
def test_an_allowed_function_over_tensors_is_one_node_of_the_graph(backend):
    expect_one_graph(differential(plain(_uses_opaque), fresh(lambda: (t(),)), backend=backend))
    code = magpy.explain(_uses_opaque, t()).graphs[0].code
    assert "allowed__opaque_mix(" in code and "sin" not in code, code


def _opaque_count(n):
    return list(range(n))


torch.compiler.allow_in_graph(_opaque_count)


def test_an_allowed_function_over_python_values_is_traced():
    def fn(x):
        return x * len(_opaque_count(3))

    expect_one_graph(differential(plain(fn), fresh(lambda: (t(),))))


# ---- assume_constant_result: called once, a constant --------------------------------------------------------

RESULTS = []


@torch.compiler.assume_constant_result
def _configured_width():
    RESULTS.append(3)
    return len(RESULTS) * 0 + 3


def test_a_function_assumed_constant_runs_once_and_is_not_guarded():
    def fn(x):
        return x * _configured_width()

    RESULTS.clear()
    compiled = magpy.compile(fn)
    for _ in range(3):
        x = t()
        assert torch.equal(compiled(x), x * 3)
    assert len(RESULTS) == 1 and compiled.stats.compiles == 1 and compiled.stats.cache_hits == 2
    assert "_configured_width()" not in compiled.cache.entries[0].text  # (which function it is: guarded)


# ---- torch's marks on tensors ------------------------------------------------------------------------------

def test_torch_marks_called_inside_a_compiled_call_are_hints():
    def fn(x):
        y = x + 1
        torch._dynamo.mark_static_address(y)
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.maybe_mark_dynamic(x, 0)
        torch._dynamo.mark_static(x, 0)
        return y

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)
    for outcome in stats.side.outcomes:  # (each call marks its own tensors, as eager does)
        assert outcome.args[0]._dynamo_dynamic_indices == {0}
        assert outcome.result._dynamo_static_input_type == "unguarded"


def test_torch_mark_dynamic_on_an_input_makes_its_dim_symbolic():
    def fn(x):
        return (x * 2).sum(0)

    compiled = magpy.compile(fn)
    for n in (3, 4, 5, 6):
        x = torch.randn(n, 2)
        torch._dynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(compiled(x), fn(x))
    assert compiled.stats.compiles == 1 and compiled.stats.cache_hits == 3


def test_torch_mark_static_keeps_a_dim_a_constant():
    def fn(x):
        return x * 2

    compiled = magpy.compile(fn, dynamic=True)
    for n in (3, 4):
        x = torch.randn(n)
        torch._dynamo.mark_static(x, 0)
        assert torch.equal(compiled(x), fn(x))
    assert compiled.stats.compiles == 2
