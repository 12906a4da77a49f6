"""Decoding code objects into the VM's canonical instruction list.

Each code object is decoded once (cached) into a list of ``(handler, arg)`` pairs, one per
instruction that ``dis.get_instructions`` shows. Version differences (3.11, 3.12, 3.13) are settled
here: jump targets become instruction indices, flag bits packed into opargs are unpacked, and opcodes
that changed meaning map onto distinct canonical handlers. The handlers themselves never look at the
Python version.
"""
import dis
import opcode
import sys
import types
import builtins

from .errors import InterpreterError
from .frame import NULL

PY = sys.version_info[:2]
_PACKAGE_DIR = __file__.rsplit("/", 1)[0] + "/"

#: canonical handler name -> function(frame, arg, index) -> next index
HANDLERS = {}


def handler(*names):
    """Register a function as the handler of the canonical instructions ``names``."""
    def register(fn):
        for name in names:
            if name in HANDLERS:
                raise ValueError(f"duplicate handler for {name}")
            HANDLERS[name] = fn
        return fn
    return register


_CO_OPTIMIZED = 0x01
#: flags of code that needs more than the fast call path: optimized locals missing, generators,
#: coroutines (native and generator-based), async generators
_NOT_PLAIN = _CO_OPTIMIZED | 0x20 | 0x80 | 0x100 | 0x200


#: predicates over code objects whose functions the VM calls natively, never interpreting them: the layers
#: above register theirs (``register_native_code``: a compiler's hints to itself, as
#: ``torch._dynamo.mark_dynamic``). Asked once per code object, when it is decoded.
NATIVE_CODE = []


def register_native_code(rule):
    """Calls of functions whose code ``rule(code)`` is true run natively (register before they are
    decoded: a code object is asked once)."""
    NATIVE_CODE.append(rule)
    return rule


class Decoded:
    """A code object decoded for the VM."""

    __slots__ = ("code", "instrs", "names", "handler_at", "linenos", "delegating_yield",
                 "nlocalsplus", "localsplus_names", "free_start", "flags", "tracked", "internal", "unfused",
                 "simple_args", "null_tail", "none_tail", "offsets", "bound_args", "plain_arity", "targets",
                 "tracked_handlers")

    def __init__(self, code):
        self.code = code
        self.flags = code.co_flags
        self.localsplus_names = _localsplus_names(code)
        self.nlocalsplus = len(self.localsplus_names)
        self.free_start = self.nlocalsplus - len(code.co_freevars)
        # positional parameters only: a call with exactly that many arguments binds them in order
        self.simple_args = not code.co_flags & 0x0C and not code.co_kwonlyargcount
        self.null_tail = (NULL,) * (self.nlocalsplus - code.co_argcount)
        self.none_tail = (None,) * (self.nlocalsplus - code.co_argcount)  # their provenance
        self.tracked = None  # the provenance-tracking instruction list, built on first use
        # the VM's own Python code (frame proxies, callback wrappers) always runs natively, and so does
        # code the layers above name (``NATIVE_CODE``)
        self.internal = code.co_filename.startswith(_PACKAGE_DIR) or any(rule(code) for rule in NATIVE_CODE)
        # how many positional arguments a call needs to take the VM's fast path (-1: never): a
        # plain function (not a generator or coroutine, optimized locals) without special parameters
        plain = self.simple_args and not self.internal and (code.co_flags & _NOT_PLAIN) == _CO_OPTIMIZED
        self.plain_arity = code.co_argcount if plain else -1


def _localsplus_names(code):
    """CPython's localsplus layout: one slot per local; an argument that is also a cell shares its
    slot; a hidden comprehension local may share its name with a free variable but not its slot."""
    names = []
    index = 0
    while True:
        try:
            names.append(code._varname_from_oparg(index))
        except IndexError:
            return tuple(names)
        index += 1


def _exception_entries(code):
    return dis.Bytecode(code).exception_entries


# ---- per-opname decoders: (instruction, context) -> (canonical name, arg) -------------------------

def _target(ins, ctx):
    index = ctx.index_of[ins.argval]
    ctx.targets.add(index)
    return index


def _jump(name):
    return lambda ins, ctx: (name, _target(ins, ctx))


def _const_arg(name):
    return lambda ins, ctx: (name, ins.argval)


def _raw_arg(name):
    return lambda ins, ctx: (name, ins.arg)


def _decode_load_global(ins, ctx):
    name = ins.argval
    if not ins.arg & 1:
        return "LOAD_GLOBAL", name
    return ("LOAD_GLOBAL_NULL_AFTER" if PY >= (3, 13) else "LOAD_GLOBAL_NULL_BEFORE"), name


def _decode_load_attr(ins, ctx):
    if PY < (3, 12) or not ins.arg & 1:
        return "LOAD_ATTR", ins.argval
    return ("LOAD_METHOD_313" if PY >= (3, 13) else "LOAD_METHOD"), ins.argval


