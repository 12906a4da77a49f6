"""Straight-line runs of simple instructions compiled into one generated Python function.

The plain dispatch loop pays one tuple unpack and one Python call per instruction, and every handler
goes through ``f.stack``. Here a *block* — a run of instructions that all have a template below, that
no jump enters except at its first instruction, and that share one exception handler — becomes one
generated function with the handler signature ``(frame, arg, index) -> next index``. Values the block
pushes itself live in Python locals (``v1``, ``v2`` …) and only reach ``frame.stack`` when the block
leaves; a block runs on through the fall-through side of its conditional jumps and ends at an
unconditional jump, a return, or the first instruction without a template.

Exceptions: the function keeps the index of the instruction it is running in ``n`` and stores it in
``frame.fault`` when something raises, so that the dispatch loop routes the exception (and reports
line numbers) exactly as for that instruction. Unwinding only needs ``frame.stack`` up to the handler's
depth: no instruction covered by a handler pops below that depth, and values below the block's own
pushes are kept in ``frame.stack`` (the block pops them from there), so nothing has to be written back.

Caches: an attribute site remembers the one type for which the attribute protocol found no Python code
(the same negative decision ``protocols`` remembers for ever); a call site remembers one callable that
the call decision point runs natively (forgotten when a lookaside is registered). Only the plain
(no-observer) instruction list uses blocks.
"""
import keyword
import linecache
from types import FunctionType

from . import protocols, lookaside
from .calls import call, plain_native
from .frame import NULL
from .ops_control import STOP, next_value, _truth
from .ops_containers import unpack_items
from .ops_operators import PLAIN
from .ops_stack import _unbound_local, _global
from .protocols import _HEAPTYPE, _NATIVE_ATTR, _NATIVE_SETATTR

#: the shortest run worth a generated function
MIN_LENGTH = 2

_BINARY_SYMBOLS = ["+", "&", "//", "<<", "@", "*", "%", "|", "**", ">>", "-", "/", "^"]
_COMPARE_SYMBOLS = ["<", "<=", "==", "!=", ">", ">="]
_UNARY = {"UNARY_NEGATIVE": ("-", "__neg__"), "UNARY_INVERT": ("~", "__invert__"),
          "UNARY_POSITIVE": ("+", "__pos__")}


class _NoType:
    """What an attribute or call site's cache holds before it has seen a cacheable case."""


class _Mixed:
    """What a call site's cache holds once its first callable was not one to call natively."""


#: names the generated code reads as globals
_RUNTIME = {
    "NULL": NULL, "PLAIN": PLAIN, "HEAP": _HEAPTYPE, "FunctionType": FunctionType, "STOP": STOP,
    "NoType": _NoType, "Mixed": _Mixed, "NATIVE_ATTR": _NATIVE_ATTR, "NATIVE_SETATTR": _NATIVE_SETATTR,
    "unbound": _unbound_local, "global_": _global, "truth": protocols.truth, "truth_of": _truth,
    "load_attr": protocols.load_attr, "store_attr": protocols.store_attr,
    "load_method": protocols.load_method, "binary_op": protocols.binary_op,
    "compare_op": protocols.compare_op, "unary_op": protocols.unary_op,
    "get_item": protocols.get_item, "set_item": protocols.set_item, "contains": protocols.contains,
    "get_iter": protocols.get_iter, "next_value": next_value, "unpack_items": unpack_items,
    "call": call, "plain_native": plain_native,
}


