"""Python's object protocols (attributes, operators, truth, iteration) with user dunders interpreted.

For objects of built-in (non-heap) types every operation runs natively: nothing of theirs can be
Python code. For instances of classes defined in Python, a dunder that resolves to a Python function
is run by the VM (so that what it does is observed), and the protocol around it (reflected operands,
NotImplemented, descriptor precedence, result checks) is reproduced here with CPython's messages.
Where a built-in operand takes part, CPython's own dispatch runs natively: correctness first.
"""
import operator
from types import FunctionType

from .calls import call
from .mro import _HEAPTYPE, MISSING, bind, is_heap, lookup, python_slot  # noqa: F401  (also this module's)

_object_getattribute = object.__getattribute__
_object_setattr = object.__setattr__
_object_delattr = object.__delattr__
_object_ne = object.__ne__


def _with(vm, provs):
    """Hand the provenance of the next interpreted call's arguments to the VM (observer on)."""
    if provs is not None:
        vm.call_provs = (provs, {})


_SLOT_DESCRIPTORS = (type(object.__eq__), type(str.join), type(dict.__dict__["fromkeys"]))


def call_slot(vm, desc, obj, *args):
    """Call the dunder ``desc`` found on ``type(obj)`` with ``obj`` as self."""
    if type(desc) is FunctionType:
        return vm.call_function(desc, (obj, *args), None)
    if isinstance(desc, _SLOT_DESCRIPTORS[:2]):
        return desc(obj, *args)  # (binding to None would give back the unbound descriptor)
    return call(vm, bind(desc, obj, type(obj)), args, None)


# ---- attributes ---------------------------------------------------------------------------------

#: (type, name) pairs whose attribute read involves no Python code: they run natively from then on.
#: Only this negative answer is remembered: should a class later gain a Python property, the native
#: getattr still runs it (uninterpreted but correct), whereas a remembered Python getter could go stale.
_NATIVE_ATTR = set()
_NATIVE_SETATTR = set()


def load_attr(vm, obj, name, prov=None):
    """``obj.name``; ``prov`` (observer on) is the provenance of ``obj``, for the Python code that runs."""
    tp = type(obj)
    if not tp.__flags__ & _HEAPTYPE or (tp, name) in _NATIVE_ATTR:
        return getattr(obj, name)
    p = None if vm.observer is None else (prov, None)
    ga = lookup(tp, "__getattribute__")
    if type(ga) is FunctionType:
        try:
            _with(vm, p)
            return vm.call_function(ga, (obj, name), None)
        except AttributeError:
            hook = lookup(tp, "__getattr__")
            if hook is MISSING:
                raise
        return call_slot(vm, hook, obj, name)
    desc = lookup(tp, name)
    cacheable = True
    if desc is not MISSING:
        dt = type(desc)
        if dt is property:
            if type(desc.fget) is FunctionType:
                _with(vm, p and p[:1])
                return _attr_with_hook(vm, tp, obj, name, vm.call_function, desc.fget, (obj,), p)
        elif dt.__flags__ & _HEAPTYPE:
            get = lookup(dt, "__get__")
            if type(get) is FunctionType:
                data = lookup(dt, "__set__") is not MISSING or lookup(dt, "__delete__") is not MISSING
                if data or not _in_instance_dict(obj, name):
                    _with(vm, p and (None, prov, None))
                    return _attr_with_hook(vm, tp, obj, name, vm.call_function, get, (desc, obj, tp), p)
                # shadowed by this instance's own value: another instance may run the Python __get__
                # (a lazy property computed on first use), so the decision holds for this read only
                cacheable = False
    hook = lookup(tp, "__getattr__")
    if type(hook) is not FunctionType:
        if cacheable:
            _NATIVE_ATTR.add((tp, name))
        return getattr(obj, name)
    try:
        return ga(obj, name) if ga is not _object_getattribute and ga is not MISSING else _object_getattribute(obj, name)
    except AttributeError:
        pass
    _with(vm, p)
    return vm.call_function(hook, (obj, name), None)


def _attr_with_hook(vm, tp, obj, name, runner, fn, args, p=None):
    """Run a Python getter; an AttributeError from it falls back to ``__getattr__`` as in CPython."""
    hook = lookup(tp, "__getattr__")
    if hook is MISSING:
        return runner(fn, args, None)
    try:
        return runner(fn, args, None)
    except AttributeError:
        pass
    _with(vm, p)
    return call_slot(vm, hook, obj, name)