def _decode_load_super_attr(ins, ctx):
    method = bool(ins.arg & 1)
    arg = (ins.argval, bool(ins.arg & 2))  # (name, whether super was called with two arguments)
    if not method:
        return "LOAD_SUPER_ATTR", arg
    return ("LOAD_SUPER_METHOD_313" if PY >= (3, 13) else "LOAD_SUPER_METHOD"), arg


_CMP = {"<": 0, "<=": 1, "==": 2, "!=": 3, ">": 4, ">=": 5}


def _decode_compare(ins, ctx):
    op = ins.argval
    to_bool = False
    if PY >= (3, 13):
        to_bool = bool(ins.arg & 16)
    if op.startswith("bool("):
        op, to_bool = op[5:-1], True
    return ("COMPARE_OP_BOOL" if to_bool else "COMPARE_OP"), _CMP[op]


def _decode_for_iter(ins, ctx):
    target = _target(ins, ctx)
    # 3.11 jumps straight past the loop; 3.12 skips END_FOR; 3.13 skips END_FOR and its POP_TOP.
    skip = {(3, 11): 0, (3, 12): 1}.get(PY, 2)
    ctx.targets.add(target + skip)
    return "FOR_ITER", target + skip


def _decode_send(ins, ctx):
    return ("SEND_311" if PY < (3, 12) else "SEND"), _target(ins, ctx)


def _decode_call(ins, ctx):
    return ("CALL_313" if PY >= (3, 13) else "CALL"), ins.arg


def _decode_call_function_ex(ins, ctx):
    return ("CALL_FUNCTION_EX_313" if PY >= (3, 13) else "CALL_FUNCTION_EX"), ins.arg & 1


def _decode_make_function(ins, ctx):
    return ("MAKE_FUNCTION_313" if PY >= (3, 13) else "MAKE_FUNCTION"), ins.arg


def _decode_end_for(ins, ctx):
    return ("END_FOR_313" if PY >= (3, 13) else "END_FOR"), None


def _decode_pair(name):
    return lambda ins, ctx: (name, (ins.arg >> 4, ins.arg & 15))


#: intrinsics that are an older opcode under a new spelling: decoded as that opcode, so every rule for it
#: (capture's operations, blocks, quiet constants) serves both (``+x`` is CALL_INTRINSIC_1 on 3.12)
_INTRINSIC_AS = {"INTRINSIC_UNARY_POSITIVE": "UNARY_POSITIVE"}


def _decode_intrinsic(table_name):
    def decode(ins, ctx):
        name = getattr(opcode, table_name)[ins.arg]
        name = _INTRINSIC_AS.get(name, name)
        if name not in HANDLERS:
            # intrinsics with no Python-level equivalent (PEP 695 type parameters …) run natively
            HANDLERS[name] = _native_intrinsic(table_name, ins.opname, ins.arg)
        return name, None
    return decode


def _native_intrinsic(table_name, opname, which):
    """A handler running one CALL_INTRINSIC natively, through a three-instruction code object."""
    nargs = 2 if table_name.endswith("2_descs") else 1
    op = dis.opmap
    body = [op["RESUME"], 0]
    for k in range(nargs):
        body += [op["LOAD_FAST"], k]
    body += [op[opname], which, op["RETURN_VALUE"], 0]
    template = (lambda a, b: None) if nargs == 2 else (lambda a: None)
    units = len(body) // 2
    no_location = bytes([0x80 | (15 << 3) | (units - 1)])  # one linetable entry: "no location"
    code = template.__code__.replace(co_code=bytes(body), co_stacksize=nargs, co_linetable=no_location,
                                     co_exceptiontable=b"", co_consts=(None,), co_names=())
    native = types.FunctionType(code, {"__builtins__": builtins})

    def run_intrinsic(f, arg, i):
        stack = f.stack
        if nargs == 2:
            b = stack.pop()
            stack[-1] = native(stack[-1], b)
        else:
            stack[-1] = native(stack[-1])
        return i + 1
    return run_intrinsic