class _Emitter:
    """Builds the source of one block: the virtual stack (expressions for the values the block pushed
    that are not in ``frame.stack`` yet) and the lines emitted so far."""

    def __init__(self, decoded, start, consts):
        self.decoded = decoded
        self.start = start
        self.lines = []
        self.virtual = []        # expressions: fresh local names or constant references
        self.count = 0
        self.consts = consts     # shared by the code object's blocks: value -> global name
        self.caches = []         # (global name, whether a call site) of this block's site caches
        self.const_values = {}   # expression -> value, for the constants pushed
        self.maybe_null = set()  # expressions that may hold NULL (saved by LOAD_FAST_AND_CLEAR)
        self.bound = set(decoded.bound_args)  # local slots known to hold a value here
        self.kwnames = None      # KW_NAMES waiting for its CALL
        self.n = start           # the index ``n`` holds at this point of the source
        self.loops = False       # the block ends by jumping back to its start
        self.uses_vm = False

    # ---- source --------------------------------------------------------------------------------
    def emit(self, line):
        self.lines.append("        " + line)

    def at(self, k):
        """The instruction at ``k`` may raise from here on."""
        if self.n != k:
            self.emit(f"n = {k}")
            self.n = k

    def fresh(self):
        self.count += 1
        return f"v{self.count}"

    def const(self, value):
        """An expression for the constant ``value`` (a literal, or a global of the generated code)."""
        tp = type(value)
        if value is None or tp is bool:
            expr = repr(value)
        else:
            # the code object's own constant, never an equal literal: `is` must see the same object
            key = id(value)
            entry = self.consts.get(key)
            if entry is None:
                entry = self.consts[key] = (f"k{len(self.consts)}", value)
            expr = entry[0]
        self.const_values[expr] = value
        return expr

    def cache(self, call_site=False):
        """A new site cache (a global of the generated code holding one type or callable)."""
        name = f"c{self.start}_{len(self.caches)}"
        self.caches.append((name, call_site))
        return name

    @property
    def vm(self):
        self.uses_vm = True
        return "vm"

    # ---- the stack -----------------------------------------------------------------------------
    def push(self, expr):
        self.virtual.append(expr)

    def push_new(self, code):
        name = self.fresh()
        self.emit(f"{name} = {code}")
        self.virtual.append(name)
        return name

    def pop(self):
        if self.virtual:
            return self.virtual.pop()
        name = self.fresh()
        self.emit(f"{name} = stack.pop()")
        return name

    def peek(self, depth):
        """The expression of the value ``depth`` places down (1: the top)."""
        if depth <= len(self.virtual):
            return self.virtual[-depth]
        name = self.fresh()
        self.emit(f"{name} = stack[{len(self.virtual) - depth}]")
        return name

    def flush_lines(self, indent=""):
        """Source that moves the virtual stack into ``frame.stack`` (the state stays as it is)."""
        v = self.virtual
        if not v:
            return []
        if len(v) == 1:
            return [f"{indent}stack.append({v[0]})"]
        return [f"{indent}stack.extend(({', '.join(v)}))"]

    def guarded(self, k, test, fast, slow):
        """``fast`` where ``test`` holds (built-in operands: CPython's own operation), else ``slow``
        (the protocol, which may run Python code: the frame's index is set for it first)."""
        self.emit(f"if {test}: {fast}")
        self.emit("else:")
        self.emit(f"    f.index = {k}")
        self.emit(f"    {slow}")

    def leave(self, target, indent="", loop=False):
        for line in self.flush_lines(indent):
            self.emit(line)
        self.emit(f"{indent}continue" if loop else f"{indent}return {target}")


def _attr(obj, name):
    """``obj.name`` as source, or a getattr call where the name is no identifier."""
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"{obj}.{name}"
    return f"getattr({obj}, {name!r})"


# ---- templates: (emitter, decoded arg, index) -> whether the block goes on after the instruction ---

TEMPLATES = {}


def template(*names):
    def register(fn):
        for name in names:
            TEMPLATES[name] = fn
        return fn
    return register


@template("NOP")
def _nop(e, arg, k):
    return True


@template("LOAD_CONST")
def _load_const(e, value, k):
    e.push(e.const(value))
    return True


def _load_local(e, a, k, check):
    if check and a not in e.bound:
        e.at(k)
        name = e.push_new(f"loc[{a}]")
        e.emit(f"if {name} is NULL: raise unbound(f, {a})")
        e.bound.add(a)  # a second load in this block finds it bound (or never runs)
    else:
        e.push_new(f"loc[{a}]")


@template("LOAD_FAST_CHECK")
def _load_fast_check(e, a, k):
    _load_local(e, a, k, True)
    return True


@template("LOAD_FAST", "LOAD_CLOSURE")
def _load_fast(e, a, k):
    _load_local(e, a, k, False)
    return True


@template("LOAD_FAST_LOAD_FAST")
def _load_fast_load_fast(e, arg, k):
    _load_local(e, arg[0], k, True)
    _load_local(e, arg[1], k, True)
    return True


@template("LOAD_FAST_AND_CLEAR")
def _load_fast_and_clear(e, a, k):
    e.maybe_null.add(e.push_new(f"loc[{a}]"))
    e.emit(f"loc[{a}] = NULL")
    e.bound.discard(a)
    return True


def _store_local(e, a):
    from_block = bool(e.virtual)
    value = e.pop()
    e.emit(f"loc[{a}] = {value}")
    # a value from below the block, or one LOAD_FAST_AND_CLEAR saved, may be NULL (an inlined
    # comprehension restores its variable's earlier state, unbound included)
    if from_block and value not in e.maybe_null:
        e.bound.add(a)
    else:
        e.bound.discard(a)


