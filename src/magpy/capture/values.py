"""Provenance markers and the small helpers every room of capture shares: what a value is (a tensor,
a scalar, a container holding tensors), how an access path or an expression is built, and the ``_event``
wrapper that turns a failure of capture into a fallback, never the user's error.
"""
import collections
import functools
import inspect
import itertools
import operator
import types
import weakref

import torch
import numpy as np

from ..errors import Unsupported
from ..interp import Observer
from ..interp.identity import IdentityDict, IdentitySet
from ..interp.protocols import is_heap, lookup, python_slot
from .sources import AttrSource, CellSource, Const, Expr, GlobalSource, ItemSource, Source, mentions_draw


class _Abandon(Exception):
    """Internal to the observer: unwinds out of an event once capture has given up."""


_SILENT = Observer()


def _event(default):
    """Event methods return ``default`` (computed from the call's outputs) after capture gave up.
    A failure of capture itself also ends capture, never the user's program.

    The wrapper takes the method's own parameters (made from its signature): a ``*args`` wrapper
    costs ten times as much per call, and capture receives some hundred thousand events."""
    def wrap(fn):
        def give_up(self, error, args):
            if error is not None:  # (else capture gave up already)
                if self.cap.unsupported is None:
                    frame = self.frame
                    self.cap.unsupported = Unsupported(
                        f"internal capture error in {fn.__name__}: {type(error).__name__}: {error}",
                        frame.filename if frame else None, frame.lineno if frame else None)
                self.stop_observing()
            return default(*args) if callable(default) else default

        params = list(inspect.signature(fn).parameters.values())[1:]
        names = ", ".join(p.name for p in params)
        spec = ", ".join(p.name if p.default is p.empty else f"{p.name}=_default_{k}"
                         for k, p in enumerate(params))
        source = (f"def {fn.__name__}(self, {spec}):\n"
                  f"    try:\n"
                  f"        return _method(self, {names})\n"
                  f"    except _Abandon:\n"
                  f"        return _give_up(self, None, ({names},))\n"
                  f"    except Exception as _error:  # a bug of ours must not become the user's error\n"
                  f"        return _give_up(self, _error, ({names},))\n")
        namespace = {"_method": fn, "_give_up": give_up, "_Abandon": _Abandon}  # (no parameter's names)
        namespace.update({f"_default_{k}": p.default for k, p in enumerate(params)})
        exec(compile(source, f"<capture event {fn.__name__}>", "exec"), namespace)
        event = namespace[fn.__name__]
        event.__doc__, event.__wrapped__ = fn.__doc__, fn
        return event
    return wrap


class _Unknown:
    def __repr__(self):
        return "UNKNOWN"


UNKNOWN = _Unknown()
_NOT_WRITTEN = object()
_DELETED = object()  # ``written``: the call deleted that attribute / global / cell


class _Row:
    """Provenance of the tensors native code gets by iterating a graph tensor (``enumerate(t)``): row
    ``index`` of ``t.unbind(0)``, bound to a graph node when the program uses it."""
    __slots__ = ("rows", "index")

    def __init__(self, rows, index):
        self.rows = rows
        self.index = index


class Traced:
    """Provenance of a Python value the graph computes from tensor data (``float(t)``, ``t.item()``,
    arithmetic on those): a graph node. It may feed tensor ops, more arithmetic, or the result; a
    program that branches on it or needs its exact value cannot be replayed (a graph break)."""
    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    def __repr__(self):
        return f"Traced({self.node.name})"
_SCALARS = (int, float, bool, str, bytes, complex, type(None))
_HEAPTYPE = 1 << 9
#: containers whose changes by the program capture replays (``mutations``)
_MUTABLE_CONTAINERS = (list, dict, set, collections.deque)
_IDENTITY_TYPES = (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type,
                   types.MethodDescriptorType, types.WrapperDescriptorType)


def _library_global(prov):
    """A global of torch's own modules (``F``, ``torch.relu``…): assumed not rebound between calls, as
    torch.compile assumes; the user's own globals are always guarded."""
    base = prov
    while hasattr(base, "base"):
        base = base.base
    if type(base) is GlobalSource:
        name = base.namespace.get("__name__", "")
        return name == "torch" or name.startswith("torch.")
    return False


def _library_constant(value, prov):
    """A function, class or module that is a global of torch's own modules: a constant."""
    return isinstance(value, _IDENTITY_TYPES) and _library_global(prov)


