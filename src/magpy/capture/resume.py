"""Resume functions and break steps: bytecode rewrites of a user's code object around a graph break.

A graph break at instruction ``i`` of a code object (an index into the instructions the VM runs, as
``interp.decode`` numbers them) splits the call in three: the graph of everything before ``i`` (the
cache entry), the breaking instruction itself, run natively by a *step* (a tiny code object holding just
that instruction, whose exits return which way it went and what it pushed), and the rest of the call, a
*resume function*: the original code with a prologue that pushes the live stack and jumps to the
instruction the break continues at. Its parameters are the stack slots (NULLs are pushed, not passed)
and the locals bound at the break; its exception table is the original's, so ``try`` blocks and ``with``
blocks that enclose the break keep working in it.
"""
import dis
import sys

from bytecode import Bytecode, Instr, Label

from ..interp.decode import _DROPPED, decode

PY = sys.version_info[:2]
_SUSPENDING = 0x20 | 0x80 | 0x100 | 0x200   # generator, coroutine, iterable coroutine, async generator
_PACKING = 0x04 | 0x08                      # *args, **kwargs: the resume function takes them as plain values

#: the code object a resume function was made from: id(resume code) -> (resume code, original code, shift)
#: (``shift``: how many more instructions the resume code runs before the original's first)
ORIGINS = {}


def _pops(name, arg):
    """How many stack items the breaking instruction ``name`` takes (None: it cannot be a break step)."""
    if name == "CALL":
        return arg + 2
    if name == "CALL_FUNCTION_EX":
        return 3 + (arg & 1)
    if name.startswith(("POP_JUMP_", "JUMP_IF_")) or name in _ONE:
        return 1
    if name == "LOAD_ATTR":
        # (3.12+: with its low bit set it pushes a NULL or ``self`` too, which a step cannot return)
        return 1 if PY < (3, 12) or not arg[0] else None
    if name == "FORMAT_VALUE":
        return 1 + bool(arg & 4)
    if name == "BUILD_STRING":
        return arg
    return _FIXED.get(name)


_ONE = frozenset({"FOR_ITER", "GET_ITER", "UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "UNARY_POSITIVE",
                  "TO_BOOL", "UNPACK_SEQUENCE", "UNPACK_EX", "DELETE_ATTR", "GET_LEN", "FORMAT_SIMPLE"})
_FIXED = {"BINARY_OP": 2, "BINARY_SUBSCR": 2, "COMPARE_OP": 2, "CONTAINS_OP": 2, "IS_OP": 2,
          "STORE_SUBSCR": 3, "DELETE_SUBSCR": 2, "STORE_ATTR": 2, "BINARY_SLICE": 3, "STORE_SLICE": 4,
          "FORMAT_WITH_SPEC": 2}


class Layout:
    """What a break point holds: which stack slots are NULL, and which locals are bound (by name)."""

    def __init__(self, nulls, local_names):
        self.nulls = tuple(nulls)            # one bool per stack slot, bottom first
        self.local_names = tuple(local_names)

    def key(self):
        return self.nulls, self.local_names


def instructions(code):
    """The abstract instructions of ``code`` and, per VM instruction index, its position among them."""
    # (the handlers' stack depths are the original's: a resume function enters its try blocks in the
    # middle, where a flow analysis from its start would not find them)
    bc = Bytecode.from_code(code, conserve_exception_block_stackdepth=True)
    positions = [k for k, ins in enumerate(bc) if isinstance(ins, Instr) and ins.name not in _DROPPED]
    d = decode(code)
    if len(positions) != len(d.offsets):
        raise ValueError("instruction numbering differs from the VM's")
    return bc, positions


def origin(code):
    """(original code, shift) of a resume function's code; (code, 0) of any other code."""
    entry = ORIGINS.get(id(code))
    if entry is not None and entry[0] is code:
        return entry[1], entry[2]
    return code, 0


def why_not_resumable(code):
    """Why a break in ``code`` cannot continue in a resume function (None when it can)."""
    if code.co_flags & _SUSPENDING:
        return "a graph break inside a generator or coroutine"
    return None


