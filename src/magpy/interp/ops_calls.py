"""Handlers: calls and function creation."""
from types import FunctionType

from .decode import handler
from .frame import NULL
from .calls import call
from .builtin_lookasides import iterable

_CellType = type((lambda x: lambda: x)(0).__closure__[0])


@handler("KW_NAMES")
def kw_names(f, names, i):
    f.kwnames = names
    return i + 1


def _split_kwargs(args, kwnames):
    nk = len(kwnames)
    return args[:-nk], dict(zip(kwnames, args[-nk:]))


@handler("CALL")
def call_(f, argc, i):
    """3.11/3.12 layout: [NULL, callable, *args] or [method, self, *args]."""
    stack = f.stack
    n = argc + 2
    items = stack[-n:]
    del stack[-n:]
    fn = items[0]
    if fn is NULL:
        fn = items[1]
        args = items[2:]
    else:
        args = items[1:]
    f.index = i  # for f_lineno of this frame while the callee runs
    kwnames = f.kwnames
    if kwnames:
        f.kwnames = ()
        args, kwargs = _split_kwargs(args, kwnames)
        stack.append(call(f.vm, fn, args, kwargs))
    elif type(fn) is FunctionType:
        stack.append(f.vm.call_function(fn, args, None))
    else:
        stack.append(call(f.vm, fn, args, None))
    return i + 1


@handler("CALL_313")
def call_313(f, argc, i):
    """3.13 layout: [callable, NULL, *args] or [callable, self, *args]."""
    stack = f.stack
    n = argc + 2
    items = stack[-n:]
    del stack[-n:]
    fn = items[0]
    args = items[2:] if items[1] is NULL else items[1:]
    f.index = i
    stack.append(call(f.vm, fn, args, None))
    return i + 1


@handler("CALL_KW")
def call_kw(f, argc, i):
    stack = f.stack
    kwnames = stack.pop()
    n = argc + 2
    items = stack[-n:]
    del stack[-n:]
    fn = items[0]
    args = items[2:] if items[1] is NULL else items[1:]
    args, kwargs = _split_kwargs(args, kwnames)
    f.index = i
    stack.append(call(f.vm, fn, args, kwargs))
    return i + 1


def function_str(fn):
    """How CPython names a callable in call errors (``_PyObject_FunctionStr``)."""
    qualname = getattr(fn, "__qualname__", None)
    if not isinstance(qualname, str):
        return str(fn)
    module = getattr(fn, "__module__", None)
    if isinstance(module, str) and module != "builtins":
        return f"{module}.{qualname}()"
    return f"{qualname}()"


def star_args(fn, callargs):
    """``f(*callargs)``'s positional arguments, as a tuple (CPython's error when not iterable)."""
    if type(callargs) is tuple:
        return callargs
    if not iterable(callargs):
        raise TypeError(f"{function_str(fn)} argument after * must be an iterable, "
                        f"not {type(callargs).__name__}")
    return tuple(callargs)


def _call_ex(f, fn, callargs, kwargs):
    callargs = star_args(fn, callargs)
    if kwargs is not None and type(kwargs) is not dict:
        if not hasattr(kwargs, "keys"):
            raise TypeError(f"{function_str(fn)} argument after ** must be a mapping, "
                            f"not {type(kwargs).__name__}")
        kwargs = dict(kwargs)
    return call(f.vm, fn, callargs, kwargs)


@handler("CALL_FUNCTION_EX")
def call_function_ex(f, has_kwargs, i):
    stack = f.stack
    kwargs = stack.pop() if has_kwargs else None
    callargs = stack.pop()
    fn = stack.pop()
    below = stack.pop()
    if below is not NULL:  # [method, self] layout
        fn, callargs = below, (fn, *callargs)
    stack.append(_call_ex(f, fn, callargs, kwargs))
    return i + 1


@handler("CALL_FUNCTION_EX_313")
def call_function_ex_313(f, has_kwargs, i):
    stack = f.stack
    kwargs = stack.pop() if has_kwargs else None
    callargs = stack.pop()
    self_or_null = stack.pop()
    fn = stack.pop()
    if self_or_null is not NULL:
        callargs = (self_or_null, *callargs)
    stack.append(_call_ex(f, fn, callargs, kwargs))
    return i + 1


# ---- function creation ----------------------------------------------------------------------------

def _annotations(value):
    if isinstance(value, tuple):
        return dict(zip(value[::2], value[1::2]))
    return value


def new_function(code, globals_, closure=None):
    if closure is None and code.co_freevars:
        closure = tuple(_CellType() for _ in code.co_freevars)
    fn = FunctionType(code, globals_, code.co_name, None, closure)
    fn.__qualname__ = code.co_qualname
    return fn


@handler("MAKE_FUNCTION")
def make_function(f, flags, i):
    stack = f.stack
    code = stack.pop()
    closure = stack.pop() if flags & 8 else None
    annotations = stack.pop() if flags & 4 else None
    kwdefaults = stack.pop() if flags & 2 else None
    defaults = stack.pop() if flags & 1 else None
    fn = new_function(code, f.globals, closure)
    if defaults is not None:
        fn.__defaults__ = defaults
    if kwdefaults is not None:
        fn.__kwdefaults__ = kwdefaults
    if annotations is not None:
        fn.__annotations__ = _annotations(annotations)
    stack.append(fn)
    return i + 1


@handler("MAKE_FUNCTION_313")
def make_function_313(f, arg, i):
    f.stack[-1] = new_function(f.stack[-1], f.globals)
    return i + 1


@handler("SET_FUNCTION_ATTRIBUTE")
def set_function_attribute(f, flag, i):
    stack = f.stack
    fn = stack.pop()
    value = stack.pop()
    if flag == 8:
        new = FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, value)
        new.__qualname__ = fn.__qualname__
        new.__kwdefaults__ = fn.__kwdefaults__
        if fn.__dict__:
            new.__dict__.update(fn.__dict__)
        fn = new
    elif flag == 4:
        fn.__annotations__ = _annotations(value)
    elif flag == 2:
        fn.__kwdefaults__ = value
    elif flag == 1:
        fn.__defaults__ = value
    stack.append(fn)
    return i + 1
