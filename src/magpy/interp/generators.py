"""Generators, coroutines and async generators as real Python objects driving interpreted frames.

A generator function called in the VM returns a real generator (coroutine, async generator) whose body
is a small *driver*: it resumes the interpreted frame, hands each yielded value to its consumer, and
routes ``send``/``throw``/``close`` back into the frame, so the frame's own exception handlers run.
When the frame is suspended inside ``yield from``/``await``, ``throw`` and ``close`` go to the
delegate first, as CPython's ``gen_throw`` does.
"""
from types import FunctionType

from .decode import PY
from .frame import ExcState, Suspend, YIELD
from .calls import call

CO_GENERATOR = 0x20
CO_COROUTINE = 0x80
CO_ASYNC_GENERATOR = 0x200


class AsyncGenWrapped:
    """A value yielded by an async generator's own ``yield`` (not by an ``await`` inside it)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


class _Await:
    """Yields one value to the event loop from inside the coroutine driver and returns what is sent."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __await__(self):
        return (yield self.value)


def _step(vm, frame, sent, thrown):
    """Resume ``frame``; returns (returned, value). The generator's exception state is swapped in."""
    state = frame.exc_state
    state.previous = vm.exc_state
    vm.exc_state = state
    try:
        if thrown is not None:
            return _throw(vm, frame, thrown)
        if frame.index > 0:
            frame.stack.append(sent)
        elif sent is not None:
            raise TypeError(f"can't send non-None value to a just-started {_kind(frame)}")
        return True, vm.resume(frame)
    except Suspend as s:
        s.__traceback__ = None
        return False, frame.result
    finally:
        vm.exc_state = state.previous
        state.previous = None


def _kind(frame):
    flags = frame.code.co_flags
    return "async generator" if flags & CO_ASYNC_GENERATOR else "coroutine" if flags & CO_COROUTINE \
        else "generator"


def _throw(vm, frame, exc):
    i = frame.index - 1  # suspended just after its YIELD_VALUE
    if frame.index > 0 and frame.decoded.delegating_yield[i]:
        delegate = frame.stack[-1]
        if isinstance(exc, GeneratorExit):
            close = getattr(delegate, "close", None)
            if close is not None:
                try:
                    call(vm, close, (), None)
                except BaseException as err:  # noqa: BLE001 - re-raised into the frame below
                    exc = err
        else:
            throw = getattr(delegate, "throw", None)
            if throw is not None:
                try:
                    value = call(vm, throw, (exc,), None)
                except BaseException as err:  # noqa: BLE001 - routed into the frame below
                    return _delegate_failed(vm, frame, i, err)
                frame.index = i + 1
                frame.result = value
                raise YIELD
    if frame.index == 0:  # not started: nothing in the frame can catch it
        return True, vm.resume(frame, throw=exc)
    frame.index = i
    frame.stack.append(None)
    return True, vm.resume(frame, throw=exc)


def _delegate_failed(vm, frame, i, err):
    if PY < (3, 12):
        # 3.11 finishes the `yield from` itself: drop the delegate and jump past the SEND loop
        send_index = i - 1
        exit_index = frame.decoded.instrs[send_index][1]
        frame.stack.pop()
        if isinstance(err, StopIteration):
            frame.stack.append(err.value)
            frame.index = exit_index
            return True, vm.resume(frame)
        frame.stack.append(None)
        frame.index = exit_index - 1
        return True, vm.resume(frame, throw=err)
    # 3.12+: the frame's CLEANUP_THROW handler deals with StopIteration
    frame.index = i
    frame.stack.append(None)
    return True, vm.resume(frame, throw=err)


def _generator_driver(vm, frame):
    sent = thrown = None
    while True:
        returned, value = _step(vm, frame, sent, thrown)
        if returned:
            return value
        try:
            sent = yield value
            thrown = None
        except BaseException as exc:  # noqa: BLE001 - every throw() goes into the frame
            sent, thrown = None, exc


async def _coroutine_driver(vm, frame):
    sent = thrown = None
    while True:
        returned, value = _step(vm, frame, sent, thrown)
        if returned:
            return value
        try:
            sent = await _Await(value)
            thrown = None
        except BaseException as exc:  # noqa: BLE001
            sent, thrown = None, exc


async def _async_generator_driver(vm, frame):
    sent = thrown = None
    while True:
        returned, value = _step(vm, frame, sent, thrown)
        if returned:
            return
        try:
            if type(value) is AsyncGenWrapped:
                sent = yield value.value
            else:
                sent = await _Await(value)
            thrown = None
        except BaseException as exc:  # noqa: BLE001
            sent, thrown = None, exc


def make_generator(vm, frame, func):
    """The generator / coroutine / async generator object for a call of ``func``."""
    frame.exc_state = ExcState()
    flags = frame.code.co_flags
    kind = _async_generator_driver if flags & CO_ASYNC_GENERATOR else \
        _coroutine_driver if flags & CO_COROUTINE else _generator_driver
    gen = _driver_for(kind, frame.code)(vm, frame)
    gen.__name__ = func.__name__
    gen.__qualname__ = func.__qualname__
    return gen


_drivers = {}


def _driver_for(kind, code):
    """The driver function, renamed after the user's code so ``gi_code``/``cr_code`` read as theirs."""
    key = (kind, code)
    fn = _drivers.get(key)
    if fn is None:
        dcode = kind.__code__.replace(co_name=code.co_name, co_qualname=code.co_qualname)
        fn = _drivers[key] = FunctionType(dcode, kind.__globals__, code.co_name)
    return fn
