"""A speedup is the median of per-round ratios; rounds that disagree mark it noisy ("~"), and the geomean
(with its spread) leaves noisy rows out."""
import pytest

from magpy.measure.bench.noise import NOISY_SPREAD, Speedup, geomean, paired_speedup, spread
from magpy.measure.bench.report import ModelRow, Report, render_legend, render_table
from magpy.measure.bench.runners import BackendResult

STEADY_EAGER = [2.00, 2.02, 1.98, 2.01, 1.99, 2.00, 2.03, 1.97, 2.00]
STEADY_MAGPY = [1.00, 1.03, 0.98, 1.02, 0.97, 1.01, 0.99, 1.04, 0.96]
JUMPY_MAGPY = [0.50, 1.60, 0.70, 1.90, 0.60, 1.00, 2.00, 0.55, 1.40]     # same eager rounds, a busy machine


def row(model, eager, magpy):
    def result(backend, times):
        return BackendResult(backend, ms=sorted(times)[len(times) // 2], times_ms=list(times),
                             samples=len(times))
    return ModelRow(model, "small", {"eager": result("eager", eager), "magpy": result("magpy", magpy)})


def test_speedup_is_the_median_of_ratios_of_the_same_round():
    # A load spike in round 2 slows both backends alike: pairing the rounds cancels it.
    speedup = paired_speedup([2.0, 2.0, 8.0, 2.0, 2.0], [1.0, 1.0, 4.0, 1.0, 1.0])
    assert speedup.value == 2.0 and speedup.spread == 0.0 and speedup.noisy is None


def test_steady_rounds_are_trusted_and_jumpy_ones_marked_noisy():
    steady = paired_speedup(STEADY_EAGER, STEADY_MAGPY)
    jumpy = paired_speedup(STEADY_EAGER, JUMPY_MAGPY)
    assert steady.spread < NOISY_SPREAD and steady.noisy is None
    assert jumpy.spread > NOISY_SPREAD and "spread" in jumpy.noisy


def test_too_few_rounds_are_noisy_however_steady():
    assert "rounds" in paired_speedup([2.0, 2.0], [1.0, 1.0]).noisy


def test_table_marks_the_noisy_row_and_the_geomean_leaves_it_out():
    report = Report(meta={}, backends=["eager", "magpy"],
                    rows=[row("steady", STEADY_EAGER, STEADY_MAGPY), row("jumpy", STEADY_EAGER, JUMPY_MAGPY)])
    lines = render_table(report).splitlines()
    steady_line = next(line for line in lines if line.startswith("steady"))
    jumpy_line = next(line for line in lines if line.startswith("jumpy"))
    geomean_line = next(line for line in lines if line.startswith("geomean"))
    assert "~" not in steady_line and "2.00× ±" in steady_line
    assert "~" in jumpy_line
    assert "2.00× ±" in geomean_line and "(1/2)" in geomean_line       # the steady row's speedup only
    assert report.geomean("magpy").noisy == 1
    assert "~" in render_legend(report) and "geomean" in render_legend(report)


def test_geomean_has_a_spread_and_is_the_same_for_the_same_rounds():
    speedups = [paired_speedup(STEADY_EAGER, STEADY_MAGPY), paired_speedup([3.0] * 9, [1.0] * 9)]
    first, second = geomean(speedups), geomean(list(speedups))
    assert first == second
    assert first.value == pytest.approx((2.0 * 3.0) ** 0.5, rel=2e-2) and 0 < first.spread < NOISY_SPREAD
    assert first.used == 2 and first.noisy == 0


def test_geomean_of_only_noisy_rows_is_none():
    assert geomean([Speedup((1.0, 5.0, 0.2, 3.0, 0.5))]).value is None


def test_spread_is_half_the_interquartile_range_over_the_median():
    assert spread([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx((4.0 - 2.0) / (2 * 3.0))


def test_every_compilers_geomean_is_over_the_rows_none_of_them_is_noisy_in():
    def result(backend, times):
        return BackendResult(backend, ms=sorted(times)[len(times) // 2], times_ms=list(times), samples=len(times))

    rows = [ModelRow("both steady", "small", {"eager": result("eager", STEADY_EAGER),
                                              "magpy": result("magpy", STEADY_MAGPY),
                                              "inductor": result("inductor", STEADY_MAGPY)}),
            ModelRow("magpy jumpy", "small", {"eager": result("eager", STEADY_EAGER),
                                              "magpy": result("magpy", JUMPY_MAGPY),
                                              "inductor": result("inductor", [0.5] * 9)})]
    report = Report(meta={}, backends=["eager", "magpy", "inductor"], rows=rows)
    for backend in ("magpy", "inductor"):   # (inductor's 4x on the second row is left out with magpy's noise)
        summary = report.geomean(backend)
        assert summary.value == pytest.approx(2.0, rel=2e-2) and (summary.used, summary.noisy) == (1, 1)
