"""Handlers: yield, yield from, await, async iteration."""
import types

from .decode import handler
from .calls import call
from .generators import AsyncGenWrapped
from . import protocols
from .protocols import lookup, MISSING

CO_COROUTINE = 0x80
CO_ITERABLE_COROUTINE = 0x100


@handler("RETURN_GENERATOR")
def return_generator(f, arg, i):
    # the generator object already exists (the call made it); the following POP_TOP drops this
    f.stack.append(None)
    return i + 1


@handler("YIELD_VALUE")
def yield_value(f, arg, i):
    f.result = f.stack.pop()
    f.index = i + 1
    return -2


def _is_coroutine(obj):
    if type(obj) is types.CoroutineType:
        return True
    return type(obj) is types.GeneratorType and bool(obj.gi_code.co_flags & CO_ITERABLE_COROUTINE)


@handler("GET_YIELD_FROM_ITER")
def get_yield_from_iter(f, arg, i):
    obj = f.stack[-1]
    if _is_coroutine(obj):
        if not f.code.co_flags & (CO_COROUTINE | CO_ITERABLE_COROUTINE):
            raise TypeError("cannot 'yield from' a coroutine object in a non-coroutine generator")
    elif type(obj) is not types.GeneratorType:
        f.stack[-1] = protocols.get_iter(f.vm, obj)
    return i + 1


def _send(f, receiver, value):
    if value is None:
        nxt = lookup(type(receiver), "__next__")
        if nxt is not MISSING:
            return protocols.call_slot(f.vm, nxt, receiver)
    send = protocols.load_attr(f.vm, receiver, "send")
    return call(f.vm, send, (value,), None)


@handler("SEND")
def send(f, target, i):
    stack = f.stack
    value = stack[-1]
    try:
        result = _send(f, stack[-2], value)
    except StopIteration as stop:
        stack[-1] = stop.value
        return target
    stack[-1] = result
    return i + 1


@handler("SEND_311")
def send_311(f, target, i):
    stack = f.stack
    value = stack.pop()
    try:
        result = _send(f, stack[-1], value)
    except StopIteration as stop:
        stack[-1] = stop.value
        return target
    stack.append(result)
    return i + 1


def awaitable_iter(vm, obj, where=0):
    """``_PyCoro_GetAwaitableIter`` with CPython's messages."""
    if _is_coroutine(obj):
        return obj
    tp = type(obj)
    aw = lookup(tp, "__await__")
    if aw is MISSING:
        if where == 1:
            raise TypeError("'async with' received an object from __aenter__ that does not implement "
                            f"__await__: {tp.__name__}")
        if where == 2:
            raise TypeError("'async with' received an object from __aexit__ that does not implement "
                            f"__await__: {tp.__name__}")
        raise TypeError(f"object {tp.__name__} can't be used in 'await' expression")
    it = protocols.call_slot(vm, aw, obj)
    if _is_coroutine(it):
        raise TypeError("__await__() returned a coroutine")
    if lookup(type(it), "__next__") is MISSING:
        raise TypeError(f"__await__() returned non-iterator of type '{type(it).__name__}'")
    return it


@handler("GET_AWAITABLE")
def get_awaitable(f, where, i):
    obj = f.stack[-1]
    it = awaitable_iter(f.vm, obj, where)
    if type(it) is types.CoroutineType and it.cr_await is not None:
        raise RuntimeError("coroutine is being awaited already")
    f.stack[-1] = it
    return i + 1


@handler("GET_AITER")
def get_aiter(f, arg, i):
    obj = f.stack[-1]
    tp = type(obj)
    aiter = lookup(tp, "__aiter__")
    if aiter is MISSING:
        raise TypeError(f"'async for' requires an object with __aiter__ method, got {tp.__name__}")
    it = protocols.call_slot(f.vm, aiter, obj)
    if lookup(type(it), "__anext__") is MISSING:
        raise TypeError("'async for' received an object from __aiter__ that does not implement "
                        f"__anext__: {type(it).__name__}")
    f.stack[-1] = it
    return i + 1


@handler("GET_ANEXT")
def get_anext(f, arg, i):
    it = f.stack[-1]
    tp = type(it)
    anext = lookup(tp, "__anext__")
    if anext is MISSING:
        raise TypeError(f"'async for' requires an iterator with __anext__ method, got {tp.__name__}")
    awaitable = protocols.call_slot(f.vm, anext, it)
    if type(it) is not types.AsyncGeneratorType:
        if not _is_coroutine(awaitable) and lookup(type(awaitable), "__await__") is MISSING:
            raise TypeError("'async for' received an invalid object from __anext__: "
                            f"{type(awaitable).__name__}")
        awaitable = awaitable_iter(f.vm, awaitable)
    f.stack.append(awaitable)
    return i + 1


@handler("END_ASYNC_FOR")
def end_async_for(f, arg, i):
    stack = f.stack
    exc = stack.pop()
    if isinstance(exc, StopAsyncIteration):
        stack.pop()
        return i + 1
    raise exc


@handler("ASYNC_GEN_WRAP", "INTRINSIC_ASYNC_GEN_WRAP")
def async_gen_wrap(f, arg, i):
    f.stack[-1] = AsyncGenWrapped(f.stack[-1])
    return i + 1


@handler("CLEANUP_THROW")
def cleanup_throw(f, arg, i):
    stack = f.stack
    exc = stack.pop()
    if not isinstance(exc, StopIteration):
        raise exc
    del stack[-2:]
    stack.append(None)
    stack.append(exc.value)
    return i + 1