#: what a class may define in Python that looking at one of its instances would run. The rules are about
#: library callables: a natively called instance of such a class has none, and is looked at no further
#: (a table lookup, ``fn in (dict, list)`` or ``getattr(fn, "__func__", fn)`` would call its code).
_USER_PROTOCOLS = ("__eq__", "__hash__", "__getattr__", "__getattribute__")


def _has_user_protocols(fn):
    tp = type(fn)
    if not is_heap(tp) or isinstance(fn, type):
        return False
    return lookup(tp, "__hash__") is None or any(python_slot(tp, name) is not None for name in _USER_PROTOCOLS)


def _is_torch_callable(fn):
    module = getattr(fn, "__module__", None)
    if isinstance(module, str) and (module == "torch" or module.startswith("torch.")):
        return True
    owner = getattr(fn, "__objclass__", None) or type(getattr(fn, "__self__", None))
    return isinstance(owner, type) and issubclass(owner, torch._C.TensorBase)


def _immutable(value):
    """May the mock hand out this very object on every call (as a constant)?"""
    if isinstance(value, _SCALARS + _IDENTITY_TYPES + (torch.dtype, torch.device, torch.Size, range,
                                                         type(Ellipsis), type(NotImplemented))):
        return True
    if type(value) in (tuple, frozenset):
        return all(_immutable(v) for v in value)
    return isinstance(value, torch.nn.Module)  # a module is returned as itself (by identity)


def _python_constructed(cls):
    """Are ``cls(...)``'s ``__new__`` or ``__init__`` Python code (so the VM ran them)?"""
    if not cls.__flags__ & (1 << 9):
        return False
    init = lookup(cls, "__init__")
    new = lookup(cls, "__new__")
    if type(new) is staticmethod:
        new = new.__func__
    # (neither: ``cls()`` is an empty new object the VM makes, ``interp.calls._instantiate``)
    return type(init) is types.FunctionType or type(new) is types.FunctionType or \
        (lookup(type(cls), "__call__") is type.__call__ and new is object.__new__ and init is object.__init__)


def _plain_data(value):
    """A tuple, list (or ``torch.Size``) of scalars and such: compared by value in a guard."""
    return type(value) in (tuple, list, torch.Size) and all(
        isinstance(v, _SCALARS) or type(v) is slice or v is Ellipsis or _plain_data(v) for v in value)


def _same_array(a, b):
    """The same numpy array value: type, dtype, shape and every element."""
    return type(a) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))


def _copy_data(tensor, value):
    """``tensor.data = value`` as the graph replays it: the same values, in place, outside autograd."""
    with torch.no_grad():
        tensor.copy_(value)


def _layout(array):
    """An array's dtype and shape, as plain values."""
    return array.dtype.str, array.shape


def _dereference(ref):
    return ref()


def _bound_self(fn):
    """The object a bound method is bound to (None for functions, and for classes, whose ``__self__``
    is a descriptor of their instances)."""
    return None if isinstance(fn, type) else getattr(fn, "__self__", None)


def _is_python_code(fn):
    return type(fn) in (types.FunctionType, types.MethodType, functools.partial)


def _user_made(obj):
    """An instance of a Python class (a ``list`` subclass …): a provenance of None says only that the
    program made it, not that what it holds is constant."""
    return bool(type(obj).__flags__ & (1 << 9)) and type(obj) not in (list, tuple, dict, set, frozenset)


def _replayable_path(prov):
    """A path or pure expression over the entry state (``xs[1]``, ``(xs * 2)[3]``) the entry program can
    evaluate to find a tensor."""
    return isinstance(prov, Source) or (type(prov) is Expr and not mentions_draw(prov))


#: torch's grad-mode context managers: a ``__new__`` of their own (for use as decorators), plain state
_GRAD_CONTEXTS = frozenset({torch.no_grad, torch.enable_grad, torch.set_grad_enabled, torch.inference_mode})


def _rebuildable(cls):
    """Can the mock make a fresh ``cls`` object and set its state (``object.__new__`` + ``__dict__``)?"""
    if cls in _GRAD_CONTEXTS:
        return True
    if not cls.__flags__ & (1 << 9) or lookup(cls, "__new__") is not object.__new__ or \
            isinstance(cls, type(torch.nn.Module)) and issubclass(cls, torch.nn.Module):
        return False
    return all(set(c.__dict__.get("__slots__", ())) <= {"__dict__", "__weakref__"} for c in cls.__mro__)


