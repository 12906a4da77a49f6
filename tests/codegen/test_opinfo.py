"""PyTorch's OpInfo samples through ``magpy.compile(backend="magpy")``, against eager (``opinfo_check.py``).

By default a deterministic sample (a stride over the ops we serve, the dtype rotating from op to op,
the first few samples of each): about 90 cells, 1.5 minutes here with a cold kernel cache. ``MAGPY_OPINFO_FULL=1`` runs every served op at
every dtype on every sample (long: ``python -m fuzz opinfo --shard k/n`` runs it in chunks, as a table).
Known failures are data in ``opinfo_expected.py``.
"""
import functools
import os

import pytest
import torch

import opinfo_check
from opinfo_check import Call, Mismatch, Unserved, check_cell, check_sample, compare

pytest.importorskip("expecttest")  # (op_db needs it)

FULL = os.environ.get("MAGPY_OPINFO_FULL") == "1"
CI_STRIDE = 4  # every 4th op of op_db (by name) that we serve, at one dtype: about 90 cells
CI_CELLS = 100  # (an upper bound of their number: the tests past the end skip)
CI_SAMPLES = 3  # samples per cell
TRITON_STRIDE = 20  # Triton's interpreter is slow: fewer ops, the first sample, no in-place
TRITON_CELLS = 24


@functools.lru_cache(maxsize=None)
def sample_cells(stride: int) -> list:
    """(op, dtype) cells: every ``stride``-th op of op_db (sorted by name) that we serve (deciding
    that traces the op: only these are traced); the k-th such op at the k-th dtype it supports
    (cycling), so that every dtype comes up."""
    names = sorted(opinfo_check.op_table())[::stride]
    served = [name for name in names if opinfo_check.unserved_reason(name) is None]
    cells = []
    for k, name in enumerate(served):
        dtypes = opinfo_check.dtypes_of(opinfo_check.op_table()[name])
        cells.append((name, dtypes[k % len(dtypes)]))
    return cells


def _cell(stride: int, k: int):
    cells = sample_cells(stride)
    if k >= len(cells):
        pytest.skip(f"the sample has {len(cells)} cells")
    return cells[k]


def _expect(outcome, strict: bool):
    """Turn a cell's Outcome into the test's result."""
    where = f"{outcome.name} {outcome.dtype}"
    if outcome.status == "FAIL":
        pytest.fail(f"{where}: {outcome.detail}")
    if outcome.status == "xfail":
        pytest.xfail(f"{where}: {outcome.detail}")
    if outcome.status == "xpass" and strict:
        pytest.fail(f"{where} passes: remove it from opinfo_expected.EXPECTED ({outcome.detail})")
    if outcome.status == "skip":
        pytest.skip(f"{where} not served: {outcome.detail}")


# The sample is resolved when a test runs, not at collection: op_db takes seconds to import, and
# collecting the test suite should not pay for it.
@pytest.mark.skipif(FULL, reason="MAGPY_OPINFO_FULL=1 runs every cell instead")
@pytest.mark.parametrize("k", range(CI_CELLS))
def test_sampled_op_matches_eager(k):
    name, dtype = _cell(CI_STRIDE, k)
    # (an expected failure that passes on the first samples may fail on a later one: not strict)
    _expect(check_cell(name, dtype, limit=CI_SAMPLES), strict=False)


@pytest.mark.skipif(FULL, reason="MAGPY_OPINFO_FULL=1 runs every cell instead")
@pytest.mark.parametrize("k", range(TRITON_CELLS))
def test_sampled_op_matches_eager_in_triton(k):
    pytest.importorskip("triton")
    from magpy.codegen.triton.runtime import interpreting

    if not interpreting():
        pytest.skip("triton was imported before TRITON_INTERPRET=1")
    name, dtype = _cell(TRITON_STRIDE, k)
    _expect(check_cell(name, dtype, "triton", limit=1, variants=("function",)), strict=False)


def _full_cells():
    if not FULL:
        return []
    table = opinfo_check.op_table()
    return [(name, dtype) for name in sorted(table) if opinfo_check.unserved_reason(name) is None
            for dtype in opinfo_check.dtypes_of(table[name])]


@pytest.mark.parametrize("name,dtype", _full_cells())
def test_every_op_matches_eager(name, dtype):
    _expect(check_cell(name, dtype), strict=True)


# ------------------------------------------------------------------------------------------------
# The oracle itself can fail


def test_a_different_value_is_a_mismatch():
    x = torch.linspace(0, 1, 10)
    with pytest.raises(Mismatch, match="1/10 elements differ"):
        compare(x + torch.eye(10)[3] * 1e-3, x, None, False, "result")


def test_integers_compare_exactly_and_dtypes_must_match():
    x = torch.arange(10)
    with pytest.raises(Mismatch):
        compare(x + torch.eye(10, dtype=torch.int64)[0], x, None, False, "result")
    with pytest.raises(Mismatch, match="torch.int32"):
        compare(x.int(), x, None, False, "result")


def test_a_missing_error_is_a_mismatch():
    eager = Call(error=IndexError("index 5 is out of bounds"))
    with pytest.raises(Mismatch, match="eager raised IndexError"):
        opinfo_check._compare_call(Call(result=torch.zeros(2), inputs=((), {})), eager, None, False, "call 2",
                                   "function")


def test_an_op_we_do_not_lower_is_unserved_not_a_pass():
    op = opinfo_check.op_table()["mm"]
    sample = opinfo_check.samples(op, torch.float32)[0]
    with pytest.raises(Unserved):
        check_sample(op, sample, torch.float32)
