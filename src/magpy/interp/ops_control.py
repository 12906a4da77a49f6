"""Handlers: jumps, branches, loops, returns, imports, pattern matching."""
import builtins
import sys
from collections.abc import Mapping, Sequence

from .calls import call
from .decode import handler
from . import protocols
from .protocols import _HEAPTYPE, python_slot


_MISSING = object()


@handler("JUMP")
def jump(f, target, i):
    return target


def _truth(f, v):
    if v is True:
        return True
    if v is False or v is None:
        return False
    if type(v).__flags__ & _HEAPTYPE:
        return protocols.truth(f.vm, v)
    return bool(v)


@handler("POP_JUMP_IF_TRUE")
def pop_jump_if_true(f, target, i):
    v = f.stack.pop()
    if v is True or (v is not False and _truth(f, v)):
        return target
    return i + 1


@handler("POP_JUMP_IF_FALSE")
def pop_jump_if_false(f, target, i):
    v = f.stack.pop()
    if v is False or (v is not True and not _truth(f, v)):
        return target
    return i + 1


@handler("POP_JUMP_IF_NONE")
def pop_jump_if_none(f, target, i):
    return target if f.stack.pop() is None else i + 1


@handler("POP_JUMP_IF_NOT_NONE")
def pop_jump_if_not_none(f, target, i):
    return target if f.stack.pop() is not None else i + 1


@handler("JUMP_IF_TRUE_OR_POP")
def jump_if_true_or_pop(f, target, i):
    if _truth(f, f.stack[-1]):
        return target
    f.stack.pop()
    return i + 1


@handler("JUMP_IF_FALSE_OR_POP")
def jump_if_false_or_pop(f, target, i):
    if not _truth(f, f.stack[-1]):
        return target
    f.stack.pop()
    return i + 1


# ---- iteration ----------------------------------------------------------------------------------

@handler("GET_ITER")
def get_iter(f, arg, i):
    v = f.stack[-1]
    f.stack[-1] = protocols.get_iter(f.vm, v) if type(v).__flags__ & _HEAPTYPE else iter(v)
    return i + 1


#: what :func:`next_value` returns for an exhausted iterator
STOP = object()


def next_value(f, it):
    """The next value of ``it`` (a Python ``__next__`` interpreted), or STOP."""
    nxt = python_slot(type(it), "__next__") if type(it).__flags__ & _HEAPTYPE else None
    try:
        return next(it) if nxt is None else f.vm.call_function(nxt, (it,), None)
    except StopIteration:
        return STOP


@handler("FOR_ITER")
def for_iter(f, exit_index, i):
    v = next_value(f, f.stack[-1])
    if v is STOP:
        f.stack.pop()
        return exit_index
    f.stack.append(v)
    return i + 1


@handler("GET_LEN")
def get_len(f, arg, i):
    f.stack.append(protocols.length(f.vm, f.stack[-1]))
    return i + 1


# ---- returns --------------------------------------------------------------------------------------

@handler("RETURN_VALUE")
def return_value(f, arg, i):
    f.result = f.stack.pop()
    return -1


@handler("RETURN_CONST")
def return_const(f, value, i):
    f.result = value
    return -1


# ---- imports and module-level statements ------------------------------------------------------------

@handler("IMPORT_NAME")
def import_name(f, name, i):
    stack = f.stack
    fromlist = stack.pop()
    level = stack.pop()
    importer = f.builtins.get("__import__", builtins.__import__)
    names = f.names if f.names is not None else f.local_dict()
    stack.append(importer(name, f.globals, names, fromlist, level))
    return i + 1


@handler("IMPORT_FROM")
def import_from(f, name, i):
    module = f.stack[-1]
    v = getattr(module, name, _MISSING)
    f.stack.append(_import_from_fallback(module, name) if v is _MISSING else v)
    return i + 1


def _import_from_fallback(module, name):
    # a submodule being imported circularly is found in sys.modules (CPython's import_from)
    pkgname = getattr(module, "__name__", None)
    if isinstance(pkgname, str):
        full = f"{pkgname}.{name}"
        if full in sys.modules:
            return sys.modules[full]
        raise ImportError(f"cannot import name '{name}' from '{pkgname}' "
                          f"({getattr(module, '__file__', None) or 'unknown location'})",
                          name=pkgname, path=getattr(module, "__file__", None))
    raise ImportError(f"cannot import name '{name}' from '<unknown module name>' (unknown location)")