@template("STORE_FAST")
def _store_fast(e, a, k):
    _store_local(e, a)
    return True


@template("STORE_FAST_LOAD_FAST")
def _store_fast_load_fast(e, arg, k):
    _store_local(e, arg[0])
    _load_local(e, arg[1], k, True)
    return True


@template("STORE_FAST_STORE_FAST")
def _store_fast_store_fast(e, arg, k):
    _store_local(e, arg[0])
    _store_local(e, arg[1])
    return True


@template("POP_TOP")
def _pop_top(e, arg, k):
    if e.virtual:
        e.virtual.pop()
    else:
        e.emit("stack.pop()")
    return True


@template("END_FOR")
def _end_for(e, arg, k):
    _pop_top(e, arg, k)
    return _pop_top(e, arg, k)


@template("END_FOR_313")
def _end_for_313(e, arg, k):
    return _pop_top(e, arg, k)


@template("PUSH_NULL")
def _push_null(e, arg, k):
    e.push("NULL")
    return True


@template("COPY")
def _copy(e, depth, k):
    e.push(e.peek(depth))
    return True


@template("SWAP")
def _swap(e, depth, k):
    v = e.virtual
    if depth > len(v):
        for line in e.flush_lines():
            e.emit(line)
        v.clear()
        e.emit(f"stack[-1], stack[-{depth}] = stack[-{depth}], stack[-1]")
    else:
        v[-1], v[-depth] = v[-depth], v[-1]
    return True


# ---- globals and attributes ---------------------------------------------------------------------

def _load_global(e, name, k, null):
    e.at(k)
    if null == "before":
        e.push("NULL")
    e.push_new(f"g[{name!r}] if {name!r} in g else global_(f, {name!r})")
    if null == "after":
        e.push("NULL")
    return True


TEMPLATES["LOAD_GLOBAL"] = lambda e, name, k: _load_global(e, name, k, None)
TEMPLATES["LOAD_GLOBAL_NULL_BEFORE"] = lambda e, name, k: _load_global(e, name, k, "before")
TEMPLATES["LOAD_GLOBAL_NULL_AFTER"] = lambda e, name, k: _load_global(e, name, k, "after")


@template("LOAD_ATTR")
def _load_attr(e, name, k):
    obj = e.pop()
    e.at(k)
    site = e.cache()
    out = e.fresh()
    e.emit(f"tp = type({obj})")
    e.emit(f"if tp is {site}: {out} = {_attr(obj, name)}")
    e.emit("elif tp.__flags__ & HEAP:")
    e.emit(f"    f.index = {k}")
    e.emit(f"    {out} = load_attr({e.vm}, {obj}, {name!r})")
    e.emit(f"    if (tp, {name!r}) in NATIVE_ATTR: {site} = tp")
    e.emit(f"else: {out} = {_attr(obj, name)}")
    e.push(out)
    return True


@template("STORE_ATTR")
def _store_attr(e, name, k):
    obj = e.pop()
    value = e.pop()
    e.at(k)
    site = e.cache()
    e.emit(f"tp = type({obj})")
    e.emit(f"if tp is {site}: {_attr(obj, name)} = {value}")
    e.emit("else:")
    e.emit(f"    f.index = {k}")
    e.emit(f"    store_attr({e.vm}, {obj}, {name!r}, {value})")
    e.emit(f"    if (tp, {name!r}) in NATIVE_SETATTR: {site} = tp")
    return True


def _load_method(e, name, k, null_after):
    obj = e.pop()
    e.at(k)
    meth, value = e.fresh(), e.fresh()
    e.emit(f"{meth}, {value} = load_method({e.vm}, {obj}, {name!r})")
    if null_after:  # 3.13: [attr, NULL] or [function, self]
        e.emit(f"if {meth} is None: {meth}, {value} = {value}, NULL")
    else:           # [NULL, attr] or [function, self]
        e.emit(f"if {meth} is None: {meth} = NULL")
    e.push(meth)
    e.push(value)
    return True


TEMPLATES["LOAD_METHOD"] = lambda e, name, k: _load_method(e, name, k, False)
TEMPLATES["LOAD_METHOD_313"] = lambda e, name, k: _load_method(e, name, k, True)


# ---- operators ----------------------------------------------------------------------------------

