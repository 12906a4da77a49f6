"""The benchmark's results: one row per model, rendered as a text table, JSON, and speedup summaries."""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Callable

from .runners import OK, BackendResult

REASON_WIDTH = 34


@dataclass
class ModelRow:
    model: str
    size: str
    results: dict[str, BackendResult] = field(default_factory=dict)

    def speedup(self, backend: str) -> float | None:
        """Eager time over ``backend``'s time, when both were measured."""
        eager, other = self.results.get("eager"), self.results.get(backend)
        if eager is None or other is None or not (eager.ok and other.ok) or not eager.ms or not other.ms:
            return None
        return eager.ms / other.ms


@dataclass
class Report:
    meta: dict
    backends: list[str]
    rows: list[ModelRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def compilers(self) -> list[str]:
        return [b for b in self.backends if b != "eager"]

    def geomean(self, backend: str) -> tuple[float | None, int]:
        """Geometric mean of ``backend``'s speedups over the models where it ran, and how many those are."""
        speedups = [s for s in (row.speedup(backend) for row in self.rows) if s]
        if not speedups:
            return None, 0
        return math.exp(sum(math.log(s) for s in speedups) / len(speedups)), len(speedups)

    def to_json(self) -> str:
        return json.dumps({
            "meta": self.meta,
            "backends": self.backends,
            "rows": [{
                "model": row.model,
                "size": row.size,
                "results": {name: asdict(result) for name, result in row.results.items()},
                "speedup": {b: row.speedup(b) for b in self.compilers()},
            } for row in self.rows],
            "geomean": {b: self.geomean(b)[0] for b in self.compilers()},
            "notes": self.notes,
        }, indent=2)


def _number(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _count(value: int | None) -> str:
    return "—" if value is None else str(value)


def status_text(result: BackendResult) -> str:
    reason = result.reason if len(result.reason) <= REASON_WIDTH else result.reason[: REASON_WIDTH - 1] + "…"
    return f"{result.status} ({reason})" if reason else result.status


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


def _speedup_cell(backend: str) -> Callable[[ModelRow], str]:
    def cell(row: ModelRow) -> str:
        speedup = row.speedup(backend)
        return "—" if speedup is None else f"{speedup:.2f}×"
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
            Column("compile s", _field_cell("magpy", "compile_s", lambda v: _number(v, 2))),
        ]
    cols.append(Column("eager ms", _time_cell("eager")))
    if "magpy" in backends:
        cols.append(Column("magpy ms", _time_cell("magpy")))
    if "inductor" in backends:
        cols += [
            Column("inductor compile s", _field_cell("inductor", "compile_s", lambda v: _number(v, 1))),
            Column("inductor ms", _time_cell("inductor")),
        ]
    cols += [Column(f"{b} ×", _speedup_cell(b), speedup_of=b) for b in backends if b != "eager"]
    return cols


def render_table(report: Report) -> str:
    cols = columns(report.backends)
    lines = [[c.header for c in cols]]
    lines += [[c.cell(row) for c in cols] for row in report.rows]
    if report.compilers():
        summary = []
        for c in cols:
            if c.left:
                summary.append("geomean")
            elif c.speedup_of is not None:
                value, n = report.geomean(c.speedup_of)
                text = "—" if value is None else f"{value:.2f}×"
                summary.append(text if n in (0, len(report.rows)) else f"{text} ({n}/{len(report.rows)})")
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


def render_notes(report: Report) -> str:
    """Notes, then the full reason of every cell that is not a number and every warning a compiler gave,
    each distinct message once with the models it concerns."""
    lines = [f"note: {note}" for note in report.notes]
    grouped: dict[tuple[str, str], list[str]] = {}
    for row in report.rows:
        for backend, result in row.results.items():
            messages = list(result.warnings)
            if result.status != OK and result.status != "skipped":
                messages.insert(0, result.detail or result.reason)
            for message in messages:
                grouped.setdefault((backend, message), []).append(row.model)
    for (backend, message), models in grouped.items():
        where = "all models" if len(models) == len(report.rows) > 1 else ", ".join(models)
        lines.append(f"{backend} ({where}): {message}")
    return "\n".join(lines)
