"""The benchmark's results: one row per model, rendered as a text table (with its legend and notes) and JSON.

A cell never holds more than one line: a failure shows as ``n/a (Type: first line…)``, wrong outputs as
``WRONG (max err …)``, a speedup the machine's noise hides as ``~1.10× ±38%``. Full messages go to the log.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Callable

from .noise import NOISY_MIN_ROUNDS, NOISY_SPREAD, Geomean, Speedup, geomean, paired_speedup
from .reasons import NOTE_WIDTH, one_line
from .runners import OK, SKIPPED, WRONG, BackendResult
from .training import CHECK_STEPS, LEARNING_RATE, NOISE_FACTOR, WEIGHT_RTOL

REASON_WIDTH = 34
NOISY_MARK = "~"


@dataclass
class ModelRow:
    model: str
    size: str
    results: dict[str, BackendResult] = field(default_factory=dict)

    def speedup_stats(self, backend: str) -> Speedup | None:
        """``backend``'s speedup over eager from the rounds where both were timed; None unless both ran
        correctly and were timed together."""
        eager, other = self.results.get("eager"), self.results.get(backend)
        if eager is None or other is None or not (eager.ok and other.ok):
            return None
        return paired_speedup(eager.times_ms, other.times_ms)

    def speedup(self, backend: str) -> float | None:
        """The median over rounds of eager's time over ``backend``'s, when both were measured."""
        stats = self.speedup_stats(backend)
        if stats is not None:
            return stats.value
        eager, other = self.results.get("eager"), self.results.get(backend)
        if eager is None or other is None or not (eager.ok and other.ok) or not eager.ms or not other.ms:
            return None
        return eager.ms / other.ms

    def wrong(self) -> list[BackendResult]:
        return [r for r in self.results.values() if r.status == WRONG]


@dataclass
class Report:
    meta: dict
    backends: list[str]
    rows: list[ModelRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    log_path: str | None = None

    def compilers(self) -> list[str]:
        return [b for b in self.backends if b != "eager"]

    def geomean(self, backend: str) -> Geomean:
        """``backend``'s geometric-mean speedup over the rows where it ran and no compiler's speedup is marked
        noisy: the compilers' geomeans are over the same rows (one left out for its noise alone made another
        compiler's geomean look lower or higher beside it)."""
        speedups, left_out = [], 0
        for row in self.rows:
            own = row.speedup_stats(backend)
            if own is None:
                continue
            others = (row.speedup_stats(c) for c in self.compilers() if c != backend)
            if own.noisy is None and any(s is not None and s.noisy is not None for s in others):
                left_out += 1
                continue
            speedups.append(own)
        return geomean(speedups, left_out)

    def wrong(self) -> list[tuple[str, BackendResult]]:
        """(model, result) of every compiler whose outputs differed from eager's."""
        return [(row.model, result) for row in self.rows for result in row.wrong()]

    def to_json(self) -> str:
        def speedup(row: ModelRow, backend: str) -> dict | None:
            stats = row.speedup_stats(backend)
            if stats is None:
                return None
            return {"value": stats.value, "spread": stats.spread, "rounds": stats.rounds, "noisy": stats.noisy}

        return json.dumps({
            "meta": self.meta,
            "backends": self.backends,
            "rows": [{
                "model": row.model,
                "size": row.size,
                "results": {name: asdict(result) for name, result in row.results.items()},
                "speedup": {b: speedup(row, b) for b in self.compilers()},
            } for row in self.rows],
            "geomean": {b: asdict(self.geomean(b)) for b in self.compilers()},
            "notes": self.notes,
            "log": self.log_path,
        }, indent=2)


