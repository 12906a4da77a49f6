"""The single call decision point.

Every call the VM makes goes through :func:`call`: a lookaside handler if one is registered for the
callable; Python functions, bound methods, Python ``__call__``, and classes whose ``__new__`` /
``__init__`` / metaclass ``__call__`` are Python are interpreted; everything else (C functions,
built-in types) is called natively and reported to the observer.
"""
import functools
from types import FunctionType, MethodType

from .lookaside import LOOKASIDE, TYPE_LOOKASIDE, called_instead
from .mro import lookup, _HEAPTYPE

_type_call = type.__call__
_object_new = object.__new__
_object_init = object.__init__
_partial = functools.partial
_BuiltinFunction = type(len)
_Module = type(functools)


def call(vm, fn, args, kwargs):
    """Call ``fn(*args, **kwargs)`` the way the VM should: interpreted where it is Python code."""
    tp = type(fn)
    if tp is FunctionType:
        return vm.call_function(fn, args, kwargs)
    if tp is MethodType:
        if vm.call_provs is not None:
            provs = vm.call_provs
            _prepend(vm, fn.__self__, vm.observer.bound_self(fn, provs[2] if len(provs) > 2 else None))
        func = fn.__func__
        if type(func) is FunctionType:
            return vm.call_function(func, (fn.__self__, *args), kwargs)
        return call(vm, func, (fn.__self__, *args), kwargs)
    provs, vm.call_provs = vm.call_provs, None   # (positional, keyword, callable) provenance
    special = LOOKASIDE.get(fn)   # (by identity: a callable's own __hash__ / __eq__ never run)
    if special is None and tp is _BuiltinFunction and type(fn.__self__) is list:
        # ``xs.sort(key=f)``, ``xs.extend(gen)``: a list's method, bound — as its lookaside says
        special = LOOKASIDE.get(getattr(list, fn.__name__, None))
        if special is not None:
            if provs is not None:
                self_prov = vm.observer.bound_self(fn, provs[2] if len(provs) > 2 else None)
                provs = ((self_prov, *provs[0]), provs[1], None)
            args = (fn.__self__, *args)
    if special is not None:
        vm.lookaside_provs = provs  # for protocol builtins whose dunder code runs (len → __len__ …)
        return special(vm, args, kwargs or {})
    by_type = TYPE_LOOKASIDE.get(tp)
    if by_type is not None:
        vm.lookaside_provs = provs
        return by_type(vm, fn, args, kwargs or {})
    if tp is _partial:  # (a heap type: extension types made from specs are)
        merged = {**fn.keywords, **kwargs} if kwargs else fn.keywords
        if provs is not None:
            # the partial's own arguments: provenance the observer knows of them (it saw them stored)
            stored = vm.observer.unpacked(fn.args, None) if fn.args else ()
            vm.call_provs = ((*stored, *provs[0]), provs[1], None)
            if fn.keywords:
                vm.call_provs = (vm.call_provs[0], {**vm.observer.unpacked_mapping(fn.keywords, None),
                                                    **vm.call_provs[1]}, None)
        return call(vm, fn.func, (*fn.args, *args), merged)
    if tp.__flags__ & _HEAPTYPE or tp is type:
        if isinstance(fn, type):
            return _instantiate(vm, fn, args, kwargs, provs)
        target = called_instead(fn)
        if target is not None:
            # a wrapper that asks to be seen through (a compiled function: its original code runs here)
            if provs is not None:
                vm.call_provs = (provs[0], provs[1], None)
            return call(vm, target, args, kwargs)
        f = lookup(tp, "__call__")
        if type(f) is FunctionType:
            if provs is not None:
                vm.call_provs = provs
                _prepend(vm, fn, provs[2] if len(provs) > 2 else None, known=True)
            return vm.call_function(f, (fn, *args), kwargs)
    return native_call(vm, fn, args, kwargs, provs)


def plain_native(fn):
    """Does :func:`call` run ``fn`` natively whatever the arguments, for as long as no lookaside is
    registered, and may a call site keep it? (A built-in function of a module, or a built-in class
    whose metaclass is ``type``; not a bound built-in method: keeping it would keep its object alive.)"""
    tp = type(fn)
    if tp is type:
        if fn.__flags__ & _HEAPTYPE:
            return False
    elif tp is not _BuiltinFunction or not isinstance(fn.__self__, (_Module, type(None))):
        return False
    return fn not in LOOKASIDE


def _prepend(vm, value, prov, known=False):
    """An argument the call adds in front (self, partial arguments) gets its provenance in front too."""
    provs = vm.call_provs
    if prov is None and not known:
        prov = vm.observer.opaque(value)
    vm.call_provs = ((prov, *provs[0]), provs[1], None)


def native_call(vm, fn, args, kwargs, provs=None):
    observer = vm.observer
    hook = vm.native_hook
    if hook is not None:
        result = hook(fn, args, kwargs, provs)
    elif kwargs:
        result = fn(*args, **kwargs)
    else:
        result = fn(*args)
    if observer is not None:
        observer.native_call(fn, args, kwargs, result)
    return result


def _instantiate(vm, cls, args, kwargs, provs=None):
    """``type.__call__`` replayed so that Python ``__new__``/``__init__`` are interpreted.

    ``provs`` (observer on): the call's argument provenance, handed to whichever of them runs."""
    def hand(first):
        if provs is not None:
            vm.call_provs = ((first, *provs[0]), provs[1], None)

    meta = type(cls)
    if meta is not type:
        mc = lookup(meta, "__call__")
        if type(mc) is FunctionType:
            hand(provs[2] if provs is not None and len(provs) > 2 else None)
            return vm.call_function(mc, (cls, *args), kwargs)
        if mc is not _type_call:
            return native_call(vm, cls, args, kwargs)
    if not cls.__flags__ & _HEAPTYPE:
        return native_call(vm, cls, args, kwargs)
    new = lookup(cls, "__new__")
    init = lookup(cls, "__init__")
    new_is_py = type(new) is staticmethod and type(new.__func__) is FunctionType
    plain_new = new is _object_new or (type(new) is staticmethod and new.__func__ is _object_new)
    if plain_new and init is _object_init and not args and not kwargs:
        # (a Python class with neither: an empty new instance, made as eager makes it, no code of its own)
        obj = _object_new(cls)
        if vm.observer is not None:
            vm.observer.created(obj)
        return obj
    if not new_is_py and type(init) is not FunctionType:
        return native_call(vm, cls, args, kwargs)
    if new_is_py:
        hand(provs[2] if provs is not None and len(provs) > 2 else None)
        obj = vm.call_function(new.__func__, (cls, *args), kwargs)
    elif plain_new:
        # object.__new__ rejects extra arguments only when __init__ is not overridden
        obj = _object_new(cls) if init is not _object_init else _object_new(cls, *args, **(kwargs or {}))
    else:
        obj = new(cls, *args, **(kwargs or {}))
    if not isinstance(obj, cls):
        return obj
    init = lookup(type(obj), "__init__")
    if type(init) is FunctionType:
        if vm.observer is not None:
            vm.observer.created(obj)
        hand(None)  # the new object was made inside the call
        r = vm.call_function(init, (obj, *args), kwargs)
    else:
        r = bind_native(init, obj)(*args, **(kwargs or {}))
    if r is not None:
        raise TypeError(f"__init__() should return None, not '{type(r).__name__}'")
    return obj


def bind_native(desc, obj):
    get = getattr(type(desc), "__get__", None)
    return get(desc, obj, type(obj)) if get is not None else desc
