"""Calls of built-in classes' own methods whose effect capture knows, whatever subclass they are reached on.

``super().get(k)`` / ``super().__setitem__(k, v)`` in a dict subclass (a registry, a ModelOutput) is dict's own
method, not the subclass's: what it does is read or set an item. ``d.copy()`` and ``dict.fromkeys`` make
containers holding known values; ``object.__reduce_ex__`` (``copy.deepcopy`` of a plain object) is the object's
class and its ``__dict__``; the ``__dict__`` of an object the call made is its attribute table. Each rule says
when it applies; anything else goes on to the other rules in ``calls``.
"""
import collections
import operator
import types

from .guards import TruthGuard, TypeGuard
from .iteration import _elements
from .sources import AttrSource, Const, Expr, Source
from .values import UNKNOWN, _DELETED, _NOT_WRITTEN, _bound_self, _is_tensor


def _is_dict_method(fn, d, name):
    """True when ``fn`` is dict's own method ``name``, unbound or bound to ``d`` (``super().get`` in a dict
    subclass, or ``d.get`` of one that does not define its own): what it does is dict's, whatever the
    subclass overrides. (Bound builtin methods are equal when their self is the same object.)"""
    method = dict.__dict__[name]
    if fn is method:
        return True
    return type(fn) is types.BuiltinMethodType and _bound_self(fn) is d and fn == method.__get__(d)


#: a built-in class's method taken from the class (``dict.get``, ``OrderedDict.__setitem__``)
_UNBOUND_BUILTINS = (types.MethodDescriptorType, types.WrapperDescriptorType)


def _builtin_owner(fn, args):
    """The built-in class whose own method ``fn`` is: bound (``super().__setitem__`` in a dict subclass,
    whatever the subclass overrides) or unbound (``OrderedDict.__setitem__(d, k, v)``); None otherwise."""
    name = getattr(fn, "__name__", None)
    if type(fn) in _UNBOUND_BUILTINS:
        owner = fn.__objclass__
        return owner if not owner.__flags__ & (1 << 9) and args and isinstance(args[0], owner) else None
    obj = _bound_self(fn)
    if obj is None or name is None or type(fn) not in (types.BuiltinMethodType, types.MethodWrapperType):
        return None
    for cls in type(obj).__mro__:
        method = cls.__dict__.get(name)
        if method is not None and not cls.__flags__ & (1 << 9) and hasattr(method, "__get__"):
            return cls if method.__get__(obj, cls) == fn else None
    return None


def _bound_call(fn, args, arg_provs):
    """``(target, *operands, operand provenance)`` of a method call, bound or unbound."""
    if type(fn) in _UNBOUND_BUILTINS:
        return (*args, arg_provs[1:])
    return (_bound_self(fn), *args, arg_provs)


def _reads_as_dict(cls):
    """A guard reads an item back as ``d[key]`` and tests a key as ``key in d``: only where the class keeps
    dict's own lookups do those see what dict's methods saw."""
    return cls.__getitem__ is dict.__getitem__ and cls.__contains__ is dict.__contains__


#: containers whose ``copy()`` holds the same values
_COPIED = (dict, collections.OrderedDict, list)
_REDUCTION_HOOKS = ("__reduce_ex__", "__reduce__", "__getstate__", "__getnewargs__", "__getnewargs_ex__")


def _reduces_as_object(cls):
    """Does ``object.__reduce_ex__`` reduce instances of ``cls`` with no code of the class's own running?"""
    if not cls.__flags__ & (1 << 9) or issubclass(cls, (list, dict, tuple)) or any(
            set(c.__dict__.get("__slots__", ())) - {"__dict__", "__weakref__"} for c in cls.__mro__):
        return False
    return all(getattr(cls, name, None) is getattr(object, name, None) for name in _REDUCTION_HOOKS)


#: OrderedDict's own methods that read what dict's do, in its order
_ORDERED_READS = ("items", "keys", "values")


