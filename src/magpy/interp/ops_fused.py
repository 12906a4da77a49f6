"""Superinstructions: frequent instruction pairs run by one handler (one dispatch instead of two).

Each body is the two plain handlers' bodies written out; decode.py fuses a pair only where the second
instruction is no jump target and both have the same exception handler. The provenance-tracking
instruction list is built from the unfused instructions, so these never run under an observer.
"""
from .decode import FUSED
from .frame import NULL
from . import protocols
from .protocols import _HEAPTYPE, NATIVE_BINARY, NATIVE_COMPARE
from .ops_operators import PLAIN
from .ops_stack import _unbound_local


def fused(first, *seconds):
    def register(fn):
        for second in seconds:
            FUSED[(first, second)] = fn
        return fn
    return register


def _load_local(f, a, check):
    v = f.locals[a]
    if check and v is NULL:
        raise _unbound_local(f, a)
    return v


def _make_load_fast_attr(check):
    def load_fast_attr(f, arg, i):
        a, name = arg
        v = f.locals[a]
        if check and v is NULL:
            raise _unbound_local(f, a)
        if type(v).__flags__ & _HEAPTYPE:
            f.index = i
            f.stack.append(protocols.load_attr(f.vm, v, name))
        else:
            f.stack.append(getattr(v, name))
        return i + 2
    return load_fast_attr


FUSED[("LOAD_FAST_CHECK", "LOAD_ATTR")] = _make_load_fast_attr(True)
FUSED[("LOAD_FAST", "LOAD_ATTR")] = _make_load_fast_attr(False)


def _make_load_fast_pair(check_a, check_b):
    def load_fast_pair(f, arg, i):
        a, b = arg
        loc = f.locals
        va, vb = loc[a], loc[b]
        if check_a and va is NULL:
            raise _unbound_local(f, a)
        if check_b and vb is NULL:
            raise _unbound_local(f, b)
        f.stack.append(va)
        f.stack.append(vb)
        return i + 2
    return load_fast_pair


FUSED[("LOAD_FAST_CHECK", "LOAD_FAST_CHECK")] = _make_load_fast_pair(True, True)
FUSED[("LOAD_FAST", "LOAD_FAST")] = _make_load_fast_pair(False, False)


def _make_load_fast_const(check):
    def load_fast_const(f, arg, i):
        a, c = arg
        v = f.locals[a]
        if check and v is NULL:
            raise _unbound_local(f, a)
        f.stack.append(v)
        f.stack.append(c)
        return i + 2
    return load_fast_const


FUSED[("LOAD_FAST_CHECK", "LOAD_CONST")] = _make_load_fast_const(True)
FUSED[("LOAD_FAST", "LOAD_CONST")] = _make_load_fast_const(False)


def _make_load_const_op(native_table, protocol):
    """LOAD_CONST + BINARY_OP / COMPARE_OP: the constant is the right operand."""
    def load_const_op(f, arg, i, plain=PLAIN, native=native_table):
        b, k = arg
        stack = f.stack
        a = stack[-1]
        if type(a) in plain and type(b) in plain:
            stack[-1] = native[k](a, b)
        else:
            stack[-1] = protocol(f.vm, a, b, k)
        return i + 2
    return load_const_op


FUSED[("LOAD_CONST", "BINARY_OP")] = _make_load_const_op(NATIVE_BINARY, protocols.binary_op)
FUSED[("LOAD_CONST", "COMPARE_OP")] = _make_load_const_op(NATIVE_COMPARE, protocols.compare_op)


def _make_compare_jump(jump_if):
    def compare_jump(f, arg, i, plain=PLAIN, native=NATIVE_COMPARE):
        k, target = arg
        stack = f.stack
        b = stack.pop()
        a = stack.pop()
        if type(a) in plain and type(b) in plain:
            v = native[k](a, b)
        else:
            v = protocols.compare_op(f.vm, a, b, k)
        if v is not True and v is not False:
            v = protocols.truth(f.vm, v)
        return target if v is jump_if else i + 2
    return compare_jump


FUSED[("COMPARE_OP", "POP_JUMP_IF_FALSE")] = _make_compare_jump(False)
FUSED[("COMPARE_OP", "POP_JUMP_IF_TRUE")] = _make_compare_jump(True)


def _make_store_fast_load_fast(check):
    def store_fast_load_fast(f, arg, i):
        a, b = arg
        loc = f.locals
        loc[a] = f.stack.pop()
        v = loc[b]
        if check and v is NULL:
            raise _unbound_local(f, b)
        f.stack.append(v)
        return i + 2
    return store_fast_load_fast


FUSED[("STORE_FAST", "LOAD_FAST_CHECK")] = _make_store_fast_load_fast(True)
FUSED[("STORE_FAST", "LOAD_FAST")] = _make_store_fast_load_fast(False)


def _make_load_fast_store_attr(check):
    def load_fast_store_attr(f, arg, i):
        a, name = arg
        obj = f.locals[a]
        if check and obj is NULL:
            raise _unbound_local(f, a)
        value = f.stack.pop()
        if type(obj).__flags__ & _HEAPTYPE:
            protocols.store_attr(f.vm, obj, name, value)
        else:
            setattr(obj, name, value)
        return i + 2
    return load_fast_store_attr


FUSED[("LOAD_FAST_CHECK", "STORE_ATTR")] = _make_load_fast_store_attr(True)
FUSED[("LOAD_FAST", "STORE_ATTR")] = _make_load_fast_store_attr(False)