def _rebuildable_mapping(cls):
    """Can the mock make a fresh ``cls`` (a Python subclass of dict or OrderedDict) and give it items and
    attributes (``dict.__new__`` + the base class's ``__setitem__`` + ``__dict__``), with no ``__init__``?"""
    return cls not in (dict, collections.OrderedDict) and issubclass(cls, dict) and \
        bool(cls.__flags__ & (1 << 9)) and lookup(cls, "__new__") is dict.__new__ and \
        cls.__mro__[-2] is dict and \
        all(set(c.__dict__.get("__slots__", ())) <= {"__dict__", "__weakref__"} for c in cls.__mro__)


def _on_grad_fn(tensor, method, hook):
    """Replays ``tensor.grad_fn.register_hook(hook)`` (or another ``GRAD_FN_HOOKS`` method)."""
    return getattr(tensor.grad_fn, method)(hook)


def _held_state(source):
    """Is ``source`` a path to state an object or module holds (an attribute somewhere on the way),
    not to an argument or an element of one?"""
    while source is not None:
        if type(source) in (AttrSource, GlobalSource, CellSource):
            return True
        source = getattr(source, "base", None)
    return False


#: list methods that move elements without computing from them (see ``_rearranged``)
_LIST_REARRANGES = {"insert", "pop", "extend", "reverse", "clear"}

_ALL = frozenset(range(64))  # every dim (of a node that is no tensor: a tuple of them)


def _flat_tensors(value):
    """The tensors in ``value`` (a tensor, or nested tuples/lists of them), in order."""
    if _is_tensor(value):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _flat_tensors(v)]
    return []


#: what a graph op may be handed as itself (guarded by identity), not as a graph value
_PASSED_BY_IDENTITY = (torch.nn.Module, types.FunctionType, types.MethodType, type)


def _with_fixed(fn, fixed, n):
    """``fn`` taking its ``n`` positional arguments with those at ``fixed`` (position -> value) bound."""
    def call(*rest, **kwargs):
        it = iter(rest)
        return fn(*[fixed[k] if k in fixed else next(it) for k in range(n)], *it, **kwargs)
    return call


def _holds_tensor(x):
    return _is_tensor(x) or (isinstance(x, (tuple, list)) and any(_holds_tensor(v) for v in x))


def _is_tensor(x):
    return isinstance(x, torch.Tensor)


def _build_tuple(*items):
    return items


def _build_list(*items):
    return list(items)


def _build_deque(maxlen, *items):
    return collections.deque(items, maxlen)


def _hkey(key):
    """A hashable stand-in for a container key (slices hash only from Python 3.12 on)."""
    if type(key) is slice:
        return ("slice", key.start, key.stop, key.step)
    return tuple(map(_hkey, key)) if type(key) is tuple else key


def _has_own(obj, name):
    """Does ``obj``'s instance dict hold ``name`` (shadowing a method of its class)?"""
    d = getattr(obj, "__dict__", None)
    return d is not None and name in d


def _fixed_keyword(value):
    """A keyword argument a guard may hold on to: a constant, or a function that closes over nothing."""
    if type(value) is types.FunctionType:
        return value.__closure__ is None
    return _immutable(value)


def _with_keywords(fn, kwargs, computed=()):
    """``fn`` with keyword arguments: the constant ones bound, the ``computed`` ones (names) taken as the
    last positional arguments."""
    if computed:
        n = len(computed)

        def call(*args):
            return fn(*args[:-n], **kwargs, **dict(zip(computed, args[-n:])))
    else:
        def call(*args):
            return fn(*args, **kwargs)
    shown = [f'{k}={v!r}' for k, v in kwargs.items()] + [f'{k}=…' for k in computed]
    call.__qualname__ = f"{getattr(fn, '__qualname__', fn)}[{', '.join(shown)}]"
    return call


def _build_set(*items):
    return set(items)


def _pinned(value, prov):
    """Is ``value``'s identity the same on every replay: a constant or object made by the program, a
    tensor (input tensors are guarded as distinct or as the same), or an object guarded by identity?"""
    return prov is None or _is_tensor(value) or (
        isinstance(value, _IDENTITY_TYPES + (torch.nn.Module,)) and isinstance(prov, Source))


def _fixed_by_construction(e):
    """Does expression ``e`` ask only what a container built by the entry program always answers the
    same (its length, a dict's keys): no guard needed."""
    if type(e) is not Expr or not e.args or type(e.args[0]) is not Expr:
        return False
    built = e.args[0].fn
    return (e.fn is len and built in (_build_list, _build_tuple, _build_dict, _build_deque)) or \
        (built is _build_dict and (e.fn is tuple or (e.fn is operator.contains and type(e.args[1]) is Const)))