class BuiltinMethods:

    """Built-in methods reached through subclasses, ``super()``, copies and reductions (a mixin of ``Calls``)."""

    def builtin_method(self, fn, args, arg_provs, kwargs, result):
        """The provenance of the result of a built-in method call these rules know, or ``_NOT_WRITTEN``."""
        name = getattr(fn, "__name__", None)
        if name == "get":
            return self._mapping_get(fn, args, arg_provs, kwargs, result)
        if name == "copy":
            return None if self._container_copy(fn, args, arg_provs, kwargs, result) else _NOT_WRITTEN
        if name == "__reduce_ex__":
            return self._object_reduction(fn, args, kwargs, result)
        if name == "fromkeys" and any(_bound_self(fn) is c for c in _COPIED[:2]) and 1 <= len(args) <= 2 \
                and not kwargs:
            return self._dict_fromkeys(args, arg_provs, result)
        if fn is vars and len(args) == 1 and not kwargs and self.made.get(id(args[0])) is args[0]:
            return self.attribute_table(args[0], result)
        if fn is vars and len(args) == 1 and not kwargs and type(result) is dict:
            self.dict_owners[id(result)] = (result, args[0])  # (then its pure rule gives its provenance)
        owner = _builtin_owner(fn, args)
        call = _bound_call(fn, args, arg_provs) if owner in (dict, collections.OrderedDict) and not kwargs else ()
        made = self.table_owner(call[0]) if call else None
        if made is not None and name in ("pop", "__delitem__") and len(call) >= 3:
            self.need(call[1], call[-1][0])  # ``obj.__dict__.pop(name, None)``: the attribute is gone
            if call[1] not in vars(made):
                self.written[(id(made), call[1])] = _DELETED
            return _NOT_WRITTEN  # (the table's own contents follow the pop as any dict's do)
        if made is not None and name in ("setdefault", "popitem", "clear"):
            self.unsupported(f"{name}() on the attribute table of a new object")
        if name == "update" and owner is dict and len(call) == 3:
            table, mapping, provs = call
            made = self.table_owner(table)
            if made is not None:  # ``obj.__dict__.update(state)`` (copy's ``_reconstruct``): attributes set
                if type(mapping) is not dict:
                    self.unsupported("attributes of a new object set from a mapping MagPy cannot follow")
                for key, prov in self._dict_provs(mapping, provs[0]).items():
                    self.written[(id(made), key)] = prov
                    self.table_changed(made, key, prov)
                return None
        if name == "__getitem__" and len(call) == 3:
            return self._base_item(*call)
        if name == "__setitem__" and len(call) == 4 and self.provenance_of(call[0]) is None:
            # dict's own ``__setitem__`` on a dict the call made (``super().__setitem__(k, v)`` in a
            # ModelOutput): as ``d[k] = v`` at the base class's level
            target, key, value, provs = call
            self.write_item(target, None, key, provs[0], value, provs[1])
            return None
        return _NOT_WRITTEN

    def _on_rebuilt(self, method, obj):
        """The function answering ``method`` (of ``obj``'s class) on what ``effective`` rebuilds ``obj`` as
        (a plain list, tuple, set or dict of what it holds), or None. An OrderedDict's reads are dict's on
        a dict of the same items in the same order."""
        owner = getattr(method, "__objclass__", None)
        if owner in (list, tuple, set, dict):
            return method
        name = getattr(method, "__name__", "")
        entry = self.contents.get(id(obj))
        if owner is collections.OrderedDict and name in _ORDERED_READS and entry is not None and \
                entry[0] is obj and type(entry[1]) is dict and list(entry[1]) == list(obj):
            return getattr(dict, name)
        return None

    def _mapping_get(self, fn, args, arg_provs, kwargs, result):
        """``d.get(key[, default])`` (bound, unbound or through ``super()``) is a read of ``d[key]``, or the
        default while the key stays missing. ``_NOT_WRITTEN`` when the call is no such read."""
        if getattr(fn, "__name__", None) != "get" or kwargs:
            return _NOT_WRITTEN
        self_obj = _bound_self(fn)
        if self_obj is not None:
            d, d_prov, rest, rest_provs = self_obj, self.provenance_of(self_obj), args, arg_provs
        elif getattr(fn, "__objclass__", None) is dict and args:
            d, d_prov, rest, rest_provs = args[0], arg_provs[0], args[1:], arg_provs[1:]
        else:
            return _NOT_WRITTEN
        if not isinstance(d, dict) or not 1 <= len(rest) <= 2 or _is_tensor(rest[0]) \
                or not _is_dict_method(fn, d, "get") or not _reads_as_dict(type(d)):
            return _NOT_WRITTEN
        key, key_prov = rest[0], rest_provs[0]
        owner = self.table_owner(d)
        if owner is not None:  # ``obj.__dict__.get(name)`` of an object the call made: its attribute
            self.need(key, key_prov)
            if dict.__contains__(d, key):
                return self.read_attr(owner, None, key, result)
            return rest_provs[1] if len(rest) == 2 else None
        if d_prov is UNKNOWN:
            self.unsupported("get() on a dict of unknown origin")
        self.need(key, key_prov)  # (which item)
        if dict.__contains__(d, key):
            return self.read_item(d, d_prov, key, key_prov, result)
        if isinstance(d_prov, Source) and not self.contents.changed_outside(d):
            self.guard(TruthGuard(Expr(operator.contains, (d_prov, Const(key))), False))
        elif d_prov is not None and not isinstance(d_prov, Source):
            return _NOT_WRITTEN
        return rest_provs[1] if len(rest) == 2 else None

    def _base_item(self, d, key, provs):
        """dict's own ``__getitem__`` on a dict subclass (``super().__getitem__(k)`` in a table that builds
        what it hands out from what it holds): a read of the item as dict stores it. A guard reads it back
        the same way where the class has a ``__getitem__`` of its own (``d[k]`` would run that).
        ``_NOT_WRITTEN`` for a dict whose contents capture follows otherwise (an outside one it changed)."""
        d_prov = self.provenance_of(d)
        value = dict.__getitem__(d, key)  # (it returned: the key is there)
        if d_prov is None or (_reads_as_dict(type(d)) and d_prov is not UNKNOWN):
            return self.read_item(d, d_prov, key, provs[0], value)
        if not isinstance(d_prov, Source) or self.contents.changed_outside(d):
            return _NOT_WRITTEN
        self.need(key, provs[0])  # (which item)
        self.deref(d, d_prov)
        prov = Expr(dict.__getitem__, (d_prov, Const(key)))
        self.on_read(value, prov)
        return prov

    def _set_reduction(self, fn, s, result):
        """``s.__reduce_ex__(protocol)`` of a built-in set (``copy.deepcopy`` reaches it): a tuple made here of
        the set's class and a list made here of what it yields (as its iteration is followed)."""
        if type(result) is not tuple or len(result) != 3 or result[0] is not type(s) or \
                type(result[1]) is not tuple or len(result[1]) != 1 or type(result[1][0]) is not list or \
                result[2] is not None:
            return _NOT_WRITTEN
        bound = self.bound_from.get(id(fn))  # (``getattr(x, "__reduce_ex__")``: bound to x read by its path)
        items = _elements(self, s, bound[1] if bound is not None and bound[0] is fn else self.provenance_of(s))
        if items is None or len(items) != len(result[1][0]) or any(type(p) is tuple for p in items):
            return _NOT_WRITTEN
        self.contents[id(result[1][0])] = (result[1][0], list(items))
        for made in (result, result[1], result[1][0]):
            self.made[id(made)] = made
        return None

    def _dict_fromkeys(self, args, arg_provs, result):
        """``dict.fromkeys(keys, value)``: a new dict whose keys are the iterable's (fixed by the guards of
        where they came from) and whose every value is ``value`` itself."""
        keys = _elements(self, args[0], arg_provs[0])
        if keys is None or len(keys) != len(result) or any(type(k) is tuple for k in keys):
            return UNKNOWN
        for key, prov in zip(result, keys):
            self.need(key, prov)
        value_prov = arg_provs[1] if len(args) == 2 else None
        self.contents[id(result)] = (result, dict.fromkeys(result, value_prov))
        return None

    def _container_copy(self, fn, args, arg_provs, kwargs, result):
        """``d.copy()`` / ``xs.copy()`` (bound or unbound) of a dict, OrderedDict or list whose contents capture
        knows: a new container holding the same values, with their provenance. False when the call is not
        that (or the container is an outside one the call changed: its shadow, not its path, says what it
        holds)."""
        if getattr(fn, "__name__", None) != "copy" or kwargs:
            return False
        obj = _bound_self(fn)
        if obj is None and getattr(fn, "__objclass__", None) in _COPIED and len(args) == 1:
            obj, prov = args[0], arg_provs[0]
        elif obj is not None and not args:
            prov = self.provenance_of(obj)
        else:
            return False
        if type(obj) not in _COPIED or type(result) is not type(obj) or result is obj or prov is UNKNOWN or \
                (prov is not None and not isinstance(prov, Source)) or \
                (isinstance(prov, Source) and self.contents.changed_outside(obj)):
            return False
        provs = self._element_provs(obj, prov) if type(obj) is list else self._dict_provs(obj, prov)
        self.contents[id(result)] = (result, list(provs) if type(obj) is list else dict(provs))
        return True

    def _object_reduction(self, fn, args, kwargs, result):
        """``x.__reduce_ex__(protocol)`` as ``copy``/``pickle`` call it, where ``x``'s class keeps object's own
        reduction (no Python ``__reduce*__``/``__getstate__``/``__getnewargs*__``, no slots): a tuple made
        here of ``copyreg.__newobj__``, ``(type(x),)`` and ``x.__dict__`` itself. ``_NOT_WRITTEN`` when the
        call is not that, or when ``x`` is neither an outside object read by a path nor one the call made."""
        if getattr(fn, "__name__", None) != "__reduce_ex__" or kwargs:
            return _NOT_WRITTEN
        obj = _bound_self(fn)
        if obj is None and getattr(fn, "__objclass__", None) is object and args:
            obj, args = args[0], args[1:]
        if obj is not None and type(obj) in (set, frozenset) and len(args) == 1 and type(args[0]) is int:
            return self._set_reduction(fn, obj, result)
        if obj is None or len(args) != 1 or not isinstance(args[0], int) or args[0] < 2 or \
                not _reduces_as_object(type(obj)) or type(result) is not tuple or len(result) != 5 or \
                result[1] != (type(obj),) or result[2] is not getattr(obj, "__dict__", None) or \
                result[3:] != (None, None):
            return _NOT_WRITTEN
        prov = self.provenance_of(obj)
        if prov is None and self.made.get(id(obj)) is obj:
            state = self.attribute_table(obj, result[2])  # (an object the call made: its attribute table)
        elif isinstance(prov, (Source, Expr)):
            self.guard(TypeGuard(prov, type(obj)))  # (the class in the tuple)
            state = AttrSource(prov, "__dict__") if isinstance(prov, Source) else \
                Expr(getattr, (prov, Const("__dict__")))
        else:
            return _NOT_WRITTEN
        self.contents[id(result)] = (result, [None, None, state, None, None])
        return None
