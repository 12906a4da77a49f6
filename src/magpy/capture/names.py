"""How a user names things: functions, modules and the globals of the module being explained.

Guards, mocks and trace events speak in the names a user would type (``torch._C._get_tracing_state``,
``SCALE``), never in the names C extensions give their objects (a pybind11 record type's name) or in
module dictionaries. The globals of the function being explained read as bare names: they are what its
own source says; any other module's global reads as ``module.name``.
"""
import contextlib
import contextvars
import keyword
import sys
import types

#: the globals namespace whose names render bare (the module of the function being explained)
_HOME = contextvars.ContextVar("magpy_home_namespace", default=None)

#: C modules that a user reaches by another name
_PUBLIC_MODULES = {"_operator": "operator", "_functools": "functools", "posix": "os", "_io": "io",
                   "_collections": "collections", "_thread": "threading", "_random": "random"}


@contextlib.contextmanager
def rendering_home(namespace):
    """Within this block, globals of ``namespace`` (a module's ``__dict__``) render by their bare names."""
    token = _HOME.set(namespace)
    try:
        yield
    finally:
        _HOME.reset(token)


def is_home(namespace):
    """Do globals of ``namespace`` render bare here (the explained function's module, or ``__main__``)?"""
    return namespace is _HOME.get() or namespace.get("__name__") == "__main__"


def is_identifier(name):
    """Can ``name`` follow a dot in source (``obj.name``)?"""
    return type(name) is str and name.isidentifier() and not keyword.iskeyword(name)


def module_name(name):
    """The name a user imports a module by."""
    return _PUBLIC_MODULES.get(name, name)


def global_name(namespace, name):
    """``name`` of the module whose globals are ``namespace``, as a user writes it from the home module."""
    if is_home(namespace):
        return name
    return f"{module_name(namespace.get('__name__', '?'))}.{name}"


def callable_name(fn):
    """How a user writes ``fn``: ``len``, ``torch.relu``, ``torch._C._get_tracing_state``, ``dict.values``,
    ``Module._call_impl``; for a function of the home module, its bare name."""
    owner = getattr(fn, "__objclass__", None)
    name = getattr(fn, "__name__", None)
    if isinstance(owner, type) and type(name) is str:  # a method descriptor of a class
        return f"{owner.__qualname__}.{name}"
    module = getattr(fn, "__module__", None)
    if type(module) is str and type(name) is str:
        found = sys.modules.get(module)
        if module == "builtins" or module.split(".")[0] == "magpy":
            return name  # (MagPy's own checks, ``distinct(a, b)``, are words of the guard language)
        if found is not None and getattr(found, name, None) is fn:
            return global_name(vars(found), name)
    op = getattr(fn, "_qualified_op_name", None)
    if type(op) is str and "::" in op:  # a torch operator (``torch.ops.profiler._record_function_enter_new``)
        return "torch.ops." + op.replace("::", ".")
    qualname = getattr(fn, "__qualname__", None)
    if type(qualname) is str and "pybind11" not in qualname:
        return qualname
    bound = getattr(fn, "__self__", None)
    if type(name) is str and isinstance(fn, types.MethodType) and not isinstance(bound, types.ModuleType):
        return f"{type(bound).__qualname__}.{name}"  # a pybind11 method, bound: named by its object's class
    if type(name) is str:  # (a C extension's name for the record type it binds functions to says nothing)
        return f"{module_name(module)}.{name}" if type(module) is str else name
    return repr(fn)


def object_label(obj):
    """A short label for an object a guard holds by identity: ``module torch``, ``torch.relu``,
    ``Sequential`` (an instance, by its class)."""
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__}"
    if isinstance(obj, type):
        return obj.__qualname__
    if type(obj).__flags__ & _HEAPTYPE:
        return type(obj).__qualname__  # (an instance of a Python class: its __getattr__ must not run)
    if callable(obj) and hasattr(obj, "__name__"):
        return callable_name(obj)
    return type(obj).__qualname__


_HEAPTYPE = 1 << 9

#: packages whose functions are never the user's own (capturing a module's call starts in torch's code)
_LIBRARIES = frozenset({"torch", "magpy"})


def home_of(fn):
    """The namespace whose globals render bare when ``fn`` is explained: the module that defines it, or
    none for a library's function (``nn.Module.__call__`` on the user's behalf)."""
    fn = getattr(fn, "__func__", fn)
    namespace = getattr(fn, "__globals__", None)
    if namespace is None or str(namespace.get("__name__", "")).split(".")[0] in _LIBRARIES:
        return None
    return namespace
