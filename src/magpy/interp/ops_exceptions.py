"""Handlers: raising, handling and re-raising exceptions; ``with`` blocks."""
from .decode import handler
from .calls import call
from . import protocols
from .protocols import lookup, MISSING, bind


def _is_exc_class(x):
    return isinstance(x, type) and issubclass(x, BaseException)


def make_exception(vm, x):
    """What ``raise x`` raises: instantiate classes, reject non-exceptions (CPython's messages)."""
    if _is_exc_class(x):
        value = call(vm, x, (), None)
        if not isinstance(value, BaseException):
            raise TypeError(f"calling {x!r} should have returned an instance of BaseException, "
                            f"not {type(value)!r}")
        return value
    if isinstance(x, BaseException):
        return x
    raise TypeError("exceptions must derive from BaseException")


def chain_context(exc, context):
    """Set ``exc.__context__`` as CPython's raise does, breaking cycles the same way (and, like
    CPython, not looping forever on a chain that already has a cycle of its own)."""
    if context is None or context is exc:
        return
    o = context
    slow = context
    step = False
    while True:
        nxt = o.__context__
        if nxt is None:
            break
        if nxt is exc:
            o.__context__ = None
            break
        o = nxt
        if step:
            slow = slow.__context__
            if slow is o:
                break
        step = not step
    exc.__context__ = context


@handler("RAISE_VARARGS")
def raise_varargs(f, argc, i):
    vm = f.vm
    stack = f.stack
    if argc == 0:
        exc = vm.current_exception()
        if exc is None:
            raise RuntimeError("No active exception to reraise")
        raise exc
    cause = stack.pop() if argc == 2 else None
    exc = make_exception(vm, stack.pop())
    if argc == 2:
        if _is_exc_class(cause):
            cause_class, cause = cause, call(vm, cause, (), None)
            if not isinstance(cause, BaseException):
                raise TypeError(f"calling {cause_class!r} should have returned an instance of "
                                f"BaseException, not {type(cause)!r}")
        elif cause is not None and not isinstance(cause, BaseException):
            raise TypeError("exception causes must derive from BaseException")
        exc.__cause__ = cause
    chain_context(exc, vm.current_exception())
    raise exc


@handler("RERAISE")
def reraise(f, arg, i):
    exc = f.stack.pop()
    f.vm.reraising = exc
    raise exc


@handler("PUSH_EXC_INFO")
def push_exc_info(f, arg, i):
    stack = f.stack
    exc = stack.pop()
    state = f.vm.exc_state
    stack.append(state.value)
    state.value = exc
    stack.append(exc)
    return i + 1


@handler("POP_EXCEPT")
def pop_except(f, arg, i):
    f.vm.exc_state.value = f.stack.pop()
    return i + 1


def _given_matches(exc_type, match):
    if isinstance(match, tuple):
        return any(_given_matches(exc_type, m) for m in match)
    return isinstance(match, type) and match in exc_type.__mro__


def _check_except_type(match):
    items = match if isinstance(match, tuple) else (match,)
    for m in items:
        if not _is_exc_class(m):
            raise TypeError("catching classes that do not inherit from BaseException is not allowed")


@handler("CHECK_EXC_MATCH")
def check_exc_match(f, arg, i):
    stack = f.stack
    match = stack.pop()
    _check_except_type(match)
    stack.append(_given_matches(type(stack[-1]), match))
    return i + 1


@handler("CHECK_EG_MATCH")
def check_eg_match(f, arg, i):
    stack = f.stack
    match_type = stack.pop()
    _check_except_type(match_type)
    items = match_type if isinstance(match_type, tuple) else (match_type,)
    if any(issubclass(m, BaseExceptionGroup) for m in items):
        raise TypeError("catching ExceptionGroup with except* is not allowed. Use except instead.")
    exc = stack[-1]
    if exc is None:
        match, rest = None, None
    elif _given_matches(type(exc), match_type):
        if isinstance(exc, BaseExceptionGroup):
            match = exc
        else:
            match = BaseExceptionGroup("", [exc])
            match.__traceback__ = exc.__traceback__
        rest = None
    elif isinstance(exc, BaseExceptionGroup):
        match, rest = exc.split(match_type)
    else:
        match, rest = None, None
    if match is None:
        stack.append(None)
        return i + 1
    stack[-1] = rest
    stack.append(match)
    f.vm.exc_state.value = match
    return i + 1


