"""The run's report: a side-by-side text table for people, and the same plus every record as JSON."""
from __future__ import annotations

from ..harness.report import label as _label, percent as _percent, plain, rate as _rate
from ..harness.report import reason_table as _reason_table
from ..harness.scoring import CompilerScore, Score
from ..harness.state import FileResult


def text(score: Score, header: list[str], top: int = 12, show_disagreements: int = 15) -> str:
    lines = list(header)
    lines.append("")
    lines.append(f"files: {score.files_selected} selected, {score.files_done} done; "
                 f"{score.files_import_error} fail to import, {score.files_without_cases} without test cases, "
                 f"{score.files_eager_failed} with no case running in eager; "
                 f"{score.files_scored} scored ({score.files_static} static, {score.files_dynamic} dynamic)")
    lines.append(f"cases: {score.cases_listed} listed, {score.cases} in files that import; "
                 f"{score.cases_eager_ok} run in eager ({_percent(score.cases_eager_ok, score.cases_listed)} of "
                 f"listed; {score.cases_static} static, {score.cases_dynamic} dynamic)")
    lines.append("")
    boards = list(score.compilers.values())
    rows = [
        ("cases: full graph", lambda b: _rate(b.cases_full_graph, score.cases_eager_ok)),
        ("cases: full graph, matches eager", lambda b: _rate(b.cases_match, score.cases_eager_ok)),
        ("static cases: matches eager", lambda b: _rate(b.static_cases_match, score.cases_static)),
        ("static files: all cases pass", lambda b: _rate(b.static_files_pass, score.files_static)),
        ("dynamic files: all cases pass", lambda b: _rate(b.dynamic_files_pass, score.files_dynamic)),
        ("passing cases, 2nd call cached", lambda b: "-" if b.cache_hits is None else _rate(b.cache_hits,
                                                                                         b.cases_match)),
    ]
    width = 24
    lines.append(f"{'fullgraph=True':34s}" + "".join(f"{_label(b.name):>{width}s}" for b in boards))
    for title, cell in rows:
        cells = []
        for board in boards:
            cells.append("unavailable" if board.unavailable else cell(board))
        lines.append(f"{title:34s}" + "".join(f"{c:>{width}s}" for c in cells))
    for board in boards:
        if board.unavailable:
            lines.append(f"{_label(board.name)} unavailable: {board.unavailable}")
        else:
            counts = ", ".join(f"{state} {count}" for state, count in board.statuses.most_common())
            lines.append(f"{_label(board.name)} case statuses: {counts}")
    for board in boards:
        if not board.unavailable and board.reasons:
            lines.append("")
            lines.append(f"most common failures, {_label(board.name)} (cases that run in eager):")
            lines.extend(_reason_table(board.reasons[:top]))
    if score.eager_reasons:
        lines.append("")
        counts = ", ".join(f"{state} {count}" for state, count in score.eager_statuses.most_common())
        lines.append(f"most common eager failures (import errors count files; cases: {counts}):")
        lines.extend(_reason_table(score.eager_reasons[:top]))
    lines.extend(_disagreements(boards, show_disagreements))
    return "\n".join(lines)


def _disagreements(boards: list[CompilerScore], limit: int) -> list[str]:
    available = [b for b in boards if not b.unavailable]
    if len(available) < 2 or limit <= 0:
        return []
    lines = []
    for board in available:
        others = [b for b in available if b is not board]
        only = sorted(set(board.passing_files).difference(*(set(b.passing_files) for b in others)))
        if only:
            lines.append("")
            lines.append(f"files only {_label(board.name)} passes ({len(only)}): " + ", ".join(only[:limit])
                         + (" …" if len(only) > limit else ""))
    return lines


def to_json(score: Score, settings: dict, environment: dict, results: list[FileResult]) -> dict:
    """Everything: settings, environment, the score, one summary per file and every case record."""
    files = []
    for result in results:
        good = [c for c in result.cases if c.get("eager") and c["eager"].get("status") == "ok"]
        summary = {"file": result.record["file"], "status": result.record.get("status"),
                   "cases": len(result.cases), "eager_ok": len(good),
                   "dynamic": any(c["eager"].get("dynamic") for c in good)}
        if result.record.get("status") == "import_error":
            summary["reason"] = result.record.get("reason")
        for name in score.compilers:
            statuses = [(c.get("compiled", {}).get(name) or {}).get("status", "missing") for c in good]
            summary[name] = None if not good else all(s == "pass" for s in statuses)
        files.append(summary)
    return {"settings": settings, "environment": environment, "score": plain(score), "files": files,
            "cases": [case for result in results for case in result.cases]}