def step_shape(code, index):
    """(pops, instruction) of the breaking instruction at VM index ``index``, or None when it cannot run
    as a step (it pushes a NULL, or stores into the frame)."""
    bc, positions = instructions(code)
    ins = bc[positions[index]]
    n = _pops(ins.name, ins.arg)
    return None if n is None else (n, ins)


def _jump_target(bc, positions, label):
    """The VM index of the first instruction at or after ``label``."""
    at = next(k for k, ins in enumerate(bc) if ins is label)
    return next(n for n, pos in enumerate(positions) if pos > at)


def step_code(code, index, nulls):
    """A code object that runs the instruction at ``index`` on the ``len(nulls)`` stack items it takes
    (its parameters: the non-NULL ones) and returns ``(exit, pushed items)``: ``exit`` is the VM index
    the original code continues at. Returns ``(code object, {exit: how many items it pushes})``."""
    bc, positions = instructions(code)
    pos = positions[index]
    ins = bc[pos]
    out = [Instr("RESUME", 0)]
    names = []
    for k, null in enumerate(nulls):
        if null:
            out.append(Instr("PUSH_NULL"))
        else:
            names.append(f"__magpy_item{k}")
            out.append(Instr("LOAD_FAST", names[-1]))
    if ins.name == "CALL":
        # the keyword names (3.11, 3.12) and PRECALL (3.11) that lead to this CALL
        k = pos - 1
        lead = []
        while k >= 0 and isinstance(bc[k], Instr) and bc[k].name in ("PRECALL", "KW_NAMES"):
            lead.insert(0, bc[k])
            k -= 1
        out.extend(Instr(i.name, i.arg, location=i.location) for i in lead)
        lead_effect = sum(i.stack_effect() for i in lead)  # (3.11's PRECALL takes the arguments' count)
    else:
        lead_effect = 0
    exits = [index + 1]
    jump = None
    if isinstance(ins.arg, Label):
        jump = Label()
        out.append(Instr(ins.name, jump, location=ins.location))
        target = _jump_target(bc, positions, ins.arg)
        if PY >= (3, 12) and ins.name == "FOR_ITER":
            target += 1  # (an exhausted FOR_ITER skips the END_FOR it points at)
        exits.append(target)
    else:
        out.append(Instr(ins.name, ins.arg, location=ins.location) if ins.arg is not None or ins.require_arg()
                   else Instr(ins.name, location=ins.location))
    pops = len(nulls) + lead_effect
    pushed = {exits[0]: pops + ins.stack_effect(jump=False)}
    _leave_with(out, pushed[exits[0]], exits[0])
    if jump is not None:
        out.append(jump)
        pushed[exits[1]] = pops + ins.stack_effect(jump=True)
        if PY >= (3, 12) and ins.name == "FOR_ITER":
            # an exhausted FOR_ITER pops its iterator and skips the END_FOR it points at (which would
            # pop the iterator and the item the flow analysis counts it as pushing)
            out.append(Instr("END_FOR"))
            pushed[exits[1]] -= 2
        _leave_with(out, pushed[exits[1]], exits[1])
    new = Bytecode(out)
    new.argnames = names
    new.argcount = len(names)
    new.name = code.co_name
    new.filename = code.co_filename
    new.first_lineno = code.co_firstlineno
    if PY >= (3, 11):
        new.qualname = code.co_qualname
    return new.to_code(), pushed


def _leave_with(out, n, exit_index):
    out.append(Instr("BUILD_TUPLE", n))
    out.append(Instr("LOAD_CONST", exit_index))
    out.append(Instr("SWAP", 2))
    out.append(Instr("BUILD_TUPLE", 2))
    out.append(Instr("RETURN_VALUE"))


