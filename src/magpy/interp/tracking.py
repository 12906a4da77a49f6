"""Provenance-tracking forms of the handlers, used when an observer is installed.

Without an observer the VM runs the plain handlers and carries no provenance at all. With one, each
decoded instruction is wrapped once (per code object) by the rule of its canonical name:

* *moves* (locals, stack shuffles) carry provenance along with the value, with no event;
* *reads and writes* of outside state (globals, cells, attributes, items) report an event and take the
  provenance the observer returns for what they read;
* *branches* and *returns* report the deciding or returned value;
* calls hand the arguments' provenance to the callee's frame and report the result;
* everything else is *generic*: it pops a known number of inputs, and the observer's ``operation``
  event gives the provenance of whatever the instruction left on the stack.
"""
from types import FunctionType, MethodType

from .frame import NULL
from . import ops_containers, protocols
from .calls import call
from .identity import IdentitySet
from .lookaside import called_instead, wrapped_by, CALL_INSTEAD, DELEGATES, TYPE_LOOKASIDE
from .builtin_lookasides import HIDDEN_CODE
from .decode import HANDLERS, compile_blocks
from .observer import CONSTANT_SCALARS, CONSTANT_ITERATORS, QUIET_OPS
from .ops_calls import _call_ex, star_args
from .ops_control import for_iter
from .ops_exceptions import raise_varargs
from .ops_stack import load_fast_check, delete_fast, make_cell

TRACKED = {}   # canonical name -> tracked handler (same signature as a plain handler)


def tracked(*names):
    def register(fn):
        for n in names:
            TRACKED[n] = fn
        return fn
    return register


def _flags_popcount(flags):
    return bin(flags & 0xF).count("1")


#: canonical name -> number of stack inputs (a function of the decoded arg where it varies)
POPS = {
    "NOP": 0, "LOAD_CONST": 0, "BINARY_OP": 2, "COMPARE_OP": 2, "COMPARE_OP_BOOL": 2, "IS_OP": 2,
    "CONTAINS_OP": 2, "UNARY_NEGATIVE": 1, "UNARY_POSITIVE": 1, "UNARY_INVERT": 1, "UNARY_NOT": 1,
    "TO_BOOL": 1, "DELETE_SUBSCR": 2,
    "FORMAT_VALUE": lambda a: 2 if a & 4 else 1, "CONVERT_VALUE": 1, "FORMAT_SIMPLE": 1,
    "FORMAT_WITH_SPEC": 2, "BUILD_STRING": lambda a: a, "BUILD_TUPLE": lambda a: a,
    "BUILD_LIST": lambda a: a, "BUILD_SET": lambda a: a, "BUILD_MAP": lambda a: 2 * a,
    "BUILD_CONST_KEY_MAP": lambda a: a + 1, "BUILD_SLICE": lambda a: a, "LIST_APPEND": 1,
    "SET_ADD": 1, "MAP_ADD": 2, "LIST_EXTEND": 1, "SET_UPDATE": 1, "DICT_UPDATE": 1, "DICT_MERGE": 1,
    "LIST_TO_TUPLE": 1, "INTRINSIC_LIST_TO_TUPLE": 1, "UNPACK_SEQUENCE": 1, "UNPACK_EX": 1,
    "GET_ITER": 1, "GET_LEN": 0, "JUMP": 0, "IMPORT_NAME": 2, "IMPORT_FROM": 0, "IMPORT_STAR": 1,
    "INTRINSIC_IMPORT_STAR": 1, "LOAD_BUILD_CLASS": 0, "SETUP_ANNOTATIONS": 0, "PRINT_EXPR": 1,
    "INTRINSIC_PRINT": 1, "LOAD_ASSERTION_ERROR": 0, "MATCH_MAPPING": 0, "MATCH_SEQUENCE": 0,
    "MATCH_KEYS": 0, "MATCH_CLASS": 3, "KW_NAMES": 0, "CALL_FUNCTION_EX": lambda a: 4 + a,
    "CALL_FUNCTION_EX_313": lambda a: 4 + a, "MAKE_FUNCTION": lambda a: 1 + _flags_popcount(a),
    "MAKE_FUNCTION_313": 1, "SET_FUNCTION_ATTRIBUTE": 2, "RAISE_VARARGS": lambda a: a,
    "RERAISE": 1, "PUSH_EXC_INFO": 1, "POP_EXCEPT": 1, "CHECK_EXC_MATCH": 1, "CHECK_EG_MATCH": 2,
    "PREP_RERAISE_STAR": 2, "INTRINSIC_PREP_RERAISE_STAR": 2, "INTRINSIC_STOPITERATION_ERROR": 1,
    "WITH_EXCEPT_START": 0, "BEFORE_WITH": 1, "BEFORE_ASYNC_WITH": 1,
    "RETURN_GENERATOR": 0, "GET_YIELD_FROM_ITER": 1, "SEND": 2, "SEND_311": 2, "GET_AWAITABLE": 1,
    "GET_AITER": 1, "GET_ANEXT": 0, "END_ASYNC_FOR": 2, "ASYNC_GEN_WRAP": 1,
    "INTRINSIC_ASYNC_GEN_WRAP": 1, "CLEANUP_THROW": 3, "END_SEND": 2, "END_FOR": 2, "END_FOR_313": 1,
    "RETURN_CONST": 0, "LOAD_LOCALS": 0,
}


