"""A small assembler over the ``bytecode`` package that hides CPython 3.11/3.12/3.13 differences.

Only what guard and mock programs need: loads (locals, constants, attributes, items), calls,
stores, comparisons, conditional jumps to a label, a try region, and returns. User data always
travels as constants of the code object, never as source text.
"""
import sys

from bytecode import Bytecode, Compare, Instr, Label, TryBegin, TryEnd

PY = sys.version_info[:2]


_COMPARE = {"==": Compare.EQ, "!=": Compare.NE, "<": Compare.LT, "<=": Compare.LE, ">": Compare.GT,
            ">=": Compare.GE}


#: constant types whose marshalled bytes say everything about them (the assembler may merge equal ones)
_BY_CONTENT_SAFE = frozenset({type(None), bool, int, float, complex, str, bytes, type(...)})


def _merged_by_content(value):
    """Would the assembler merge ``value`` with another constant it is not (marshal takes it, by its
    contents: mutable containers, and any object exposing a buffer — numpy arrays and scalars)?"""
    tp = type(value)
    if tp in _BY_CONTENT_SAFE:
        return False
    if tp in (tuple, frozenset):
        return any(map(_merged_by_content, value))
    if tp in (list, dict, set, bytearray):
        return True
    try:
        memoryview(value)
    except TypeError:
        return False  # (marshal refuses it: kept by identity)
    return True


#: ``emit``'s marker for an instruction without argument (``...`` is a constant programs use)
_NO_ARGUMENT = object()


class _Held:
    """A constant the assembler cannot merge (it keeps objects marshal refuses apart by identity)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class Assembler:
    def __init__(self, name, argnames):
        self.name = name
        self.argnames = list(argnames)
        self.code = [Instr("RESUME", 0)]

    def label(self):
        return Label()

    def place(self, label):
        self.code.append(label)

    def emit(self, name, arg=_NO_ARGUMENT):
        self.code.append(Instr(name) if arg is _NO_ARGUMENT else Instr(name, arg))

    # ---- values ----------------------------------------------------------------------------------
    def load_fast(self, name):
        self.emit("LOAD_FAST", name)

    def store_fast(self, name):
        self.emit("STORE_FAST", name)

    def const(self, value):
        if _merged_by_content(value):
            # (``bytecode`` merges constants that marshal to the same bytes: two arrays of the same
            # bytes but another shape or dtype, two equal lists, would become one object)
            self.emit("LOAD_CONST", _Held(value))
            self.attr("value")
            return
        self.emit("LOAD_CONST", value)

    def attr(self, name):
        self.emit("LOAD_ATTR", name if PY < (3, 12) else (False, name))

    def item(self):
        self.emit("BINARY_SUBSCR")

    def store_attr(self, name):
        """[value, obj] -> obj.name = value"""
        self.emit("STORE_ATTR", name)

    def store_item(self):
        """[value, obj, key] -> obj[key] = value"""
        self.emit("STORE_SUBSCR")

    def pop(self):
        self.emit("POP_TOP")

    def build(self, kind, n):
        self.emit({"tuple": "BUILD_TUPLE", "list": "BUILD_LIST", "set": "BUILD_SET"}[kind], n)

    def build_map(self, n):
        self.emit("BUILD_MAP", n)

    # ---- calls -----------------------------------------------------------------------------------
    def call_begin(self, fn):
        """Push a constant callable in the layout CALL expects; then push the arguments."""
        if PY >= (3, 13):
            self.const(fn)
            self.emit("PUSH_NULL")
        else:
            self.emit("PUSH_NULL")
            self.const(fn)

    def call_end(self, argc):
        if PY < (3, 12):
            self.emit("PRECALL", argc)
        self.emit("CALL", argc)

    # ---- tests -------------------------------------------------------------------------------------
    def compare(self, op):
        self.emit("COMPARE_OP", {"==": Compare.EQ, "!=": Compare.NE}[op])

    def is_(self, negate=False):
        self.emit("IS_OP", 1 if negate else 0)

    def jump_if_false(self, label):
        """Pop a bool (the comparisons above make exact bools) and jump when it is False."""
        if PY >= (3, 13):
            self.emit("TO_BOOL")
        self.emit("POP_JUMP_FORWARD_IF_FALSE" if PY < (3, 12) else "POP_JUMP_IF_FALSE", label)

    def jump_if(self, truth, label):
        """Pop any object and jump when its truth is ``truth`` (CPython tests it natively)."""
        if PY >= (3, 13):
            self.emit("TO_BOOL")
        if PY < (3, 12):
            self.emit("POP_JUMP_FORWARD_IF_TRUE" if truth else "POP_JUMP_FORWARD_IF_FALSE", label)
        else:
            self.emit("POP_JUMP_IF_TRUE" if truth else "POP_JUMP_IF_FALSE", label)

    def compare_op(self, op):
        self.emit("COMPARE_OP", _COMPARE[op])

    def contains(self, negate=False):
        self.emit("CONTAINS_OP", 1 if negate else 0)

    def try_begin(self, handler):
        tb = TryBegin(handler, push_lasti=False)
        self.code.append(tb)
        return tb

    def try_end(self, tb):
        self.code.append(TryEnd(tb))

    def ret(self):
        self.emit("RETURN_VALUE")

    # ---- result -----------------------------------------------------------------------------------
    def to_code(self, filename="<magpy>"):
        b = Bytecode(self.code)
        b.argnames = self.argnames
        b.argcount = len(self.argnames)
        b.name = self.name
        b.filename = filename
        return b.to_code()