def _number(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _count(value: int | None) -> str:
    return "—" if value is None else str(value)


def status_text(result: BackendResult) -> str:
    """A cell for a backend that has no time: why, in one line of bounded width."""
    reason = one_line(result.reason, REASON_WIDTH)
    if result.status == SKIPPED:
        return reason or "skipped"
    status = "WRONG" if result.status == WRONG else result.status
    return f"{status} ({reason})" if reason else status


def _time_cell(backend: str) -> Callable[[ModelRow], str]:
    def cell(row: ModelRow) -> str:
        result = row.results.get(backend)
        if result is None:
            return "—"
        if result.status != OK:
            return status_text(result)
        # A compiler that ran (part of) the program eagerly is timed, but must not pass for compiled code.
        return _number(result.ms, 2) + (" (fallback)" if result.fallbacks else "")
    return cell


def _field_cell(backend: str, name: str, render: Callable) -> Callable[[ModelRow], str]:
    def cell(row: ModelRow) -> str:
        result = row.results.get(backend)
        return "—" if result is None else render(getattr(result, name))
    return cell


def speedup_text(value: float, spread: float, noisy: bool) -> str:
    spread = min(spread, 9.99)
    digits = 1 if spread < 0.01 else 0      # (a geomean's ± is often under 1%)
    return f"{NOISY_MARK if noisy else ''}{value:.2f}× ±{spread:.{digits}%}"


def _speedup_cell(backend: str, why: bool = False) -> Callable[[ModelRow], str]:
    """The speedup; for a wrong backend "WRONG". With ``why`` (a table without time columns, which say these
    there) a backend that did not run correctly shows its reason, and one that ran (part of) the program
    eagerly says so."""
    def cell(row: ModelRow) -> str:
        result = row.results.get(backend)
        if result is not None and why and result.status != OK:
            return status_text(result)
        if result is not None and result.status == WRONG:
            return "WRONG"
        stats = row.speedup_stats(backend)
        if stats is None:
            speedup = row.speedup(backend)
            text = "—" if speedup is None else f"{speedup:.2f}×"
        else:
            text = speedup_text(stats.value, stats.spread, stats.noisy is not None)
        return text + (" (fallback)" if why and result is not None and result.fallbacks else "")
    return cell


@dataclass(frozen=True)
class Column:
    header: str
    cell: Callable[[ModelRow], str]
    left: bool = False
    speedup_of: str | None = None      # the backend whose speedups this column shows (gets a geomean)


def columns(backends: list[str]) -> list[Column]:
    """The table's columns for the chosen backends, in reading order."""
    cols = [Column("model", lambda row: row.model, left=True)]
    if "magpy" in backends:
        cols += [
            Column("graphs", _field_cell("magpy", "graphs", _count)),
            Column("breaks", _field_cell("magpy", "graph_breaks", _count)),
            Column("capture s", _field_cell("magpy", "capture_s", lambda v: _number(v, 2))),
            Column("first calls s", _field_cell("magpy", "first_calls_s", lambda v: _number(v, 2))),
        ]
    cols.append(Column("eager ms", _time_cell("eager")))
    if "magpy" in backends:
        cols.append(Column("magpy ms", _time_cell("magpy")))
    if "inductor" in backends:
        cols += [
            Column("inductor first calls s", _field_cell("inductor", "first_calls_s", lambda v: _number(v, 1))),
            Column("inductor ms", _time_cell("inductor")),
        ]
    cols += [Column(f"{b} ×", _speedup_cell(b), speedup_of=b) for b in backends if b != "eager"]
    return cols


def _side_by_side(backends: list[str], name: str, render: Callable) -> Callable[[ModelRow], str]:
    """One field of several backends in one cell, ``a / b``."""
    def cell(row: ModelRow) -> str:
        results = [row.results.get(b) for b in backends]
        return " / ".join("—" if r is None else render(getattr(r, name)) for r in results)
    return cell


def _relative(value: float | None) -> str:
    return "—" if value is None else f"{value:.0e}"


def _mib(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


def training_columns(backends: list[str]) -> list[Column]:
    """The columns of ``bench --train``: step time, speedups, first steps, weights, peak memory."""
    compilers = [b for b in backends if b != "eager"]
    listed = " / ".join(compilers)
    cols = [Column("model", lambda row: row.model, left=True), Column("eager ms", _time_cell("eager"))]
    cols += [Column(f"{b} ×", _speedup_cell(b, why=True), speedup_of=b) for b in compilers]
    if compilers:
        seconds = _side_by_side(compilers, "first_calls_s", lambda v: _number(v, 1))
        cols += [Column(f"first 2 steps s ({listed})", seconds),
                 Column(f"weights Δ ({listed})", _side_by_side(compilers, "weights_rel_diff", _relative))]
    cols.append(Column(f"peak MiB ({' / '.join(backends)})", _side_by_side(backends, "peak_memory_mib", _mib)))
    return cols


def geomean_text(summary: Geomean) -> str:
    if summary.value is None:
        return "—"
    text = speedup_text(summary.value, summary.spread, False)
    return text if not summary.noisy else f"{text} ({summary.used}/{summary.used + summary.noisy})"


def render_table(report: Report) -> str:
    cols = training_columns(report.backends) if report.meta.get("train") else columns(report.backends)
    lines = [[c.header for c in cols]]
    lines += [[c.cell(row) for c in cols] for row in report.rows]
    if report.compilers():
        summary = []
        for c in cols:
            if c.left:
                summary.append("geomean")
            elif c.speedup_of is not None:
                summary.append(geomean_text(report.geomean(c.speedup_of)))
            else:
                summary.append("")
        lines.append(summary)
    widths = [max(len(line[i]) for line in lines) for i in range(len(cols))]

    def fmt(line: list[str]) -> str:
        cells = [text.ljust(w) if c.left else text.rjust(w) for text, w, c in zip(line, widths, cols)]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    body = [fmt(lines[0]), rule] + [fmt(line) for line in lines[1:len(report.rows) + 1]]
    if report.compilers():
        body += [rule, fmt(lines[-1])]
    return "\n".join(body)


def training_legend(report: Report) -> str:
    amp = " under bf16 autocast" if report.meta.get("amp") else ""
    compiled = report.meta.get("compile_opt")
    optimizer = ("each compiler compiles the optimizer's step too." if compiled else
                 "the optimizer step runs eagerly for every compiler.")
    mode = report.meta.get("mode")
    if mode:
        optimizer += f" Both compilers in mode {mode!r}."
    return (f"step: forward and loss{amp} (mean squared error of the outputs against fixed random targets), "
            f"backward, AdamW (lr {LEARNING_RATE:g}); {optimizer} "
            f"first 2 steps: the first two steps together, the compile of forward and backward"
            f"{' and of the step' if compiled else ''} included (magpy compiles its Triton kernels in the "
            f"second: the first runs the captured program eagerly). weights Δ: after {CHECK_STEPS} steps, "
            f"the largest over parameters and buffers of |w - w_eager| / |w_eager - w_initial| (2-norms); a "
            f"compiler's weights match when each tensor's is under {WEIGHT_RTOL:g} or its |w - w_eager| within "
            f"{NOISE_FACTOR:g}× eager's own distance from the same steps in float64; parameters whose gradient "
            f"is rounding noise (float32 and float64 disagree on all of it, as on a convolution's bias before a "
            f"batch norm) are not compared. peak MiB: a warm step's peak above what was allocated before it "
            f"(CUDA only).")


FIRST_CALLS_LEGEND = ("first calls s: the first two calls together, compiling included (magpy's first call "
                      "captures the program and runs it eagerly; on a GPU its Triton kernels compile at the "
                      "second); capture s: magpy's first call with the graph run by eager PyTorch (capture alone).")


def render_legend(report: Report) -> str:
    """What the first-calls and speedup columns and their marks mean."""
    if not report.compilers():
        return ""
    speedups = (f"×: median over interleaved rounds of eager's time / the compiler's in the same round; ±: half "
                f"the interquartile range of those ratios. {NOISY_MARK}: too noisy to tell (±{NOISY_SPREAD:.0%} or "
                f"more, or fewer than {NOISY_MIN_ROUNDS} rounds), left out of the geomean, whose ± comes from "
                f"resampling rounds; (k/n): the geomean is over k of the n rows timed, those no compiler's "
                f"speedup is too noisy in (every compiler's geomean over the same rows).")
    if report.meta.get("train"):
        return training_legend(report) + "\n" + speedups
    return FIRST_CALLS_LEGEND + "\n" + speedups


def mismatch_text(result: BackendResult) -> str:
    """How a wrong output differs, in one line: the table's reason and the comparison's first two lines."""
    lines = [line.strip() for line in result.detail.splitlines() if line.strip()][:2]
    return one_line("; ".join([result.reason, *lines]), NOTE_WIDTH)


def render_wrong(report: Report) -> str:
    """A loud line per compiler whose outputs differed from eager's."""
    return "\n".join(f"WRONG OUTPUT: {result.backend} on {model}: {mismatch_text(result)}"
                     for model, result in report.wrong())


def render_notes(report: Report) -> str:
    """Notes, then the reason of every cell that is not a number and every warning a compiler gave, each
    distinct message once, in one line, with the models it concerns."""
    lines = [f"note: {note}" for note in report.notes]
    grouped: dict[tuple[str, str], list[str]] = {}
    for row in report.rows:
        for backend, result in row.results.items():
            messages = list(result.warnings)
            if result.status not in (OK, SKIPPED, WRONG):     # (wrong outputs have lines of their own)
                messages.insert(0, result.reason)
            for message in messages:
                grouped.setdefault((backend, one_line(message, NOTE_WIDTH)), []).append(row.model)
    for (backend, message), models in grouped.items():
        where = "all models" if len(models) == len(report.rows) > 1 else ", ".join(models)
        lines.append(f"{backend} ({where}): {message}")
    return "\n".join(lines)
