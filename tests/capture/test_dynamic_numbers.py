"""Python numbers that change between calls: compiled once more, not once per value.

With ``dynamic=None`` the first capture keeps every number it read as a guarded constant. When a later
call misses only because such a number changed, the next capture takes it as a graph input wherever it
is an operand of a tensor op (a counter ``self.step`` in arithmetic, a ``scale`` argument); where the
program needs its exact value (a branch, a size) it stays guarded. Every call still equals eager.
"""
import math

import pytest
import torch

from twin import differential, expect, fresh, plain


def t():
    return torch.randn(2, 3)


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(3, 3)
        self.step = 0

    def forward(self, x):
        self.step += 1
        return self.lin(x) * self.step + self.step / 2


def _counter():
    m = Counter()
    return m, m


def test_a_module_counter_in_arithmetic_compiles_twice():
    stats = differential(_counter, fresh(lambda: (t(),), 8), observe=lambda m: m.step)
    expect(stats, compiles=2, cache_hits=6, fallbacks=0)


def scaled(x, scale):
    return x * scale + scale ** 2


def test_a_changing_float_argument_compiles_twice():
    calls = [(t(), s) for s in (1.0, 2.5, -3.0, 0.125, 7.0)]
    expect(differential(plain(scaled), calls), compiles=2, cache_hits=3, fallbacks=0)


def test_an_int_then_a_float_is_another_entry():
    # (an int and a float operand make different dtypes of an integer tensor: the type stays guarded)
    def fn(x, k):
        return x * k

    calls = [(torch.arange(3), k) for k in (2, 3, 4, 2.5, 3.5)]
    stats = differential(plain(fn), calls)
    assert stats.compiles <= 3 and stats.fallbacks == 0


def test_a_number_the_program_branches_on_stays_guarded():
    def fn(x, n):
        y = x * n
        if n % 2:
            return y + 1
        return y - 1

    calls = [(t(), n) for n in (1, 2, 3, 4, 5, 6)]
    stats = differential(plain(fn), calls)
    assert stats.fallbacks == 0


def test_a_number_used_as_a_size_stays_guarded():
    def fn(x, n):
        return x.reshape(n, -1) * n

    calls = [(torch.randn(12), n) for n in (2, 3, 4, 6)]
    stats = differential(plain(fn), calls)
    assert stats.fallbacks == 0


def test_dynamic_false_keeps_every_value_static():
    calls = [(t(), s) for s in (1.0, 2.0, 3.0)]
    expect(differential(plain(scaled), calls, dynamic=False), compiles=3, fallbacks=0)


def test_dynamic_true_takes_numbers_as_inputs_from_the_first_call():
    calls = [(t(), s) for s in (1.0, 2.0, 3.0)]
    expect(differential(plain(scaled), calls, dynamic=True), compiles=1, cache_hits=2, fallbacks=0)


# ---- floats through our code generator ------------------------------------------------------------
# With the "magpy" backend a changing float is a run-time argument of the kernels: the graph is compiled
# (fused), not run op by op as captured, once for every value.

def compiled_reports(run):
    """(what ``run()`` returns, the codegen reports of the graphs it compiled)."""
    from magpy import codegen

    before = {r.graph_id for r in codegen.reports()}
    result = run()
    return result, [r for r in codegen.reports() if r.graph_id not in before]


def expect_float_kernels(reports):
    """The graph taking the float was compiled into kernels (none runs as captured)."""
    assert reports and all(r.graph_fallback is None for r in reports), [str(r) for r in reports]
    floats = [r for r in reports if any("=zf" in s for s in r.symbolic)]
    assert floats and all(r.kernels for r in floats), [str(r) for r in reports]


def scaled_softmax(x, scale):
    return (x * scale).softmax(-1)


def test_a_changing_float_argument_compiles_our_kernels_once():
    calls = [(torch.randn(4, 8), s) for s in (1.0, 2.5, -3.0, 0.125, 7.0, 2.0, 0.0)]
    stats, reports = compiled_reports(lambda: differential(plain(scaled_softmax), calls, backend="magpy"))
    expect(stats, compiles=2, cache_hits=5, fallbacks=0)
    expect_float_kernels(reports)


