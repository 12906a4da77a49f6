"""Scoring a run from its records: per case, per file (the paper's way), dynamic files apart, failure reasons.

Only cases that run in eager count: a case whose eager run fails says nothing about a compiler. A file counts
when at least one of its cases runs in eager, and it passes for a compiler when every such case passes. A file
with a dynamic case (its two eager calls differ) is *dynamic* and scored apart from the *static* ones.

Per compiler and case, "full graph" means the module was captured as one graph and both calls ran (the outputs
may still be wrong); "matches" means they also agreed with eager's (for dynamic cases: in structure).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from .state import FileResult

CAPTURED = ("pass", "mismatch")      # statuses where the compiler produced a full graph that ran


@dataclass
class Reason:
    status: str
    reason: str
    count: int
    example: str                    # file:class of one case that failed this way
    detail: str = ""


@dataclass
class CompilerScore:
    name: str
    unavailable: str = ""           # why it could not run, when it ran nowhere
    statuses: Counter = field(default_factory=Counter)    # over eager-OK cases
    cases_full_graph: int = 0
    cases_match: int = 0
    static_cases_match: int = 0
    static_files_pass: int = 0
    dynamic_files_pass: int = 0
    cache_hits: int | None = None   # passing cases whose second call came from the cache, when known
    passing_files: list[str] = field(default_factory=list)
    reasons: list[Reason] = field(default_factory=list)


@dataclass
class Score:
    files_selected: int = 0
    files_done: int = 0
    files_import_error: int = 0
    files_without_cases: int = 0
    files_eager_failed: int = 0     # with cases, none of which runs in eager
    files_static: int = 0
    files_dynamic: int = 0
    cases: int = 0                  # in files that imported
    cases_listed: int = 0           # also counting those listed in files that did not import
    cases_eager_ok: int = 0
    cases_static: int = 0
    cases_dynamic: int = 0
    eager_statuses: Counter = field(default_factory=Counter)
    eager_reasons: list[Reason] = field(default_factory=list)
    compilers: dict[str, CompilerScore] = field(default_factory=dict)
    dynamic_files: list[str] = field(default_factory=list)

    @property
    def files_scored(self) -> int:
        return self.files_static + self.files_dynamic


def score(results: list[FileResult], compilers: list[str], files_selected: int, top: int = 12) -> Score:
    """Aggregate the finished files' records; ``top`` bounds each failure-reason table."""
    total = Score(files_selected=files_selected)
    per_compiler = {name: CompilerScore(name) for name in compilers}
    eager_reasons: dict[tuple, list] = {}
    compiled_reasons: dict[str, dict[tuple, list]] = {name: {} for name in compilers}
    unavailable: dict[str, str] = {}
    for result in results:
        total.files_done += 1
        status = result.record.get("status")
        total.cases_listed += result.record.get("listed") or len(result.cases) or result.record.get("cases") or 0
        if status == "import_error":
            total.files_import_error += 1
            _note(eager_reasons, ("import_error", result.record.get("reason", "")), result.record["file"],
                  result.record.get("detail", ""))
            continue
        cases = [case for case in result.cases if case.get("eager")]
        if not cases:
            total.files_without_cases += 1
            continue
        good = []
        for case in cases:
            total.cases += 1
            eager = case["eager"]
            total.eager_statuses[eager["status"]] += 1
            if eager["status"] == "ok":
                good.append(case)
            else:
                _note(eager_reasons, (eager["status"], eager.get("reason", "")), _label(case), eager.get("detail", ""))
        if not good:
            total.files_eager_failed += 1
            continue
        dynamic = any(case["eager"].get("dynamic") for case in good)
        if dynamic:
            total.files_dynamic += 1
            total.dynamic_files.append(result.record["file"])
        else:
            total.files_static += 1
        for case in good:
            total.cases_eager_ok += 1
            total.cases_dynamic += bool(case["eager"].get("dynamic"))
            total.cases_static += not case["eager"].get("dynamic")
        for name in compilers:
            board = per_compiler[name]
            passed_all = True
            for case in good:
                record = case.get("compiled", {}).get(name) or {"status": "missing", "reason": "not run"}
                state = record["status"]
                board.statuses[state] += 1
                board.cases_full_graph += state in CAPTURED
                board.cases_match += state == "pass"
                board.static_cases_match += state == "pass" and not case["eager"].get("dynamic")
                if state == "pass" and "cache_hits" in (record.get("stats") or {}):
                    board.cache_hits = (board.cache_hits or 0) + (record["stats"]["cache_hits"] >= 1)
                if state == "unavailable":
                    unavailable[name] = record.get("reason", "")
                if state != "pass":
                    passed_all = False
                    if state != "unavailable":
                        _note(compiled_reasons[name], (state, record.get("reason", "")), _label(case),
                              record.get("detail", "") or record.get("where", ""))
            if passed_all:
                board.passing_files.append(result.record["file"])
                if dynamic:
                    board.dynamic_files_pass += 1
                else:
                    board.static_files_pass += 1
    total.eager_reasons = _top(eager_reasons, top)
    for name, board in per_compiler.items():
        board.reasons = _top(compiled_reasons[name], top)
        if name in unavailable and board.statuses["unavailable"] == sum(board.statuses.values()):
            board.unavailable = unavailable[name] or "unavailable"
    total.compilers = per_compiler
    return total


def _label(case: dict) -> str:
    return f"{case['file']}:{case['name']}"


def _note(table: dict, key: tuple, example: str, detail: str) -> None:
    entry = table.setdefault(key, [0, example, detail])
    entry[0] += 1


def _top(table: dict, top: int) -> list[Reason]:
    ranked = sorted(table.items(), key=lambda item: (-item[1][0], item[0]))[:top]
    return [Reason(status, reason, count, example, detail) for (status, reason), (count, example, detail) in ranked]