def generic(fn, name, arg):
    """Wrap a plain handler: its outputs get the provenance the observer assigns."""
    pops = POPS.get(name)
    if pops is None:
        return fn
    if callable(pops):
        pops = pops(arg)

    def run(f, arg, i):
        f.index = i
        stack = f.stack
        base = len(stack) - pops
        inputs = stack[base:]
        pstack = f.pstack
        in_provs = pstack[base:]
        nxt = fn(f, arg, i)
        del pstack[base:]
        n = len(stack) - base
        if quiet and _constants(inputs, in_provs):
            pstack.extend([None] * n)
        elif n > 0:
            outputs = stack[base:]
            provs = f.vm.observer.operation(f, name, arg, inputs, in_provs, outputs)
            pstack.extend(provs if provs is not None else [None] * n)
        elif effect:
            f.vm.observer.operation(f, name, arg, inputs, in_provs, [])
        return nxt
    effect = name in EFFECTS
    quiet = name in QUIET_OPS
    return run


def _constants(values, provs):
    """Whether every value is a constant scalar without provenance (such operations stay quiet)."""
    for value, prov in zip(values, provs):
        if prov is not None or type(value) not in CONSTANT_SCALARS:
            return False
    return True


#: instructions that change a container below them on the stack (the observer must hear of them)
EFFECTS = {"LIST_APPEND", "SET_ADD", "MAP_ADD", "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE"}


def tracked_instrs(decoded):
    """The provenance-tracking instruction list of a decoded code object (built once), with runs
    of instructions compiled into blocks (see blocks.py)."""
    out = []
    for (fn, arg), name in zip(decoded.unfused, decoded.names):
        special = TRACKED.get(name)
        out.append((special, arg) if special is not None else (generic(fn, name, arg), arg))
    decoded.tracked_handlers = out
    if decoded.internal:
        return out
    return compile_blocks(decoded, out, tracked=True)


def sync(frame):
    """Make ``pstack`` as long as ``stack`` (values pushed by a resume carry no provenance)."""
    p = frame.pstack
    n = len(frame.stack)
    if len(p) > n:
        del p[n:]
    elif len(p) < n:
        opaque = frame.vm.observer.opaque
        p.extend(opaque(v) for v in frame.stack[len(p):])


# ---- moves ------------------------------------------------------------------------------------------

@tracked("LOAD_FAST", "LOAD_FAST_CHECK")
def t_load_fast(f, arg, i):
    load_fast_check(f, arg, i)
    f.pstack.append(f.plocals[arg])
    return i + 1


@tracked("LOAD_FAST_AND_CLEAR")
def t_load_fast_and_clear(f, arg, i):
    f.pstack.append(f.plocals[arg])
    f.plocals[arg] = None
    f.stack.append(f.locals[arg])
    f.locals[arg] = NULL
    return i + 1


@tracked("LOAD_FAST_LOAD_FAST")
def t_load_fast_load_fast(f, arg, i):
    a, b = arg
    t_load_fast(f, a, i)
    return t_load_fast(f, b, i)


@tracked("STORE_FAST")
def t_store_fast(f, arg, i):
    f.locals[arg] = f.stack.pop()
    f.plocals[arg] = f.pstack.pop()
    return i + 1


