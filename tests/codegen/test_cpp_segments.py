"""Pointwise loops split where a comparison of indices changes its answer (``codegen/cpp/segments.py``).

A pad's mask, a concatenation's pieces, a pooling window over padding: each part of the split loops
knows the answer, so the body there has no mask — and the values are eager's.
"""
import re

import pytest
import sympy
import torch
import torch.nn.functional as F

from codegen_check import check
from magpy.codegen.cpp.segments import MAX_PARTS, LoopRanges

x0, x1, x2 = sympy.symbols("x0:3", integer=True, nonnegative=True)


def innermost_bodies(source: str) -> list[str]:
    """The bodies of the kernel's innermost loops (those after an ``omp simd`` pragma)."""
    bodies = []
    lines = source.splitlines()
    for k, line in enumerate(lines):
        if "#pragma omp" in line and "simd" in line:
            depth, body = 0, []
            for inner in lines[k + 2:]:
                depth += inner.count("{") - inner.count("}")
                if depth < 0:
                    break
                body.append(inner)
            bodies.append("\n".join(body))
    return bodies


# ----------------------------------------------------------------------------------------------
# Deciding comparisons, and where they change


@pytest.mark.parametrize("op, a, b, expected", [
    ("ge", x2 - 3, 0, True), ("lt", x2 - 3, 0, False), ("lt", x2, 131, None),
    ("gt", 2 * x2 - 1, 0, True), ("le", x1 + x2, 200, True), ("eq", x2, 3, None), ("ne", x2, 200, True),
    ("eq", x2 + x1, 2, False),
])
def test_comparisons_the_ranges_decide(op, a, b, expected):
    ranges = LoopRanges({x1: (0, 64), x2: (3, 134)})
    assert ranges.compare(op, sympy.sympify(a), sympy.sympify(b)) is expected


def test_comparisons_over_other_symbols_stay_undecided():
    ks0 = sympy.Symbol("ks0", integer=True, positive=True)
    ranges = LoopRanges({x2: (0, 8)}, planning=True)
    assert ranges.compare("lt", x2, ks0) is None
    assert ranges.compare("ge", x2 * x1, 0) is None
    assert ranges.points == {}


def test_a_pad_splits_where_its_mask_changes():
    ranges = LoopRanges({x1: (0, 70), x2: (0, 134)}, planning=True)
    for i, n in ((x1 - 3, 64), (x2 - 3, 128)):
        assert ranges.compare("ge", i, sympy.Integer(0)) is None
        assert ranges.compare("lt", i, sympy.Integer(n)) is None
    assert ranges.split([x1, x2]) == {x1: [(0, 3), (3, 67), (67, 70)], x2: [(0, 3), (3, 131), (131, 134)]}


def test_a_pooling_window_splits_at_its_first_whole_window():
    ranges = LoopRanges({x2: (0, 16)}, planning=True)
    assert ranges.compare("ge", 2 * x2 - 1, sympy.Integer(0)) is None      # (x2 >= 1)
    assert ranges.compare("lt", 2 * x2 + 1, sympy.Integer(32)) is True     # (always inside)
    assert ranges.compare("lt", 16 - 3 * x2, sympy.Integer(0)) is None     # (x2 >= 6: falling)
    assert ranges.split([x2]) == {x2: [(0, 1), (1, 6), (6, 16)]}


def test_too_many_parts_leave_the_outermost_loops_whole():
    x = sympy.symbols("y0:4", integer=True, nonnegative=True)
    ranges = LoopRanges({v: (0, 10) for v in x}, planning=True)
    for v in x:
        ranges.compare("ge", v - 2, sympy.Integer(0))
        ranges.compare("lt", v - 2, sympy.Integer(6))
    parts = ranges.split(list(x))
    assert list(parts) == list(x[-3:]) and 3 ** len(parts) <= MAX_PARTS


# ----------------------------------------------------------------------------------------------
# Kernels: no mask left where the parts decide it, eager's values


@pytest.mark.parametrize("pad", [(3, 3, 3, 3), (1, 2, 0, 3), (2, -1, -2, 1)], ids=["even", "uneven", "crop"])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_a_padded_elu_matches_eager_with_no_mask_in_its_inner_loops(pad, channels_last):
    x = torch.randn(1, 5, 9, 13)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    report = check(lambda x: F.pad(F.elu(x * 1.5 - 0.25), pad), x)
    (source,) = report.kernel_sources.values()
    assert "masked" not in source and all("if (" not in body for body in innermost_bodies(source)), source
    assert any("expm1f" in body for body in innermost_bodies(source)), source


def test_a_concatenation_along_channels_matches_eager_without_masks():
    a, b, c = torch.randn(2, 3, 6, 7), torch.randn(2, 4, 6, 7), torch.randn(2, 1, 6, 7)
    report = check(lambda a, b, c: torch.cat((torch.sigmoid(a), b * 2, c), 1), a, b, c)
    source = "\n".join(report.kernel_sources.values())
    assert "masked" not in source, source


@pytest.mark.parametrize("shape", [(2, 3, 11, 9), (1, 4, 8, 8)])
@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_a_max_pool_over_padding_matches_eager_values_and_indices(shape, channels_last):
    x = torch.randn(shape)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    report = check(lambda x: F.max_pool2d(x, 3, 2, 1, return_indices=True), x)
    source = "\n".join(report.kernel_sources.values())
    # (the window's first whole position on: no mask; before it, its loads folded to -inf)
    assert any("masked" not in body and "in_ptr" in body for body in innermost_bodies(source)), source


def test_a_mask_over_two_indices_stays_a_comparison():
    # (j - i <= -2 depends on both loop variables: no split, the comparison runs per element)
    x = torch.randn(8, 8)
    report = check(lambda x: torch.tril(x + 1, diagonal=-2) * 3, x)
    (body,) = innermost_bodies(*report.kernel_sources.values())
    assert re.search(r"bool tmp\d+ = \(tmp\d+ <= ", body), body
