"""Runs of instructions compiled into one generated Python function (a *block*).

The dispatch loop pays one tuple unpack and one Python call per instruction, and every handler goes
through ``frame.stack``. A block — a run of instructions that no jump enters except at its first one
and that share one exception handler — becomes one generated function with the handler signature
``(frame, arg, index) -> next index``, put in place of its first instruction (the others keep their
handlers, so entering one of them still works). Values the block pushes itself live in Python locals
(``v1``, ``v2`` …) and reach ``frame.stack`` only when the block leaves; a block runs on through the
fall-through side of its conditional jumps, loops in place when it jumps back to its own start, and
ends at an unconditional jump or a return.

Two kinds, from one emitter: *plain* blocks (no observer) hold only instructions with a template in
``block_ops``; *tracked* blocks (observer on) carry each value's provenance in a second local, use the
templates of ``block_tracking`` (and the moves of ``block_ops``), and call the tracked handler of any
other instruction directly on the materialised stack — so the observer receives the same events, in
the same order, as from the handlers (tests/interp/test_blocks.py compares them on the corpus).

Exceptions: the function keeps the index of the instruction it is running in ``n`` and stores it in
``frame.fault`` when something raises, so that the dispatch loop routes the exception (and reports
line numbers) exactly as for that instruction. Unwinding only needs ``frame.stack`` up to the handler's
depth: no instruction covered by a handler pops below that depth, and values below the block's own
pushes stay in ``frame.stack`` (the block pops them from there), so nothing has to be written back.
A value is released (``del``) by the instruction that consumes it, as CPython drops it.

Caches: an attribute site remembers the one type for which the attribute protocol found no Python code
(the same negative decision ``protocols`` remembers for ever); a call site remembers one built-in
callable that the call decision point runs natively (forgotten when a lookaside is registered).
"""
import contextlib
import itertools
import linecache
from types import FunctionType

from . import protocols, lookaside
from . import block_ops, block_tracking  # noqa: F401  (they register the templates)
from .calls import call, plain_native
from .decode import install_block_compiler
from .frame import NULL
from .ops_control import STOP, next_value, _truth
from .ops_containers import unpack_items
from .ops_operators import PLAIN
from .ops_stack import _unbound_local, _global
from .protocols import _HEAPTYPE, _NATIVE_ATTR, _NATIVE_SETATTR
from .tracking import NOT_RETURNED, _computed
from .observer import CONSTANT_SCALARS, CONSTANT_ITERATORS
from .block_templates import TEMPLATES, TRACKED_TEMPLATES, SUSPENDING