@tracked("STORE_FAST_LOAD_FAST")
def t_store_fast_load_fast(f, arg, i):
    a, b = arg
    t_store_fast(f, a, i)
    return t_load_fast(f, b, i)


@tracked("STORE_FAST_STORE_FAST")
def t_store_fast_store_fast(f, arg, i):
    a, b = arg
    t_store_fast(f, a, i)
    return t_store_fast(f, b, i)


@tracked("DELETE_FAST")
def t_delete_fast(f, arg, i):
    delete_fast(f, arg, i)
    f.plocals[arg] = None
    return i + 1


@tracked("POP_TOP")
def t_pop_top(f, arg, i):
    f.stack.pop()
    f.pstack.pop()
    return i + 1


@tracked("PUSH_NULL")
def t_push_null(f, arg, i):
    f.stack.append(NULL)
    f.pstack.append(None)
    return i + 1


@tracked("LOAD_CONST")
def t_load_const(f, arg, i):
    f.stack.append(arg)
    f.pstack.append(None)
    return i + 1


@tracked("COPY")
def t_copy(f, arg, i):
    f.stack.append(f.stack[-arg])
    f.pstack.append(f.pstack[-arg])
    return i + 1


@tracked("SWAP")
def t_swap(f, arg, i):
    for s in (f.stack, f.pstack):
        s[-1], s[-arg] = s[-arg], s[-1]
    return i + 1


@tracked("MAKE_CELL")
def t_make_cell(f, arg, i):
    nxt = make_cell(f, arg, i)
    cell = f.locals[arg]
    f.vm.observer.new_cell(f, cell, f.decoded.localsplus_names[arg], f.plocals[arg])
    return nxt


@tracked("COPY_FREE_VARS", "NOP")
def t_no_stack(f, arg, i):
    return HANDLERS[f.decoded.names[i]](f, arg, i)


@tracked("LOAD_CLOSURE")
def t_load_closure(f, arg, i):
    f.stack.append(f.locals[arg])
    f.pstack.append(None)
    return i + 1


# ---- reads and writes of outside state ----------------------------------------------------------------

def _push_read(f, prov):
    f.pstack.append(prov)


def _read_after(name, pops=0):
    """Tracked form of a handler that pushes values read from outside (globals, names, cells);
    ``pops``: how many values it pops first (their provenance is popped by the caller)."""
    is_global = name.startswith("LOAD_GLOBAL") or name in ("LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS")

    def wrap(f, arg, i):
        f.index = i
        stack = f.stack
        pstack = f.pstack
        base = len(stack) - pops
        nxt = HANDLERS[name](f, arg, i)
        obs = f.vm.observer
        for v in stack[base:]:
            if v is NULL:
                pstack.append(None)
            elif is_global:
                pstack.append(obs.read_global(f, arg, v))
            else:
                pstack.append(obs.read_cell(f, f.locals[arg], f.decoded.localsplus_names[arg], v))
        return nxt
    return wrap


for _name in ("LOAD_GLOBAL", "LOAD_GLOBAL_NULL_BEFORE", "LOAD_GLOBAL_NULL_AFTER", "LOAD_NAME",
              "LOAD_DEREF", "LOAD_FROM_DICT_OR_DEREF_311"):
    TRACKED[_name] = _read_after(_name)


@tracked("LOAD_FROM_DICT_OR_DEREF", "LOAD_FROM_DICT_OR_GLOBALS")
def t_load_from_dict(f, arg, i):
    f.pstack.pop()
    return _read_after(f.decoded.names[i], pops=1)(f, arg, i)


@tracked("LOAD_SUPER_ATTR", "LOAD_SUPER_METHOD", "LOAD_SUPER_METHOD_313")
def t_load_super(f, arg, i):
    """``super().name``: the three inputs' provenance leaves with them; what is pushed carries none
    (as before this handler existed, less the provenance stack falling out of step)."""
    pstack = f.pstack
    del pstack[len(pstack) - 3:]
    nxt = HANDLERS[f.decoded.names[i]](f, arg, i)
    pstack.extend([None] * (len(f.stack) - len(pstack)))
    return nxt


@tracked("STORE_GLOBAL", "STORE_NAME")
def t_store_global(f, name, i):
    f.index = i
    value = f.stack[-1]
    prov = f.pstack.pop()
    nxt = HANDLERS[f.decoded.names[i]](f, name, i)
    f.vm.observer.write_global(f, name, value, prov)
    return nxt