def _in_instance_dict(obj, name):
    try:
        d = _object_getattribute(obj, "__dict__")
    except AttributeError:
        return False
    return name in d


def store_attr(vm, obj, name, value, provs=None):
    """``obj.name = value``; ``provs`` (observer on): provenance of (obj, value)."""
    tp = type(obj)
    if tp.__flags__ & _HEAPTYPE and (tp, name) not in _NATIVE_SETATTR:
        po, pv = provs if provs is not None else (None, None)
        on = vm.observer is not None
        sa = lookup(tp, "__setattr__")
        if type(sa) is FunctionType:
            _with(vm, (po, None, pv) if on else None)
            vm.call_function(sa, (obj, name, value), None)
            return
        desc = lookup(tp, name)
        if desc is not MISSING:
            dt = type(desc)
            if dt is property:
                if type(desc.fset) is FunctionType:
                    _with(vm, (po, pv) if on else None)
                    vm.call_function(desc.fset, (obj, value), None)
                    return
            elif dt.__flags__ & _HEAPTYPE:
                setter = lookup(dt, "__set__")
                if type(setter) is FunctionType:
                    _with(vm, (None, po, pv) if on else None)
                    vm.call_function(setter, (desc, obj, value), None)
                    return
        _NATIVE_SETATTR.add((tp, name))
    setattr(obj, name, value)


def delete_attr(vm, obj, name):
    tp = type(obj)
    if tp.__flags__ & _HEAPTYPE:
        da = lookup(tp, "__delattr__")
        if type(da) is FunctionType:
            vm.call_function(da, (obj, name), None)
            return
        desc = lookup(tp, name)
        if desc is not MISSING:
            dt = type(desc)
            if dt is property:
                if type(desc.fdel) is FunctionType:
                    vm.call_function(desc.fdel, (obj,), None)
                    return
            elif dt.__flags__ & _HEAPTYPE:
                deleter = lookup(dt, "__delete__")
                if type(deleter) is FunctionType:
                    vm.call_function(deleter, (desc, obj), None)
                    return
    delattr(obj, name)


def load_method(vm, obj, name, prov=None):
    """LOAD_METHOD: ``(function, obj)`` when the attribute is a plain method, else ``(None, attr)``."""
    tp = type(obj)
    if tp.__flags__ & _HEAPTYPE:
        if lookup(tp, "__getattribute__") is _object_getattribute:
            desc = lookup(tp, name)
            if type(desc) is FunctionType and not _in_instance_dict(obj, name):
                return desc, obj
        return None, load_attr(vm, obj, name, prov)
    # built-in types: method descriptors stay unbound so the call sees (self, *args)
    desc = lookup(tp, name) if tp is not type else MISSING
    if desc is not MISSING and type(desc).__name__ == "method_descriptor":
        return desc, obj
    return None, getattr(obj, name)


# ---- operators ----------------------------------------------------------------------------------

# (symbol, dunder, reflected dunder, native function), indexed by BINARY_OP's oparg (dis._nb_ops order)
_BINARY = [
    ("+", "__add__", "__radd__", operator.add),
    ("&", "__and__", "__rand__", operator.and_),
    ("//", "__floordiv__", "__rfloordiv__", operator.floordiv),
    ("<<", "__lshift__", "__rlshift__", operator.lshift),
    ("@", "__matmul__", "__rmatmul__", operator.matmul),
    ("*", "__mul__", "__rmul__", operator.mul),
    ("%", "__mod__", "__rmod__", operator.mod),
    ("|", "__or__", "__ror__", operator.or_),
    ("**", "__pow__", "__rpow__", operator.pow),
    (">>", "__rshift__", "__rrshift__", operator.rshift),
    ("-", "__sub__", "__rsub__", operator.sub),
    ("/", "__truediv__", "__rtruediv__", operator.truediv),
    ("^", "__xor__", "__rxor__", operator.xor),
]
_INPLACE = [
    operator.iadd, operator.iand, operator.ifloordiv, operator.ilshift, operator.imatmul,
    operator.imul, operator.imod, operator.ior, operator.ipow, operator.irshift, operator.isub,
    operator.itruediv, operator.ixor,
]
#: BINARY_OP oparg -> native function (0..12 binary, 13..25 in-place)
NATIVE_BINARY = [row[3] for row in _BINARY] + _INPLACE


#: built-in operand types whose dunders answer NotImplemented (never raise) for foreign operands, so
#: that the protocol can be replayed around a Python dunder of the other operand
_NUMERIC = frozenset({int, float, complex, bool, type(None)})