class Tempered(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(8, 8)
        self.temperature = 1.0

    def forward(self, x):
        return (self.lin(x) / self.temperature).softmax(-1)


def _tempered():
    m = Tempered()
    return m, m


def _temperature(t):
    def change(m):
        m.temperature = t
    return change


def test_a_changing_module_attribute_float_compiles_our_kernels_once():
    from twin import Call

    calls = [Call((torch.randn(3, 8),), before=_temperature(t)) for t in (1.0, 0.5, 2.0, 0.7, 1.3, 0.25)]
    stats, reports = compiled_reports(lambda: differential(_tempered, calls, backend="magpy",
                                                           observe=lambda m: m.temperature))
    expect(stats, compiles=2, cache_hits=4, fallbacks=0)
    expect_float_kernels(reports)


def test_dynamic_true_compiles_float_kernels_from_the_first_call():
    calls = [(torch.randn(4, 8), s) for s in (1.0, 2.5, -3.0, 0.5)]
    stats, reports = compiled_reports(lambda: differential(plain(scaled_softmax), calls, backend="magpy",
                                                           dynamic=True))
    expect(stats, compiles=1, cache_hits=3, fallbacks=0)
    expect_float_kernels(reports)


def float_ops(x, f):
    return (x ** f, torch.clamp(x, max=f), torch.full((2, 3), f), x.div(f), torch.where(x > 0, x, f),
            x * (f * 2), x * (1 / f), x * math.sqrt(abs(f)), f - x)


def test_ops_taking_a_changing_float_match_eager_on_every_call():
    calls = [(torch.randn(5, 3), s) for s in (1.5, 2.5, -0.5, 0.5, 2.0, 3.0, -1.25, 1e-3)]
    stats, reports = compiled_reports(lambda: differential(plain(float_ops), calls, backend="magpy"))
    expect(stats, compiles=2, cache_hits=6, fallbacks=0)
    expect_float_kernels(reports)


def test_an_integer_tensor_and_a_changing_float_give_the_default_dtype():
    def fn(n, f):
        return n * f, n.div(f), torch.where(n > 2, n, f), n + f

    calls = [(torch.arange(-4, 8), s) for s in (1.5, 2.5, -0.5, 3.25)]
    stats, reports = compiled_reports(lambda: differential(plain(fn), calls, backend="magpy"))
    expect(stats, compiles=2, cache_hits=2, fallbacks=0)
    expect_float_kernels(reports)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_a_changing_float_scales_other_dtypes_as_eager_does(dtype):
    def fn(x, f):
        return x * f, x / f, torch.clamp(x, min=f)

    calls = [(torch.randn(6, 5).to(dtype), s) for s in (1.1, 2.7, -0.3, 3.3, 0.1)]
    stats, reports = compiled_reports(lambda: differential(plain(fn), calls, backend="magpy"))
    expect(stats, compiles=2, cache_hits=3, fallbacks=0)
    expect_float_kernels(reports)


def test_a_float_changing_under_autograd_compiles_forward_and_backward_once():
    def fn(x, f):
        return (x * f).tanh().sum()

    calls = [(torch.randn(6, requires_grad=True), s) for s in (1.5, 0.5, -2.0, 3.0)]
    stats, reports = compiled_reports(lambda: differential(plain(fn), calls, backend="magpy"))
    expect(stats, compiles=2, cache_hits=2, fallbacks=0)
    expect_float_kernels(reports)


def test_a_tensor_made_from_a_changing_float_compiles_once_for_every_value():
    # (``torch.tensor(f)`` is traced as a tensor of the symbolic float: the backend's trace no longer
    # fixes f, so one compiled graph serves every value)
    import magpy

    def fn(x, f):
        return x * torch.tensor(f)

    compiled = magpy.compile(fn)
    (_, reports) = compiled_reports(lambda: [
        torch.testing.assert_close(compiled(x, s), fn(x, s), rtol=0, atol=0)
        for x, s in [(torch.randn(3), s) for s in (1.5, 2.5, -0.5, 3.25, 0.75)]])
    assert compiled.stats.compiles == 2 and compiled.stats.fallbacks == 0
    assert reports and not any(r.graph_fallback for r in reports)


def test_floats_stay_numbers_after_torch_compile_has_run():
    # (torch reads its tensorify switch once per process: the pass itself is set aside while we trace,
    # and put back for torch.compile's own floats)
    from torch._functorch._aot_autograd import graph_compile

    pass_before = getattr(graph_compile, "_apply_tensorify_python_scalars", None)
    torch.compile(lambda x: torch.sin(x) * 2, backend="magpy")(torch.randn(4))

    def fn(x, f):
        return x * f, x / f

    calls = [(torch.randn(6, 5).bfloat16(), s) for s in (1.1, 2.7, -0.3, 3.3, 0.1)]
    stats, reports = compiled_reports(lambda: differential(plain(fn), calls, backend="magpy"))
    expect(stats, compiles=2, cache_hits=3, fallbacks=0)
    expect_float_kernels(reports)
    assert getattr(graph_compile, "_apply_tensorify_python_scalars", None) is pass_before