@tracked("STORE_DEREF")
def t_store_deref(f, arg, i):
    f.index = i
    value = f.stack.pop()
    prov = f.pstack.pop()
    cell = f.locals[arg]
    cell.cell_contents = value
    f.vm.observer.write_cell(f, cell, f.decoded.localsplus_names[arg], value, prov)
    return i + 1


@tracked("DELETE_GLOBAL", "DELETE_NAME")
def t_delete_global(f, name, i):
    opname = f.decoded.names[i]
    namespace = f.globals if opname == "DELETE_GLOBAL" else f.names
    nxt = HANDLERS[opname](f, name, i)
    f.vm.observer.delete_global(f, namespace, name)
    return nxt


@tracked("DELETE_DEREF")
def t_delete_deref(f, arg, i):
    nxt = HANDLERS["DELETE_DEREF"](f, arg, i)
    f.vm.observer.delete_cell(f, f.locals[arg], f.decoded.localsplus_names[arg])
    return nxt


def _computed(vm, caller, value):
    """The provenance Python code (a property, ``__getattr__``, a dunder) returned ``value`` with, when
    such code just ran for ``caller``; else NOT_RETURNED."""
    r = vm.returned
    vm.returned = None
    if r is None or r[1] is not value or r[0].back is not caller:
        return NOT_RETURNED
    return r[2]


@tracked("LOAD_ATTR")
def t_load_attr(f, name, i):
    obj = f.stack[-1]
    oprov = f.pstack[-1]
    vm = f.vm
    vm.returned = None
    f.index = i
    value = protocols.load_attr(vm, obj, name, oprov)
    f.stack[-1] = value
    f.pstack[-1] = vm.observer.read_attr(obj, oprov, name, value, _computed(vm, f, value))
    return i + 1


def _t_load_method(null_after):
    def run(f, name, i):
        obj = f.stack.pop()
        oprov = f.pstack.pop()
        f.vm.returned = None
        meth, value = protocols.load_method(f.vm, obj, name, oprov)
        if meth is not None:
            # an unbound method and its self: the method is part of the program, self keeps its prov
            f.vm.observer.read_method(value, oprov, name, meth)
            pairs = [(meth, None), (value, oprov)]
        else:
            prov = f.vm.observer.read_attr(obj, oprov, name, value, _computed(f.vm, f, value))
            pairs = [(value, prov), (NULL, None)] if null_after else [(NULL, None), (value, prov)]
        for v, p in pairs:
            f.stack.append(v)
            f.pstack.append(p)
        return i + 1
    return run


TRACKED["LOAD_METHOD"] = _t_load_method(False)
TRACKED["LOAD_METHOD_313"] = _t_load_method(True)


@tracked("STORE_ATTR")
def t_store_attr(f, name, i):
    f.index = i
    obj = f.stack.pop()
    value = f.stack.pop()
    oprov = f.pstack.pop()
    prov = f.pstack.pop()
    protocols.store_attr(f.vm, obj, name, value, (oprov, prov))
    f.vm.observer.write_attr(obj, oprov, name, value, prov)
    return i + 1


@tracked("DELETE_ATTR")
def t_delete_attr(f, name, i):
    f.index = i
    obj = f.stack.pop()
    oprov = f.pstack.pop()
    protocols.delete_attr(f.vm, obj, name)
    f.vm.observer.delete_attr(obj, oprov, name)
    return i + 1


