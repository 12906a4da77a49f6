"""Binding call arguments to a function's parameters.

The common case (positional arguments only, no ``*args``/``**kwargs``/keyword-only parameters) is
filled in directly. Everything else goes through a *binder*: a function compiled once per code object
with the very same signature, whose body just returns its parameters in slot order. CPython binds the
arguments to it, so every binding error carries CPython's own message. The binder of a call wears the
function's own name, qualname and defaults as they are at the call (a namedtuple's ``__new__`` is a
lambda renamed after creation: CPython names it ``P.__new__`` in its errors, from ``__qualname__``).
"""
from types import FunctionType

from .frame import NULL

CO_VARARGS = 0x04
CO_VARKEYWORDS = 0x08

_binders = {}


def _binder_code(code):
    try:
        return _binders[code]
    except KeyError:
        pass
    argc = code.co_argcount
    posonly = code.co_posonlyargcount
    kwonly = code.co_kwonlyargcount
    names = list(code.co_varnames)
    params = []
    pos = names[:argc]
    k = argc
    kwnames = names[k:k + kwonly]
    k += kwonly
    star = None
    dstar = None
    if code.co_flags & CO_VARARGS:
        star = names[k]
        k += 1
    if code.co_flags & CO_VARKEYWORDS:
        dstar = names[k]
        k += 1
    params.extend(pos[:posonly])
    if posonly:
        params.append("/")
    params.extend(pos[posonly:])
    if star is not None:
        params.append("*" + star)
    elif kwnames:
        params.append("*")
    params.extend(kwnames)
    if dstar is not None:
        params.append("**" + dstar)
    ordered = pos + kwnames + ([star] if star else []) + ([dstar] if dstar else [])
    body = ", ".join(ordered) + ("," if len(ordered) == 1 else "")
    source = f"def binder({', '.join(params)}):\n    return ({body})\n"
    namespace = {}
    exec(compile(source, code.co_filename, "exec"), namespace)
    bcode = namespace["binder"].__code__.replace(co_name=code.co_name, co_qualname=code.co_qualname)
    _binders[code] = bcode
    return bcode


def _binder(func, code, defaults, kwdefaults):
    """A binder of ``code``'s signature named as ``func`` is now, with these defaults."""
    binder = FunctionType(_binder_code(code), {}, func.__name__, defaults)
    binder.__qualname__ = func.__qualname__
    binder.__kwdefaults__ = kwdefaults
    return binder


def bind(func, decoded, args, kwargs):
    """Return the initial localsplus list of a call of ``func`` (raising CPython's binding errors)."""
    code = decoded.code
    n = len(args)
    argc = code.co_argcount
    if not kwargs and not code.co_flags & (CO_VARARGS | CO_VARKEYWORDS) and not code.co_kwonlyargcount:
        if n == argc:
            return [*args, *[NULL] * (decoded.nlocalsplus - n)]
        defaults = func.__defaults__
        if defaults and argc - len(defaults) <= n < argc:
            values = [*args, *defaults[n - argc:]]
            values.extend([NULL] * (decoded.nlocalsplus - argc))
            return values
    values = list(_binder(func, code, func.__defaults__, func.__kwdefaults__)(*args, **(kwargs or {})))
    values.extend([NULL] * (decoded.nlocalsplus - len(values)))
    return values


def bind_provenance(func, decoded, provs, kw_provs, nargs, values=None, observer=None):
    """Bind the arguments' provenance exactly as :func:`bind` bound their values.

    Defaults carry None. The tuple and dict made for ``*args``/``**kwargs`` are new values: the
    observer is told what their elements' provenance is (``packed``) and gives theirs.
    """
    code = decoded.code
    if not kw_provs and not code.co_flags & (CO_VARARGS | CO_VARKEYWORDS) and not code.co_kwonlyargcount:
        out = list(provs)
        out.extend([None] * (decoded.nlocalsplus - len(out)))
        return out
    defaults = func.__defaults__
    kwdefaults = func.__kwdefaults__
    binder = _binder(func, code, (None,) * len(defaults) if defaults else None,
                     dict.fromkeys(kwdefaults) if kwdefaults else None)
    out = list(binder(*provs, **(kw_provs or {})))
    if code.co_flags & CO_VARARGS:
        k = code.co_argcount + code.co_kwonlyargcount
        out[k] = observer.packed(values[k], list(out[k])) if observer is not None else None
    if code.co_flags & CO_VARKEYWORDS:
        k = code.co_argcount + code.co_kwonlyargcount + bool(code.co_flags & CO_VARARGS)
        out[k] = observer.packed(values[k], dict(out[k])) if observer is not None else None
    out.extend([None] * (decoded.nlocalsplus - len(out)))
    return out