def _plain_test(e, *exprs):
    """Source testing that every operand has a PLAIN type (constants are known statically)."""
    tests = []
    for x in exprs:
        value = e.const_values.get(x, _NOT_CONST)
        if value is not _NOT_CONST:
            if type(value) in PLAIN:
                continue
            return "False"
        tests.append(f"type({x}) in PLAIN")
    return " and ".join(tests) or "True"


_NOT_CONST = object()


@template("BINARY_OP")
def _binary_op(e, op, k):
    b = e.pop()
    a = e.pop()
    e.at(k)
    out = e.fresh()
    symbol = _BINARY_SYMBOLS[op % 13]
    if op >= 13:  # in place: the left operand's own in-place method (lists extend themselves)
        fast = f"{out} = {a}; {out} {symbol}= {b}"
    else:
        fast = f"{out} = {a} {symbol} {b}"
    e.guarded(k, _plain_test(e, a, b), fast, f"{out} = binary_op({e.vm}, {a}, {b}, {op})")
    e.push(out)
    return True


def _compare(e, op, k):
    b = e.pop()
    a = e.pop()
    e.at(k)
    out = e.fresh()
    e.guarded(k, _plain_test(e, a, b), f"{out} = {a} {_COMPARE_SYMBOLS[op]} {b}",
              f"{out} = compare_op({e.vm}, {a}, {b}, {op})")
    return out


@template("COMPARE_OP")
def _compare_op(e, op, k):
    e.push(_compare(e, op, k))
    return True


@template("COMPARE_OP_BOOL")
def _compare_op_bool(e, op, k):
    out = _compare(e, op, k)
    e.emit(f"if {out} is not True and {out} is not False: {out} = truth({e.vm}, {out})")
    e.push(out)
    return True


@template("IS_OP")
def _is_op(e, invert, k):
    b = e.pop()
    a = e.pop()
    e.push_new(f"{a} is {'not ' if invert else ''}{b}")
    return True


@template("CONTAINS_OP")
def _contains_op(e, invert, k):
    container = e.pop()
    item = e.pop()
    e.at(k)
    out = e.fresh()
    e.guarded(k, f"not type({container}).__flags__ & HEAP",
              f"{out} = {item} {'not in' if invert else 'in'} {container}",
              f"{out} = contains({e.vm}, {container}, {item}) is not {bool(invert)}")
    e.push(out)
    return True


def _unary(e, name, k):
    symbol, dunder = _UNARY[name]
    x = e.pop()
    e.at(k)
    out = e.fresh()
    e.guarded(k, _plain_test(e, x), f"{out} = {symbol}{x}", f"{out} = unary_op({e.vm}, {x}, {dunder!r})")
    e.push(out)
    return True


for _name in _UNARY:
    TEMPLATES[_name] = (lambda name: lambda e, arg, k: _unary(e, name, k))(_name)


@template("UNARY_NOT")
def _unary_not(e, arg, k):
    x = e.pop()
    e.at(k)
    e.push_new(f"not ({x} if {x} is True or {x} is False else truth({e.vm}, {x}))")
    return True


@template("TO_BOOL")
def _to_bool(e, arg, k):
    x = e.pop()
    e.at(k)
    e.push_new(f"{x} if {x} is True or {x} is False else truth({e.vm}, {x})")
    return True


@template("BINARY_SUBSCR")
def _binary_subscr(e, arg, k):
    key = e.pop()
    obj = e.pop()
    e.at(k)
    out = e.fresh()
    e.guarded(k, f"type({obj}) in PLAIN", f"{out} = {obj}[{key}]", f"{out} = get_item({e.vm}, {obj}, {key})")
    e.push(out)
    return True


@template("STORE_SUBSCR")
def _store_subscr(e, arg, k):
    key = e.pop()
    obj = e.pop()
    value = e.pop()
    e.at(k)
    e.guarded(k, f"type({obj}) in PLAIN", f"{obj}[{key}] = {value}", f"set_item({e.vm}, {obj}, {key}, {value})")
    return True


# ---- containers ---------------------------------------------------------------------------------

def _pop_many(e, n):
    items = [e.pop() for _ in range(n)]
    items.reverse()
    return items


@template("BUILD_TUPLE")
def _build_tuple(e, n, k):
    items = _pop_many(e, n)
    e.push_new("(" + "".join(f"{x}, " for x in items) + ")")
    return True


@template("BUILD_LIST")
def _build_list(e, n, k):
    e.push_new("[" + ", ".join(_pop_many(e, n)) + "]")
    return True


