"""What a loop of a kernel repeats for every element it does not depend on, moved in front of that loop
(``hoist_invariants``: the innermost loop's body, then each loop's around it); and what a loop's index
alone computes, computed once per kernel into arrays (``hoist_columns``, at the end).

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
_PURE_CALLS = frozenset({"static_cast", "magpy_min", "magpy_max", "infinity", "quiet_NaN"} |
                        {f for name in _MATH.split() for f in (name, name + "f")})  # (std::numeric_limits<T>::)
_LOAD = re.compile(r"([A-Za-z_]\w*)\[([^\]]*)\]")
_STORE = re.compile(r"([A-Za-z_]\w*)\[[^\]]*\]\s*[-+*/]?=[^=]")  # (a scatter's ``+=`` too)
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


def hoist_invariants(lines: list, body_start: int, loop_line: int, variable: str, loads: bool = True,
                     nested_loops: bool = False) -> int:
    """Move what the body ``lines[body_start:]`` computes without ``variable`` (the loop's, opened at
    ``lines[loop_line]``, its pragmas included) to just before that loop; returns how many lines
    moved. ``loads``: whether reads may move (not where the loop may run no iteration: the buffer
    may be empty). ``nested_loops``: the body holds loops (an outer loop's body, its statements in
    front of the inner loops): only its own statements move, nothing from inside its blocks."""
    body = lines[body_start:]
    assignments: dict[str, list[int]] = {}
    for k, line in enumerate(body):
        m = _ASSIGN.match(line)
        if m:
            assignments.setdefault(m.group(3), []).append(k)
    if not assignments:
        return 0
    # (a name assigned again moves only with its assignments in a row — an index wrapped into range —
    # never one assigned apart, under a condition: ``masked = 0; if (m) { masked = v; }``)
    written = {m.group(1) for line in body for m in _STORE.finditer(line)}
    top = _indent(body[0])  # (deeper lines are under a mask)
    movable = {name for name, where in assignments.items()
               if all(_pure(_ASSIGN.match(body[k]).group(2), _ASSIGN.match(body[k]).group(4), written,
                            loads and _indent(body[k]) == top) for k in where)
               and where == list(range(where[0], where[0] + len(where)))
               and not (nested_loops and any(_indent(body[k]) != top for k in where))}
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
        return 0
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
    return len(moved)


# ----------------------------------------------------------------------------------------------
# Columns: what depends on the innermost index alone, once per kernel

# Elements of a column array at most (and bytes of all of a loop's together): on the stack.
MAX_COLUMN = 4096
MAX_COLUMN_BYTES = 64 * 1024
_LITERAL = re.compile(r"(?<![\w.])(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFlLuU]*")
_CALLED = re.compile(r"[A-Za-z_]\w*(?=\(|<[\w:, ]*>|::)")  # (calls, casts, templates, std::)
_SAME_EVERYWHERE = re.compile(r"^(?:ks\d+|kf\d+|in_ptr\d+|true|false|float|double|bool|u?int(?:8|16|32|64)_t|_Float16)$")
_BYTES = {"float": 4, "double": 8, "bool": 1, "int64_t": 8, "int32_t": 4, "int16_t": 2, "uint16_t": 2,
          "int8_t": 1, "uint8_t": 1, "_Float16": 2}


def _free_names(expr: str) -> set:
    """The variables an expression reads (numbers, called functions, casts' types left out)."""
    expr = _CALLED.sub(" ", _LITERAL.sub(" ", expr))
    return {name for name in _NAME.findall(expr) if not _SAME_EVERYWHERE.match(name)}


def hoist_columns(lines: list, body_start: int, variable: str, start: int, end: int, prologue: list,
                  indent: str = "    ") -> None:
    """Move what the body ``lines[body_start:]`` of the innermost loop over ``variable`` (from
    ``start`` to ``end``, static) computes from ``variable`` alone into ``prologue``: one loop over
    the same range in front of every loop of the kernel, storing the values the body still needs in
    arrays (``col_tmp5[x2 - 1]``) that the body reads instead.

    A bilinear upsample computes each output column's source columns and weight (float products,
    clamps, int conversions, wrapping and checks of the positions) for every row and channel; its
    rows' go in front of the innermost loop (``hoist_invariants``), its columns' once per kernel.

    Only where every loop around the body runs (it then computes all of it for every ``variable``
    of the range): statements outside masked blocks, reads of buffers the body does not write,
    checks of what moves. Nothing moves unless it saves work: more lines move than arrays are read.
    """
    body = lines[body_start:]
    if not body or end - start > MAX_COLUMN or end <= start:
        return
    top = _indent(body[0])
    assignments: dict[str, list[int]] = {}
    for k, line in enumerate(body):
        if m := _ASSIGN.match(line):
            assignments.setdefault(m.group(3), []).append(k)
    written = {m.group(1) for line in body for m in _STORE.finditer(line)}
    column = {name for name, where in assignments.items()
              if where == list(range(where[0], where[0] + len(where)))
              and all(_indent(body[k]) == top for k in where)
              and all(not any(b in written for b, _ in _LOAD.findall(_ASSIGN.match(body[k]).group(4)))
                      for k in where)
              and all(_ASSIGN.match(body[k]).group(2).strip() in _BYTES for k in where[:1])}
    changed = True
    while changed:  # (a name that reads one that stays, or an outer loop's value, stays)
        changed = False
        for name in list(column):
            for k in assignments[name]:
                used = _free_names(_ASSIGN.match(body[k]).group(4))
                if any(u != variable and u not in column for u in used):
                    column.discard(name)
                    changed = True
                    break
    # (what depends on nothing stays for the loops in front to compute, and is computed again in front of
    # the column loop where a column needs it)
    constant = set(column)
    changed = True
    while changed:
        changed = False
        for name in list(constant):
            if any(u == variable or u in column and u not in constant
                   for k in assignments[name] for u in _free_names(_ASSIGN.match(body[k]).group(4))):
                constant.discard(name)
                changed = True
    column -= constant
    if not column:
        return
    moved = {k for name in column for k in assignments[name]}
    copied = sorted(k for name in constant for k in assignments[name])
    moved |= {k for k, line in enumerate(body) if _indent(line) == top and (m := _CHECK.match(line))
              and all(u == variable or u in column for u in _free_names(m.group(1)))}
    kept = [line for k, line in enumerate(body) if k not in moved]
    needed = sorted((name for name in column if any(name in _free_names(line) for line in kept)),
                    key=lambda name: assignments[name][0])
    types = {name: _ASSIGN.match(body[assignments[name][0]]).group(2).strip() for name in needed}
    if len(moved) <= len(needed) or \
            (end - start) * sum(_BYTES[t] for t in types.values()) > MAX_COLUMN_BYTES:
        return
    offset = f" - {start}" if start else ""
    prologue += [f"{indent}{types[n]} col_{n}[{end - start}];" for n in needed]
    if copied:  # (in a block of their own: the same names may be hoisted in front of the loops too)
        prologue.append(f"{indent}{{")
        indent += "    "
        prologue += [f"{indent}{body[k].strip()}" for k in copied]
    prologue.append(f"{indent}for (int64_t {variable} = {start}; {variable} < {end}; {variable}++) {{")
    prologue += [f"{indent}    {body[k].strip()}" for k in sorted(moved)]
    prologue += [f"{indent}    col_{n}[{variable}{offset}] = {n};" for n in needed]
    prologue.append(f"{indent}}}")
    if copied:
        prologue.append(f"{indent[:-4]}}}")
    reads = [f"{' ' * top}{types[n]} {n} = col_{n}[{variable}{offset}];" for n in needed]
    lines[body_start:] = reads + kept
