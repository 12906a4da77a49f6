"""Loops split where a comparison of an index changes its answer, so that each part knows it.

A padded or concatenated tensor, a pooling window over padding, a ``cat`` along a dim: their bodies
load under masks such as ``0 <= x2 - 3 < 128``. Inside the ``omp simd`` loop such a mask keeps gcc
from vectorizing what it guards (a conditional strided load has no vector form here, and neither
has a math call under a condition: the ELU after a batch norm, before a pad, ran ``expm1f`` one
element at a time), and every element pays for the comparisons. The answer of ``x2 - 3 >= 0``
changes once, at ``x2 = 3``: split the loop over ``x2`` there (and at 131, for the other side),
and in each part the comparison is a constant the body folds away — a mask that is always true
becomes plain code, one always false its constant.

``LoopRanges`` is what a body knows while it is printed: each loop variable's range in the part
being printed. ``compare`` decides a comparison of two index expressions where the ranges do,
and (while planning) records where an undecided one would change; ``split`` turns those points
into the parts of each loop. Only comparisons linear in one loop variable with integer
coefficients and constants are split on: ``2*x3 - 1 >= 0`` (a pooling window) is, ``x1 + x2 >= 4``
and anything over a symbolic size are left to run time.
"""
from __future__ import annotations

import math
from typing import Optional

import sympy

# Parts of all loops together at most: every part prints the body again (a 2-d pad: 3 x 3).
MAX_PARTS = 27
# A comparison ``d op 0`` as conditions ``d >= t``: (threshold, whether it is negated), and how
# they combine (eq: both; ne: either negated).
_THRESHOLDS = {"ge": (0,), "gt": (1,), "lt": (0,), "le": (1,), "eq": (0, 1), "ne": (0, 1)}


class LoopRanges:
    """The range ``[lo, hi)`` of each loop variable in the part of the loops being printed;
    ``planning``: record where undecided comparisons change (``points``)."""

    def __init__(self, ranges: dict, planning: bool = False):
        self.ranges = dict(ranges)
        self.planning = planning
        self.points: dict[sympy.Symbol, set[int]] = {}

    def compare(self, op: str, a, b) -> Optional[bool]:
        """``a op b`` for two index expressions where the ranges decide it, else None."""
        linear = self._linear(sympy.expand(a - b))
        if linear is None:
            return None
        coeffs, const = linear
        lo = const + sum(c * (self.ranges[v][0] if c > 0 else self.ranges[v][1] - 1) for v, c in coeffs.items())
        hi = const + sum(c * (self.ranges[v][1] - 1 if c > 0 else self.ranges[v][0]) for v, c in coeffs.items())
        at_least = [True if lo >= t else False if hi < t else None for t in _THRESHOLDS[op]]
        answer = _combine(op, at_least)
        if answer is None and self.planning and len(coeffs) == 1:
            ((v, c),) = coeffs.items()
            start, end = self.ranges[v]
            for t in _THRESHOLDS[op]:
                # (c*v + const >= t: from ceil((t - const) / c) on for c > 0, up to floor(...) for c < 0)
                point = math.ceil((t - const) / c) if c > 0 else math.floor((t - const) / c) + 1
                if start < point < end:
                    self.points.setdefault(v, set()).add(point)
        return answer

    def _linear(self, expr):
        """({loop variable: integer coefficient}, integer constant) of ``expr``, or None when it is
        not such a sum (another symbol, a product of variables, a division)."""
        coeffs: dict = {}
        const = 0
        for term in sympy.Add.make_args(expr):
            if term.is_Integer:
                const += int(term)
                continue
            coeff, rest = term.as_coeff_Mul()
            if not coeff.is_Integer or rest not in self.ranges:
                return None
            coeffs[rest] = coeffs.get(rest, 0) + int(coeff)
        return {v: c for v, c in coeffs.items() if c}, const

    def split(self, order: list) -> dict:
        """Loop variable -> its parts ``[(lo, hi), ...]``, for the variables with points; while all
        parts together would exceed ``MAX_PARTS``, the outermost of them (``order``: outermost
        first) is left whole (the innermost loop's parts are what lets gcc vectorize)."""
        parts = {}
        for v in order:
            if v in self.points:
                bounds = [self.ranges[v][0]] + sorted(self.points[v]) + [self.ranges[v][1]]
                parts[v] = list(zip(bounds[:-1], bounds[1:]))
        while math.prod(len(p) for p in parts.values()) > MAX_PARTS:
            del parts[next(iter(parts))]
        return parts


def _combine(op, at_least):
    if op in ("ge", "gt"):
        return at_least[0]
    if op in ("lt", "le"):
        return None if at_least[0] is None else not at_least[0]
    ge, gt = at_least  # (eq: d >= 0 and not d >= 1)
    if ge is False or gt is True:
        equal = False
    elif ge is True and gt is False:
        equal = True
    else:
        return None
    return equal if op == "eq" else not equal