def _t_merge(name):
    """DICT_MERGE / DICT_UPDATE. A mapping the call made that is read through its ``__getitem__`` (an
    OrderedDict subclass: a model output) is read one key at a time, each a subscript the observer sees
    (a Python ``__getitem__`` interpreted); any other merges natively and the observer is told of the
    whole (the values of a mapping it cannot follow are of unknown origin to it)."""
    whole = {}

    def native(f, n, i):
        v = f.stack.pop()
        target = f.stack[-n]
        for k in ops_containers.mapping_keys(f, name, n, v):
            ops_containers.merge_key(f, name, n, target, k)
            target[k] = dict.__getitem__(v, k) if ops_containers.reads_storage(v) else v[k]
        return i + 1

    def run(f, n, i):
        v, vprov = f.stack[-1], f.pstack[-1]
        if vprov is not None or ops_containers.reads_storage(v) or \
                type(protocols.lookup(type(v), "keys")) is FunctionType:
            step = whole.get(n)
            if step is None:
                step = whole[n] = generic(native, name, n)
            return step(f, n, i)
        f.index = i
        f.stack.pop()
        f.pstack.pop()
        target, tprov = f.stack[-n], f.pstack[-n]
        vm, obs = f.vm, f.vm.observer
        for k in ops_containers.mapping_keys(f, name, n, v):
            ops_containers.merge_key(f, name, n, target, k)
            vm.returned = None
            try:
                value = protocols.get_item(vm, v, k, (None, None))
            except Exception as exc:
                obs.item_raised(v, None, k, None, exc)
                raise
            prov = obs.read_item(v, None, k, None, value, _computed(vm, f, value))
            target[k] = value
            obs.write_item(target, tprov, k, None, value, prov)
        return i + 1
    return run


TRACKED["DICT_MERGE"] = _t_merge("DICT_MERGE")
TRACKED["DICT_UPDATE"] = _t_merge("DICT_UPDATE")


@tracked("RAISE_VARARGS")
def t_raise(f, argc, i):
    if argc:  # (the raised value lies under its cause)
        f.vm.observer.raise_statement(f, f.stack[-argc], f.pstack[-argc])
    return raise_varargs(f, argc, i)


@tracked("BINARY_SUBSCR")
def t_binary_subscr(f, arg, i):
    f.index = i
    key = f.stack.pop()
    kprov = f.pstack.pop()
    obj = f.stack[-1]
    oprov = f.pstack[-1]
    vm = f.vm
    vm.returned = None
    try:
        value = protocols.get_item(vm, obj, key, (oprov, kprov))
    except Exception as exc:
        vm.observer.item_raised(obj, oprov, key, kprov, exc)
        raise
    f.stack[-1] = value
    f.pstack[-1] = vm.observer.read_item(obj, oprov, key, kprov, value, _computed(vm, f, value))
    return i + 1


def _slice_key(f):
    """Replace the two bounds on top of the stack by their slice, with the provenance BUILD_SLICE gives
    it: 3.12's BINARY_SLICE and STORE_SLICE then read and write as BUILD_SLICE and the subscript do on
    3.11, and an interpreted ``__getitem__`` sees where its slice came from."""
    stack, pstack = f.stack, f.pstack
    stop, start = stack.pop(), stack.pop()
    bounds = [start, stop]
    provs = [pstack.pop(), pstack.pop()][::-1]
    key = slice(start, stop)
    stack.append(key)
    pstack.append(None if _constants(bounds, provs)
                  else f.vm.observer.operation(f, "BUILD_SLICE", 2, bounds, provs, [key])[0])


@tracked("BINARY_SLICE")
def t_binary_slice(f, arg, i):
    f.index = i
    _slice_key(f)
    return t_binary_subscr(f, arg, i)


@tracked("STORE_SLICE")
def t_store_slice(f, arg, i):
    f.index = i
    _slice_key(f)
    return t_store_subscr(f, arg, i)


@tracked("STORE_SUBSCR")
def t_store_subscr(f, arg, i):
    f.index = i
    stack, pstack = f.stack, f.pstack
    key, obj, value = stack.pop(), stack.pop(), stack.pop()
    kprov, oprov, prov = pstack.pop(), pstack.pop(), pstack.pop()
    protocols.set_item(f.vm, obj, key, value, (oprov, kprov, prov))
    f.vm.observer.write_item(obj, oprov, key, kprov, value, prov)
    return i + 1


@tracked("DELETE_SUBSCR")
def t_delete_subscr(f, arg, i):
    f.index = i
    stack, pstack = f.stack, f.pstack
    key, obj = stack.pop(), stack.pop()
    kprov, oprov = pstack.pop(), pstack.pop()
    try:
        protocols.delete_item(f.vm, obj, key)
    except Exception as exc:
        f.vm.observer.item_raised(obj, oprov, key, kprov, exc)  # (a missing key, as a failed lookup)
        raise
    f.vm.observer.delete_item(obj, oprov, key, kprov)
    return i + 1


# ---- branches, loops, returns, yields ------------------------------------------------------------------