#: the shortest run worth a generated function
MIN_LENGTH = 2


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
    "NOT_RETURNED": NOT_RETURNED, "computed_by": _computed,
    "CONSTANT_SCALARS": CONSTANT_SCALARS, "CONSTANT_ITERATORS": CONSTANT_ITERATORS,
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
        self.touched = []        # temporaries the current instruction made or consumed
        self.scratch = False     # the current instruction bound ``a`` (a call's arguments)

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
        name = f"v{self.count}"
        self.touched.append(name)
        return name

    def release(self):
        """End of an instruction: forget the temporaries it consumed or used on the side, as CPython
        drops a value when an instruction pops it (a later ``del`` or weak reference must see the
        object freed at the same point)."""
        live = set()
        for entry in self.virtual:
            live.update(entry if type(entry) is tuple else (entry,))
        dead = [name for name in dict.fromkeys(self.touched) if name not in live and name[0] == "v"
                and name[1:].isdigit()]
        if self.scratch:
            dead.append("a")
        if dead:
            self.emit("del " + ", ".join(dead))
        self.touched = []
        self.scratch = False

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
            name = self.virtual.pop()
            self.touched.append(name)
            return name
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

    def push_entry(self, entry):
        self.virtual.append(entry)

    #: source dropping the top of ``frame.stack``
    drop_real = "stack.pop()"

    def drop(self):
        """POP_TOP: the value is released at once (CPython frees it there)."""
        if self.virtual:
            self.pop()
        else:
            self.emit(self.drop_real)

    def swap_real(self, depth):
        self.emit(f"stack[-1], stack[-{depth}] = stack[-{depth}], stack[-1]")

    def next_or_leave(self, it, exit_index, on_leave=None):
        """FOR_ITER's step on the iterator ``it`` (the top of the stack): a fresh local holding its
        next value; when it is exhausted, ``on_leave`` (a line) runs, the iterator leaves the stack and
        the block leaves for ``exit_index``."""
        value = self.fresh()
        self.emit(f"{value} = next({it}, STOP) if not type({it}).__flags__ & HEAP else next_value(f, {it})")
        self.emit(f"if {value} is STOP:")
        if on_leave is not None:
            self.emit("    " + on_leave)
        if self.virtual:
            kept = self.virtual.pop()
            self.leave(exit_index, "    ")
            self.virtual.append(kept)
        else:
            self.emit("    " + self.drop_real)
            self.emit(f"    return {exit_index}")
        return value

    def flush(self):
        for line in self.flush_lines():
            self.emit(line)
        self.virtual.clear()

    def load_local(self, a, k, check):
        """Push local slot ``a``; ``check``: raise UnboundLocalError if it holds NULL (unless this
        block knows it bound)."""
        if check and a not in self.bound:
            self.at(k)
            name = self.push_new(*self._local(a))
            self.emit(f"if {name} is NULL: raise unbound(f, {a})")
            self.bound.add(a)  # a second load in this block finds it bound (or never runs)
        else:
            self.push_new(*self._local(a))

    def _local(self, a):
        return (f"loc[{a}]",)

    def load_and_clear(self, a):
        self.maybe_null.add(self.push_new(*self._local(a)))
        self.emit(self._store_code(a, "NULL", "None"))
        self.bound.discard(a)

    def store_local(self, a):
        from_block = bool(self.virtual)
        entry = self.pop()
        value = entry[0] if type(entry) is tuple else entry
        self.emit(self._store_code(a, *(entry if type(entry) is tuple else (entry,))))
        # a value from below the block, or one LOAD_FAST_AND_CLEAR saved, may be NULL (an inlined
        # comprehension restores its variable's earlier state, unbound included)
        if from_block and value not in self.maybe_null:
            self.bound.add(a)
        else:
            self.bound.discard(a)

    def _store_code(self, a, value, prov=None):
        return f"loc[{a}] = {value}"

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