def _emulable(ta, tb):
    return (ta.__flags__ & _HEAPTYPE or ta in _NUMERIC) and (tb.__flags__ & _HEAPTYPE or tb in _NUMERIC)


def binary_op(vm, a, b, k, provs=None):
    """``a <op> b``; ``provs`` (observer on): the provenance of ``a`` and ``b``, handed to a Python dunder."""
    ta, tb = type(a), type(b)
    if not ((ta.__flags__ | tb.__flags__) & _HEAPTYPE):
        return NATIVE_BINARY[k](a, b)
    if k >= 13:
        symbol, name, rname, native = _BINARY[k - 13]
        iname = "__i" + name[2:]
        f = lookup(ta, iname)
        if type(f) is FunctionType:
            _with(vm, provs)
            r = vm.call_function(f, (a, b), None)
            if r is not NotImplemented:
                return r
        elif not _any_python(ta, tb, name, rname) or not _emulable(ta, tb):
            return native_op(vm, NATIVE_BINARY[k], (a, b), provs)
        elif f is not MISSING:
            r = call_slot(vm, f, a, b)
            if r is not NotImplemented:
                return r
        return _binary(vm, a, b, ta, tb, symbol + "=", name, rname, provs)
    symbol, name, rname, native = _BINARY[k]
    if not _any_python(ta, tb, name, rname) or not _emulable(ta, tb):
        return native_op(vm, native, (a, b), provs)
    return _binary(vm, a, b, ta, tb, symbol, name, rname, provs)


def _any_python(ta, tb, name, rname):
    return type(lookup(ta, name)) is FunctionType or type(lookup(tb, rname)) is FunctionType


def _binary(vm, a, b, ta, tb, symbol, name, rname, provs=None):
    fa = lookup(ta, name)
    fb = lookup(tb, rname) if tb is not ta else MISSING
    swapped = provs and provs[::-1]
    if fb is not MISSING and issubclass(tb, ta) and fb is not lookup(ta, rname):
        r = _call_pair(vm, fb, b, a, swapped)
        if r is not NotImplemented:
            return r
        fb = MISSING
    if fa is not MISSING:
        r = _call_pair(vm, fa, a, b, provs)
        if r is not NotImplemented:
            return r
    if fb is not MISSING:
        r = _call_pair(vm, fb, b, a, swapped)
        if r is not NotImplemented:
            return r
    raise TypeError(f"unsupported operand type(s) for {symbol}: '{ta.__name__}' and '{tb.__name__}'")


# (symbol, dunder, reflected dunder, native function), indexed by our COMPARE_OP arg
_COMPARE = [
    ("<", "__lt__", "__gt__", operator.lt),
    ("<=", "__le__", "__ge__", operator.le),
    ("==", "__eq__", "__eq__", operator.eq),
    ("!=", "__ne__", "__ne__", operator.ne),
    (">", "__gt__", "__lt__", operator.gt),
    (">=", "__ge__", "__le__", operator.ge),
]
NATIVE_COMPARE = [row[3] for row in _COMPARE]


def compare_op(vm, a, b, k, provs=None):
    ta, tb = type(a), type(b)
    if not ((ta.__flags__ | tb.__flags__) & _HEAPTYPE):
        return NATIVE_COMPARE[k](a, b)
    symbol, name, rname, native = _COMPARE[k]
    if _compare_slot(ta, name) is MISSING and _compare_slot(tb, rname) is MISSING:
        return native_op(vm, native, (a, b), provs)
    fa = lookup(ta, name)
    fb = lookup(tb, rname)  # unlike arithmetic, comparisons try the reflection for equal types too
    swapped = provs and provs[::-1]
    if fb is not MISSING and tb is not ta and issubclass(tb, ta):
        r = _call_compare(vm, fb, b, a, swapped)
        if r is not NotImplemented:
            return r
        fb = MISSING
    if fa is not MISSING:
        r = _call_compare(vm, fa, a, b, provs)
        if r is not NotImplemented:
            return r
    if fb is not MISSING:
        r = _call_compare(vm, fb, b, a, swapped)
        if r is not NotImplemented:
            return r
    if k == 2:
        return a is b
    if k == 3:
        return a is not b
    raise TypeError(f"'{symbol}' not supported between instances of '{ta.__name__}' and '{tb.__name__}'")


