"""Python numbers that change between calls: compiled once more, not once per value.

With ``dynamic=None`` the first capture keeps every number it read as a guarded constant. When a later
call misses only because such a number changed, the next capture takes it as a graph input wherever it
is an operand of a tensor op (a counter ``self.step`` in arithmetic, a ``scale`` argument); where the
program needs its exact value (a branch, a size) it stays guarded. Every call still equals eager.
"""
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