def _t_branch(name):
    def run(f, target, i):
        f.index = i
        value = f.stack[-1]
        prov = f.pstack.pop()
        nxt = HANDLERS[name](f, target, i)
        if len(f.stack) > len(f.pstack):  # JUMP_IF_*_OR_POP kept the value
            f.pstack.append(prov)
        if prov is not None or type(value) not in CONSTANT_SCALARS:
            f.vm.observer.branch(f, name, value, prov, nxt == target)
        return nxt
    return run


for _name in ("POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE",
              "JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP"):
    TRACKED[_name] = _t_branch(_name)


@tracked("GET_ITER")
def t_get_iter(f, arg, i):
    f.index = i
    x = f.stack[-1]
    prov = f.pstack[-1]
    it = protocols.get_iter(f.vm, x, prov)
    f.stack[-1] = it
    provs = f.vm.observer.operation(f, "GET_ITER", None, [x], [prov], [it])
    f.pstack[-1] = provs[0] if provs else None
    return i + 1


@tracked("FOR_ITER")
def t_for_iter(f, exit_index, i):
    f.index = i
    it = f.stack[-1]
    iprov = f.pstack[-1]
    nxt = for_iter(f, exit_index, i)
    if nxt == exit_index:
        f.pstack.pop()
        if iprov is not None:
            f.vm.observer.operation(f, "FOR_ITER_END", None, [it], [iprov], [])
    elif iprov is None and type(it) in CONSTANT_ITERATORS:
        f.pstack.append(None)
    else:
        provs = f.vm.observer.operation(f, "FOR_ITER", None, [it], [iprov], [f.stack[-1]])
        f.pstack.append(provs[0] if provs else None)
    return nxt


@tracked("RETURN_VALUE", "RETURN_CONST", "YIELD_VALUE")
def t_return(f, arg, i):
    name = f.decoded.names[i]
    if name == "RETURN_CONST":
        value, prov = arg, None
    else:
        value, prov = f.stack[-1], f.pstack.pop()
    if name != "YIELD_VALUE":
        f.vm.observer.return_value(f, value, prov)
        f.vm.returned = (f, value, prov)
    else:
        f.vm.observer.yielded(f, value, prov)
    return HANDLERS[name](f, arg, i)


class _NotReturned:
    def __repr__(self):
        return "NOT_RETURNED"


#: what ``call_result`` gets as ``returned`` when no interpreted frame of the callee returned the result
NOT_RETURNED = _NotReturned()


def _returned(vm, caller, fn, result):
    """The provenance an interpreted callee returned ``result`` with, or NOT_RETURNED (a native call,
    a new object from a class call, or a callback that returned inside a native call)."""
    r = vm.returned
    vm.returned = None
    if r is None or r[1] is not result or r[0].back is not caller:
        return NOT_RETURNED
    callee = r[0].func
    tp = type(fn)
    if callee is fn and tp is FunctionType and tp not in CALL_INSTEAD:
        return r[2]  # (the common case: a plain function, interpreted)
    if tp is MethodType and callee is fn.__func__ and tp not in CALL_INSTEAD:
        return r[2]
    # (see ``calls.call``, ``vm.call_function``: a wrapper runs another in its place)
    target = called_instead(fn) or (tp is FunctionType and wrapped_by(fn)) or fn
    if type(target.__func__ if type(target) is MethodType else target) in TYPE_LOOKASIDE:
        return r[2]  # (its handler's one interpreted call returned it)
    if type(target).__name__ == "method":
        target = target.__func__
    elif type(target).__name__ == "partial":
        target = target.func
    elif not isinstance(target, type(_returned)) and not isinstance(target, type):
        target = getattr(type(target), "__call__", None)
    # (``DELEGATES``: a lookaside whose result one interpreted call of its returned, also when reached as a
    # bound method or through an instance's ``__call__``)
    if callee is not target and fn not in _PROTOCOL_BUILTINS and fn not in DELEGATES and \
            target not in DELEGATES and getattr(callee, "__code__", None) not in HIDDEN_CODE:
        # (HIDDEN_CODE: the VM's own code run for the builtin)
        return NOT_RETURNED
    return r[2]


#: builtins whose result a Python dunder may compute (``len`` runs ``__len__`` …)
_PROTOCOL_BUILTINS = IdentitySet((len, iter, next, getattr, hasattr))


# ---- calls ---------------------------------------------------------------------------------------------

