"""Arithmetic the innermost loop of a pointwise kernel repeats for every element it does not depend on,
moved in front of that loop.

A channels-last kernel walks channels innermost; an upsample or a pad computes its source position from
the spatial indices (float products, clamps, int conversions), the same for every channel. Inside the
``omp simd`` loop that arithmetic is vectorised across channel lanes, with int64/float conversions the
vector units emulate; in front of it, it runs once per pixel.

The pass works on the printed body (one ``T name = expr;`` per value, ``name = expr;`` for an index
wrapped into range), after it is printed: a name moves when every assignment to it is plain arithmetic
— no memory access (``[``), no division or remainder (which may trap where a mask would have skipped
them), calls only to casts and ``magpy_min``/``magpy_max`` — over values that do not depend on the
innermost index, and whose assignments are one run of lines (a declaration, then an index wrapped into
range). They move, in their order, out of any masked block: evaluating them where the mask is false is
harmless by that rule.
"""
from __future__ import annotations

import re

_ASSIGN = re.compile(r"^(\s*)((?:[A-Za-z_][\w:]*(?:<[\w:, ]*>)?\s+)?)([A-Za-z_]\w*) = (.*);$")
_NAME = re.compile(r"[A-Za-z_]\w*")
_CALL = re.compile(r"([A-Za-z_][\w:]*)(?:<[\w:, ]*>)?\(")  # (calls are printed as name( and cast<T>()
_PURE_CALLS = frozenset({"static_cast", "magpy_min", "magpy_max"})


def _pure(expr: str) -> bool:
    return "[" not in expr and "/" not in expr and "%" not in expr and \
        all(name in _PURE_CALLS for name in _CALL.findall(expr))


def hoist_invariants(lines: list, body_start: int, loop_line: int, variable: str) -> None:
    """Move what the body ``lines[body_start:]`` computes without ``variable`` (the innermost loop's,
    opened at ``lines[loop_line]``, its pragma included) to just before that loop."""
    body = lines[body_start:]
    assignments: dict[str, list[int]] = {}
    for k, line in enumerate(body):
        m = _ASSIGN.match(line)
        if m:
            assignments.setdefault(m.group(3), []).append(k)
    if not assignments:
        return
    # (a name assigned again moves only with its assignments in a row — an index wrapped into range —
    # never one assigned apart, under a condition: ``masked = 0; if (m) { masked = v; }``)
    movable = {name for name, where in assignments.items()
               if all(_pure(_ASSIGN.match(body[k]).group(4)) for k in where)
               and where == list(range(where[0], where[0] + len(where)))}
    changed = True
    while changed:  # (a name depending on one that stays, or on the loop's index, stays)
        changed = False
        for name in list(movable):
            for k in assignments[name]:
                used = set(_NAME.findall(_ASSIGN.match(body[k]).group(4)))
                if variable in used or any(u in assignments and u not in movable for u in used):
                    movable.discard(name)
                    changed = True
                    break
    if not movable:
        return
    indent = re.match(r"\s*", lines[loop_line]).group(0)
    moved, kept = [], []
    for line in body:
        m = _ASSIGN.match(line)
        if m and m.group(3) in movable:
            moved.append(indent + line.lstrip())
        else:
            kept.append(line)
    lines[body_start:] = kept
    lines[loop_line:loop_line] = moved