DECODERS = {
    "LOAD_GLOBAL": _decode_load_global,
    "LOAD_ATTR": _decode_load_attr,
    "LOAD_SUPER_ATTR": _decode_load_super_attr,
    "COMPARE_OP": _decode_compare,
    "FOR_ITER": _decode_for_iter,
    "SEND": _decode_send,
    "CALL": _decode_call,
    "CALL_FUNCTION_EX": _decode_call_function_ex,
    "MAKE_FUNCTION": _decode_make_function,
    "END_FOR": _decode_end_for,
    "LOAD_FAST_LOAD_FAST": _decode_pair("LOAD_FAST_LOAD_FAST"),
    "STORE_FAST_LOAD_FAST": _decode_pair("STORE_FAST_LOAD_FAST"),
    "STORE_FAST_STORE_FAST": _decode_pair("STORE_FAST_STORE_FAST"),
    "CALL_INTRINSIC_1": _decode_intrinsic("_intrinsic_1_descs"),
    "CALL_INTRINSIC_2": _decode_intrinsic("_intrinsic_2_descs"),
    "LOAD_CONST": _const_arg("LOAD_CONST"),
    "RETURN_CONST": _const_arg("RETURN_CONST"),
    "KW_NAMES": lambda ins, ctx: ("KW_NAMES", ctx.code.co_consts[ins.arg]),  # 3.11 dis shows no argval
    "IMPORT_NAME": _const_arg("IMPORT_NAME"),
    "IMPORT_FROM": _const_arg("IMPORT_FROM"),
    "STORE_ATTR": _const_arg("STORE_ATTR"),
    "DELETE_ATTR": _const_arg("DELETE_ATTR"),
    "LOAD_METHOD": _const_arg("LOAD_METHOD"),
    "STORE_GLOBAL": _const_arg("STORE_GLOBAL"),
    "DELETE_GLOBAL": _const_arg("DELETE_GLOBAL"),
    "LOAD_NAME": _const_arg("LOAD_NAME"),
    "STORE_NAME": _const_arg("STORE_NAME"),
    "DELETE_NAME": _const_arg("DELETE_NAME"),
    "LOAD_FROM_DICT_OR_GLOBALS": _const_arg("LOAD_FROM_DICT_OR_GLOBALS"),
    "LOAD_CLASSDEREF": _raw_arg("LOAD_FROM_DICT_OR_DEREF_311"),
    # before 3.12 every LOAD_FAST may meet an unbound local
    **({"LOAD_FAST": _raw_arg("LOAD_FAST_CHECK")} if PY < (3, 12) else {}),
    # plain jumps, whatever their direction or version spelling
    "JUMP_FORWARD": _jump("JUMP"),
    "JUMP_BACKWARD": _jump("JUMP"),
    "JUMP_BACKWARD_NO_INTERRUPT": _jump("JUMP"),
    "POP_JUMP_IF_TRUE": _jump("POP_JUMP_IF_TRUE"),
    "POP_JUMP_IF_FALSE": _jump("POP_JUMP_IF_FALSE"),
    "POP_JUMP_IF_NONE": _jump("POP_JUMP_IF_NONE"),
    "POP_JUMP_IF_NOT_NONE": _jump("POP_JUMP_IF_NOT_NONE"),
    "POP_JUMP_FORWARD_IF_TRUE": _jump("POP_JUMP_IF_TRUE"),
    "POP_JUMP_BACKWARD_IF_TRUE": _jump("POP_JUMP_IF_TRUE"),
    "POP_JUMP_FORWARD_IF_FALSE": _jump("POP_JUMP_IF_FALSE"),
    "POP_JUMP_BACKWARD_IF_FALSE": _jump("POP_JUMP_IF_FALSE"),
    "POP_JUMP_FORWARD_IF_NONE": _jump("POP_JUMP_IF_NONE"),
    "POP_JUMP_BACKWARD_IF_NONE": _jump("POP_JUMP_IF_NONE"),
    "POP_JUMP_FORWARD_IF_NOT_NONE": _jump("POP_JUMP_IF_NOT_NONE"),
    "POP_JUMP_BACKWARD_IF_NOT_NONE": _jump("POP_JUMP_IF_NOT_NONE"),
    "JUMP_IF_TRUE_OR_POP": _jump("JUMP_IF_TRUE_OR_POP"),
    "JUMP_IF_FALSE_OR_POP": _jump("JUMP_IF_FALSE_OR_POP"),
    # instructions with nothing to do in this VM
    "RESUME": lambda ins, ctx: ("NOP", None),
    "PRECALL": lambda ins, ctx: ("NOP", None),
    "EXTENDED_ARG": lambda ins, ctx: ("NOP", None),
    "CACHE": lambda ins, ctx: ("NOP", None),
}

#: opnames that the compiler never emits into code we decode (specialised, instrumented or internal)
NOT_EMITTED = frozenset({
    "INTERPRETER_EXIT", "ENTER_EXECUTOR", "RESERVED", "EXIT_INIT_CHECK",
}) | frozenset(n for n in dis.opmap if n.startswith("INSTRUMENTED_"))


class _Context:
    __slots__ = ("index_of", "code", "targets")


def _real_opnames():
    return {name for name, op in dis.opmap.items() if op < 256} - NOT_EMITTED


def _decode_instruction(ins, ctx):
    decoder = DECODERS.get(ins.opname)
    if decoder is not None:
        return decoder(ins, ctx)
    return ins.opname, ins.arg


