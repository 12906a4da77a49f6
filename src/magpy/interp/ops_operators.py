"""Handlers: arithmetic, comparison, identity, containment, subscripting, formatting."""
from .decode import handler
from . import protocols
from .protocols import NATIVE_BINARY, NATIVE_COMPARE

#: built-in types whose operators can run natively without looking further (the hot path)
PLAIN = frozenset({int, float, bool, str, bytes, list, tuple, dict, set, frozenset, complex,
                   type(None), range, slice})


def _operand_provs(f):
    """With an observer: the provenance of the two operands just popped (the tracking wrapper drops
    them from ``pstack`` only after the handler), for a Python dunder to receive."""
    if f.vm.observer is None:
        return None
    n = len(f.stack)
    if len(f.pstack) != n + 1:
        return None  # provenance not in step with the stack here (values pushed by a resume)
    return tuple(f.pstack[n - 1:])


@handler("BINARY_OP")
def binary_op(f, k, i, plain=PLAIN, native=NATIVE_BINARY):
    stack = f.stack
    b = stack.pop()
    a = stack[-1]
    if type(a) in plain and type(b) in plain:
        stack[-1] = native[k](a, b)
    else:
        stack[-1] = protocols.binary_op(f.vm, a, b, k, _operand_provs(f))
    return i + 1


@handler("COMPARE_OP")
def compare_op(f, k, i, plain=PLAIN, native=NATIVE_COMPARE):
    stack = f.stack
    b = stack.pop()
    a = stack[-1]
    if type(a) in plain and type(b) in plain:
        stack[-1] = native[k](a, b)
    else:
        stack[-1] = protocols.compare_op(f.vm, a, b, k, _operand_provs(f))
    return i + 1


@handler("COMPARE_OP_BOOL")
def compare_op_bool(f, k, i):
    compare_op(f, k, i)
    stack = f.stack
    v = stack[-1]
    if type(v) is not bool:
        stack[-1] = protocols.truth(f.vm, v)
    return i + 1


@handler("IS_OP")
def is_op(f, invert, i):
    stack = f.stack
    b = stack.pop()
    stack[-1] = (stack[-1] is b) is not bool(invert)
    return i + 1


@handler("CONTAINS_OP")
def contains_op(f, invert, i):
    stack = f.stack
    container = stack.pop()
    item = stack[-1]
    stack[-1] = protocols.contains(f.vm, container, item, _operand_provs(f)) is not bool(invert)
    return i + 1


@handler("UNARY_NEGATIVE")
def unary_negative(f, arg, i):
    f.stack[-1] = protocols.unary_op(f.vm, f.stack[-1], "__neg__")
    return i + 1


@handler("UNARY_POSITIVE")
def unary_positive(f, arg, i):
    f.stack[-1] = protocols.unary_op(f.vm, f.stack[-1], "__pos__")
    return i + 1


@handler("UNARY_INVERT")
def unary_invert(f, arg, i):
    f.stack[-1] = protocols.unary_op(f.vm, f.stack[-1], "__invert__")
    return i + 1


@handler("UNARY_NOT")
def unary_not(f, arg, i):
    f.stack[-1] = not protocols.truth(f.vm, f.stack[-1])
    return i + 1


@handler("TO_BOOL")
def to_bool(f, arg, i):
    v = f.stack[-1]
    if type(v) is not bool:
        f.stack[-1] = protocols.truth(f.vm, v)
    return i + 1


@handler("BINARY_SUBSCR")
def binary_subscr(f, arg, i):
    stack = f.stack
    key = stack.pop()
    obj = stack[-1]
    if type(obj) in PLAIN:
        stack[-1] = obj[key]
    else:
        stack[-1] = protocols.get_item(f.vm, obj, key)
    return i + 1


@handler("STORE_SUBSCR")
def store_subscr(f, arg, i):
    stack = f.stack
    key = stack.pop()
    obj = stack.pop()
    value = stack.pop()
    protocols.set_item(f.vm, obj, key, value)
    return i + 1