@template("LIST_APPEND")
def _list_append(e, depth, k):
    value = e.pop()
    e.at(k)
    e.emit(f"{e.peek(depth)}.append({value})")
    return True


@template("UNPACK_SEQUENCE")
def _unpack_sequence(e, n, k):
    seq = e.pop()
    e.at(k)
    names = [e.fresh() for _ in range(n)]
    target = "[" + ", ".join(names) + "]"
    e.emit(f"if (type({seq}) is tuple or type({seq}) is list) and len({seq}) == {n}: {target} = {seq}")
    e.emit(f"else: {target} = unpack_items({e.vm}, {seq}, {n})")
    for name in reversed(names):
        e.push(name)
    return True


# ---- iteration and control ----------------------------------------------------------------------

@template("GET_ITER")
def _get_iter(e, arg, k):
    x = e.pop()
    e.at(k)
    out = e.fresh()
    e.guarded(k, f"not type({x}).__flags__ & HEAP", f"{out} = iter({x})", f"{out} = get_iter({e.vm}, {x})")
    e.push(out)
    return True


@template("FOR_ITER")
def _for_iter(e, exit_index, k):
    it = e.peek(1)
    e.at(k)
    out = e.fresh()
    e.emit(f"{out} = next({it}, STOP) if not type({it}).__flags__ & HEAP else next_value(f, {it})")
    e.emit(f"if {out} is STOP:")
    # the exhausted iterator leaves the stack
    if e.virtual:
        kept = e.virtual.pop()
        e.leave(exit_index, "    ")
        e.virtual.append(kept)
    else:
        e.emit("    stack.pop()")
        e.emit(f"    return {exit_index}")
    e.push(out)
    return True


_BRANCH_TESTS = {
    "POP_JUMP_IF_TRUE": "{x} is True or ({x} is not False and truth_of(f, {x}))",
    "POP_JUMP_IF_FALSE": "{x} is False or ({x} is not True and not truth_of(f, {x}))",
    "POP_JUMP_IF_NONE": "{x} is None",
    "POP_JUMP_IF_NOT_NONE": "{x} is not None",
}


def _branch(e, name, target, k):
    x = e.pop()
    if name in ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE"):
        e.at(k)
    e.emit(f"if {_BRANCH_TESTS[name].format(x=x)}:")
    e.leave(target, "    ")
    return True


for _name in _BRANCH_TESTS:
    TEMPLATES[_name] = (lambda name: lambda e, target, k: _branch(e, name, target, k))(_name)


@template("JUMP")
def _jump(e, target, k):
    if target == e.start:  # the block is a whole loop: it runs again without leaving
        e.leave("", loop=True)
        e.loops = True
    else:
        e.leave(target)
    return False


@template("RETURN_VALUE")
def _return_value(e, arg, k):
    e.emit(f"f.result = {e.pop()}")
    e.emit("return -1")
    return False


@template("RETURN_CONST")
def _return_const(e, value, k):
    e.emit(f"f.result = {e.const(value)}")
    e.emit("return -1")
    return False


# ---- calls --------------------------------------------------------------------------------------

@template("KW_NAMES")
def _kw_names(e, names, k):
    e.kwnames = names
    return True


def _call(e, argc, k, layout):
    """layout '312': [NULL|method, callable|self, *args]; '313': [callable, NULL|self, *args]."""
    items = _pop_many(e, argc + 2)
    first, second, args = items[0], items[1], items[2:]
    kwnames, e.kwnames = e.kwnames, None
    kwargs = "None"
    if kwnames:
        nk = len(kwnames)
        kwargs = "{" + ", ".join(f"{key!r}: {v}" for key, v in zip(kwnames, args[-nk:])) + "}"
        args = args[:-nk]
    e.at(k)
    fn = e.fresh()
    rest = "".join(f"{x}, " for x in args)
    if layout == "312":
        callee, maybe_self, other = second, first, second
    else:
        callee, maybe_self, other = first, second, first
    if maybe_self == "NULL":
        e.emit(f"{fn} = {callee}; a = ({rest})")
    elif maybe_self in e.const_values:  # a constant is never NULL
        e.emit(f"{fn} = {first}; a = ({second if layout == '313' else other}, {rest})")
    else:
        e.emit(f"if {maybe_self} is NULL: {fn} = {callee}; a = ({rest})")
        if layout == "312":
            e.emit(f"else: {fn} = {first}; a = ({other}, {rest})")
        else:
            e.emit(f"else: {fn} = {first}; a = ({second}, {rest})")
    out = e.fresh()
    e.emit(f"f.index = {k}")
    if kwnames:
        e.emit(f"{out} = call({e.vm}, {fn}, a, {kwargs})")
    else:
        site = e.cache(call_site=True)
        e.emit(f"if {fn} is {site}: {out} = {fn}(*a)")
        e.emit(f"elif type({fn}) is FunctionType: {out} = {e.vm}.call_function({fn}, a, None)")
        e.emit("else:")
        # the site remembers the first callable it meets, if the call decision point always
        # runs that one natively; else it stops asking
        e.emit(f"    if {site} is NoType: {site} = {fn} if plain_native({fn}) else Mixed")
        e.emit(f"    {out} = call({e.vm}, {fn}, a, None)")
    e.push(out)
    return True


