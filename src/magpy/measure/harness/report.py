"""The pieces both runners' reports are made of: rates, compiler labels, failure-reason tables, JSON."""
from __future__ import annotations

import dataclasses
import json
from collections import Counter

from .compilers import COMPILERS
from .scoring import Reason


def percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole else "-"


def rate(part: int, whole: int) -> str:
    return f"{part}/{whole} {percent(part, whole):>7s}"


def label(name: str) -> str:
    """The compiler's name as people know it (``TorchDynamo``), or ``name``."""
    compiler = COMPILERS.get(name)
    return compiler.label if compiler else name


def reason_table(reasons: list[Reason]) -> list[str]:
    """One line per reason: count, status, reason, an example."""
    rows = [f"  {'count':>5s}  {'status':12s} {'reason':70s} example"]
    for reason in reasons:
        text_reason = reason.reason if len(reason.reason) <= 70 else reason.reason[:69] + "…"
        rows.append(f"  {reason.count:5d}  {reason.status:12s} {text_reason:70s} {reason.example}")
    return rows


def plain(value):
    """``value`` (a Score, counters, dataclasses) as JSON-ready dicts and lists."""
    if isinstance(value, Counter):
        return dict(value)
    if dataclasses.is_dataclass(value):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def write_json(path: str, document: dict) -> None:
    with open(path, "w", encoding="utf-8") as out:
        json.dump(document, out, indent=1)
        out.write("\n")