def _import_star(f, module):
    names = f.names
    if names is None:
        raise SystemError("no locals found during 'import *'")
    public = getattr(module, "__all__", None)
    if public is None:
        public = [k for k in module.__dict__ if not k.startswith("_")]
    for k in public:
        names[k] = getattr(module, k)


@handler("IMPORT_STAR")
def import_star(f, arg, i):
    _import_star(f, f.stack.pop())
    return i + 1


@handler("INTRINSIC_IMPORT_STAR")
def intrinsic_import_star(f, arg, i):
    _import_star(f, f.stack[-1])
    f.stack[-1] = None
    return i + 1


@handler("LOAD_BUILD_CLASS")
def load_build_class(f, arg, i):
    build = f.builtins.get("__build_class__", _MISSING)
    if build is _MISSING:
        raise NameError("__build_class__ not found")
    f.stack.append(build)
    return i + 1


@handler("SETUP_ANNOTATIONS")
def setup_annotations(f, arg, i):
    names = f.names
    if type(names) is dict:
        names.setdefault("__annotations__", {})
        return i + 1
    try:  # a mapping of the program's own: CPython looks the key up (no `in`)
        names["__annotations__"]
    except KeyError:
        names["__annotations__"] = {}
    return i + 1


@handler("PRINT_EXPR")
def print_expr(f, arg, i):
    sys.displayhook(f.stack.pop())
    return i + 1


@handler("INTRINSIC_PRINT")
def intrinsic_print(f, arg, i):
    sys.displayhook(f.stack[-1])
    f.stack[-1] = None
    return i + 1


@handler("LOAD_ASSERTION_ERROR")
def load_assertion_error(f, arg, i):
    f.stack.append(AssertionError)
    return i + 1


# ---- pattern matching -----------------------------------------------------------------------------

@handler("MATCH_MAPPING")
def match_mapping(f, arg, i):
    f.stack.append(isinstance(f.stack[-1], Mapping))
    return i + 1


_NOT_SEQUENCES = (str, bytes, bytearray)


@handler("MATCH_SEQUENCE")
def match_sequence(f, arg, i):
    v = f.stack[-1]
    f.stack.append(isinstance(v, Sequence) and not isinstance(v, _NOT_SEQUENCES))
    return i + 1


@handler("MATCH_KEYS")
def match_keys(f, arg, i):
    stack = f.stack
    keys = stack[-1]
    subject = stack[-2]
    values = []
    marker = object()
    get = protocols.load_attr(f.vm, subject, "get")
    for k in keys:
        v = call(f.vm, get, (k, marker), None)
        if v is marker:
            stack.append(None)
            return i + 1
        values.append(v)
    stack.append(tuple(values))
    return i + 1


@handler("MATCH_CLASS")
def match_class(f, nargs, i):
    stack = f.stack
    names = stack.pop()
    cls = stack.pop()
    subject = stack.pop()
    stack.append(_match_class(f, subject, cls, nargs, names))
    return i + 1


def _match_class(f, subject, cls, nargs, names):
    if not isinstance(cls, type):
        raise TypeError("called match pattern must be a class")
    if not isinstance(subject, cls):
        return None
    vm = f.vm
    attrs = []
    seen = set()
    if nargs:
        match_args = getattr(cls, "__match_args__", None)
        match_self = False
        if match_args is None:
            match_self = bool(cls.__flags__ & _TPFLAGS_MATCH_SELF)
            match_args = ()
        if not isinstance(match_args, tuple):
            raise TypeError(f"{cls.__name__}.__match_args__ must be a tuple (got {type(match_args).__name__})")
        allowed = 1 if match_self else len(match_args)
        if nargs > allowed:
            raise TypeError(f"{cls.__name__}() accepts {allowed} positional sub-pattern"
                            f"{'' if allowed == 1 else 's'} ({nargs} given)")
        if match_self:
            attrs.append(subject)
        for name in match_args[:nargs]:
            if not isinstance(name, str):
                raise TypeError(f"__match_args__ elements must be strings (got {type(name).__name__})")
            if name in seen:
                raise TypeError(f"{cls.__name__}() got multiple sub-patterns for attribute {name!r}")
            seen.add(name)
            try:
                attrs.append(protocols.load_attr(vm, subject, name))
            except AttributeError:
                return None
    for name in names:
        if name in seen:
            raise TypeError(f"{cls.__name__}() got multiple sub-patterns for attribute {name!r}")
        seen.add(name)
        try:
            attrs.append(protocols.load_attr(vm, subject, name))
        except AttributeError:
            return None
    return tuple(attrs)


_TPFLAGS_MATCH_SELF = 1 << 22