class Split:
    """Everything a break at VM index ``index`` of ``code`` (with ``layout``) needs, made at once: the step,
    and per place the original goes on at (each exit of the step, and the handler that takes what it
    raises) the resume function's code and the live stack's NULLs there. Raises when a rewrite fails,
    so that a capture finds out while the call can still run on in the VM."""

    def __init__(self, code, index, layout):
        self.code = code
        self.index = index
        self.local_names = layout.local_names
        pops, self.instr = step_shape(code, index)
        cut = len(layout.nulls) - pops
        self.step, pushed = step_code(code, index, layout.nulls[cut:])
        self.lower = sum(not n for n in layout.nulls[:cut])  # live stack values below the step's
        places = {exit: layout.nulls[:cut] + (False,) * n for exit, n in pushed.items()}
        self.handler = decode(code).handler_at[index]
        if self.handler is not None:
            target, depth, lasti = self.handler
            self.handled = sum(not n for n in layout.nulls[:depth])  # live values the handler keeps
            places[target] = layout.nulls[:depth] + (False,) * (lasti + 1)
        self.resumes = {}   # place -> (resume code, its layout)
        for at, nulls in places.items():
            there = Layout(nulls, layout.local_names)
            self.resumes[at] = (resume_code(code, at, there), there)


def _opnames(code):
    return [i.opname for i in dis.get_instructions(code) if i.opname not in _DROPPED]


def resume_code(code, index, layout):
    """``code`` resumed at VM index ``index`` with ``layout``'s stack and bound locals as parameters."""
    bc, positions = instructions(code)
    start = Label()
    body = list(bc)
    body.insert(positions[index], start)
    first = next(k for k, ins in enumerate(body) if isinstance(ins, Instr) and ins.name == "RESUME")
    location = bc[positions[index]].location
    stack_names = []
    prologue = []
    for k, null in enumerate(layout.nulls):
        if null:
            prologue.append(Instr("PUSH_NULL", location=location))
        else:
            stack_names.append(f"__magpy_stack{k}")
            prologue.append(Instr("LOAD_FAST", stack_names[-1], location=location))
    prologue.append(Instr("JUMP_FORWARD", start, location=location))
    body[first + 1:first + 1] = prologue
    bc[:] = body
    bc.argnames = stack_names + list(layout.local_names)
    bc.argcount = len(bc.argnames)
    bc.posonlyargcount = 0
    bc.kwonlyargcount = 0
    bc.flags = bc.flags & ~_PACKING
    new = bc.to_code(stacksize=code.co_stacksize + len(prologue), compute_exception_stack_depths=False)
    ORIGINS[id(new)] = (new, code, len(prologue))
    # (the instructions before RESUME, COPY_FREE_VARS, stay first: the prologue follows them)
    before = sum(1 for ins in body[:first] if isinstance(ins, Instr) and ins.name not in _DROPPED)
    names = _opnames(new)
    if names[:before] + names[before + len(prologue):] != _opnames(code):
        raise ValueError("the resume function's instructions do not line up with the original's")
    return new


class BreakSites:
    """The graph breaks found in ``code`` and in every resume function made from the same original within
    one function the user compiled (``sites``: its table, id(original code) -> (code, {index: why})): a
    break is a fact about an instruction of the original (a resume function holds the original's
    instructions after its prologue), so a resume function stops at the original's known breaks from
    its first call. Indexed by ``code``'s own instruction numbering; values: an ``Unsupported`` (why),
    or None (a break that was cancelled: the code is not split there)."""

    def __init__(self, code, sites):
        original, self.shift = origin(code)
        entry = sites.get(id(original))
        if entry is None or entry[0] is not original:
            entry = sites[id(original)] = (original, {})
        self._table = entry[1]

    def __contains__(self, index):
        return index is not None and index - self.shift in self._table

    def __getitem__(self, index):
        return self._table[index - self.shift]

    def __setitem__(self, index, why):
        if index >= self.shift:  # (the prologue's own instructions are never break points)
            self._table[index - self.shift] = why

    def get(self, index, default=None):
        return default if index is None else self._table.get(index - self.shift, default)

    def items(self):
        return [(k + self.shift, why) for k, why in self._table.items()]
