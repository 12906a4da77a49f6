"""Templates of the plain (no-observer) compiled blocks: what each instruction becomes as source.

A template ``(emitter, decoded arg, index) -> bool`` emits the instruction's work through the emitter
of :mod:`blocks` and says whether the block goes on after it. The fast side of each test is what CPython
itself does for built-in operands; the other side is the same protocol call the plain handler makes.
"""
import keyword

from .block_templates import TEMPLATES, template
from .ops_operators import PLAIN

_BINARY_SYMBOLS = ["+", "&", "//", "<<", "@", "*", "%", "|", "**", ">>", "-", "/", "^"]
_COMPARE_SYMBOLS = ["<", "<=", "==", "!=", ">", ">="]
_UNARY = {"UNARY_NEGATIVE": ("-", "__neg__"), "UNARY_INVERT": ("~", "__invert__"),
          "UNARY_POSITIVE": ("+", "__pos__")}


def _attr(obj, name):
    """``obj.name`` as source, or a getattr call where the name is no identifier."""
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"{obj}.{name}"
    return f"getattr({obj}, {name!r})"


# ---- templates: (emitter, decoded arg, index) -> whether the block goes on after the instruction ---

@template("NOP", tracked=True)
def _nop(e, arg, k):
    return True


# ---- moves: shared with tracked blocks (the emitter carries provenance along where it has one) ----

@template("LOAD_CONST", tracked=True)
def _load_const(e, value, k):
    e.push(e.const(value))
    return True


@template("LOAD_FAST_CHECK", tracked=True)
def _load_fast_check(e, a, k):
    e.load_local(a, k, True)
    return True


@template("LOAD_FAST", tracked=True)
def _load_fast(e, a, k):
    e.load_local(a, k, False)
    return True


@template("LOAD_CLOSURE")
def _load_closure(e, a, k):
    e.load_local(a, k, False)
    return True


@template("LOAD_FAST_LOAD_FAST", tracked=True)
def _load_fast_load_fast(e, arg, k):
    e.load_local(arg[0], k, True)
    e.load_local(arg[1], k, True)
    return True


@template("LOAD_FAST_AND_CLEAR", tracked=True)
def _load_fast_and_clear(e, a, k):
    e.load_and_clear(a)
    return True


@template("STORE_FAST", tracked=True)
def _store_fast(e, a, k):
    e.store_local(a)
    return True


@template("STORE_FAST_LOAD_FAST", tracked=True)
def _store_fast_load_fast(e, arg, k):
    e.store_local(arg[0])
    e.load_local(arg[1], k, True)
    return True


@template("STORE_FAST_STORE_FAST", tracked=True)
def _store_fast_store_fast(e, arg, k):
    e.store_local(arg[0])
    e.store_local(arg[1])
    return True


@template("POP_TOP", tracked=True)
def _pop_top(e, arg, k):
    e.drop()
    return True


@template("END_FOR", tracked=True)
def _end_for(e, arg, k):
    e.drop()
    e.drop()
    return True


@template("END_FOR_313", tracked=True)
def _end_for_313(e, arg, k):
    e.drop()
    return True


@template("PUSH_NULL", tracked=True)
def _push_null(e, arg, k):
    e.push("NULL")
    return True


@template("COPY", tracked=True)
def _copy(e, depth, k):
    e.push_entry(e.peek(depth))
    return True


@template("SWAP", tracked=True)
def _swap(e, depth, k):
    v = e.virtual
    if depth > len(v):
        e.flush()
        e.swap_real(depth)
    else:
        v[-1], v[-depth] = v[-depth], v[-1]
    return True


@template("JUMP", tracked=True)
def _jump(e, target, k):
    if target == e.start:  # the block is a whole loop: it runs again without leaving
        e.leave("", loop=True)
        e.loops = True
    else:
        e.leave(target)
    return False


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


def _provs(e):
    """``, (pa, pb)``: the operands' provenance for a Python dunder, in an observed block (else empty)."""
    provs = getattr(e, "operand_provs", None)
    return f", {provs}" if provs else ""


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
    e.guarded(k, _plain_test(e, a, b), fast, f"{out} = binary_op({e.vm}, {a}, {b}, {op}{_provs(e)})")
    e.push(out)
    return True


def _compare(e, op, k):
    b = e.pop()
    a = e.pop()
    e.at(k)
    out = e.fresh()
    e.guarded(k, _plain_test(e, a, b), f"{out} = {a} {_COMPARE_SYMBOLS[op]} {b}",
              f"{out} = compare_op({e.vm}, {a}, {b}, {op}{_provs(e)})")
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
              f"{out} = contains({e.vm}, {container}, {item}{_provs(e)}) is not {bool(invert)}")
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


def _truth(e, x):
    """``bool(x)`` with Python ``__bool__``/``__len__`` interpreted (bools themselves pass straight)."""
    return f"{x} if {x} is True or {x} is False else truth({e.vm}, {x})"


@template("UNARY_NOT")
def _unary_not(e, arg, k):
    x = e.pop()
    e.at(k)
    e.push_new(f"not ({_truth(e, x)})")
    return True


@template("TO_BOOL")
def _to_bool(e, arg, k):
    x = e.pop()
    e.at(k)
    e.push_new(_truth(e, x))
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
    e.push(e.next_or_leave(it, exit_index))
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
    e.scratch = True
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