TEMPLATES["CALL"] = lambda e, argc, k: _call(e, argc, k, "312")
TEMPLATES["CALL_313"] = lambda e, argc, k: _call(e, argc, k, "313")


# ---- block formation ----------------------------------------------------------------------------

def _runs(decoded, targets):
    """(start, end) of each run of templated instructions no jump enters in the middle."""
    names = decoded.names
    handler_at = decoded.handler_at
    n = len(names)
    k = 0
    while k < n:
        if names[k] not in TEMPLATES:
            k += 1
            continue
        start = k
        k += 1
        while k < n and names[k] in TEMPLATES and k not in targets and handler_at[k] == handler_at[start] \
                and names[k - 1] not in _ENDS:
            k += 1
        yield start, k


#: instructions after which a block never continues
_ENDS = frozenset({"JUMP", "RETURN_VALUE", "RETURN_CONST"})


def _source_of(decoded, start, end, consts):
    """Source of the block [start, end), or None when it is not worth one."""
    e = _Emitter(decoded, start, consts)
    count = 0
    goes_on = True
    for k in range(start, end):
        name = decoded.names[k]
        if name == "KW_NAMES" and (k + 1 >= end or decoded.names[k + 1] not in ("CALL", "CALL_313")):
            end = k  # its CALL is not in the block: leave KW_NAMES to its handler
            break
        goes_on = TEMPLATES[name](e, decoded.unfused[k][1], k)
        count += 1
        if not goes_on:
            break
    if count < MIN_LENGTH:
        return None
    if goes_on:
        e.leave(start + count)
    head = ["    loc = f.locals", "    stack = f.stack"]
    if e.uses_vm:
        head.append("    vm = f.vm")
    if any("g[" in line for line in e.lines):
        head.append("    g = f.globals")
    if e.caches:
        head.insert(0, "    global " + ", ".join(name for name, _ in e.caches))
    lines = e.lines
    if e.loops:
        lines = ["        while True:", f"            n = {start}", *("    " + line for line in lines)]
    body = [f"def block_{start}(f, arg, i):", *head, f"    n = {start}", "    try:", *lines,
            "    except BaseException:",
            "        f.fault = n",
            "        raise"]
    return body, e.caches


_site_caches = []   # (namespace, name) of every call-site cache, reset when a lookaside is registered


def _forget_call_sites():
    for namespace, name in _site_caches:
        namespace[name] = _NoType


lookaside.ON_REGISTER.append(_forget_call_sites)

_serial = [0]


def compile_blocks(decoded, targets):
    """The instruction list of ``decoded`` with each block's first instruction replaced by its
    generated function (the instructions inside keep their handlers)."""
    instrs = list(decoded.instrs)
    consts = {}
    sources = []
    caches = []
    starts = []
    for start, end in _runs(decoded, targets):
        if end - start < MIN_LENGTH:
            continue
        made = _source_of(decoded, start, end, consts)
        if made is None:
            continue
        sources.extend(made[0])
        caches.extend(made[1])
        starts.append(start)
    if not starts:
        return instrs
    namespace = dict(_RUNTIME)
    for name, value in consts.values():
        namespace[name] = value
    for name, call_site in caches:
        namespace[name] = _NoType
        if call_site:
            _site_caches.append((namespace, name))
    _serial[0] += 1
    code = decoded.code
    filename = f"{_GENERATED_PREFIX}{code.co_name}-{_serial[0]}>"
    text = "\n".join(sources) + "\n"
    # registered so that tracebacks and the VM's own-failure check can read the generated lines
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace)
    for start in starts:
        instrs[start] = (namespace[f"block_{start}"], None)
    return instrs


_GENERATED_PREFIX = __file__.rsplit("/", 1)[0] + "/<block "
