"""Arithmetic the innermost loop of a pointwise kernel repeats for every element it does not depend on,
moved in front of that loop.

A channels-last kernel walks channels innermost; an upsample or a pad computes its source position from
the spatial indices (float products, clamps, int conversions), the same for every channel. Inside the
``omp simd`` loop that arithmetic is vectorised across channel lanes, with int64/float conversions the
vector units emulate; in front of it, it runs once per pixel.

An optimizer's step reads its step count (a 0-dim tensor) in every parameter's kernel and computes the
bias corrections from it (``powf(0.9f, step)``, a square root, a reciprocal): per element, they cost
more than the update itself.

A bilinear upsample reads its source rows' positions from index tensors (``in_ptr2[x1]``), wraps
them into range and checks them, all per output row: in front of the loop over the row's elements,
that runs once per row.

The pass works on the printed body (one ``T name = expr;`` per value, ``name = expr;`` for an index
wrapped into range), after it is printed: a name moves when every assignment to it is arithmetic that
cannot trap — divisions only of floats (an integer's may trap), calls only to casts,
``magpy_min``/``magpy_max`` and math functions (compiled with ``-fno-math-errno -fno-trapping-math``)
— or a memory read of a buffer the body does not write, outside any masked block, where the loop
cannot be empty (a read at a position that depends on no inner index reads in range when the first
iteration would have); over values that do not depend on the innermost index, and whose assignments
are one run of lines (a declaration, then an index wrapped into range). Arithmetic moves, in its
order, out of any masked block: evaluating it where the mask is false is harmless by that rule. A
bounds check (``if (!(ok)) magpy_error = 1;``) outside masked blocks moves with what it checks.
"""
from __future__ import annotations

import re

_ASSIGN = re.compile(r"^(\s*)((?:[A-Za-z_][\w:]*(?:<[\w:, ]*>)?\s+)?)([A-Za-z_]\w*) = (.*);$")
_NAME = re.compile(r"[A-Za-z_]\w*")
_CALL = re.compile(r"([A-Za-z_][\w:]*)(?:<[\w:, ]*>)?\(")  # (calls are printed as name( and cast<T>()
_MATH = "sqrt pow fabs exp exp2 expm1 log log2 log10 log1p sin cos tan tanh sinh cosh asin acos atan atan2 erf " \
        "erfc floor ceil trunc round nearbyint rint fmod copysign hypot"
_PURE_CALLS = frozenset({"static_cast", "magpy_min", "magpy_max"} | {f for name in _MATH.split()
                                                                      for f in (name, name + "f")})
_LOAD = re.compile(r"([A-Za-z_]\w*)\[([^\]]*)\]")
_STORE = re.compile(r"([A-Za-z_]\w*)\[[^\]]*\]\s*=[^=]")
_CHECK = re.compile(r"^\s*if \(!\((.*)\)\) magpy_error = \d+;$")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _pure(declared: str, expr: str, written: set, loads_allowed: bool) -> bool:
    """Whether ``expr`` may be evaluated where the body would not have (its loads aside: see
    ``hoist_invariants``)."""
    loads = _LOAD.findall(expr)
    if loads and not loads_allowed or any(buffer in written for buffer, _ in loads):
        return False
    floating = declared.strip() in ("float", "double")
    return ("/" not in expr or floating) and "%" not in expr and \
        all(name in _PURE_CALLS for name in _CALL.findall(expr))


def hoist_invariants(lines: list, body_start: int, loop_line: int, variable: str, loads: bool = True) -> None:
    """Move what the body ``lines[body_start:]`` computes without ``variable`` (the innermost loop's,
    opened at ``lines[loop_line]``, its pragmas included) to just before that loop. ``loads``: whether
    reads at a constant position may move (not where the loop may run no iteration: the buffer may be
    empty)."""
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
    written = {m.group(1) for line in body for m in _STORE.finditer(line)}
    top = _indent(body[0])  # (deeper lines are under a mask)
    movable = {name for name, where in assignments.items()
               if all(_pure(_ASSIGN.match(body[k]).group(2), _ASSIGN.match(body[k]).group(4), written,
                            loads and _indent(body[k]) == top) for k in where)
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
    # (a check of what moved reports the same from in front of the loop — where the loop runs)
    checks = {k for k, line in enumerate(body) if loads and _indent(line) == top and (m := _CHECK.match(line))
              and all(name in movable or name not in assignments and name != variable
                      for name in _NAME.findall(m.group(1)))}
    indent = re.match(r"\s*", lines[loop_line]).group(0)
    moved, kept = [], []
    for k, line in enumerate(body):
        m = _ASSIGN.match(line)
        if m and m.group(3) in movable or k in checks:
            moved.append(indent + line.lstrip())
        else:
            kept.append(line)
    lines[body_start:] = kept
    lines[loop_line:loop_line] = moved
