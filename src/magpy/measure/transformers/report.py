"""The transformers report: eager coverage, each compiler's one-graph-and-matching share of the architectures
that run deterministically in eager, median first-call times, and the most common failure reasons."""
from __future__ import annotations

import statistics

from ..harness.report import label, rate, reason_table
from ..harness.scoring import Score
from ..harness.state import FileResult


def header(options, names: list[str], to_run: int, environment: dict, compilers, unavailable: dict,
           state_path: str) -> list[str]:
    return [
        f"transformers {environment['transformers']}: split {options.split}, {len(names)} architectures"
        + (f" (limit {options.limit})" if options.limit else "")
        + f"; {len(names) - to_run} already in the state file, {to_run} to run",
        "compilers: " + ", ".join(
            f"{c.label} " + (f"unavailable ({unavailable[c.name]})" if c.name in unavailable
                             else f"fullgraph=True, backend={options.backend!r}") for c in compilers),
        f"python {environment['python']}, torch {environment['torch']}; timeout {options.timeout:.0f} s per "
        f"stage, {options.jobs} jobs",
        f"state: {state_path}",
    ]


def first_call_times(results: list[FileResult], compilers: list[str]) -> dict:
    """Per compiler, the first-call seconds of the deterministic architectures it passes, and of those every
    compiler passes (``both``)."""
    passing: dict[str, dict[str, float]] = {name: {} for name in compilers}
    for result in results:
        for case in result.cases:
            eager = case.get("eager") or {}
            if eager.get("status") != "ok" or eager.get("dynamic"):
                continue
            for name in compilers:
                record = (case.get("compiled") or {}).get(name) or {}
                if record.get("status") == "pass" and "first_call_s" in record:
                    passing[name][case["file"]] = record["first_call_s"]
    common = set.intersection(*(set(times) for times in passing.values())) if passing else set()
    return {name: {"passing": times, "both": {k: v for k, v in times.items() if k in common}}
            for name, times in passing.items()}


def _median(values) -> str:
    values = list(values)
    return f"{statistics.median(values):.2f} s (n={len(values)})" if values else "-"


def text(score: Score, results: list[FileResult], header: list[str], top: int = 12) -> str:
    lines = list(header)
    failed = ", ".join(f"{status} {count}" for status, count in score.eager_statuses.most_common()
                       if status != "ok")
    lines += ["", f"architectures: {score.files_selected} selected, {score.files_done} done; "
                  f"{score.cases_eager_ok} run in eager ({score.cases_static} deterministic, "
                  f"{score.cases_dynamic} whose two eager calls differ); "
                  f"{score.cases - score.cases_eager_ok} do not" + (f" ({failed})" if failed else ""), ""]
    boards = list(score.compilers.values())
    times = first_call_times(results, [b.name for b in boards])
    width = 26
    rows = [
        ("deterministic: one graph, matches", lambda b: rate(b.static_cases_match, score.cases_static)),
        ("all eager-OK: one graph", lambda b: rate(b.cases_full_graph, score.cases_eager_ok)),
        ("all eager-OK: one graph, matches", lambda b: rate(b.cases_match, score.cases_eager_ok)),
        ("median first call, its passes", lambda b: _median(times[b.name]["passing"].values())),
        ("median first call, passed by all", lambda b: _median(times[b.name]["both"].values())),
    ]
    lines.append(f"{'fullgraph=True':36s}" + "".join(f"{label(b.name):>{width}s}" for b in boards))
    for title, cell in rows:
        lines.append(f"{title:36s}" + "".join(f"{'unavailable' if b.unavailable else cell(b):>{width}s}"
                                              for b in boards))
    for board in boards:
        counts = ", ".join(f"{state} {count}" for state, count in board.statuses.most_common())
        lines.append(f"{label(board.name)} statuses: {counts}")
    for board in boards:
        if not board.unavailable and board.reasons:
            lines += ["", f"most common failures, {label(board.name)} (architectures that run in eager):"]
            lines.extend(reason_table(board.reasons[:top]))
    if score.eager_reasons:
        lines += ["", "most common eager failures:"]
        lines.extend(reason_table(score.eager_reasons[:top]))
    return "\n".join(lines)


class Progress:
    """One stderr line per finished architecture."""

    def __init__(self, total: int, compilers: list[str], err):
        self.total, self.count, self.compilers, self.err = total, 0, compilers, err

    def __call__(self, record: dict, cases: list[dict]) -> None:
        self.count += 1
        parts = []
        for case in cases:
            eager = case.get("eager") or {}
            parts.append("eager " + eager.get("status", "?") + (" (dynamic)" if eager.get("dynamic") else ""))
            if eager.get("status") != "ok":
                parts.append(eager.get("reason", "")[:80])
            for name in self.compilers:
                compiled = (case.get("compiled") or {}).get(name)
                if compiled:
                    parts.append(f"{name} {compiled['status']}"
                                 + (f" {compiled['first_call_s']:.2f} s" if "first_call_s" in compiled else ""))
        print(f"[{self.count}/{self.total}] {record['file']}: {', '.join(parts)} ({record.get('seconds', 0):.1f} s)",
              file=self.err, flush=True)