_cache = {}


def decode(code):
    """Return the cached :class:`Decoded` form of ``code``."""
    # keyed by id: hashing a code object hashes its whole contents, every time
    d = _cache.get(id(code))
    if d is not None and d.code is code:
        return d
    d = Decoded(code)
    raw = list(dis.get_instructions(code))
    # instructions with nothing to do (RESUME, PRECALL, EXTENDED_ARG, NOP) are dropped: a jump or
    # handler aimed at one lands on the next kept instruction
    kept = [ins for ins in raw if ins.opname not in _DROPPED]
    ctx = _Context()
    ctx.code = code
    ctx.targets = set()
    ctx.index_of = {}
    next_kept = len(kept)
    position = {id(ins): n for n, ins in enumerate(kept)}
    for ins in reversed(raw):
        if id(ins) in position:
            next_kept = position[id(ins)]
        ctx.index_of[ins.offset] = next_kept
    instrs = []
    names = []
    linenos = []
    lineno = code.co_firstlineno
    for ins in kept:
        name, arg = _decode_instruction(ins, ctx)
        fn = HANDLERS.get(name)
        if fn is None:
            fn = _missing_handler(ins.opname)
        instrs.append((fn, arg))
        names.append(name)
        line = ins.positions.lineno if ins.positions else None
        if line is not None:
            lineno = line
        linenos.append(lineno)
    n = len(kept)
    handler_at = [None] * n
    for entry in _exception_entries(code):
        start = ctx.index_of[entry.start]
        end = ctx.index_of.get(entry.end, n)
        target = (ctx.index_of[entry.target], entry.depth, entry.lasti)
        ctx.targets.add(target[0])
        for k in range(start, end):
            handler_at[k] = target
    # a yield directly followed by RESUME 2/3 suspends inside `yield from` / `await`
    delegating = [False] * n
    for k, ins in enumerate(raw[:-1]):
        nxt = raw[k + 1]
        if ins.opname == "YIELD_VALUE" and nxt.opname == "RESUME" and (nxt.arg & 3) >= 2:
            delegating[position[id(ins)]] = True
    d.names = names
    d.offsets = [ins.offset for ins in kept]
    d.handler_at = handler_at
    d.linenos = linenos
    d.delegating_yield = delegating
    d.unfused = instrs
    d.instrs = _fuse(instrs, names, handler_at, ctx.targets)
    # parameters never deleted are bound whenever the frame runs (compiled blocks skip their check)
    deleted = {ins.arg for ins in kept if ins.opname in ("DELETE_FAST", "LOAD_FAST_AND_CLEAR")}
    d.bound_args = frozenset(range(_parameter_count(code))) - deleted
    d.targets = frozenset(ctx.targets)
    if not d.internal:
        d.instrs = compile_blocks(d, d.instrs)
    _cache[id(code)] = d
    return d


def _parameter_count(code):
    flags = code.co_flags
    return code.co_argcount + code.co_kwonlyargcount + bool(flags & 0x04) + bool(flags & 0x08)


#: the compiler of runs of instructions into blocks, ``compile(decoded, instrs, tracked) -> instrs``:
#: blocks.py installs it when imported (it sits above every handler it compiles, this module below them)
_block_compiler = None


def install_block_compiler(compile):
    global _block_compiler
    _block_compiler = compile


def compile_blocks(decoded, instrs, tracked=False):
    """``instrs`` (the plain or the tracked instruction list of ``decoded``) with runs of instructions
    compiled into blocks, once blocks.py has installed its compiler (unchanged before)."""
    return instrs if _block_compiler is None else _block_compiler(decoded, instrs, tracked)


_DROPPED = frozenset({"RESUME", "PRECALL", "EXTENDED_ARG", "CACHE", "NOP"})

#: (canonical name, canonical name) -> handler running both (superinstructions; see ops_fused)
FUSED = {}


def _fuse(instrs, names, handler_at, targets):
    """Replace frequent pairs by one handler, where the second is no jump target and both share
    their exception handler (so an exception in either unwinds the same way)."""
    out = list(instrs)
    k = 0
    while k < len(instrs) - 1:
        fused = FUSED.get((names[k], names[k + 1]))
        if fused is not None and k + 1 not in targets and handler_at[k] == handler_at[k + 1]:
            out[k] = (fused, (instrs[k][1], instrs[k + 1][1]))
            k += 2
        else:
            k += 1
    return out


def _missing_handler(opname):
    def missing(frame, arg, i):
        raise InterpreterError(f"no handler for opcode {opname}")
    return missing


def handled_opnames():
    """The real opnames of the running Python that decode to a handler."""
    handled = set()
    for name in _real_opnames():
        if name in DECODERS:
            handled.add(name)
        elif name in HANDLERS:
            handled.add(name)
    return frozenset(handled)