class _TrackedEmitter(_Emitter):
    """The emitter of tracked blocks (observer on): each virtual stack entry is a pair of
    expressions, the value and its provenance; ``frame.pstack`` moves in step with ``frame.stack``."""

    def __init__(self, decoded, start, consts):
        super().__init__(decoded, start, consts)
        self.handlers = []   # (global name, handler, arg) of the tracked handlers the block calls
        self.args = []       # (global name, decoded argument) the block's events pass on
        self.plain = False   # a plain template is running (see values_only)

    def push(self, value, prov="None"):
        self.virtual.append(value if self.plain else (value, prov))

    def push_new(self, code, prov="None"):
        """Push a new value computed by ``code``, with provenance ``prov`` (computed now too: it may
        read a local slot that a later store changes)."""
        if self.plain:
            return super().push_new(code)
        name = self.fresh()
        if prov == "None":
            self.emit(f"{name} = {code}")
        else:
            pname = self.fresh()
            self.emit(f"{name} = {code}; {pname} = {prov}")
            prov = pname
        self.virtual.append((name, prov))
        return name

    def pop(self):
        if self.plain:
            return super().pop()
        if self.virtual:
            value, prov = self.virtual.pop()
            self.touched += (value, prov)
            return value, prov
        value, prov = self.fresh(), self.fresh()
        self.emit(f"{value} = stack.pop(); {prov} = pstack.pop()")
        return value, prov

    def peek(self, depth):
        if depth <= len(self.virtual):
            return self.virtual[-depth]
        value, prov = self.fresh(), self.fresh()
        at = len(self.virtual) - depth
        self.emit(f"{value} = stack[{at}]; {prov} = pstack[{at}]")
        return value, prov

    def flush_lines(self, indent=""):
        v = self.virtual
        if not v:
            return []
        if len(v) == 1:
            return [f"{indent}stack.append({v[0][0]}); pstack.append({v[0][1]})"]
        return [f"{indent}stack.extend(({', '.join(x for x, _ in v)},)); "
                f"pstack.extend(({', '.join(p for _, p in v)},))"]

    drop_real = "stack.pop(); pstack.pop()"

    @contextlib.contextmanager
    def values_only(self, values):
        """Let a plain template run on ``values`` (expressions) as if this were a plain emitter;
        what it pushes is left on the virtual stack as bare expressions for the caller to pair."""
        saved = self.virtual
        self.virtual = list(values)
        self.plain = True
        try:
            yield
        finally:
            self.plain = False
            self.virtual = saved

    def arg(self, k):
        """An expression for the decoded argument of instruction ``k`` (a global of the block)."""
        name = f"a{k}"
        fn, arg = self.decoded.tracked_handlers[k]
        self.args.append((name, arg))
        return name

    def fresh_code(self, code):
        """A fresh local holding ``code`` (evaluated now)."""
        name = self.fresh()
        self.emit(f"{name} = {code}")
        return name

    def swap_real(self, depth):
        super().swap_real(depth)
        self.emit(f"pstack[-1], pstack[-{depth}] = pstack[-{depth}], pstack[-1]")

    def at(self, k):
        """The instruction at ``k`` may raise, or report an event, from here on: ``frame.index`` is kept
        at it too (an event's ``frame.lineno`` is then its instruction's line)."""
        if self.n != k:
            self.emit(f"n = f.index = {k}")
            self.n = k

    def _local(self, a):
        return (f"loc[{a}]", f"ploc[{a}]")

    def _store_code(self, a, value, prov=None):
        return f"loc[{a}] = {value}; ploc[{a}] = {prov}"

    def call_handler(self, k):
        """Run instruction ``k`` through its tracked handler, on the materialised stack."""
        self.flush()
        self.at(k)
        name = f"h{k}"
        fn, arg = self.decoded.tracked_handlers[k]
        self.handlers.append((name, fn, arg))
        self.emit(f"nxt = {name}(f, a{k}, {k})")
        self.emit(f"if nxt != {k + 1}: return nxt")
        if self.decoded.names[k] in ("DELETE_FAST", "LOAD_FAST_AND_CLEAR"):
            self.bound.discard(arg)


# ---- block formation ----------------------------------------------------------------------------

def _runs(decoded, targets, allowed):
    """(start, end) of each run of ``allowed`` instructions no jump enters in the middle."""
    names = decoded.names
    handler_at = decoded.handler_at
    n = len(names)
    k = 0
    while k < n:
        if not allowed(names[k]):
            k += 1
            continue
        start = k
        k += 1
        while k < n and allowed(names[k]) and k not in targets and handler_at[k] == handler_at[start] \
                and names[k - 1] not in _ENDS:
            k += 1
        yield start, k


#: instructions after which a block never continues
_ENDS = frozenset({"JUMP", "RETURN_VALUE", "RETURN_CONST"})