def _leaf_ids(exc, out):
    if isinstance(exc, BaseExceptionGroup):
        for e in exc.exceptions:
            _leaf_ids(e, out)
    else:
        out.add(id(exc))


def _same_metadata(a, b):
    return (getattr(a, "__notes__", None) is getattr(b, "__notes__", None)
            and a.__traceback__ is b.__traceback__ and a.__cause__ is b.__cause__
            and a.__context__ is b.__context__)


def prep_reraise_star(orig, excs):
    """Combine what the ``except*`` clauses raised with what they re-raised (CPython's algorithm)."""
    if not excs:
        return None
    if not isinstance(orig, BaseExceptionGroup):
        return excs[0]
    raised, reraised = [], []
    for e in excs:
        if e is None:
            continue
        (reraised if _same_metadata(e, orig) else raised).append(e)
    keep = set()
    for e in reraised:
        _leaf_ids(e, keep)
    reraised_eg = orig.split(lambda leaf: id(leaf) in keep)[0] if keep else None
    if not raised:
        return reraised_eg
    if reraised_eg is not None:
        raised.append(reraised_eg)
    if len(raised) == 1:
        return raised[0]
    return BaseExceptionGroup("", raised)


@handler("PREP_RERAISE_STAR")
def prep_reraise_star_311(f, arg, i):
    stack = f.stack
    excs = stack.pop()
    stack[-1] = prep_reraise_star(stack[-1], excs)
    return i + 1


@handler("INTRINSIC_PREP_RERAISE_STAR")
def intrinsic_prep_reraise_star(f, arg, i):
    stack = f.stack
    excs = stack.pop()
    stack[-1] = prep_reraise_star(stack[-1], excs)
    return i + 1


@handler("INTRINSIC_STOPITERATION_ERROR")
def intrinsic_stopiteration_error(f, arg, i):
    exc = f.stack[-1]
    flags = f.code.co_flags
    kind = "async generator" if flags & 0x200 else "coroutine" if flags & 0x80 else "generator"
    if isinstance(exc, StopIteration):
        msg = f"{kind} raised StopIteration"
    elif flags & 0x200 and isinstance(exc, StopAsyncIteration):
        msg = "async generator raised StopAsyncIteration"
    else:
        return i + 1
    err = RuntimeError(msg)
    err.__cause__ = exc
    err.__context__ = exc
    f.stack[-1] = err
    return i + 1


@handler("WITH_EXCEPT_START")
def with_except_start(f, arg, i):
    stack = f.stack
    exit_func = stack[-4]
    val = stack[-1]
    stack.append(call(f.vm, exit_func, (type(val), val, val.__traceback__), None))
    return i + 1


def _enter(f, mgr, enter_name, exit_name, what):
    tp = type(mgr)
    enter = lookup(tp, enter_name)
    if enter is MISSING:
        raise TypeError(f"'{tp.__name__}' object does not support the {what} protocol")
    exit_ = lookup(tp, exit_name)
    if exit_ is MISSING:
        raise TypeError(f"'{tp.__name__}' object does not support the {what} protocol "
                        f"(missed {exit_name} method)")
    f.stack.append(bind(exit_, mgr, tp))
    f.stack.append(protocols.call_slot(f.vm, enter, mgr))


@handler("BEFORE_WITH")
def before_with(f, arg, i):
    _enter(f, f.stack.pop(), "__enter__", "__exit__", "context manager")
    return i + 1


@handler("BEFORE_ASYNC_WITH")
def before_async_with(f, arg, i):
    _enter(f, f.stack.pop(), "__aenter__", "__aexit__", "asynchronous context manager")
    return i + 1