def _item_of(prov, key):
    """The provenance of ``value[key]`` for a value of provenance ``prov``; an item of a container the
    entry program would build (``_build_dict(keys, *values)``) is that element's own provenance."""
    if isinstance(prov, Source):
        return ItemSource(prov, key)
    if type(prov) is Expr and prov.fn in (_build_list, _build_tuple) and type(key) is int and \
            -len(prov.args) <= key < len(prov.args):
        return prov.args[key]
    if type(prov) is Expr and prov.fn is _build_dict and type(prov.args[0]) is Const:
        keys = prov.args[0].value
        try:
            return prov.args[1 + keys.index(key)]
        except ValueError:
            pass
    return Expr(operator.getitem, (prov, Const(key)))


def _build_dict(keys, *values):
    return dict(zip(keys, values))

#: builtins whose answer depends only on their arguments' types
_TYPE_QUERIES = IdentitySet([isinstance, issubclass, type, callable])
#: what ``reversed`` makes of ranges, lists and other sequences
_REVERSED_ITERATORS = (type(reversed(range(0))), type(reversed([])), reversed)
#: iterators whose items the VM may compute (a generator; a map or filter object around one)
_RUN_ITERATORS = (types.GeneratorType, map, filter)

#: torch functions that make a tensor from a numpy array
_FROM_ARRAY = IdentitySet([torch.from_numpy, torch.as_tensor, torch.tensor, torch.asarray, torch.Tensor,
                           torch.FloatTensor])

#: template kinds of the containers the mock rebuilds
_CONTAINER_KINDS = {list: "list", dict: "dict", collections.OrderedDict: "odict"}

_DICT_VIEWS = IdentityDict([(dict.keys, "keys"), (dict.values, "values"), (dict.items, "items"),
                            (collections.OrderedDict.keys, "keys"), (collections.OrderedDict.values, "values"),
                            (collections.OrderedDict.items, "items")])
#: containers of modules whose ``__iter__`` yields their children in order
_MODULE_SEQUENCE_ITERS = IdentitySet([torch.nn.ModuleList.__iter__, torch.nn.Sequential.__iter__])
#: ... and how they are read as sequences (``reversed``)
_MODULE_SEQUENCE_ITEMS = IdentitySet([torch.nn.ModuleList.__getitem__, torch.nn.Sequential.__getitem__])
_MODULE_SEQUENCE_LENGTHS = IdentitySet([torch.nn.ModuleList.__len__, torch.nn.Sequential.__len__])

_BOUND_METHODS = (types.MethodType, types.BuiltinMethodType)
_SHAPE_TRACED = object()  # ``dynamic_metadata`` listed a shape's elements in ``contents``

#: itertools functions yielding tuples of their arguments' elements (``_combinatoric``)
_COMBINATORICS = IdentitySet([itertools.combinations, itertools.permutations,
                              itertools.combinations_with_replacement, itertools.product])


class WeaklyHeld:
    """``id -> object`` of objects the call made or wrote, holding them no longer than the program does.

    An object's lifetime can be its effect: torch's guards undo theirs when collected (``guard =
    torch._C._DisableFuncTorch()`` in ``Tensor.__str__``), a weak dictionary loses the entry, a ``__del__``
    or a weakref callback runs. Held here past the frame that dropped them, functorch stayed off until the
    garbage collector ran, at a moment no program chose. So objects that take weak references are held
    weakly (a dead one's id, reused by a new object, then finds nothing), the rest (lists, dicts, tuples: no
    finalizer of their own) strongly. ``len``: entries ever made (a count of changes, never going down).
    """

    __slots__ = ("_weak", "_strong")

    def __init__(self):
        self._weak, self._strong = {}, {}

    def __setitem__(self, key, obj):
        try:
            self._weak[key] = weakref.ref(obj)
        except TypeError:
            self._strong[key] = obj
        else:
            self._strong.pop(key, None)

    def get(self, key):
        held = self._weak.get(key)
        if held is not None:
            found = held()
            if found is not None:
                return found
        return self._strong.get(key)

    def values(self):
        """The objects still alive."""
        alive = [ref() for ref in self._weak.values()]
        return [obj for obj in alive if obj is not None] + list(self._strong.values())

    def __len__(self):
        return len(self._weak) + len(self._strong)