def _source_of(decoded, start, end, consts, tracked):
    """Source of the block [start, end), or None when it is not worth one."""
    e = (_TrackedEmitter if tracked else _Emitter)(decoded, start, consts)
    templates = TRACKED_TEMPLATES if tracked else TEMPLATES
    count = 0
    goes_on = True
    for k in range(start, end):
        name = decoded.names[k]
        if name == "KW_NAMES" and not tracked and \
                (k + 1 >= end or decoded.names[k + 1] not in ("CALL", "CALL_313")):
            break  # its CALL is not in the block: leave KW_NAMES to its handler
        fn = templates.get(name)
        if fn is None:
            e.call_handler(k)
        else:
            goes_on = fn(e, decoded.unfused[k][1], k)
        count += 1
        if not goes_on:
            break
        e.release()
    if count < MIN_LENGTH:
        return None
    if goes_on:
        e.leave(start + count)
    head = ["    loc = f.locals", "    stack = f.stack"]
    if tracked:
        head += ["    ploc = f.plocals", "    pstack = f.pstack", "    obs = f.vm.observer"]
    if e.uses_vm:
        head.append("    vm = f.vm")
    if any("g[" in line for line in e.lines):
        head.append("    g = f.globals")
    if e.caches:
        head.insert(0, "    global " + ", ".join(name for name, _ in e.caches))
    lines = e.lines
    if e.loops:
        lines = ["        while True:", f"            n = {start}", *("    " + line for line in lines)]
    # the traceback keeps this frame: its locals must not keep the block's values alive longer than
    # the handlers' frames would (objects would be freed later, weak sets would still hold them)
    temporaries = " = ".join(["a", "tp", *(f"v{k}" for k in range(1, e.count + 1))])
    body = [f"def block_{start}(f, arg, i):", *head, f"    n = {start}", "    try:", *lines,
            "    except BaseException:",
            "        f.fault = n",
            *([f"        {temporaries} = None"] if temporaries else []),
            "        raise"]
    return body, e.caches, getattr(e, "handlers", ()), getattr(e, "args", ())


_site_caches = []   # (namespace, name) of every call-site cache, reset when a lookaside is registered


def _forget_call_sites():
    for namespace, name in _site_caches:
        namespace[name] = _NoType


lookaside.ON_REGISTER.append(_forget_call_sites)

_serial = itertools.count(1)   # names generated code in tracebacks (``next`` is atomic: threads decode too)


#: switched off by tests comparing blocks with the handlers (decoding caches the choice per code object)
ENABLED = True


def compile_blocks(decoded, instrs, tracked=False):
    """``instrs`` (the plain or the tracked instruction list of ``decoded``) with each block's first
    instruction replaced by its generated function (the instructions inside keep their handlers)."""
    instrs = list(instrs)
    if not ENABLED:
        return instrs
    consts = {}
    sources = []
    caches = []
    handlers = []
    args = []
    starts = []
    if tracked:
        allowed = lambda name: name not in SUSPENDING  # noqa: E731
    else:
        allowed = TEMPLATES.__contains__
    for start, end in _runs(decoded, decoded.targets, allowed):
        if end - start < MIN_LENGTH:
            continue
        made = _source_of(decoded, start, end, consts, tracked)
        if made is None:
            continue
        sources.extend(made[0])
        caches.extend(made[1])
        handlers.extend(made[2])
        args.extend(made[3])
        starts.append(start)
    if not starts:
        return instrs
    namespace = dict(_RUNTIME)
    for name, value in consts.values():
        namespace[name] = value
    for name, fn, arg in handlers:
        namespace[name] = fn
        namespace["a" + name[1:]] = arg
    namespace.update(args)
    for name, call_site in caches:
        namespace[name] = _NoType
        if call_site:
            _site_caches.append((namespace, name))
    code = decoded.code
    filename = f"{_GENERATED_PREFIX}{code.co_name}-{next(_serial)}>"
    text = "\n".join(sources) + "\n"
    # registered so that tracebacks and the VM's own-failure check can read the generated lines
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    exec(compile(text, filename, "exec"), namespace)
    for start in starts:
        instrs[start] = (namespace[f"block_{start}"], None)
    return instrs


_GENERATED_PREFIX = __file__.rsplit("/", 1)[0] + "/<block "

install_block_compiler(compile_blocks)  # decode (below) compiles every decoded code object's blocks
