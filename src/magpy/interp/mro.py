"""What a type holds along its MRO: the lookup both calling and the object protocols start from.

``calls`` asks it which ``__call__`` / ``__new__`` / ``__init__`` a class has; ``protocols`` asks it
for every dunder. It runs no code of the program, so it sits below both.
"""
from types import FunctionType, MethodType

_HEAPTYPE = 1 << 9
MISSING = object()

_mro_dicts = {}


def _dicts_of(tp):
    # mappingproxies are live views of the class dicts, so caching them keeps lookups exact
    # (only an assignment to __bases__ would change the list itself)
    dicts = tuple(klass.__dict__ for klass in tp.__mro__)
    _mro_dicts[tp] = dicts
    return dicts


def lookup(tp, name):
    """``_PyType_Lookup``: the attribute ``name`` found along ``tp``'s MRO, or MISSING."""
    try:
        dicts = _mro_dicts[tp]
    except KeyError:
        dicts = _dicts_of(tp)
    for d in dicts:
        if name in d:
            return d[name]
    return MISSING


def is_heap(tp):
    return tp.__flags__ & _HEAPTYPE


def python_slot(tp, name):
    """The Python function implementing dunder ``name`` for ``tp``, or None."""
    if not tp.__flags__ & _HEAPTYPE:
        return None
    f = lookup(tp, name)
    return f if type(f) is FunctionType else None


def bind(desc, obj, tp):
    if type(desc) is FunctionType:
        return MethodType(desc, obj)
    get = getattr(type(desc), "__get__", None)
    return get(desc, obj, tp) if get is not None else desc