@handler("DELETE_SUBSCR")
def delete_subscr(f, arg, i):
    stack = f.stack
    key = stack.pop()
    obj = stack.pop()
    protocols.delete_item(f.vm, obj, key)
    return i + 1


@handler("BINARY_SLICE")
def binary_slice(f, arg, i):
    stack = f.stack
    stop = stack.pop()
    start = stack.pop()
    stack[-1] = protocols.get_item(f.vm, stack[-1], slice(start, stop))
    return i + 1


@handler("STORE_SLICE")
def store_slice(f, arg, i):
    stack = f.stack
    stop = stack.pop()
    start = stack.pop()
    obj = stack.pop()
    value = stack.pop()
    protocols.set_item(f.vm, obj, slice(start, stop), value)
    return i + 1


# ---- formatting ---------------------------------------------------------------------------------

def _convert(vm, value, which, provs=None):
    """``str``/``repr``/``ascii`` of ``value`` (conversion 1/2/3), a Python dunder interpreted."""
    if which == 3:
        return ascii(value)
    name = "__str__" if which == 1 else "__repr__"
    fn = protocols.python_slot(type(value), name)
    if fn is None:
        return str(value) if which == 1 else repr(value)
    protocols._with(vm, provs)
    r = f_vm_call(vm, fn, value)
    if not isinstance(r, str):
        raise TypeError(f"{name} returned non-string (type {type(r).__name__})")
    return r


def f_vm_call(vm, fn, value):
    return vm.call_function(fn, (value,), None)


def _format_provs(f, count):
    """With an observer: the provenance of the ``count`` values on top of the stack (the value to format, and
    its spec), for the Python ``__format__`` / ``__str__`` they reach."""
    if f.vm.observer is None:
        return None
    n = len(f.stack)
    if len(f.pstack) != n:
        return None  # provenance not in step with the stack here (values pushed by a resume)
    return tuple(f.pstack[n - count:])


def _format(vm, value, spec, provs=None):
    if type(value) is str and not spec:
        return value
    f = protocols.python_slot(type(value), "__format__")
    if f is None:
        if not spec and protocols.python_slot(type(value), "__str__") is not None and \
                protocols.lookup(type(value), "__format__") is object.__format__:
            return _convert(vm, value, 1, provs and provs[:1])
        return format(value, spec)
    protocols._with(vm, provs if provs is None or len(provs) == 2 else (*provs, None))
    vm.returned = None  # (with an observer: what the ``__format__`` returned, and with which provenance)
    r = vm.call_function(f, (value, spec), None)
    if not isinstance(r, str):
        raise TypeError(f"__format__ must return a str, not {type(r).__name__}")
    return r


@handler("FORMAT_VALUE")
def format_value(f, flags, i):
    stack = f.stack
    provs = _format_provs(f, 2 if flags & 4 else 1)
    spec = stack.pop() if flags & 4 else ""
    value = stack.pop()
    which = flags & 3
    if which:
        value = _convert(f.vm, value, which, provs and provs[:1])
        provs = None  # (the text made: of the provenance that code gave it)
    stack.append(_format(f.vm, value, spec, provs))
    return i + 1


@handler("CONVERT_VALUE")
def convert_value(f, which, i):
    f.stack[-1] = _convert(f.vm, f.stack[-1], which, _format_provs(f, 1))
    return i + 1


@handler("FORMAT_SIMPLE")
def format_simple(f, arg, i):
    f.stack[-1] = _format(f.vm, f.stack[-1], "", _format_provs(f, 1))
    return i + 1


@handler("FORMAT_WITH_SPEC")
def format_with_spec(f, arg, i):
    stack = f.stack
    provs = _format_provs(f, 2)
    spec = stack.pop()
    stack[-1] = _format(f.vm, stack[-1], spec, provs)
    return i + 1


@handler("BUILD_STRING")
def build_string(f, n, i):
    stack = f.stack
    if n:
        parts = stack[-n:]
        del stack[-n:]
    else:
        parts = []
    stack.append("".join(parts))
    return i + 1