def _t_call(layout):
    """layout: '312' ([NULL|meth, callable|self, *args] + KW_NAMES), '313', '313kw' (CALL_KW)."""
    def run(f, argc, i):
        stack, pstack = f.stack, f.pstack
        kwnames = ()
        if layout == "313kw":
            kwnames = stack.pop()
            pstack.pop()
        elif f.kwnames:
            kwnames, f.kwnames = f.kwnames, ()
        n = argc + 2
        items, provs = stack[-n:], pstack[-n:]
        del stack[-n:], pstack[-n:]
        a, b = items[0], items[1]
        if layout == "312":
            if a is NULL:
                fn, fprov, args, aprovs = b, provs[1], items[2:], provs[2:]
            else:
                fn, fprov, args, aprovs = a, provs[0], items[1:], provs[1:]
        else:
            fn, fprov = a, provs[0]
            args, aprovs = (items[2:], provs[2:]) if b is NULL else (items[1:], provs[1:])
        kwargs = kw_provs = None
        if kwnames:
            nk = len(kwnames)
            kwargs = dict(zip(kwnames, args[-nk:]))
            kw_provs = dict(zip(kwnames, aprovs[-nk:]))
            args, aprovs = args[:-nk], aprovs[:-nk]
        vm = f.vm
        f.index = i
        vm.call_provs = (tuple(aprovs), kw_provs or {}, fprov)
        vm.returned = None
        try:
            # (a plain function straight to the VM: what ``call`` would do, one Python call fewer)
            result = vm.call_function(fn, args, kwargs) if type(fn) is FunctionType else \
                call(vm, fn, args, kwargs)
        except Exception as exc:
            vm.call_provs = None
            vm.observer.call_raised(f, fn, fprov, args, aprovs, kwargs, kw_provs, exc)
            raise
        vm.call_provs = None
        stack.append(result)
        pstack.append(vm.observer.call_result(f, fn, fprov, args, aprovs, kwargs, kw_provs, result,
                                              _returned(vm, f, fn, result)))
        return i + 1
    return run


TRACKED["CALL"] = _t_call("312")
TRACKED["CALL_313"] = _t_call("313")
TRACKED["CALL_KW"] = _t_call("313kw")


def _t_call_ex(layout):
    """CALL_FUNCTION_EX: the observer says what the provenance of each unpacked argument is."""
    def run(f, has_kwargs, i):
        stack, pstack = f.stack, f.pstack
        kwargs = stack.pop() if has_kwargs else None
        kwprov = pstack.pop() if has_kwargs else None
        callargs, aprov = stack.pop(), pstack.pop()
        a, pa = stack.pop(), pstack.pop()
        b, pb = stack.pop(), pstack.pop()
        if layout == "313":   # [callable, self_or_null, args, kwargs]
            fn, fprov, self_, sprov = b, pb, a, pa
        else:                 # [NULL, callable, args, kwargs] or [method, self, args, kwargs]
            fn, fprov, self_, sprov = (a, pa, NULL, None) if b is NULL else (b, pb, a, pa)
        obs = f.vm.observer
        if type(callargs) in (tuple, list):
            provs = tuple(obs.unpacked(callargs, aprov))
        else:  # (``f(*reversed(shape))``: what the iterator yields, taken once)
            iterable, callargs = callargs, star_args(fn, callargs)
            provs = tuple(obs.unpacked(iterable, aprov, callargs))
        kw_provs = obs.unpacked_mapping(kwargs, kwprov) if kwargs is not None else {}
        if self_ is not NULL:
            callargs, provs = (self_, *callargs), (sprov, *provs)
        vm = f.vm
        f.index = i
        vm.call_provs = (provs, kw_provs, fprov)
        vm.returned = None
        try:
            result = _call_ex(f, fn, callargs, kwargs)
        except Exception as exc:
            vm.call_provs = None
            obs.call_raised(f, fn, fprov, callargs, provs, kwargs, kw_provs, exc)
            raise
        vm.call_provs = None
        stack.append(result)
        args = tuple(callargs)
        pstack.append(obs.call_result(f, fn, fprov, args, provs[:len(args)], kwargs, kw_provs, result,
                                      _returned(vm, f, fn, result)))
        return i + 1
    return run


TRACKED["CALL_FUNCTION_EX"] = _t_call_ex("312")
TRACKED["CALL_FUNCTION_EX_313"] = _t_call_ex("313")
