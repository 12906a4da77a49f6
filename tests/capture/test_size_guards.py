"""Size conditions checked as one simplified expression (``capture/size_guards.py``).

The combined guard must hold for exactly the sizes all the conditions it replaces hold for (given that
symbolic tensor dims are at least 2): checked by enumeration over random conditions, and end to end
against eager with the guards an entry ends up with.
"""
import itertools
import random

import sympy
import torch

import magpy
from magpy.capture.size_guards import _checker, _order, simplify

from torch.utils._sympy.functions import FloorDiv, PythonMod

s0, s1, n = (sympy.Symbol(name, integer=True) for name in ("s0", "s1", "s2"))  # (s2: an int input)


def _holds(condition, values):
    value = condition.xreplace({k: sympy.Integer(v) for k, v in values.items()})
    assert value in (sympy.true, sympy.false), (condition, values, value)
    return value is sympy.true


def _random_relation(rng):
    a, b = rng.choice([s0, s1, n]), rng.choice([s0, s1, n])
    left = rng.choice([a, a + rng.randint(-3, 3), 2 * a, a * b, FloorDiv(a, rng.randint(1, 4)),
                       PythonMod(a, rng.randint(2, 5)), sympy.Max(1, a)])
    right = rng.choice([sympy.Integer(rng.randint(0, 12)), b, b + 1])
    return rng.choice([sympy.Eq, sympy.Ne, sympy.Lt, sympy.Le, sympy.Gt, sympy.Ge])(left, right)


def test_the_simplified_condition_holds_for_exactly_the_sizes_all_the_relations_hold_for():
    rng = random.Random(0)
    grid = [dict(zip((s0, s1, n), v)) for v in itertools.product(range(2, 10), range(2, 7), range(-1, 11))]
    checked = 0
    for _ in range(100):
        relations = [_random_relation(rng) for _ in range(rng.randint(1, 5))]
        if any(r in (sympy.true, sympy.false) for r in relations):
            continue
        combined = simplify(relations, at_least_two={s0, s1})
        check = _checker(combined) if combined.free_symbols else (lambda *_: combined is sympy.true)
        symbols = _order(combined) if combined.free_symbols else []
        for values in grid:  # (the guard as the entry runs it: the printed, compiled expression)
            expected = all(_holds(r, values) for r in relations)
            assert check(*(values[s] for s in symbols)) == expected, (relations, combined, values)
        checked += 1
    assert checked > 60


def test_bounds_meet_and_values_a_bound_may_not_take_move_it():
    assert simplify([sympy.Gt(s0, 4), sympy.Ge(s0, 3), sympy.Ne(s0, 5)], {s0}) == sympy.Ge(s0, 6)
    assert simplify([sympy.Ge(s0, 2), sympy.Lt(s0, 9)], {s0}) == sympy.Le(s0, 8)  # (>= 2: the tensor guard's)
    assert simplify([sympy.Eq(n, 4), sympy.Eq(PythonMod(s0 * n, 8), 0)], {s0}) == \
        sympy.And(sympy.Eq(n, 4), sympy.Eq(PythonMod(4 * s0, 8), 0))
    assert simplify([sympy.Ge(s0 * s1, 4), sympy.Eq(sympy.Max(1, s1), s1)], {s0, s1}) is sympy.true


def test_an_entry_checks_the_programs_and_the_backends_size_conditions_as_one_guard():
    def fn(x, n):
        y = x[:, :n] * 2 if x.size(0) > 4 else x[:, :n] - 1
        return y.reshape(x.size(0) * 2, -1).sum(1) + x.size(0)

    compiled = magpy.compile(fn, backend="magpy")
    for b, k in ((6, 4), (8, 6), (10, 8), (12, 4), (3, 4), (7, 10), (3, 6), (9, 6)):
        x = torch.randn(b, 12)
        torch.testing.assert_close(compiled(x, k), fn(x, k))
    assert compiled.stats.fallbacks == 0
    symbolic = [e for e in compiled.cache.entries if any("symbolic" in g.describe() for g in e.guards)]
    assert symbolic
    for entry in symbolic:  # (the branch on x.size(0) and what the reshape relied on: one guard)
        over_sizes = [g.describe() for g in entry.guards if "x.shape[0]" in g.describe() or "n" in g.describe()
                      and "type(n)" not in g.describe() and not g.describe().startswith("x:")
                      and "global state" not in g.describe() and "fits int64" not in g.describe()]
        assert len(over_sizes) == 1, over_sizes
        assert "x.shape[0] >= 5" in over_sizes[0] or "x.shape[0] <= 4" in over_sizes[0], over_sizes
