"""A compiler's trial on one case: compile the module, make the calls, time them, then judge against eager.

``attempt`` compiles (full graph) and runs the calls, returning the record so far (``first_call_s``,
``second_call_s``, the compiler's stats, or the classified error) and the frozen outputs; ``verdict`` turns a
record whose calls ran into pass, mismatch or fallback by comparing the outputs call by call with eager's
(structure only for a dynamic case, whose eager calls disagree among themselves).
"""
from __future__ import annotations

import time
from typing import Any, Callable

from . import reasons
from .compare import Tolerance, difference, freeze
from .compilers import Compiler

CALL_TIMES = ("first_call_s", "second_call_s")


def attempt(compiler: Compiler, module, calls: list[Callable[[Any], Any]], backend: str,
            file_name: str) -> tuple[dict, list | None]:
    """``(record, outputs)``; ``outputs`` is None when compiling or a call raised (the record says why)."""
    started = time.perf_counter()
    record: dict = {}
    outputs = []
    compiled = None
    try:
        compiler.reset()
        compiled = compiler.compile(module, backend)
        for index, call in enumerate(calls):
            call_started = time.perf_counter()
            outputs.append(freeze(call(compiled)))
            if index < len(CALL_TIMES):
                record[CALL_TIMES[index]] = round(time.perf_counter() - call_started, 3)
    except Exception as error:
        record.update(compiler.classify(error, file_name))
        record["stats"] = stats_of(compiler, compiled)
        record["seconds"] = round(time.perf_counter() - started, 3)
        return record, None
    stats = stats_of(compiler, compiled)
    if stats is not None:
        record["stats"] = stats
    record["seconds"] = round(time.perf_counter() - started, 3)
    return record, outputs


def verdict(compiler: Compiler, record: dict, expected: list, outputs: list, dynamic: bool,
            tolerance: Tolerance) -> dict:
    """The final record of calls that ran: fallback, mismatch (with where) or pass."""
    if compiler.fell_back(record.get("stats")):
        return {"status": "fallback", "reason": "ran uncompiled (fallback to eager)", **record}
    for call, (left, right) in enumerate(zip(expected, outputs), start=1):
        found = difference(left, right, None if dynamic else tolerance, f"call {call}: out")
        if found:
            return {"status": "mismatch", "reason": mismatch_reason(found), "detail": reasons.detail(found),
                    **record}
    if dynamic:
        record["values_match"] = all(difference(e, a, tolerance) is None for e, a in zip(expected, outputs))
    return {"status": "pass", **record}


def stats_of(compiler: Compiler, compiled) -> dict | None:
    if compiled is None:
        return None
    try:
        return compiler.stats(compiled)
    except Exception:
        return None


def mismatch_reason(found: str) -> str:
    """``wrong values`` / ``wrong shape`` / …: the kind of disagreement, without where it was."""
    text = found.split(": ", 2)[-1]
    for kind in ("max abs diff", "elements differ", "shape", "dtype", "length", "keys"):
        if kind in text:
            return "wrong " + {"max abs diff": "values", "elements differ": "values"}.get(kind, kind)
    return "wrong output type"