def _compare_slot(tp, name):
    """The Python function that decides ``name`` for ``tp`` (``__ne__`` defers to a Python ``__eq__``)."""
    if not tp.__flags__ & _HEAPTYPE:
        return MISSING
    f = lookup(tp, name)
    if type(f) is FunctionType:
        return f
    if name == "__ne__" and f is _object_ne and type(lookup(tp, "__eq__")) is FunctionType:
        return f
    return MISSING


def _call_compare(vm, f, x, y, provs=None):
    if f is _object_ne:
        eq = lookup(type(x), "__eq__")
        if type(eq) is FunctionType:
            _with(vm, provs)
            r = vm.call_function(eq, (x, y), None)
            return r if r is NotImplemented else not truth(vm, r)
    return _call_pair(vm, f, x, y, provs)


def _call_pair(vm, desc, x, y, provs):
    """A binary dunder of ``x``; ``provs``: the provenance of ``x`` and ``y`` (observer on), given
    only to a Python function (a native slot would leave it for the next call to pick up)."""
    if provs and type(desc) is FunctionType:
        vm.call_provs = (provs, {})
    return call_slot(vm, desc, x, y)


def native_op(vm, fn, args, provs=None):
    """``fn(*args)``, an operator built-in types implement: through the VM's ``native_hook`` when one is
    set (``provs``: the operands' provenance, observer on)."""
    hook = vm.native_hook
    if hook is None:
        return fn(*args)
    return hook(fn, args, None, None if provs is None else (tuple(provs), {}, None))


_UNARY = {"__neg__": operator.neg, "__pos__": operator.pos, "__invert__": operator.invert}


def unary_op(vm, a, name):
    f = python_slot(type(a), name)
    if f is None:
        return native_op(vm, _UNARY[name], (a,))
    return vm.call_function(f, (a,), None)


def truth(vm, x):
    """``bool(x)``, with a Python ``__bool__``/``__len__`` interpreted."""
    if x is True:
        return True
    if x is False or x is None:
        return False
    tp = type(x)
    if not tp.__flags__ & _HEAPTYPE:
        return bool(x)
    f = lookup(tp, "__bool__")
    if type(f) is FunctionType:
        r = vm.call_function(f, (x,), None)
        if type(r) is not bool:
            raise TypeError(f"__bool__ should return bool, returned {type(r).__name__}")
        return r
    if f is MISSING:
        f = lookup(tp, "__len__")
        if type(f) is FunctionType:
            return length_result(vm.call_function(f, (x,), None)) != 0
    return bool(x)


def length_result(r):
    """Check a Python ``__len__`` result as CPython does."""
    if type(r) is not int:
        r = operator.index(r)
    if r < 0:
        raise ValueError("__len__() should return >= 0")
    return r


def length(vm, x, prov=None):
    f = python_slot(type(x), "__len__")
    if f is None:
        return len(x)
    _with(vm, None if vm.observer is None else (prov,))
    return length_result(vm.call_function(f, (x,), None))


def get_iter(vm, x, prov=None):
    f = python_slot(type(x), "__iter__")
    if f is None:
        return iter(x)
    _with(vm, None if vm.observer is None else (prov,))
    it = vm.call_function(f, (x,), None)
    if lookup(type(it), "__next__") is MISSING:
        raise TypeError(f"iter() returned non-iterator of type '{type(it).__name__}'")
    return it



def get_item(vm, obj, key, provs=None):
    f = python_slot(type(obj), "__getitem__")
    if f is None:
        return obj[key] if vm.native_hook is None else native_op(vm, operator.getitem, (obj, key), provs)
    _with(vm, provs)
    return vm.call_function(f, (obj, key), None)


def set_item(vm, obj, key, value, provs=None):
    f = python_slot(type(obj), "__setitem__")
    if f is None:
        if vm.native_hook is None:
            obj[key] = value
        else:
            native_op(vm, operator.setitem, (obj, key, value), provs)
    else:
        _with(vm, provs)
        vm.call_function(f, (obj, key, value), None)


def delete_item(vm, obj, key):
    f = python_slot(type(obj), "__delitem__")
    if f is None:
        del obj[key]
    else:
        vm.call_function(f, (obj, key), None)


def contains(vm, container, item, provs=None):
    """``item in container``; ``provs`` (observer on): the provenance of ``item`` and ``container`` (in
    the order they were pushed), handed to a Python ``__contains__``."""
    f = python_slot(type(container), "__contains__")
    if f is None:
        return item in container
    _with(vm, None if provs is None else (provs[1], provs[0]))
    return truth(vm, vm.call_function(f, (container, item), None))
