"""The capture observer: watches one call in the VM and produces a ``Capture``.

Provenance of each value (carried by the VM per slot):
    a Source / Expr   the value came from outside, by that path or pure computation over such paths
    None              a constant, or computed from constants and from tensors' static metadata
    UNKNOWN           capture lost track (an unknown native call on outside values): using such a
                      value where a guard is needed is unsupported
Tensors are tracked by identity: each outside tensor becomes a graph input (by its Source) and each
tensor operation a node. Consuming a derived Python value (a branch, a constant argument of a tensor
op, a returned value) adds the guard that makes the reuse safe. Writes to outside objects become
side effects replayed after the graph runs.
"""
import builtins
import collections
import functools
import inspect
import itertools
import random as _random
import sys
import operator
import types
import warnings
import weakref

import numpy as np
import torch
import torch.utils.checkpoint
from torch import fx

from ..errors import Unsupported
from ..interp import Observer, VM, register_lookaside, register_call_instead
from ..interp.tracking import NOT_RETURNED
from ..interp.identity import IdentityDict, IdentitySet
from ..interp.lookaside import CALL_INSTEAD
from ..interp.protocols import NATIVE_BINARY, NATIVE_COMPARE, is_heap, lookup, python_slot
from . import predicates, rules, vf
from .guards import TypeGuard, IdGuard, ValueGuard, TruthGuard, NoneGuard, TensorGuard
from .sources import Source, ArgSource, GlobalSource, AttrSource, ItemSource, CellSource, DrawSource, Expr, \
    Const, mentions_draw


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
                self.vm.observer = _SILENT
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
    return type(init) is types.FunctionType or (type(new) is staticmethod and
                                                 type(new.__func__) is types.FunctionType)


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


def _rebuildable(cls):
    """Can the mock make a fresh ``cls`` object and set its state (``object.__new__`` + ``__dict__``)?"""
    if not cls.__flags__ & (1 << 9) or lookup(cls, "__new__") is not object.__new__ or \
            isinstance(cls, type(torch.nn.Module)) and issubclass(cls, torch.nn.Module):
        return False
    return all(set(c.__dict__.get("__slots__", ())) <= {"__dict__", "__weakref__"} for c in cls.__mro__)


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
    return (e.fn is len and built in (_build_list, _build_tuple, _build_dict)) or \
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


class Capture:
    """What one observed call produced (consumed by ``emit``)."""

    def __init__(self):
        self.graph = fx.Graph()
        self.inputs = []          # (Source, example tensor) per graph placeholder, in order
        self.outputs = []         # fx nodes returned by the graph, in order
        self.guards = {}          # key -> Guard
        self.side_effects = []    # (kind, target expr, name/key, value template)
        self.pre_graph = 0        # how many side effects came before the first graph op
        self.result_template = None
        self.unsupported = None   # an Unsupported, when capture must give up
        self.op_count = 0
        self.draws = []           # (native random function, constant arguments) per draw, in order
        self.host_values = False  # the graph computes or takes Python numbers, or shapes from data
        self.checks = []          # (output index, truth): conditions on random data, checked after the graph
        self.autograd_nodes = False  # side effects act on the autograd nodes of graph tensors: the graph
                                     # must run op by op (a compiled graph has one node for all of them)


class _Contents(dict):
    """``CaptureObserver.contents``: also lists outside lists the program appended to. Their elements are
    the entry list's items followed by the appended values; the length of the entry list is guarded
    only once the program reads the list (a list that only grows, like a history, needs no guard)."""

    def __init__(self, observer):
        super().__init__()
        self.observer = observer
        self.grown = {}           # id(outside list) -> (list, its path, length on entry, appended provs)
        self.outside = set()      # ids of outside lists whose contents are tracked here (they changed)

    def changed_outside(self, obj):
        return id(obj) in self.grown or id(obj) in self.outside

    def grow(self, key, entry):
        self.grown[key] = entry
        self.get = self._get_grown  # (until then lookups are the dict's own: capture makes very many)

    def _get_grown(self, key, default=None):
        grown = self.grown.pop(key, None)
        if grown is not None:
            target, prov, n, added = grown
            self.observer.guard(ValueGuard(Expr(len, (prov,)), n))
            self[key] = (target, [ItemSource(prov, k) for k in range(n)] + added)
            self.outside.add(key)
            if not self.grown:
                del self.get
        return dict.get(self, key, default)


class _TensorNodes:
    """``id(tensor) -> (tensor, node)`` for the tensors the graph computes, holding them weakly: capture
    must not keep every activation of the call alive (eager frees them as it goes). A dead tensor's
    entry is gone, so an id used again by a new tensor finds nothing."""

    def __init__(self):
        self._entries = {}

    def get(self, key, default=None):
        entry = self._entries.get(key)
        if entry is None:
            return default
        tensor = entry[0]()
        if tensor is None:
            del self._entries[key]
            return default
        return tensor, entry[1]

    def __setitem__(self, key, value):
        self._entries[key] = (weakref.ref(value[0]), value[1])

    def __contains__(self, key):
        return self.get(key) is not None

    def forget_sharing(self, kept, other):
        """Forget every tensor but ``kept`` that shares storage with ``kept`` or ``other``."""
        storages = {t.untyped_storage().data_ptr() for t in (kept, other)}
        for key, (ref, _) in list(self._entries.items()):
            t = ref()
            if t is not None and t is not kept and t.layout is torch.strided and \
                    t.untyped_storage().data_ptr() in storages:
                del self._entries[key]


class CaptureObserver(Observer):
    def __init__(self, fn_globals):
        self.cap = Capture()
        self.nodes = _TensorNodes()  # id(tensor) -> (tensor, node), weakly
        self.contents = _Contents(self)  # id(container made inside) -> (container, element provs)
        self.written = {}         # (id(obj), name) -> prov of the value the program stored there
        self.input_paths = {}     # id(graph input tensor) -> the path it was first read by
        # outside reads already guarded: (id(globals), name) -> (value, prov) and
        # (id(obj), name) -> (obj, value, obj_prov, prov)
        self.reads = {}
        self.grad_fns = {}        # id(grad_fn of a tensor the graph makes) -> (grad_fn, tensor, prov)
        self.made_arrays = {}     # id(numpy array a pure call made from outside values) -> (array, prov, copy)
        self.frame = None         # the innermost frame an event came from (for messages)
        self.root = None

    # ---- failure ---------------------------------------------------------------------------------
    def unsupported(self, reason, frame=None):
        """Give up on replaying this call. The program itself runs on to its real end (its first call
        must still happen exactly once); observation stops here."""
        frame = frame or self.frame
        if self.cap.unsupported is None:
            self.cap.unsupported = Unsupported(reason, frame.filename if frame else None,
                                               frame.lineno if frame else None)
        self.vm.observer = _SILENT
        raise _Abandon

    # ---- guards ------------------------------------------------------------------------------------
    def guard(self, g):
        if not _fixed_by_construction(g.expr):
            self.cap.guards.setdefault(g.key(), g)

    def need(self, value, prov, frame=None):
        """The program depends on ``value`` exactly (a branch, a graph constant, a stored value)."""
        if prov is None:
            prov = self.effective(value, None)
        if prov is None or _is_tensor(value):
            return
        if prov is UNKNOWN:
            self.unsupported("a value computed by a call MagPy has no rule for decides the program's "
                             "behaviour", frame)
        if type(prov) is Traced:
            self.pin(prov, value, frame)
            return
        if value is None:
            self.guard(NoneGuard(prov, True))
        elif isinstance(value, _SCALARS) or type(value) in (range, slice) or _plain_data(value):
            self.guard(ValueGuard(prov, value))
        elif isinstance(value, _IDENTITY_TYPES) or isinstance(value, torch.nn.Module):
            if not _library_global(prov) and not self._fresh_binding(value, prov):
                self.guard(IdGuard(prov, value))
        elif isinstance(value, (torch.dtype, torch.device, torch.memory_format, torch.layout)) or (
                type(value).__module__ == "numpy" and getattr(value, "shape", None) == ()):
            self.guard(ValueGuard(prov, value))  # (numpy scalars: same type, equal value)
        elif type(value) is np.ndarray:
            self.guard(TruthGuard(Expr(_same_array, (prov, Const(value.copy()))), True))
        elif type(value) is tuple and isinstance(prov, (Source, Expr)):
            # ``d.setdefault((self, "pa"), …)``: each element, by value or identity
            for v, p in zip(value, self._element_provs(value, prov)):
                if type(p) is not Const:
                    self.need(v, p, frame)
        else:
            self.unsupported(f"the program depends on the exact value of a {type(value).__name__} "
                             "read from outside", frame)

    def pin(self, prov, value, frame=None):
        """A number the graph computes (``t.item()``, a size that depends on data) must be this exact
        value for the program to go the way it went: a condition the guard checks by rerunning its
        computation (``predicates``)."""
        if type(value) not in (int, float, bool):
            self.unsupported("a Python value computed from tensor data decides the program's behaviour "
                             "(graph break)", frame)
        # (a number drawn at random — ``torch.randint(0, 4, ()).item()`` rotations — is checked after
        # the graph runs instead, as a branch on random data is)
        self.data_branch(self.cap.graph.call_function(operator.eq, (prov.node, value)), True, frame or self.frame)

    def numpy_of(self, tensor):
        """``t.numpy()``: of a small tensor the guards can recompute (a mask kept in a module's state), a
        constant while the guard's rerun of ``t`` gives the same numbers; else an array the graph computes."""
        node = self.node_of(tensor)
        small = tensor.numel() <= rules.PINNED_DATA_LIMIT and not tensor.is_complex() and \
            (not tensor.is_floating_point() or bool(torch.isfinite(tensor).all()))
        needed = predicates.ancestry([node]) if small else None
        # only state (``self.mask``), not the call's data: a guard on data would miss on every call
        if needed is None or not all(_held_state(self.cap.inputs[int(n.name[2:])][0])
                                     for n in needed if n.op == "placeholder"):
            # the call's own data: an array the graph computes, as ``t.item()``'s number is. It may
            # feed torch (``pack_padded_sequence(x, lengths.numpy())``) or pure numpy (computed in the
            # graph too); Python deciding anything from it, or writing into it, is a graph break
            return self.host_value(self.cap.graph.call_method("numpy", (node,)))
        values = tuple(tensor.detach().flatten().tolist())
        self.conditions.append((self.cap.graph.call_function(predicates.equals_values, (node, values)), True))
        return None

    def on_read(self, value, prov):
        """A value read from outside by path ``prov``: tensors become graph inputs; functions, classes,
        modules and nn.Modules are guarded by identity. Other objects get a type guard only when the
        program reads through them (``deref``); plain values only where the program depends on them."""
        if prov is None or prov is UNKNOWN:
            return
        if not isinstance(value, _SCALARS) and isinstance(prov, Source):
            self.sources_of.setdefault(id(value), (value, prov))
        if _is_tensor(value):
            self.tensor_input(value, prov)
        elif isinstance(value, (_IDENTITY_TYPES, torch.nn.Module, functools.partial)) or \
                hasattr(type(value), "__vm_call_instead__") or type(value) in CALL_INSTEAD:
            # (a partial's stored arguments are then its first call's: it is immutable in practice)
            if not _library_global(prov) and not self._fresh_binding(value, prov):
                self.guard(IdGuard(prov, value))
        elif type(value) is types.MethodType and isinstance(prov, Source):
            # a method read by attribute: the same function (an instance attribute may replace it)
            self.guard(IdGuard(AttrSource(prov, "__func__"), value.__func__))

    def _fresh_binding(self, value, prov):
        """``obj.method`` of a native method: a new bound object on every read, fixed by ``obj``'s type
        guard (``deref``) rather than by identity."""
        if type(value) is not types.BuiltinMethodType:
            return False
        if type(prov) is Expr and prov.fn is getattr and not isinstance(value.__self__, types.ModuleType):
            # ``m.group`` of a value an expression recomputes (``PATTERN.search(s)``): its type decides
            self.guard(TypeGuard(prov.args[0], type(value.__self__)))
            return True
        if type(prov) is not AttrSource:
            return False
        known = self.sources_of.get(id(value.__self__))
        return known is not None and known[0] is value.__self__ and known[1] == prov.base \
            and not isinstance(value.__self__, types.ModuleType)

    def deref(self, obj, prov):
        """The program reads an attribute or item of ``obj``: its type decides how that read behaves."""
        if isinstance(prov, Source) and not isinstance(obj, (_IDENTITY_TYPES, torch.nn.Module)) \
                and not _is_tensor(obj) and type(obj) is not types.MethodType \
                and not (type(prov) is AttrSource and prov.name == "__dict__" and type(obj) is dict):
            self.guard(TypeGuard(prov, type(obj)))  # (an object's __dict__ is always a dict)

    # ---- tensors -------------------------------------------------------------------------------------
    def tensor_input(self, tensor, source):
        entry = self.nodes.get(id(tensor))
        if entry is not None:
            first = self.input_paths.get(id(tensor))
            if isinstance(source, Source) and first is not None and source != first:
                # the same tensor reached by a second path (``f(x, x)``, tied weights): the graph
                # reads it once, so a later call must pass the very same object there too
                self.guard(TruthGuard(Expr(operator.is_, (source, first)), True))
            return entry[1]
        if not _replayable_path(source) and not (type(source) is Expr and mentions_draw(source)):
            # (an expression over random draws is evaluated by the entry after it drew them)
            self.unsupported("a tensor reached the program by a path MagPy cannot replay")
        if type(source) is Expr and source in self.computed_inputs:
            # the same expression computed again (``torch.tensor(a)`` twice): the entry computes it once,
            # so the graph copies it first thing — two tensors, as eager has, whatever writes to either
            placeholder = self.computed_inputs[source]
            with self.cap.graph.inserting_after(placeholder):
                node = self.cap.graph.call_method("clone", (placeholder,))
            self.cap.op_count += 1
            self.nodes[id(tensor)] = (tensor, node)
            return node
        node = self.cap.graph.placeholder(f"in{len(self.cap.inputs)}")
        if type(source) is Expr:
            self.computed_inputs[source] = node
        node.meta["source"] = source.render()
        self.cap.inputs.append((source, tensor))
        self.guard(TensorGuard(source, tensor))
        self.nodes[id(tensor)] = (tensor, node)
        self.input_paths[id(tensor)] = source
        return node

    def node_of(self, tensor, prov=None):
        entry = self.nodes.get(id(tensor))
        if type(prov) is _Row and (entry is None or entry[0] is not tensor):
            node = self.cap.graph.call_function(operator.getitem, (prov.rows, prov.index))
            self.nodes[id(tensor)] = (tensor, node)
            return node
        if _replayable_path(prov) and (entry is None or entry[0] is not tensor or id(tensor) in self.input_paths):
            return self.tensor_input(tensor, prov)
        if entry is None or entry[0] is not tensor:
            self.unsupported("a tensor of unknown origin was used (made by a call MagPy did not record)")
        return entry[1]

    def to_graph_arg(self, value, prov):
        """``value`` as an fx argument: tensors as nodes, containers recursively, scalars as guarded
        constants."""
        if _is_tensor(value):
            return self.node_of(value, prov)
        if type(prov) is Traced:
            return prov.node
        if type(value) in _RUN_ITERATORS and id(value) in self.yielded_values:
            # a generator the VM ran, consumed by this op (``sum(p.sum() for p in ps)``): what it yielded
            entry = self.contents.get(id(value))
            if entry is not None and entry[0] is value:
                return [self.to_graph_arg(v, p) for v, p in zip(self.yielded_values[id(value)], entry[1])]
        if type(value) in (list, tuple) or (type(value) is torch.Size and id(value) in self.contents):
            items = self._element_provs(value, prov)
            mapped = [self.to_graph_arg(v, p) for v, p in zip(value, items)]
            return mapped if type(value) is list else tuple(mapped)  # (a shape the graph reads: a tuple)
        if type(value) is dict:
            provs = self._dict_provs(value, prov)
            return {k: self.to_graph_arg(v, provs[k]) for k, v in value.items()}
        if isinstance(value, slice):
            parts = (value.start, value.stop, value.step)
            if isinstance(prov, Expr) and prov.fn is slice:
                part_provs = [None if type(p) is Const else p for p in prov.args]
                part_provs += [None] * (3 - len(part_provs))
                if len(prov.args) < 3 and len(prov.args) == 2:
                    part_provs = [part_provs[0], part_provs[1], None]
            elif isinstance(prov, Source):
                part_provs = [AttrSource(prov, a) for a in ("start", "stop", "step")]
            else:
                part_provs = [prov] * 3 if prov is not None else [None] * 3
            return slice(*(self.to_graph_arg(v, p) for v, p in zip(parts, part_provs)))
        if type(value) in (int, float, bool) and isinstance(prov, (Source, Expr)) and mentions_draw(prov):
            return self.scalar_input(value, prov)  # a random number: an input of the graph, not a constant
        if type(value).__module__ == "numpy" and getattr(value, "shape", None) == () and hasattr(value, "item"):
            # a numpy scalar: torch treats it as the Python number it holds (and fx code would name it
            # ``np.float64(…)``, a name the graph's code does not have)
            self.need(value, prov)
            return value.item()
        if isinstance(value, _SCALARS + (torch.dtype, torch.device, torch.Size, torch.layout,
                                          torch.memory_format, type(Ellipsis), range)):
            self.need(value, prov)
            return value
        if type(value) is np.ndarray and value.dtype.kind in "biu" and value.size <= rules.PINNED_DATA_LIMIT:
            # an index array (``x[:, np.argwhere(mask)]``): torch reads it as the tensor of its numbers
            self.need(value, prov)
            try:
                dtype = torch.from_numpy(value[:0].copy()).dtype
            except TypeError:
                self.unsupported(f"an index array of {value.dtype} (torch has no such dtype)")
            return self.cap.graph.call_function(torch.tensor, (value.tolist(),), {"dtype": dtype})
        self.unsupported(f"a {type(value).__name__} was passed to a tensor operation")

    def record(self, fn, args, arg_provs, kwargs, kw_provs, result, method=None):
        """Add ``fn(*args, **kwargs)`` (a tensor op that already ran) to the graph."""
        if (method == "type" or getattr(fn, "__name__", None) == "type") and len(args) == 2 and \
                type(args[1]).__name__ == "tensortype":
            # ``t.type(torch.FloatTensor)``: the same as by name (fx code cannot spell the class)
            self.need(args[1], arg_provs[1])
            args, arg_provs = (args[0], f"{args[1].__module__}.{args[1].__name__}"), (arg_provs[0], None)
        gargs = tuple(self.to_graph_arg(a, p) for a, p in zip(args, arg_provs))
        gkwargs = {k: self.to_graph_arg(v, (kw_provs or {}).get(k)) for k, v in (kwargs or {}).items()}
        graph = self.cap.graph
        if method is not None:
            node = graph.call_method(method, gargs, gkwargs)
        else:
            node = graph.call_function(vf.exact(fn), gargs, gkwargs)
        if not self.cap.op_count:
            self.cap.pre_graph = len(self.cap.side_effects)
        self.cap.op_count += 1
        dims = None
        if not (_is_tensor(result) and result.dim() == 0):
            # (before the result is bound: an op returning its input — ``contiguous``, ``add_`` — must
            # be rerun on that input as it was)
            dims = self._dynamic_dims(node, fn, method, args, kwargs, result)
        self.bind_result(result, node)
        if dims is not None:
            for tensor, d in zip(_flat_tensors(result), dims):
                if d:
                    self.dynamic[self.nodes.get(id(tensor))[1]] = d
            if not _is_tensor(result):
                self.dynamic.setdefault(node, _ALL)  # (the tuple node itself; its items are marked above)
            self.cap.host_values = True  # (compiling backends plan buffers from the first call's shapes)
        return node

    def _dynamic_dims(self, node, fn, method, args, kwargs, result):
        """For each tensor ``node`` computes (flattened), the dims whose size depends on tensor data
        (a mask's count, a length the graph computes), which reading must happen in the graph on every
        call; None when no dim does. An op on such tensors is run again on meta tensors whose dynamic
        sizes are changed: the output dims that change with them are dynamic, the others are fixed by
        the guards (a sparse matrix built to a given size from as many edges as the data has)."""
        name = method or getattr(fn, "__name__", "")
        shape_from_data = self._shape_from_data(node, name, args)
        if not shape_from_data:
            return None
        tensors = _flat_tensors(result)
        every = [frozenset(range(t.dim())) for t in tensors]
        if name in rules.SPLITS:
            every = None  # (``unbind``/``split``/``chunk``: how many tensors come out may be data)
        if shape_from_data != "inputs":
            if name in rules.DATA_DEPENDENT_DIMS and len(tensors) == 1:
                return [frozenset(rules.DATA_DEPENDENT_DIMS[name])]
            return self._every(every)
        if method is None and not _is_torch_callable(fn):
            return self._every(every)  # (the program's own code, a custom autograd.Function: not run twice)
        found = [set() for _ in tensors]
        for delta in (3, 11):
            try:
                meta_args = [self._meta(a, delta) for a in args]
                meta_kwargs = {k: self._meta(v, delta) for k, v in (kwargs or {}).items()}
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = getattr(meta_args[0], method)(*meta_args[1:], **meta_kwargs) if method else \
                        fn(*meta_args, **meta_kwargs)
            except Exception:  # noqa: BLE001 - an op meta tensors cannot run: every dim may depend on data
                return self._every(every)
            outs = _flat_tensors(out)
            if len(outs) != len(tensors) or any(m.dim() != r.dim() for m, r in zip(outs, tensors)):
                return self._every(every)
            for dims, real, meta in zip(found, tensors, outs):
                dims.update(k for k, (a, b) in enumerate(zip(real.shape, meta.shape)) if a != b)
        return [frozenset(d) for d in found] if any(found) else None

    def _every(self, every):
        if every is None:
            self.unsupported("a number of tensors that depends on tensor data (graph break)")
        return every

    def _meta(self, value, delta):
        """``value`` for a meta rerun: tensors as meta tensors (sparse ones as dense) of the same shape,
        except that each size that depends on data grows by ``delta``."""
        if _is_tensor(value):
            entry = self.nodes.get(id(value))
            dims = self.dynamic.get(entry[1], ()) if entry is not None and entry[0] is value else ()
            shape = [n + delta if k in dims else n for k, n in enumerate(value.shape)]
            return torch.empty(shape, dtype=value.dtype, device="meta")
        if type(value) in (list, tuple):
            return type(value)(self._meta(v, delta) for v in value)
        return value

    def _shape_from_data(self, node, name, args):
        """Does the shape of what ``node`` computes depend on tensor data (a mask's count, a length the
        graph computes), so that reading it must happen in the graph on every call?"""
        inputs = node.all_input_nodes
        if any(n in self.dynamic for n in inputs):
            return "inputs"
        if name in rules.DATA_DEPENDENT_SHAPE and (name != "where" or len(args) == 1):
            return True
        if name in ("getitem", "__getitem__") and len(args) == 2:
            keys = args[1] if isinstance(args[1], tuple) else (args[1],)
            if any(_is_tensor(k) and k.dtype in (torch.bool, torch.uint8) for k in keys):
                return True  # a boolean mask selects as many elements as it holds
        numbers = [n for n in inputs if n in self.scalar_nodes]
        return bool(numbers) and (name not in rules.NUMBER_OPERANDS and
                                  getattr(node.target, "__module__", None) != "_operator" or
                                  node.target in (operator.getitem, operator.setitem))

    def dynamic_metadata(self, tensor, name, args, result):
        """``t.shape`` / ``t.size(k)`` / ``t.numel()`` of a tensor whose shape depends on data: computed by
        the graph on every call (None when the shape is fixed by the guards)."""
        entry = self.nodes.get(id(tensor))
        if entry is None or entry[0] is not tensor or entry[1] not in self.dynamic or \
                name not in rules.SHAPE_METADATA:
            return None
        dims = self.dynamic[entry[1]]
        if name == "size" and len(args) == 1 and type(args[0]) is int and args[0] % max(tensor.dim(), 1) not in dims:
            return None  # a dim the guards fix (the 3 of an (n, 3) list of points, n from data; a stride
            #              depends on the other dims: always read)
        graph = self.cap.graph
        if name == "shape":
            node = graph.call_function(getattr, (entry[1], "shape"))
        else:
            node = graph.call_method(name, (entry[1], *(self.to_graph_arg(a, None) for a in args)))
        traced = self.host_value(node)
        if isinstance(result, tuple):
            self._trace_list(result, node)  # (its elements, as ``t.tolist()``'s)
            if name in ("size", "shape"):
                provs = self.contents[id(result)][1]  # (the dims the guards fix are constants)
                self.contents[id(result)] = (result, [p if k in dims else None for k, p in enumerate(provs)])
            return _SHAPE_TRACED
        return traced

    def draw(self, fn, args, arg_provs, kwargs=None, kw_provs=None):
        """A draw of Python's or numpy's global random generator: re-drawn by the entry program on every
        call."""
        for a, p in zip(args, arg_provs):
            self.need(a, p)  # (``getrandbits(k)``: the same k)
        for k, v in (kwargs or {}).items():
            self.need(v, (kw_provs or {}).get(k))  # (``choice(xs, n, p=[…])``: the same probabilities)
        if kwargs:
            fn = functools.partial(fn, **kwargs)
        self.cap.draws.append((fn, tuple(args)))
        return DrawSource(len(self.cap.draws) - 1)

    def scalar_input(self, value, prov):
        """A Python number the graph takes as an input, computed by the entry program (a random draw)."""
        known = self.scalar_inputs.get(prov)
        if known is None:
            known = self.cap.graph.placeholder(f"in{len(self.cap.inputs)}")
            known.meta["source"] = prov.render()
            self.cap.inputs.append((prov, value))
            self.scalar_inputs[prov] = known
            self.cap.host_values = True
        return known

    def scalar_of(self, fn, args, arg_provs, result, method=None):
        """``float(t)``, ``t.item()``, ``t.tolist()``: a graph node whose Python result is traced."""
        node = self.record(fn, args, arg_provs, None, None, None, method=method)
        self.scalar_nodes.add(node)
        self.cap.host_values = True
        if type(result) is list:
            entry = self.nodes.get(id(args[0])) if args else None
            if entry is not None and entry[1] in self.dynamic:
                # a list as long as tensor data says: this long, while the guard's rerun agrees
                self.pin(Traced(self.cap.graph.call_method("numel", (entry[1],))), entry[0].numel())
            self._trace_list(result, node)
            return None
        return Traced(node)

    def _trace_list(self, values, node):
        graph = self.cap.graph
        provs = []
        for k, v in enumerate(values):
            item = graph.call_function(operator.getitem, (node, k))
            self.scalar_nodes.add(item)
            if type(v) is list:
                self._trace_list(v, item)
                provs.append(None)
            else:
                provs.append(Traced(item))
        self.contents[id(values)] = (values, provs)

    def by_identity(self, values):
        """Provenance of values that came through code MagPy did not follow: the tensors the graph made
        are known by identity, anything else is of unknown origin."""
        return [None if _is_tensor(v) and id(v) in self.nodes else UNKNOWN for v in values]

    def holds(self, container, elements):
        """``container`` (made here) holds values of these provenances; False when they do not fit it."""
        if elements is None or len(elements) != len(container):
            return False
        if any(p is not None for p in elements):
            self.contents[id(container)] = (container, list(elements))
        return True

    def holds_traced(self, value):
        """A list, tuple (or shape) made here holding a number the graph computes."""
        if type(value) not in (list, tuple, torch.Size):
            return False
        entry = self.contents.get(id(value))
        return entry is not None and entry[0] is value and type(entry[1]) is list and \
            any(type(p) is Traced for p in entry[1])

    def traced_op(self, fn, inputs, provs):
        """``fn`` over Python values some of which the graph computes: one more graph node."""
        fixed = {k: v for k, (v, p) in enumerate(zip(inputs, provs)) if isinstance(v, type) and type(p) is not Traced}
        if fixed:  # (``a.astype(int)``: a class is part of the function, not an argument fx can write)
            for k, v in fixed.items():
                self.need(v, provs[k])
            fn = vf.calling(_with_fixed(fn, fixed, len(inputs)), f"call_{getattr(fn, '__name__', 'fn')}")
            inputs = [v for k, v in enumerate(inputs) if k not in fixed]
            provs = [p for k, p in enumerate(provs) if k not in fixed]
        args = tuple(p.node if type(p) is Traced else self.to_graph_arg(v, p) for v, p in zip(inputs, provs))
        if type(fn) not in (types.FunctionType, types.BuiltinFunctionType) or not getattr(fn, "__module__", None):
            # (``ndarray.sum``, a method of a value: fx holds it by reference, not by an import path)
            fn = vf.calling(fn, f"call_{getattr(fn, '__name__', 'fn')}")
        return self.host_value(self.cap.graph.call_function(fn, args))

    def host_value(self, node):
        """``node`` (one more op) computes a Python value: the graph runs as captured (fx)."""
        self.cap.op_count += 1
        self.scalar_nodes.add(node)
        self.cap.host_values = True
        return Traced(node)

    def bind_result(self, result, node):
        if _is_tensor(result):
            self.nodes[id(result)] = (result, node)
        elif type(result) in (tuple, list) or isinstance(result, tuple):
            for k, item in enumerate(result):
                if _is_tensor(item) or isinstance(item, (tuple, list)):
                    self.bind_result(item, self.cap.graph.call_function(operator.getitem, (node, k)))

    # ---- containers made inside the call ------------------------------------------------------------
    def _element_provs(self, container, prov):
        entry = self.contents.get(id(container))
        if entry is not None and entry[0] is container:
            return entry[1] if entry[1] is not None else [UNKNOWN] * len(container)
        if isinstance(prov, Source):
            # the program depends on how many elements there are
            self.guard(ValueGuard(Expr(len, (prov,)), len(container)))
            return [ItemSource(prov, k) for k in range(len(container))]
        if prov is None:
            return [None] * len(container)
        if isinstance(prov, Expr):
            # a container computed from outside values (``[x] * n``, ``x.size()[:-1] + (n,)``): its length
            # is guarded and each element is that expression indexed
            self.guard(ValueGuard(Expr(len, (prov,)), len(container)))
            if isinstance(container, (tuple, list)):
                return [_item_of(prov, k) for k in range(len(container))]
        return [UNKNOWN] * len(container)

    def _dict_provs(self, d, prov):
        entry = self.contents.get(id(d))
        if entry is not None and entry[0] is d and type(entry[1]) is dict:
            return {k: entry[1].get(k) for k in d}
        if prov is None:
            return dict.fromkeys(d)
        if isinstance(prov, Source):
            self.guard(ValueGuard(Expr(tuple, (prov,)), tuple(d)))
            return {k: ItemSource(prov, k) for k in d}
        return dict.fromkeys(d, UNKNOWN)


    # ---- frames ----------------------------------------------------------------------------------------
    @_event(None)
    def enter_frame(self, frame):
        if self.root is None:
            self.root = frame
        self.frame = frame

    @_event(None)
    def leave_frame(self, frame, value, exc):
        self.frame = frame.back
        for v in frame.locals if frame.decoded.code.co_cellvars else ():
            if type(v) is types.CellType and self.cells.get(id(v), (None,))[0] is v and sys.getrefcount(v) <= 4:
                # held by this frame, the table and this loop only: no closure outlives the frame with
                # it, so the table must not keep what it holds alive (``_call_impl``'s ``args``)
                del self.cells[id(v)]

    @_event(None)
    def argument(self, frame, index, name, value):
        prov = ArgSource(name, index)
        self.on_read(value, prov)
        return prov

    @_event(None)
    def yielded(self, frame, value, prov):
        out = self.generator_yields.get(id(frame))
        if out is not None:
            out[0].append(prov)
            out[1].append(value)

    @_event(None)
    def return_value(self, frame, value, prov):
        if frame is self.root:
            self.cap.result_template = self.template(value, prov)

    # ---- reads -----------------------------------------------------------------------------------------
    @_event(None)
    def read_global(self, frame, name, value):
        written = self.written.get((id(frame.globals), name), _NOT_WRITTEN)
        if written is not _NOT_WRITTEN:
            return written
        key = (id(frame.globals), name)
        seen = self.reads.get(key)
        if seen is not None and seen[0] is value:
            return seen[1]  # read before and unchanged: its guards are in place
        prov = GlobalSource(frame.globals, name)
        self.on_read(value, prov)
        self.reads[key] = (value, prov)
        return prov

    @_event(None)
    def read_cell(self, frame, cell, name, value):
        known = self.cells.get(id(cell))
        if known is not None and known[0] is cell:
            return known[1]
        # a cell that existed before the call: a closure of the function (or of one it calls)
        prov = CellSource(cell, name)
        self.on_read(value, prov)
        return prov

    @_event(None)
    def new_cell(self, frame, cell, name, prov):
        self.cells[id(cell)] = (cell, prov, "inside")

    @_event(None)
    def read_attr(self, obj, obj_prov, name, value, computed=NOT_RETURNED):
        written = self.written.get((id(obj), name), _NOT_WRITTEN)
        if written is not _NOT_WRITTEN:
            return written
        if computed is not NOT_RETURNED:
            # Python code computed it (a property, __getattr__): its own reads were followed and
            # guarded; re-reading the attribute in a guard would run that code again
            if _is_tensor(value) and id(value) not in self.nodes and isinstance(computed, Source):
                self.tensor_input(value, computed)
            return computed
        if _is_tensor(obj):
            return self._tensor_attr(obj, obj_prov, name, value)
        if obj_prov is None:
            if self.grad_fns.get(id(obj), (None,))[0] is obj:
                if name not in rules.GRAD_FN_FIXED:
                    self.unsupported(f"grad_fn.{name} of a tensor the graph makes (MagPy replays only hook "
                                     "registration on autograd nodes)")
                for node, _ in value if name == "next_functions" else ():
                    if node is not None:  # the nodes of the op's inputs: as fixed, and no more usable
                        self.grad_fns.setdefault(id(node), (node, None, None))
            entry = self.contents.get(id(obj))
            if entry is not None and entry[0] is obj and not callable(value):
                # a container made here holding values from outside: a namedtuple's field is its item;
                # any other attribute may be computed from what it holds
                fields = getattr(type(obj), "_fields", ()) if isinstance(obj, tuple) else ()
                if name in fields and type(entry[1]) is list and len(entry[1]) == len(obj):
                    return entry[1][fields.index(name)]
                return UNKNOWN
            return None
        if obj_prov is UNKNOWN or type(obj_prov) is Traced:
            return UNKNOWN
        path = isinstance(obj_prov, Source)
        if path:
            seen = self.reads.get((id(obj), name))
            if seen is not None and seen[0] is obj and seen[1] is value and seen[2] is obj_prov:
                return seen[3]  # the same read by the same path again: its guards are in place
            self.sources_of.setdefault(id(obj), (obj, obj_prov))  # (a method read here binds to obj)
        self.deref(obj, obj_prov)
        if type(value) in _BOUND_METHODS and value.__self__ is obj:
            self.bound_from[id(value)] = (value, obj_prov)  # (calls depend on obj: ``_pure``, ``bound_self``)
        prov = AttrSource(obj_prov, name) if path else Expr(getattr, (obj_prov, Const(name)))
        self.on_read(value, prov)
        if path:
            self.reads[(id(obj), name)] = (obj, value, obj_prov, prov)
        return prov

    def _tensor_attr(self, obj, obj_prov, name, value):
        if isinstance(obj_prov, Source):
            self.tensor_input(obj, obj_prov)  # first touch of an outside tensor: it is a graph input
        if _is_tensor(value):
            if name == "grad" and isinstance(obj_prov, Source):
                self.tensor_input(value, AttrSource(obj_prov, name))
                return AttrSource(obj_prov, name)
            self.record(getattr, (obj, name), (obj_prov, None), None, None, value)
            return None
        if name == "grad_fn" and value is None and type(obj) is torch.nn.Parameter:
            return None  # (a parameter is a leaf: its class is guarded)
        if name == "grad_fn" and id(obj) not in self.input_paths:
            # a tensor the graph made without history: so it is on every call the guards let through
            # (grad mode, the inputs' requires_grad); an input's history is its caller's (not guarded)
            if value is None:
                return None
            entry = self.nodes.get(id(obj))
            if entry is not None and entry[0] is obj:
                # the autograd node the graph's op makes again on each run: its kind, and which
                # tensors share it, are fixed by the graph and the guarded requires_grad. Calls on it
                # are replayed on the node the run makes (``_grad_fn_call``).
                self.grad_fns[id(value)] = (value, obj, obj_prov)
                return None
        if callable(value) and not isinstance(value, type):
            return None  # a bound method: recorded when called
        if name in rules.TENSOR_METADATA_ATTRS:
            traced = self.dynamic_metadata(obj, name, (), value)
            if traced is not None:
                return None if traced is _SHAPE_TRACED else traced
            return None  # static metadata (shape, dtype, device, requires_grad …): the tensor guard covers it
        if isinstance(obj_prov, Source):
            prov = AttrSource(obj_prov, name)  # e.g. ``p.grad is None``: guarded where it matters
            self.on_read(value, prov)
            return prov
        return UNKNOWN

    @_event(None)
    def read_method(self, obj, obj_prov, name, function):
        if obj_prov is UNKNOWN:
            self.unsupported(f"method {name!r} called on an object of unknown origin")
        if _is_tensor(obj):
            if _replayable_path(obj_prov):
                self.node_of(obj, obj_prov)  # (first touch of an outside tensor: a graph input; its
            return                           # method, native or Python, finds it by identity)
        if obj_prov is None or type(obj_prov) is Traced or _library_global(obj_prov):
            return  # (a traced number's type is fixed by its tensor's dtype, which is guarded)
        self.deref(obj, obj_prov)
        self.guard(IdGuard(Expr(getattr, (Expr(type, (obj_prov,)), Const(name))), function))
        if hasattr(obj, "__dict__"):
            self.guard(TruthGuard(Expr(_has_own, (obj_prov, Const(name))), False))

    @_event(None)
    def read_item(self, obj, obj_prov, key, key_prov, value, computed=NOT_RETURNED):
        if computed is not NOT_RETURNED and computed is not UNKNOWN:
            # a Python __getitem__ computed it (``module_list[::-1]``): its own reads were followed.
            # (Where they lost track — ``Sequential[i]`` goes through ``islice`` — the item is read by
            # its path below, as for any container.)
            if _is_tensor(value) and id(value) not in self.nodes and isinstance(computed, Source):
                self.tensor_input(value, computed)
            return computed
        if _is_tensor(obj):
            self.record(operator.getitem, (obj, key), (obj_prov, key_prov), None, None, value)
            return None
        entry = self.contents.get(id(obj))
        if entry is not None and entry[0] is obj and type(key) is int and type(obj) in (list, tuple, torch.Size) \
                and entry[1] is not None:
            self.need(key, key_prov)  # which element it is depends on the index
            try:
                return entry[1][key]
            except IndexError:
                return UNKNOWN
        if entry is not None and entry[0] is obj and type(entry[1]) is dict and isinstance(obj, dict):
            self.need(key, key_prov)  # (a dict made here of values from outside: ``_dict_of_pairs``)
            return entry[1].get(key, UNKNOWN)  # (the dict found the key: it hashes)
        if entry is not None and entry[0] is obj and type(key) is slice and type(obj) in (list, tuple, torch.Size) \
                and type(entry[1]) is list and len(entry[1]) == len(obj):
            self.need(key, key_prov)  # ``xs[:-1]`` of a list made here: those elements, as they came
            self.contents[id(value)] = (value, entry[1][key])
            return None
        if type(key) is slice and type(obj) in (list, tuple) and type(value) is type(obj) and \
                isinstance(obj_prov, Source) and len(obj) <= rules.COPIED_ELEMENTS_LIMIT:
            # ``filters[:]`` of an outside list: a new one (the program may change it) holding those
            # elements, each read by its path
            self.need(key, key_prov)
            self.guard(ValueGuard(Expr(len, (obj_prov,)), len(obj)))
            self.contents[id(value)] = (value, [ItemSource(obj_prov, k) for k in range(*key.indices(len(obj)))])
            return None
        if _is_tensor(key):
            if _replayable_path(obj_prov) and _replayable_path(key_prov):
                self.deref(obj, obj_prov)
                prov = Expr(operator.getitem, (obj_prov, key_prov))  # looked up by identity, on entry
                self.on_read(value, prov)
                return prov
            self.unsupported("a tensor used as a key of a Python container (looked up by identity)")
        if obj_prov is None and key_prov is None and self.effective(key, None) is None:
            # a container made here: what the call stored under this key, else a constant unless
            # something from outside went into it where capture lost track
            try:
                written = self.written.get((id(obj), ("item", _hkey(key))), _NOT_WRITTEN)
            except TypeError:
                written = _NOT_WRITTEN
            if written is not _NOT_WRITTEN:
                return written
            return UNKNOWN if entry is not None and entry[0] is obj and entry[1] is None else None
        if obj_prov is UNKNOWN or key_prov is UNKNOWN:
            return UNKNOWN
        if type(obj_prov) is Traced and isinstance(obj, np.ndarray):
            if type(key_prov) is not Traced:
                self.need(key, key_prov)
            return self.traced_op(operator.getitem, (obj, key), (obj_prov, key_prov))  # (``a[:, 0]``)
        self.need(key, key_prov)
        try:
            hash(_hkey(key))  # (``a[:, None]``: a tuple of slices, unhashable before 3.12)
        except TypeError:
            return UNKNOWN
        self.deref(obj, obj_prov)
        written = self.written.get((id(obj), ("item", _hkey(key))), _NOT_WRITTEN)
        if written is not _NOT_WRITTEN:
            return written
        if obj_prov is None:
            obj_prov = self.effective(obj, None) or Const(obj)  # a container made from constants
            if obj_prov is UNKNOWN:
                return UNKNOWN
        prov = _item_of(obj_prov, key)
        self.on_read(value, prov)
        return prov

    # ---- writes ----------------------------------------------------------------------------------------

    @_event(None)
    def provenance_of(self, obj):
        """The path of an outside object seen before, None for an object made by this call, else
        UNKNOWN."""
        known = self.sources_of.get(id(obj))
        if known is not None and known[0] is obj:
            return known[1]
        made = self.made.get(id(obj))
        if made is not None and made is obj:
            return None
        return UNKNOWN

    @_event(None)
    def created(self, obj):
        self.made[id(obj)] = obj

    @_event(None)
    def write_attr(self, obj, obj_prov, name, value, prov):
        if name == "data" and _is_tensor(obj) and self._own_data(obj, value):
            return  # ``p.data *= mask``: the in-place op changed p; storing its own data back changes nothing
        self.written[(id(obj), name)] = prov
        if name == "requires_grad" and _is_tensor(obj) and type(value) is bool and id(obj) not in self.input_paths:
            entry = self.nodes.get(id(obj))
            if entry is not None and entry[0] is obj:
                # ``t.requires_grad = False`` on a tensor the graph made: the graph does it too (on
                # each run's tensor, raising where eager would: only a leaf's flag can change)
                self.need(value, prov)
                node = self.cap.graph.call_method("requires_grad_", (entry[1], value))
                self.nodes[id(obj)] = (obj, node)
                self.cap.autograd_nodes = True
                return
        if name == "data" and _is_tensor(obj) and _is_tensor(value) and self._set_data(obj, obj_prov, value):
            return
        if _is_tensor(obj) and (name in rules.TENSOR_STATE_ATTRS or not isinstance(obj_prov, Source)):
            # (``p.data = …`` would change what the graph reads; a tensor the graph makes has no path)
            self.unsupported(f"setting attribute {name!r} of a tensor")
        if _is_tensor(obj):
            self.tensor_input(obj, obj_prov)  # ``p.grad = None``: replayed on the entry's tensor
        if isinstance(obj_prov, (Source, Expr)):
            effect = ("setattr", obj_prov, name, self.template(value, prov))
            effects = self.cap.side_effects
            if not (effects and effects[-1][:3] == effect[:3] and effects[-1][3] is effect[3]):
                effects.append(effect)  # (a Python __setattr__ reaching object.__setattr__ reports it twice)
        elif obj_prov is UNKNOWN:
            self.unsupported(f"attribute {name!r} set on an object of unknown origin")

    @_event(None)
    def write_item(self, obj, obj_prov, key, key_prov, value, prov):
        if _is_tensor(obj):
            if not _is_tensor(key) and type(key_prov) is not Traced and not self.holds_traced(key):
                self.need(key, key_prov)  # (bounds the graph computes go in as its nodes)
            self.record(operator.setitem, (obj, key, value), (obj_prov, key_prov, prov), None, None, None)
            return
        if isinstance(obj, np.ndarray):
            if type(obj_prov) is Traced:
                self.unsupported("writing into an array of tensor data (graph break)")
            if _holds_tensor(value) or _holds_tensor(key):
                # numpy reads the tensor's numbers (``a[0] = x.sum()``): data leaves the graph
                self.unsupported("tensor data written into a numpy array (graph break)")
            if self._write_made_array(obj, obj_prov, key, key_prov, value, prov):
                return
        entry = self.contents.get(id(obj))
        if type(obj) is list and type(key) is slice and (entry is None or entry[0] is not obj) and \
                obj_prov is None:
            # ``xs[1:] = [n]`` into a list made here of constants: what went in, where (else unknown)
            self.need(key, key_prov)
            added = _elements(self, value, prov) if type(value) in (list, tuple) else None
            if added is None or any(p is not None for p in added):
                self.contents[id(obj)] = (obj, [UNKNOWN] * len(obj))
            return
        if entry is not None and entry[0] is obj:
            if type(obj) is list and type(key) is slice and type(entry[1]) is list and \
                    type(value) in (list, tuple):
                self.need(key, key_prov)
                provs = list(entry[1])
                provs[key] = _elements(self, value, prov)
                self.contents[id(obj)] = (obj, provs if len(provs) == len(obj) else [UNKNOWN] * len(obj))
            elif type(obj) is list and type(key) is int and -len(entry[1]) <= key < len(entry[1]):
                self.need(key, key_prov)  # (which element it replaced)
                entry[1][key] = prov
            elif type(entry[1]) is dict:
                self.need(key, key_prov)
                entry[1][key] = prov
            else:
                self.contents[id(obj)] = (obj, None)  # (what it holds is unknown from here)
            return
        if obj_prov is None and (prov is not None or key_prov is not None) and \
                type(obj) in (list, dict, collections.OrderedDict):
            # a constant container made inside now holds a value from outside (or where outside values
            # said: ``shape[bd] = 1``)
            self.need(key, key_prov)
            if type(obj) is not list:
                self.contents[id(obj)] = (obj, {**dict.fromkeys(obj), key: prov})
            else:
                provs = [None] * len(obj)
                if type(key) is int and -len(obj) <= key < len(obj):
                    provs[key] = prov
                else:
                    provs = [UNKNOWN] * len(obj)
                self.contents[id(obj)] = (obj, provs)
            return
        self.written[(id(obj), ("item", _hkey(key)))] = prov
        if isinstance(obj_prov, (Source, Expr)):
            self.need(key, key_prov)
            self.cap.side_effects.append(("setitem", obj_prov, key, self.template(value, prov)))
        elif obj_prov is UNKNOWN:
            self.unsupported("an item set on a container of unknown origin")
        elif prov is not None or (key_prov is not None and self.effective(key, key_prov) is not None):
            # (an array made here now holds a value from outside: it is no longer a constant)
            dict.__setitem__(self.contents, id(obj), (obj, None))

    def _set_data(self, tensor, prov, value):
        """``p.data = torch.clamp(p.data, lo, hi)`` on a tensor from outside: the graph copies the new
        values into it (without autograd, as ``.data`` is written). Eager then has ``p`` share ``value``'s
        storage and drops its old one: that differs from a copy only through other tensors on either
        storage, so those (and ``value``) cannot be used afterwards. False when shape, dtype or device
        would change, or when an op already read the tensor."""
        if not isinstance(prov, Source) or value.shape != tensor.shape or value.dtype != tensor.dtype or \
                value.device != tensor.device or value.layout is not torch.strided:
            return False
        node = self.node_of(tensor, prov)
        if any(not (u.target is getattr and u.args[1:] == ("data",)) for u in node.users):
            return False  # (an op that read it before may have saved it for backward: a copy would
            #              change what it saved, eager's new storage does not)
        self.record(_copy_data, (tensor, value), (prov, None), None, None, None)
        self.nodes[id(tensor)] = (tensor, node)  # (the same input: its values are the new ones)
        self.nodes.forget_sharing(tensor, value)
        return True

    def _write_made_array(self, array, prov, key, key_prov, value, value_prov):
        """A write into a numpy array the call made (``anchors[:, 2:] = size * np.tile(scales, …)``): the
        array becomes a constant — what it held before (when computed from outside values) and what is
        written are guarded — so that what the program computes from it is too. False when the array
        (or the one it is a view of) is not one the call made."""
        root = array
        while type(root.base) is np.ndarray:
            root = root.base
        made = self.made_arrays.get(id(root))
        if made is None or made[0] is not root:
            return False
        if made[1] is not None:
            self.need(made[2], made[1])  # (what it held, as the call computed it)
            self.made_arrays[id(root)] = (root, None, None)
            self._forget_provenance(root)
        self.need(key, key_prov)
        self.need(value, value_prov)
        return True

    def _forget_provenance(self, root):
        """The frames' variables and stack slots holding ``root`` (or a view of it) now hold a constant."""
        def holds(v):
            while type(v) is np.ndarray:
                if v is root:
                    return True
                v = v.base
            return False
        frame = self.frame
        while frame is not None:
            for values, provs in ((frame.locals, frame.plocals), (frame.stack, frame.pstack)):
                if provs is not None:
                    for k, v in enumerate(values[:len(provs)]):
                        if provs[k] is not None and holds(v):
                            provs[k] = None
            frame = frame.back

    @_event(None)
    def write_global(self, frame, name, value, prov):
        self.written[(id(frame.globals), name)] = prov
        if frame.names is not None and frame.names is not frame.globals:
            return  # a class body or exec namespace made inside the call
        self.cap.side_effects.append(("setglobal", frame.globals, name, self.template(value, prov)))

    @_event(None)
    def write_cell(self, frame, cell, name, value, prov):
        known = self.cells.get(id(cell))
        made_inside = known is not None and known[0] is cell and known[2:] == ("inside",)
        self.cells[id(cell)] = (cell, prov) + (("inside",) if made_inside else ())
        if not made_inside:
            self.cap.side_effects.append(("setcell", cell, name, self.template(value, prov)))

    @_event(None)
    def delete_attr(self, obj, obj_prov, name):
        if obj_prov is not None:
            self.unsupported(f"deleting attribute {name!r} of an outside object")

    @_event(None)
    def delete_item(self, obj, obj_prov, key, key_prov):
        if _is_tensor(obj) or obj_prov is not None:
            self.unsupported("deleting an item of an outside container")

    # ---- exceptions ------------------------------------------------------------------------------------
    # An exception the call catches itself is replayable when raising it was decided by what the
    # guards fix: a ``raise`` statement reached by guarded control flow, a pure native call on guarded
    # arguments, ``next`` on an iterator whose length is known, a missing key of a guarded mapping.
    # ``raises``: id(exc) -> (exc, determined, provenance it is caught with).

    @_event(None)
    def raise_statement(self, frame, value, prov):
        self.raising = (value, prov)

    @_event(None)
    def call_raised(self, frame, fn, fn_prov, args, arg_provs, kwargs, kw_provs, exc):
        known = self.raises.get(id(exc))
        if known is None or known[0] is not exc:  # (else judged where it arose: a frame of the callee)
            self.raises[id(exc)] = (exc, self._call_raise_determined(fn, args, arg_provs, kwargs or {},
                                                                     kw_provs or {}), UNKNOWN)

    def _call_raise_determined(self, fn, args, arg_provs, kwargs, kw_provs):
        if fn is next and len(args) == 1 and not kwargs:
            it = args[0]
            entry = self.iterators.get(id(it))
            if entry is not None and entry[0] is it and entry[1] is not None:
                return entry[2] >= len(entry[1])  # its length is guarded
            made = self.contents.get(id(it))
            return type(it) in _RUN_ITERATORS and made is not None and made[0] is it
        self_obj = _bound_self(fn)
        if type(self_obj) is list and getattr(fn, "__name__", "") in ("remove", "index"):
            # (bound: the list's provenance is where the method was read, or it is one the call made)
            entry, bound = self.contents.get(id(self_obj)), self.bound_from.get(id(fn))
            lst_prov = bound[1] if bound is not None and bound[0] is fn else \
                None if entry is not None and entry[0] is self_obj else UNKNOWN
            fn, args, arg_provs = getattr(list, fn.__name__), (self_obj, *args), (lst_prov, *arg_provs)
        if (fn is list.remove or fn is list.index) and len(args) == 2 and not kwargs and type(args[0]) is list:
            # ``filters.remove(item)`` of an item not there (``warnings.simplefilter``): decided by
            # whether the list holds it
            prov = self.effective(args[0], arg_provs[0])
            if prov is UNKNOWN or _holds_tensor(args[0]) or _holds_tensor(args[1]):
                return False
            self.need(args[1], arg_provs[1])
            if prov is not None:
                item = arg_provs[1] if arg_provs[1] is not None else Const(args[1])
                self.guard(TruthGuard(Expr(operator.contains, (prov, item)), args[1] in args[0]))
            return True
        if type(args) not in (tuple, list) or not rules.is_pure(fn):
            return False  # (``f(*x)`` of a non-iterable ``x`` raises before any call)
        values = (*args, *kwargs.values())
        if any(_holds_tensor(v) for v in values):
            return False
        for value, prov in zip(values, (*arg_provs, *kw_provs.values())):
            self.need(value, prov)  # the same arguments raise the same way
        return True

    @_event(None)
    def item_raised(self, obj, obj_prov, key, key_prov, exc):
        determined = False
        if type(obj) in (dict, list, tuple) and not _holds_tensor(key) and type(key) is not slice:
            self.need(key, key_prov)
            if obj_prov is None:
                determined = self.effective(obj, None) is None  # made here from constants
            elif isinstance(obj_prov, Source):
                self.deref(obj, obj_prov)
                self.guard(TruthGuard(Expr(operator.contains, (obj_prov, Const(key))), False)
                           if type(obj) is dict else ValueGuard(Expr(len, (obj_prov,)), len(obj)))
                determined = True
        self.raises[id(exc)] = (exc, determined, UNKNOWN)

    @_event(UNKNOWN)
    def raised(self, frame, exc, opname, caught):
        known = self.raises.get(id(exc))
        if known is None or known[0] is not exc:
            raising = self.raising
            if opname == "RAISE_VARARGS" and raising is not None and raising[0] is exc:
                known = (exc, True, raising[1])
            elif opname == "RAISE_VARARGS" and raising is not None and raising[0] is type(exc):
                known = (exc, True, None)  # (``raise KeyError``: the VM made it from constants)
            elif type(exc) is GeneratorExit:
                known = (exc, True, None)  # a generator of the call closed where the program drops it
            elif opname in rules.SHAPE_ERROR_OPS and type(exc) is RuntimeError and not self.dynamic and \
                    rules.SHAPE_ERROR.fullmatch(str(exc)):
                # tensors that do not broadcast (``try: x + pos except: x + resized``): every shape in
                # the graph is fixed by the guards (none depends on data), so the op raises again
                known = (exc, True, None)
            else:
                known = (exc, False, UNKNOWN)
            self.raises[id(exc)] = known
        if caught and not known[1]:
            self.unsupported(f"a {type(exc).__name__} raised by {opname} is caught inside the call (what "
                             "makes it raise is not guarded)", frame)
        return known[2]

    # ---- calls -----------------------------------------------------------------------------------------
    @_event(None)
    def call_result(self, frame, fn, fn_prov, args, arg_provs, kwargs, kw_provs, result, returned):
        self.frame = frame
        self.call_fn_prov = fn_prov
        interpreted = returned is not NOT_RETURNED
        if isinstance(fn, type) and not isinstance(result, _SCALARS) and fn is not type and \
                not any(result is a for a in args):
            self.made[id(result)] = result  # a new object of this call (``tuple(t)`` may hand back t)
        made = self.vm.made_iterator
        if made is not None and made.iterator is result:
            # a map/filter object whose steps the VM runs: its items are what the steps returned
            self.vm.made_iterator = None
            self.contents[id(result)] = (result, made.provs)
            self.yielded_values[id(result)] = made.values
            return None
        if type(result) is types.GeneratorType and returned is NOT_RETURNED:
            driver = result.gi_frame.f_locals.get("frame") if result.gi_frame is not None else None
            if driver is not None and getattr(driver, "vm", None) is self.vm:
                yielded, values = [], []
                self.generator_yields[id(driver)] = (yielded, values)
                self.contents[id(result)] = (result, yielded)
                self.yielded_values[id(result)] = values
                return None
        if fn_prov is not None:
            key = ("call", id(fn))
            seen = self.reads.get(key)
            if seen is None or seen[0] is not fn or seen[1] is not fn_prov:  # (else guarded already)
                self.on_read(fn, fn_prov)
                if fn_prov is UNKNOWN:
                    self.unsupported("calling an object of unknown origin")
                if not isinstance(fn, (types.FunctionType, types.MethodType)):
                    self.need(fn, fn_prov) if isinstance(fn, _IDENTITY_TYPES) else None
                self.reads[key] = (fn, fn_prov)
        if interpreted:
            if fn is next:
                self._mark_taken(args, kwargs)  # (``next(m)`` of a map whose step the VM ran)
            return returned
        if type(fn) is weakref.ref and not args and not kwargs and _replayable_path(fn_prov):
            return Expr(_dereference, (fn_prov,))  # ``ref()`` of a weak reference held outside (LSTM weights)
        prov = self.native_result(frame, fn, args, list(arg_provs), kwargs or {}, kw_provs or {}, result)
        self._mark_taken(args, kwargs)
        return prov

    def _dict_of_pairs(self, result, pairs, prov):
        """``OrderedDict(list(modules.items())[k:])``: a dict made from (key, value) pairs keeps the
        values' provenance (the keys are guarded). False when a pair's provenance is unknown."""
        elements = self._element_provs(pairs, prov)
        provs = {}
        for pair, p in zip(pairs, elements):
            if type(pair) is not tuple or len(pair) != 2:
                return False
            if p is UNKNOWN:
                return False
            # (a pair made here holds what it was made of: ``OrderedDict([("n", n)])``)
            inner = p[1] if type(p) is tuple and p[0] == "tuple" else self._element_provs(pair, p)
            if len(inner) != 2 or UNKNOWN in inner[:1]:
                return False
            self.need(pair[0], inner[0])
            provs[pair[0]] = inner[1]
        self.contents[id(result)] = (result, provs)
        return True

    def _weak_reference(self, obj, prov):
        """``weakref.ref(obj)`` without a callback: no effect. Calling it later reads ``obj`` again."""
        if prov is None:
            return None  # an object made here: its reference is too
        if not _replayable_path(prov):
            self.unsupported("a weak reference to a value of unknown origin")
        return Expr(weakref.ref, (prov,))

    def _grad_fn_call(self, fn, args, arg_provs, kwargs, kw_provs, grad_fn):
        """A call on the autograd node of a tensor the graph makes (a module's backward hook registers
        itself on its output's ``grad_fn``): replayed on the node each run of the graph makes."""
        name = getattr(fn, "__name__", "")
        if name in rules.GRAD_FN_FIXED:
            return None  # ``name()``: the kind of node, fixed by the graph
        if name not in rules.GRAD_FN_HOOKS or kwargs or len(args) != 1:
            self.unsupported(f"grad_fn.{name}() on a tensor the graph makes (MagPy replays only hook "
                             "registration on autograd nodes)")
        _, tensor, prov = self.grad_fns[id(grad_fn)]
        if tensor is None:
            self.unsupported(f"grad_fn.{name}() on the autograd node of an op's input")
        self.cap.autograd_nodes = True
        self.cap.side_effects.append(("call", _on_grad_fn, [self.template(tensor, prov), ("const", name),
                                                             self.frozen_template(args[0], arg_provs[0])], {}))
        return None  # the handle: a new object of this call (it may not leave it)

    def _own_data(self, tensor, value):
        """Is ``value`` the graph's ``tensor.data`` (after in-place ops on it)?"""
        entry, own = self.nodes.get(id(value)), self.nodes.get(id(tensor))
        if entry is None or entry[0] is not value or own is None or own[0] is not tensor:
            return False
        node = entry[1]
        while node.op in ("call_function", "call_method") and node.args and predicates.writes(node):
            node = node.args[0]  # (an in-place op returns the tensor it changed)
        return node.op == "call_function" and node.target is getattr and node.args == (own[1], "data")

    def _known_contents(self, obj):
        """A list, tuple or iterator made here whose elements' provenance is listed (snapshot as a
        list's own iteration is: ``start_iteration``)."""
        if type(obj) in (dict, set, *_RUN_ITERATORS):
            return False  # (a generator's entry lists what it yielded so far)
        entry = self.contents.get(id(obj))
        return entry is not None and entry[0] is obj and type(entry[1]) is list

    def _combinatoric(self, fn, args, arg_provs, kwargs, kw_provs, result):
        """``combinations(ts, 2)``, ``product(xs, ys)`` … over values with known provenance: the tuples it
        will yield, each element with its provenance (the same function over their indices)."""
        count = len(args) if fn is itertools.product else 1
        for value, prov in [*zip(args[count:], arg_provs[count:]), *((kwargs[k], kw_provs.get(k)) for k in kwargs)]:
            self.need(value, prov)  # (r, repeat)
        parts = [_elements(self, a, p) for a, p in zip(args[:count], arg_provs[:count])]
        if any(part is None for part in parts):
            self.unsupported(f"{fn.__name__}() over tensors and values of unknown origin")
        indices = fn(*(range(len(part)) for part in parts), *args[count:], **kwargs)
        if fn is itertools.product:
            parts = parts * kwargs.get("repeat", 1)
            rows = [[parts[k][i] for k, i in enumerate(row)] for row in indices]
        else:
            rows = [[parts[0][i] for i in row] for row in indices]
        self.contents[id(result)] = (result, [("tuple", r) for r in rows])
        return None

    def native_result(self, frame, fn, args, arg_provs, kwargs, kw_provs, result):
        if _has_user_protocols(fn):
            self.unsupported(f"{type(fn).__qualname__} (a callable whose class defines __eq__, __hash__ or "
                             f"__getattr__) ran natively: MagPy has no rule for it")
        if getattr(fn, "__func__", fn) in _BOOKKEEPING:
            return None
        if type(fn) is functools.partial and _is_torch_callable(fn.func):
            # a partial of a torch function (``partial(F.conv2d, stride=2)``): the function, all arguments
            stored = self._element_provs(fn.args, None)
            stored_kw = self._dict_provs(fn.keywords, None)
            return self.native_result(frame, fn.func, (*fn.args, *args), [*stored, *arg_provs],
                                      {**fn.keywords, **kwargs}, {**stored_kw, **kw_provs}, result)
        if isinstance(fn, type) and _python_constructed(fn):
            return None  # a new object whose __new__/__init__ ran interpreted (their effects were seen)
        if type(fn).__name__ == "method-wrapper" and fn.__name__ == "__init__" and not args and not kwargs \
                and type(fn.__self__).__init__ is not None:
            return None  # ``super().__init__()`` reaching object.__init__: nothing happens
        if fn is functools.partial and args and type(result) is functools.partial:
            # the arguments it stores keep their provenance (read back when the partial is called)
            if any(p is not None for p in arg_provs[1:]):
                self.contents[id(result.args)] = (result.args, list(arg_provs[1:]))
            if any(p is not None for p in kw_provs.values()):
                self.contents[id(result.keywords)] = (result.keywords, dict(kw_provs))
            return None  # a new object (the function it wraps was guarded where it was read)
        if fn in _FROM_ARRAY and args and type(args[0]).__module__ == "numpy" and _is_tensor(result):
            return self._tensor_of_array(fn, args, arg_provs, kwargs, kw_provs, result)
        if fn is builtins.__build_class__ or (fn is type and len(args) == 3):
            self.made_classes[id(result)] = result  # a class made by the call
            return None
        if fn is tuple.__new__ and len(args) == 2 and not kwargs and isinstance(result, tuple):
            # a namedtuple (or other tuple subclass) built from an iterable: the same elements
            if not self.holds(result, _elements(self, args[1], arg_provs[1])):
                self.unsupported(f"a {type(result).__name__} built from values of unknown origin")
            return None
        if isinstance(fn, type) and issubclass(fn, dict) and fn is not dict and type(result) is fn and len(args) <= 1 and \
                fn.__init__ is dict.__init__ and fn.__new__ is dict.__new__ and \
                (not args or type(args[0]) is dict):
            # ``ObjectDict(samples=x, rate=r)``: a dict of the program's own class, made as dict() makes one
            provs = dict(self._dict_provs(args[0], arg_provs[0])) if args else {}
            provs.update(kw_provs)
            self.contents[id(result)] = (result, provs)
            return None
        if fn in (dict, collections.OrderedDict) and len(args) == 1 and not kwargs and type(result) is fn \
                and type(args[0]) in (list, tuple) and self._dict_of_pairs(result, args[0], arg_provs[0]):
            return None
        if fn in (list, tuple) and len(args) == 1 and not kwargs and type(result) is fn:
            # a copy of an iterable: the same elements, with their provenance (pairs from zip/items too)
            elements = _elements(self, args[0], arg_provs[0])
            if elements is None and (arg_provs[0] is None or arg_provs[0] is UNKNOWN):
                elements = self.by_identity(result)  # (``map(f, xs)`` with f interpreted)
            if self.holds(result, elements):
                return None
        if fn is set and len(args) <= 1 and not kwargs and type(result) is set:
            self.sets[id(result)] = (result, [])  # tracked element by element from here on
            return self.set_added(result, args[0], arg_provs[0], many=True) if args else None
        if fn is iter and len(args) == 1 and not kwargs:
            return start_iteration(self, args[0], arg_provs[0], result)
        if fn is next and len(args) in (1, 2) and not kwargs:
            entry = self.iterators.get(id(args[0]))
            if len(args) == 2 and entry is not None and entry[0] is args[0] and entry[1] is not None \
                    and entry[2] >= len(entry[1]):
                return arg_provs[1]  # exhausted (its length is guarded): the default
            return next_element(self, args[0], arg_provs[0], result)
        if fn is zip and set(kwargs) <= {"strict"} and all(p is None for p in kw_provs.values()):
            kwargs, kw_provs = {}, {}  # strict= only decides whether mismatched lengths raise
        if fn is getattr and len(args) in (2, 3) and type(args[1]) is str and not kwargs:
            self.need(args[1], arg_provs[1])
            if hasattr(args[0], args[1]):
                return self.read_attr(args[0], arg_provs[0], args[1], result)
            if arg_provs[0] is not None:  # the default was used: the attribute must stay missing
                if arg_provs[0] is UNKNOWN:
                    self.unsupported("getattr() with a default on an object of unknown origin")
                self.guard(TruthGuard(Expr(hasattr, (arg_provs[0], Const(args[1]))), False))
            return arg_provs[2] if len(args) == 3 else None
        if fn in (map, filter) and len(args) >= 2 and not kwargs and _is_python_code(args[0]):
            # the callback runs later, natively driven: let it find the elements' paths by identity
            for a, p in zip(args[1:], arg_provs[1:]):
                for v, vp in zip(a, _elements(self, a, p) or []) if hasattr(a, "__len__") else ():
                    if _replayable_path(vp) and not isinstance(v, _SCALARS):
                        self.sources_of.setdefault(id(v), (v, vp))
            return UNKNOWN  # what it yields comes from interpreted code: tensors known by identity only
        if fn in (enumerate, zip) and not kwargs and (fn is zip or len(args) == 1) and \
                any(_is_tensor(a) or self._known_contents(a) or (p is None and _module_sequence(a))
                    for a, p in zip(args, arg_provs)):
            # ``enumerate(t)`` / ``zip(t, xs)``: the rows of the tensor (or the tuples an iterator made
            # here yields: ``enumerate(combinations(ts, 2))``, the children of a Sequential made here),
            # paired as they will be yielded
            parts = [_elements(self, a, p) for a, p in zip(args, arg_provs)]
            if any(part is None for part in parts):
                self.unsupported(f"{fn.__name__}() over a tensor and values of unknown origin")
            rows = [[None, p] for p in parts[0]] if fn is enumerate else [list(r) for r in zip(*parts)]
            self.contents[id(result)] = (result, [("tuple", r) for r in rows])
            return None
        if fn in _COMBINATORICS and args and set(kwargs) <= {"repeat"}:
            return self._combinatoric(fn, args, arg_provs, kwargs, kw_provs, result)
        if fn in (enumerate, zip, reversed) and not kwargs and any(p is not None for p in arg_provs):
            for a, p in zip(args, arg_provs):
                if p is not None and p is not UNKNOWN:
                    self.iterables[p] = a
        if fn is weakref.ref and len(args) == 1 and not kwargs:
            return self._weak_reference(args[0], arg_provs[0])
        self_obj = _bound_self(fn)
        if self_obj is not None and self.grad_fns.get(id(self_obj), (None,))[0] is self_obj:
            return self._grad_fn_call(fn, args, arg_provs, kwargs, kw_provs, self_obj)
        if args and type(fn) is types.MethodDescriptorType and self.grad_fns.get(id(args[0]), (None,))[0] is args[0]:
            return self._grad_fn_call(fn, args[1:], arg_provs[1:], kwargs, kw_provs, args[0])
        if getattr(fn, "__name__", None) == "__getattribute__" and self_obj is not None and len(args) == 1 \
                and type(args[0]) is str and not kwargs and not _is_tensor(self_obj):
            # ``m.__getattribute__(name)`` (torch.backends' module proxies): reading the attribute
            self.need(args[0], arg_provs[0])
            method_prov = self.call_fn_prov  # (None: read from a constant, as library globals are)
            obj_prov = method_prov.base if type(method_prov) is AttrSource else \
                None if method_prov is None else self.provenance_of(self_obj)
            return self.read_attr(self_obj, obj_prov, args[0], result)
        if isinstance(fn, types.BuiltinMethodType) and _is_tensor(self_obj):
            name = fn.__name__
            if name in rules.TENSOR_TO_SCALAR and not kwargs:
                return self.scalar_of(None, (self_obj, *args), (None, *arg_provs), result, method=name)
            if name == "numpy" and not args and not kwargs:
                return self.numpy_of(self_obj)
            if name in rules.TENSOR_TO_PYTHON:
                self.unsupported(f"Tensor.{name}() turns tensor data into a Python value (graph break)")
            if name in rules.TENSOR_METADATA and not _is_tensor(result):
                self.node_of(self_obj)
                traced = self.dynamic_metadata(self_obj, name, args, result)
                if traced is not None:
                    return None if traced is _SHAPE_TRACED else traced
                self._offset_guard(name, self_obj, result)
                return None  # static metadata: the tensor's guard covers it
            if not _holds_tensor(result) and result is not None:
                self.unsupported(f"Tensor.{name}() returns a Python value MagPy cannot replay")
            return self.record(None, (self_obj, *args), (None, *arg_provs), kwargs, kw_provs, result,
                               method=name) and None
        if type(fn).__name__ == "method_descriptor" and args and _is_tensor(args[0]):
            if fn.__name__ in rules.TENSOR_TO_SCALAR and not kwargs:
                return self.scalar_of(None, args, arg_provs, result, method=fn.__name__)
            if fn.__name__ in rules.TENSOR_METADATA and not _is_tensor(result):
                self.node_of(args[0], arg_provs[0])
                traced = self.dynamic_metadata(args[0], fn.__name__, args[1:], result)
                if traced is not None:
                    return None if traced is _SHAPE_TRACED else traced
                self._offset_guard(fn.__name__, args[0], result)
                return None
            if not _holds_tensor(result) and result is not None:
                self.unsupported(f"Tensor.{fn.__name__}() returns a Python value MagPy cannot replay")
            if fn.__name__ in rules.TENSOR_TO_PYTHON:
                self.unsupported(f"Tensor.{fn.__name__}() turns tensor data into a Python value (graph break)")
            self.record(None, args, arg_provs, kwargs, kw_provs, result, method=fn.__name__)
            return None
        if fn in rules.SCALAR_OF_TENSOR and len(args) == 1 and not kwargs and _is_tensor(args[0]):
            return self.scalar_of(fn, args, arg_provs, result)
        if fn is torch._C.TensorBase._make_subclass and len(args) >= 2 and isinstance(args[0], type) \
                and _is_tensor(args[1]):
            # ``nn.Parameter(t)`` made in ``forward``: a new leaf sharing t's data, made again each call
            self.need(args[0], arg_provs[0])
            make = vf.calling(functools.partial(fn, args[0]), f"make_{args[0].__name__}")
            return self.record(make, args[1:], arg_provs[1:], kwargs, kw_provs, result) and None
        if fn is len and len(args) == 1 and _is_tensor(args[0]) and not kwargs:
            traced = self.dynamic_metadata(args[0], "size", (0,), result)  # (else fixed by the guard)
            if traced is not None:
                return traced
        if fn in rules.TENSOR_PREDICATES and not kwargs and all(_is_tensor(a) for a in args):
            return self.scalar_of(fn, args, arg_provs, result)
        if fn in (float, int, bool, complex) and args and _is_tensor(args[0]):
            self.unsupported(f"{fn.__name__}(tensor) turns tensor data into a Python value (graph break)")
        makes_tensor = _is_tensor(result) or (isinstance(result, (tuple, list)) and
                                                any(_is_tensor(x) for x in result))
        module = getattr(fn, "__module__", None) or ""
        if fn in (object.__setattr__, setattr) and len(args) == 3 and not kwargs:
            self.need(args[1], arg_provs[1])
            self.write_attr(args[0], arg_provs[0], args[1], args[2], arg_provs[2])
            return None
        if type(fn).__name__ == "method-wrapper" and fn.__name__ == "__setattr__" and len(args) == 2:
            # ``super().__setattr__(name, value)``: the object is found by identity
            self.need(args[0], arg_provs[0])
            self.write_attr(self_obj, self.provenance_of(self_obj), args[0], args[1], arg_provs[1])
            return None
        if fn in rules.PURE and not makes_tensor:
            return self._pure(fn, args, arg_provs, kwargs, kw_provs, result)
        if fn in rules.MUTATES or (self_obj is not None and not isinstance(self_obj, types.ModuleType)
                                   and getattr(type(self_obj), getattr(fn, "__name__", ""), None)
                                   in rules.MUTATES):
            return self._mutation(fn, args, arg_provs, result)
        if self_obj is torch.default_generator and getattr(fn, "__name__", "") == "get_state" and not args:
            # ``torch.get_rng_state()`` (saved to replay a forward, as checkpointing does): the graph
            # reads the generator where the program did, after the draws before it
            return self.record(torch.get_rng_state, (), (), None, None, result) and None
        # (after the mutations: ``xs.append(x)`` must not scan a long list each time)
        has_tensor = any(_is_tensor(a) or (type(a) in (list, tuple) and any(_is_tensor(x) for x in a))
                         for a in (*args, *kwargs.values()))
        if has_tensor and getattr(fn, "__name__", "") == "apply" and isinstance(self_obj, type) \
                and issubclass(self_obj, torch.autograd.Function):
            # a custom autograd.Function: one graph op (its forward and backward run as written); the
            # modules and functions it is handed are the same objects on every call (guarded)
            fixed = {k: a for k, a in enumerate(args) if isinstance(a, _PASSED_BY_IDENTITY)}
            for k, a in fixed.items():
                self.need(a, arg_provs[k])
            apply = _with_fixed(self_obj.apply, fixed, len(args)) if fixed else self_obj.apply
            rest = [k for k in range(len(args)) if k not in fixed]
            self.record(vf.calling(apply, f"apply_{self_obj.__name__}"), [args[k] for k in rest],
                        [arg_provs[k] for k in rest], kwargs, kw_provs, result)
            return None
        if has_tensor or makes_tensor or fn in rules.GRAPH:
            if _is_torch_callable(fn) and not makes_tensor and not _holds_tensor(result) \
                    and fn not in rules.GRAPH:
                name = getattr(fn, "__name__", "")
                if rules.is_type_predicate(fn) and isinstance(result, bool):
                    for a, p in zip(args, arg_provs):  # a predicate of tensor types: the guards fix it
                        if _is_tensor(a):
                            self.node_of(a, p)
                    return None
                if name in rules.TORCH_NOOPS:
                    return None
                self.unsupported(f"{getattr(fn, '__qualname__', name)}() returns a Python value computed "
                                 "from tensors")
            if _is_torch_callable(fn) or fn in rules.GRAPH or fn in rules.TENSOR_BUILTINS:
                self.record(fn, args, arg_provs, kwargs, kw_provs, result)
                if fn is torch._C._set_grad_enabled and len(args) == 1:
                    self.grad_mode = arg_provs[0]  # later ``is_grad_enabled()`` reads what was set
                return None
            if fn is print:
                self.unsupported("print() of a tensor (graph break)")
            if makes_tensor or fn not in rules.TENSOR_NEUTRAL:
                self.unsupported(f"{getattr(fn, '__qualname__', fn)}() called on tensors: MagPy has no "
                                 "rule for it")
        if self_obj is _random._inst and getattr(fn, "__name__", "") in rules.RANDOM_DRAWS and not kwargs:
            return self.draw(fn, args, arg_provs)
        if self_obj is rules.NUMPY_RANDOM and getattr(fn, "__name__", "") in rules.NUMPY_DRAWS:
            return self.draw(fn, args, arg_provs, kwargs, kw_provs)
        if isinstance(self_obj, (np.random.RandomState, np.random.Generator)):
            self.unsupported(f"{getattr(fn, '__qualname__', fn)}() draws from a numpy generator of the program's own")
        if module.split(".")[0] in rules.RANDOM_MODULES or (self_obj is not None and
                                                           type(self_obj).__module__ == "random"):
            self.unsupported(f"{getattr(fn, '__qualname__', fn)}() draws Python random numbers")
        if fn is warnings.warn:
            return self._warning(frame, args, arg_provs, kwargs, kw_provs)
        if fn in rules.REPLAY:
            self.cap.side_effects.append(("call", fn, [self.frozen_template(a, p) for a, p in zip(args, arg_provs)],
                                          {k: self.frozen_template(v, kw_provs.get(k)) for k, v in kwargs.items()}))
            return None
        if fn in rules.MUTATES or (self_obj is not None and getattr(type(self_obj), fn.__name__, None)
                                   in rules.MUTATES):
            return self._mutation(fn, args, arg_provs, result)
        if rules.is_pure(fn):
            prov = self._pure(fn, args, arg_provs, kwargs, kw_provs, result)
            if type(result) is np.ndarray and result.base is None and result.size <= rules.PINNED_DATA_LIMIT \
                    and not any(a is result for a in args):
                # a new array (of constants, or computed from outside values): if the program writes
                # into it, what it held until then is guarded (``_write_made_array``)
                if prov is None:
                    self.made_arrays[id(result)] = (result, None, None)
                elif type(prov) is Expr and fn in rules.UNDEFINED_CONTENTS:
                    # (``np.empty``: what it holds is not the program's; its kind and shape are)
                    self.made_arrays[id(result)] = (result, Expr(_layout, (prov,)), _layout(result))
                elif type(prov) is Expr:
                    self.made_arrays[id(result)] = (result, prov, result.copy())
            return prov
        self.unsupported(f"{getattr(fn, '__qualname__', fn)}() is a native call MagPy has no rule for "
                         "(it could have effects a replay would miss)")

    def effective(self, value, prov):
        """``prov``, except that a container (or generator) made inside that holds values from outside
        is the expression that rebuilds it from their provenance, or UNKNOWN — never a constant."""
        if prov is not None and not (isinstance(prov, Source) and self.contents.changed_outside(value)):
            return prov
        if type(value) is set and id(value) in self.sets:
            return self._set_expr(value)
        taken = self._taken_by_call(value)
        if taken is not None:
            return taken
        entry = self.contents.get(id(value))
        if entry is None or entry[0] is not value:
            return None
        provs = entry[1]
        if provs is None:
            return UNKNOWN
        items = list(provs.values()) if type(provs) is dict else list(provs)
        if all(p is None for p in items):
            return None
        if any(type(p) is Traced for p in items) and type(provs) is list and len(items) == len(value) and \
                not any(p is UNKNOWN or type(p) is tuple for p in items):
            # a container holding numbers the graph computes, used as a Python value (``torch.Size([n, n])``
            # for an n from a data-dependent shape): those numbers are pinned by the guard
            for v, p in zip(value, items):
                if type(p) is Traced:
                    self.pin(p, v)
            items = [None if type(p) is Traced else p for p in items]
            if all(p is None for p in items):
                return None
        if any(p is UNKNOWN or type(p) in (tuple, Traced) for p in items):
            return UNKNOWN
        if type(provs) is dict:
            return Expr(_build_dict, (Const(tuple(provs)), *[p if p is not None else Const(v)
                                                            for p, v in zip(items, value.values())]))
        values = list(value) if type(value) in (list, tuple) else None
        if values is None or len(values) != len(items):
            if values is None and all(p is not None for p in items):
                return Expr(_build_tuple, tuple(items))  # a consumed generator: what it yielded
            return UNKNOWN
        return Expr(_build_list if type(value) is list else _build_tuple,
                    tuple(p if p is not None else Const(v) for p, v in zip(items, values)))

    def _consumption(self, it):
        """For an iterator capture follows: ``(items, taken, end)`` — the provenance of all it yields, how
        many were taken before, and how many are taken now (None when that cannot be told); None when
        ``it`` is no such iterator."""
        known = self.iterators.get(id(it))
        if known is not None and known[0] is it:
            if known[1] is None:
                return None, known[2], None
            left = operator.length_hint(it, -1)
            return known[1], known[2], len(known[1]) - left if 0 <= left <= len(known[1]) else None
        if type(it) in _RUN_ITERATORS:
            made = self.contents.get(id(it))
            if made is None or made[0] is not it or made[1] is None:
                return None
            seen = self.consumed.get(id(it))
            return made[1], seen[1] if seen is not None and seen[0] is it else 0, len(made[1])
        return None

    def _taken_by_call(self, it):
        """An iterator a native call just consumed (``sum(iter(xs))``, ``sum(gen)`` after ``next(gen)``):
        the items it took — from where earlier consumers stopped to where this one did — as the
        expression building them; None when ``it`` is not an iterator capture follows."""
        consumption = self._consumption(it)
        if consumption is None:
            return None
        items, k, end = consumption
        if items is None or end is None or end < k:
            return UNKNOWN
        part = items[k:end]
        if any(p is UNKNOWN or type(p) in (tuple, Traced) for p in part):
            return UNKNOWN
        if all(p is None for p in part):
            return None
        values = self.yielded_values.get(id(it)) if type(it) in _RUN_ITERATORS else None
        if any(p is None for p in part) and values is None:
            return UNKNOWN  # (a constant item: its value is not kept)
        return Expr(_build_tuple, tuple(p if p is not None else Const(values[k + i])
                                        for i, p in enumerate(part)))

    def _mark_taken(self, args, kwargs):
        """After a native call: the iterators among its arguments are consumed as far as they are now."""
        for a in (*args, *(kwargs or {}).values()):
            consumption = self._consumption(a)
            if consumption is None or consumption[0] is None or consumption[2] is None:
                continue
            if type(a) in _RUN_ITERATORS:
                self.consumed[id(a)] = (a, consumption[2])
            else:
                self.iterators[id(a)] = (a, consumption[0], consumption[2])

    def finish_objects(self):
        """The state of each new object and container the mock rebuilds, as the program left it. An
        attribute the VM did not see written (set natively) is of unknown origin unless it is a tensor."""
        while self.pending_objects:
            obj, prov, parts = self.pending_objects.pop()
            if type(obj) is list:
                parts.extend(self.template(v, p) for v, p in zip(obj, self._element_provs(obj, prov)))
            elif isinstance(obj, dict):
                provs = self._dict_provs(obj, prov)
                parts.extend((k, self.template(v, provs[k])) for k, v in obj.items())
            else:
                for name, value in vars(obj).items():
                    p = self.written.get((id(obj), name), UNKNOWN)
                    parts.append((name, self.template(value, p)))

    def frozen_template(self, value, prov):
        """``template`` for the argument of a call replayed at this point (``print(xs)``): containers as
        they are now, not as the call leaves them."""
        saved, self.templates, self.snapshot = self.templates, {}, True
        try:
            return self.template(value, prov)
        finally:
            self.templates, self.snapshot = saved, False

    # ---- sets made inside the call: every value added, with its provenance ------------------------------
    def set_added(self, target, value, prov, many=False):
        entry = self.sets.get(id(target))
        if entry is None or entry[0] is not target:
            entry = self.sets[id(target)] = (target, [(v, None) for v in target] if not many else [])
        if many:
            items = _elements(self, value, prov) if prov is not UNKNOWN else None
            values = list(value) if isinstance(value, (list, tuple, set, frozenset, dict)) else None
            if items is None or values is None or len(items) != len(values) or \
                    any(type(p) is tuple for p in items):
                entry[1].append((None, UNKNOWN))
            else:
                entry[1].extend(zip(values, items))
        else:
            entry[1].append((value, prov))
        if any(p is not None for _, p in entry[1]):
            self.contents[id(target)] = (target, None)  # not a constant any more
        return None

    def set_pinned(self, s):
        """Do the identities of ``s``'s elements replay as they were (constants, tensors, guarded objects)?"""
        return all(_pinned(v, p) for v, p in self.sets[id(s)][1])

    def _set_expr(self, s):
        adds = self.sets[id(s)][1]
        if all(p is None for _, p in adds):
            return None
        if any(p is UNKNOWN or type(p) in (tuple, Traced) for _, p in adds) or \
                not all(isinstance(v, _SCALARS) for v, _ in adds):
            return UNKNOWN
        return Expr(_build_set, tuple(p if p is not None else Const(v) for v, p in adds))

    def _tensor_of_array(self, fn, args, arg_provs, kwargs, kw_provs, result):
        """``torch.from_numpy(a)`` / ``as_tensor`` / ``tensor``: the entry program makes the tensor again from
        the array's provenance and hands it to the graph as an input."""
        prov = self.effective(args[0], arg_provs[0])
        if type(prov) is Traced:  # an array of tensor data (``t.numpy()``): made in the graph
            return self.record(fn, args, arg_provs, kwargs, kw_provs, result) and None
        if prov is None:  # an array of constants: copied each time, so the tensor's writes cannot reach it
            prov = Expr(np.copy, (Const(args[0].copy()),))
        elif not _replayable_path(prov):
            self.unsupported(f"{fn.__name__}() of an array of unknown origin")
        for a, p in zip(args[1:], arg_provs[1:]):
            self.need(a, p)
        for k, v in kwargs.items():
            self.need(v, kw_provs.get(k))
        make = _with_keywords(fn, kwargs) if kwargs else fn
        self.tensor_input(result, Expr(make, (prov, *map(Const, args[1:]))))
        return None

    def _offset_guard(self, name, tensor, value):
        """The tensor guard leaves out the storage offset; a program that asks for it depends on it."""
        if name != "storage_offset":
            return
        known = self.sources_of.get(id(tensor))
        if known is not None and known[0] is tensor:
            self.guard(ValueGuard(Expr(torch.Tensor.storage_offset, (known[1],)), value))

    def _warning(self, frame, args, arg_provs, kwargs, kw_provs):
        """``warnings.warn`` is replayed as ``warn_explicit`` at the line the first call warned from."""
        from ..interp.lookaside import warning_location
        bound = inspect.signature(warnings.warn).bind(*args, **kwargs)
        message = bound.arguments.get("message")
        category = bound.arguments.get("category")
        level = bound.arguments.get("stacklevel", 1)
        for name in ("category", "stacklevel"):
            if name in bound.arguments:
                position = list(bound.signature.parameters).index(name)
                p = arg_provs[position] if position < len(arg_provs) else kw_provs.get(name)
                self.need(bound.arguments[name], p)
        position_of_message = 0
        mprov = arg_provs[position_of_message] if arg_provs else kw_provs.get("message")
        if isinstance(message, Warning):
            category = type(message)
        where = warning_location(self.vm, level)
        call = functools.partial(warnings.warn_explicit, category=category or UserWarning, **where)
        self.cap.side_effects.append(("call", call, [self.frozen_template(message, mprov)], {}))
        return None

    def _pure(self, fn, args, arg_provs, kwargs, kw_provs, result):
        if type(result) is bool and _is_torch_callable(fn) and any(map(_holds_tensor, args)) and \
                rules.is_type_predicate(fn):
            return None  # ``has_torch_function(ts)``: decided by tensor types, which the guards fix
        if fn is reversed and len(args) == 1 and not kwargs:
            entry = self.contents.get(id(args[0]))
            if entry is not None and entry[0] is args[0] and type(entry[1]) is list:
                self.contents[id(result)] = (result, entry[1][::-1])
                return None
        if fn is len and len(args) == 1 and not kwargs and (type(args[0]) in (list, dict) or
                                                            isinstance(args[0], tuple)) and arg_provs[0] is None:
            return None  # the length of a container made here is fixed by the guards of what filled it
        if fn in _TYPE_QUERIES and args and arg_provs[0] is None and not kwargs and \
                all(_pinned(a, p) for a, p in zip(args[1:], arg_provs[1:])):
            return None  # the type of a value the program made itself (whatever its contents came from)
        self_obj = _bound_self(fn)
        method_prov, self.call_fn_prov = self.call_fn_prov, None
        unbound = getattr(type(self_obj), getattr(fn, "__name__", ""), None) if self_obj is not None else None
        if unbound in rules.STATE_READS and not kwargs and method_prov is None \
                and all(p is None for p in arg_provs):
            return Expr(unbound, (Const(self_obj), *map(Const, args)))  # ``var.get()`` of a library's var
        if unbound is not None and method_prov is not None and not isinstance(self_obj, types.ModuleType):
            # a method bound to a value that has a provenance: the result depends on that value too.
            # The call is the class's function on the value's provenance (``m.group(1)`` of
            # ``m = PATTERN.search(s)`` is ``Match.group(PATTERN.search(s), 1)``). (A builtin whose
            # ``__self__`` has no such method — pybind's function records — is a plain function.)
            bound = self.bound_from.get(id(fn))
            base = bound[1] if bound is not None and bound[0] is fn else UNKNOWN
            if base is UNKNOWN or base is None or type(base) is Traced:
                return UNKNOWN
            self.guard(TypeGuard(base, type(self_obj)))
            return self._pure(unbound, (self_obj, *args), (base, *arg_provs), kwargs, kw_provs, result)
        arg_provs = [None if _library_constant(a, p) else self.effective(a, p) for a, p in zip(args, arg_provs)]
        provs = list(arg_provs) + list(kw_provs.values())
        if fn is torch.is_grad_enabled and self.grad_mode is not _NOT_WRITTEN:
            return self.grad_mode  # the program set it: as it set it
        if not args and not kwargs and _is_torch_callable(fn):
            return Expr(fn, ())  # torch's global state (grad mode, default dtype …): guarded where used
        if all(p is None for p in provs):
            return None
        if fn in _DICT_VIEWS and len(args) == 1 and type(args[0]) in (dict, collections.OrderedDict):
            return Expr(fn, (arg_provs[0] if arg_provs[0] is not None else Const(args[0]),))
        pure = rules.is_pure(fn)
        if not pure or any(p is UNKNOWN for p in provs):
            return UNKNOWN
        if kwargs:
            # (a class or function read by path is guarded by identity)
            fixed = {k: v for k, v in kwargs.items() if kw_provs.get(k) is None or
                     (isinstance(v, _IDENTITY_TYPES) and isinstance(kw_provs[k], Source))}
            if not all(map(_fixed_keyword, fixed.values())):
                return UNKNOWN
            # ``sorted(xs, reverse=True)``: constant keywords are part of the function; computed ones
            # (``np.arange(n, dtype=np.result_type(...))``) are operands after the positional ones
            computed = tuple(k for k in kwargs if k not in fixed)
            fn = _with_keywords(fn, fixed, computed)
            args = (*args, *(kwargs[k] for k in computed))
            arg_provs = (*arg_provs, *(kw_provs[k] for k in computed))
        if any(type(p) is Traced for p in provs):
            if fn in _TYPE_QUERIES:
                return None  # a number the graph computes has the type its tensor's (guarded) dtype gives
            return self.traced_op(fn, args, arg_provs)  # ``math.sqrt(t.item())``: computed in the graph
        if self_obj is not None and not isinstance(self_obj, types.ModuleType):
            if not isinstance(self_obj, rules.PURE_METHOD_TYPES):
                return UNKNOWN
            # a method of an immutable value read from a constant (``PATTERN.search(s)``): the bound
            # method is a constant too
        operands = tuple(p if p is not None else Const(a) for a, p in zip(args, arg_provs))
        for a, p in zip(args, arg_provs):
            if _is_tensor(a):
                return None
        return Expr(fn, operands)


    def _grow_outside_list(self, fn, target, prov, value, value_prov, name):
        """``xs.append(v)`` / ``xs.extend(vs)`` on a list from outside: replayed on the entry's list."""
        if name == "append":
            added = [value_prov]
        else:
            added = _elements(self, value, value_prov) if value_prov is not UNKNOWN else None
            if added is None or any(type(p) is tuple for p in added):
                self.unsupported("extend() of an outside list by values of unknown origin")
        self.cap.side_effects.append(("call", getattr(list, name), [("source", prov),
                                                                    self.frozen_template(value, value_prov)], {}))
        grown = self.contents.grown.get(id(target))
        entry = dict.get(self.contents, id(target))
        if entry is not None and entry[0] is target:
            entry[1].extend(added)
        elif grown is not None and grown[0] is target:
            grown[3].extend(added)
        else:
            self.contents.grow(id(target), (target, prov, len(target) - len(added), list(added)))
        return None

    def _mutation(self, fn, args, arg_provs, result):
        self_obj = _bound_self(fn)
        if self_obj is not None and not isinstance(self_obj, types.ModuleType):
            target, target_prov, others = self_obj, self.provenance_of(self_obj), arg_provs
        else:
            target, target_prov, others = args[0], arg_provs[0], arg_provs[1:]
        name = getattr(fn, "__name__", "")
        if type(target) is list and isinstance(target_prov, Source) and name in ("append", "extend"):
            return self._grow_outside_list(fn, target, target_prov, args[-1], others[-1], name)
        if type(target) is set and isinstance(target_prov, Source) and name in ("add", "discard") and \
                len(others) == 1:
            # (``register_buffer`` keeps a module's set of non-persistent names): replayed on the entry's
            # set; what the set holds afterwards is unknown to the rest of the call
            self.need(args[-1], others[0])
            self.cap.side_effects.append(("call", getattr(set, name), [("source", target_prov),
                                                                       ("const", args[-1])], {}))
            dict.__setitem__(self.contents, id(target), (target, None))  # its size and order: unknown
            self.contents.outside.add(id(target))
            self.set_changes.setdefault(id(target), (target, {}))[1][args[-1]] = name == "add"
            return None
        entry = self.contents.get(id(target))
        inside = entry is not None and entry[0] is target
        if type(target) is set and target_prov is None and name in ("add", "update") and len(others) == 1:
            return self.set_added(target, args[-1], others[0], many=name == "update")
        if not inside and target_prov is not None:
            self.unsupported(f"{getattr(fn, '__qualname__', fn)}() mutates a container from outside the call")
        if type(target) is list and name == "append" and len(others) == 1:
            provs = list(entry[1]) if inside else [None] * (len(target) - 1)
            self.contents[id(target)] = (target, provs + [others[0]])
            return None
        if type(target) is list and name == "pop" and inside and type(entry[1]) is list and not others:
            return entry[1].pop() if entry[1] else UNKNOWN
        if isinstance(target, dict) and inside and type(entry[1]) is dict and name in _DICT_CHANGES:
            done = _DICT_CHANGES[name](self, entry[1], args[len(args) - len(others):], others)
            if done is not UNKNOWN:
                return done  # (else what it holds is unknown from here: below)
        if name == "move_to_end" and inside and type(entry[1]) is dict:
            for a, p in zip(args[-len(others):] if others else (), others):
                self.need(a, p)  # (which key moves, and to which end)
            return None  # the same values by key; the order is read from the dict when it is rebuilt
        if type(target) is list and name in _LIST_REARRANGES and (inside and type(entry[1]) is list or
                                                                  not inside and target_prov is None):
            done = self._rearranged(target, entry[1] if inside else None, name, args[len(args) - len(others):],
                                    others)
            if done is not UNKNOWN:
                return done
        if not inside and all(p is None for p in others):
            return None  # a constant container changed by constants stays constant
        unknown = dict.fromkeys(target, UNKNOWN) if type(target) is dict else [UNKNOWN] * len(target) \
            if hasattr(target, "__len__") else None
        if unknown is not None:
            self.contents[id(target)] = (target, unknown)
        return UNKNOWN

    def _rearranged(self, target, provs, name, args, arg_provs):
        """``shape.insert(k, n)``, ``xs.pop(k)``, ``xs.extend(ys)`` … on a list the call made: its elements
        keep their provenance, moved as the list's were (the positions used are guarded). Returns the
        provenance of what the call returned, or UNKNOWN when it cannot follow."""
        before = {"insert": -1, "pop": 1, "clear": None}.get(name, 0)
        if name == "extend" and provs is not None and len(provs) == len(target):
            return None  # (its items were appended one by one where the VM saw them: ``xs.extend(gen)``)
        if name == "extend":
            added = _elements(self, args[0], arg_provs[0])
            if added is None:
                return UNKNOWN
            before = -len(added)
        if provs is None:
            provs = [None] * (len(target) + before) if before is not None else []
        provs = list(provs)
        result = None
        if name in ("insert", "pop") and args:
            self.need(args[0], arg_provs[0])  # (which position)
        if name == "insert":
            provs.insert(args[0], arg_provs[1])
        elif name == "pop":
            result = provs.pop(*args[:1])
        elif name == "extend":
            provs.extend(added)
        elif name == "reverse":
            provs.reverse()
        else:
            provs.clear()
        if len(provs) != len(target):
            return UNKNOWN
        self.contents[id(target)] = (target, provs)
        return result

    @_event(UNKNOWN)
    def opaque(self, value):
        if value is None:
            return None
        return self.provenance_of(value) if not isinstance(value, _SCALARS) else UNKNOWN

    @_event(None)
    def packed(self, container, element_provs):
        if type(container) is dict:  # ``**kwargs``: the program may change it (``kwds.pop(name, default)``)
            self.made[id(container)] = container
            self.contents[id(container)] = (container, dict(element_provs))
            return None
        items = element_provs.values() if type(element_provs) is dict else element_provs
        if any(p is not None for p in items):
            self.contents[id(container)] = (container, dict(element_provs) if type(element_provs) is dict
                                            else list(element_provs))
        return None

    @_event(UNKNOWN)
    def bound_self(self, method, method_prov):
        bound = self.bound_from.get(id(method))
        if bound is not None and bound[0] is method:
            return bound[1]  # ``obj.method`` bound by an attribute read seen here: self is obj
        if type(method_prov) is AttrSource:
            known = self.sources_of.get(id(method.__self__))
            if known is not None and known[0] is method.__self__ and known[1] == method_prov.base:
                return method_prov.base  # ``obj.method`` bound by the attribute read: self is obj
        if isinstance(method_prov, Source):
            # a bound method stored as an attribute or in a cell (``random.uniform`` is
            # ``random._inst.uniform``; a decorator's ``ctx_factory = self.clone``)
            prov = AttrSource(method_prov, "__self__")
            self.sources_of.setdefault(id(method.__self__), (method.__self__, prov))
            return prov
        return self.provenance_of(method.__self__)

    @_event(lambda iterable, prov, values=None: [UNKNOWN] * len(iterable if values is None else values)
            if values is not None or hasattr(iterable, '__len__') else [])
    def unpacked(self, iterable, prov, values=None):
        if values is not None:
            return _unpacked(self, iterable, prov, list(values))
        if not isinstance(iterable, (tuple, list)):
            return [UNKNOWN] * len(iterable) if hasattr(iterable, "__len__") else []
        return self._element_provs(iterable, prov)

    @_event(lambda mapping, prov: dict.fromkeys(mapping, UNKNOWN))
    def unpacked_mapping(self, mapping, prov):
        entry = self.contents.get(id(mapping))
        if entry is not None and entry[0] is mapping and entry[1] is not None:
            if type(entry[1]) is dict:
                return {k: entry[1].get(k, UNKNOWN) for k in mapping}
            if len(entry[1]) == len(mapping):
                return dict(zip(mapping, entry[1]))
            return dict.fromkeys(mapping, UNKNOWN)
        if prov is None:
            return dict.fromkeys(mapping)
        if isinstance(prov, Source) and type(mapping) is dict:
            self.guard(ValueGuard(Expr(tuple, (prov,)), tuple(mapping)))
            return {k: ItemSource(prov, k) for k in mapping}
        return dict.fromkeys(mapping, UNKNOWN)

    # ---- everything else ---------------------------------------------------------------------------------
    @_event(lambda frame, opname, arg, inputs, provs, outputs: [None] * len(outputs))
    def operation(self, frame, opname, arg, inputs, input_provs, outputs):
        self.frame = frame
        handler = _OPERATIONS.get(opname)
        if handler is not None:
            return handler(self, arg, inputs, input_provs, outputs)
        if any(_is_tensor(x) for x in inputs) and opname not in _TENSOR_NEUTRAL:
            self.unsupported(f"{opname} on a tensor")
        if all(p is None for p in input_provs):
            return None
        return [UNKNOWN] * len(outputs)

    @_event(None)
    def branch(self, frame, kind, value, prov, taken):
        if _is_tensor(value):
            if kind in ("POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE"):
                return
            return self.data_branch(self.node_of(value, prov), bool(value), frame)
        if kind in ("POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE"):
            if prov is None or type(prov) is Traced:
                return  # a constant, an object made by the program, or a number the graph computes
            if prov is not None:
                if prov is UNKNOWN:
                    self.unsupported("a None check on a value of unknown origin", frame)
                self.guard(NoneGuard(prov, value is None))
            return
        if prov is None:
            prov = self.effective(value, None)
        if prov is None:
            return
        if prov is UNKNOWN:
            self.unsupported("a branch on a value computed by a call MagPy has no rule for", frame)
        if type(prov) is Traced:
            return self.data_branch(prov.node, bool(value), frame)
        if type(value) is bool or isinstance(value, _SCALARS):
            self.guard(ValueGuard(prov, value) if type(value) is not bool else TruthGuard(prov, value))
        else:
            self.guard(TruthGuard(prov, bool(value)))

    def data_branch(self, node, truth, frame):
        """A branch on tensor data: guarded by rerunning the condition (``predicates``; one guard for all
        of the call's conditions, made by ``guard_conditions`` at the end)."""
        if predicates.ancestry([node]) is None:
            self.checks.append((node, truth, frame))  # (random: checked after the graph runs, if it can be)
            return
        self.conditions.append((node, truth))

    def guard_conditions(self):
        cap = self.cap
        if self.checks and cap.unsupported is None:
            frame = self.checks[0][2]
            if not predicates.checkable(cap.graph) or cap.pre_graph and cap.side_effects[:cap.pre_graph]:
                cap.unsupported = Unsupported("a branch on tensor data that depends on an in-place op (graph "
                                              "break)", frame.filename, frame.lineno)
                return
            for node, truth, _ in self.checks:
                cap.outputs.append(cap.graph.call_function(bool, (node,)))
                cap.checks.append((len(cap.outputs) - 1, truth))
            cap.host_values = True
        if self.conditions:
            nodes, truths = zip(*self.conditions)
            cut = predicates.cut(self.cap.graph, nodes, self.cap.inputs)
            if cut is None:  # (a later in-place op writes into what a condition read)
                frame = self.root
                cap.unsupported = Unsupported("a branch on tensor data that an in-place op changes later "
                                              "(graph break)", frame and frame.filename, frame and frame.lineno)
                return
            self.guard(ValueGuard(Expr(predicates.holds, (Const(cut[0]), *cut[1])), tuple(truths)))

    # ---- results and stored values ------------------------------------------------------------------------
    def template(self, value, prov):
        """How the mock rebuilds ``value``: a graph output, an outside path, a constant, or a container.
        The same object gets the same template, so the mock keeps aliasing (``return out, out``)."""
        if not isinstance(value, _SCALARS):
            known = self.templates.get(id(value))
            if known is not None and known[0] is value:
                first = known[1]
                if first[0] == "source" and _replayable_path(prov) and prov != first[1]:
                    # one object reached by two paths: a later call must have one object there too
                    self.guard(TruthGuard(Expr(operator.is_, (prov, first[1])), True))
                return first
            t = self._template(value, prov)
            self.templates[id(value)] = (value, t)
            return t
        return self._template(value, prov)

    def _template(self, value, prov):
        if type(prov) is Traced:  # a Python value the graph computes: one more graph output
            if prov.node not in self.cap.outputs:
                self.cap.outputs.append(prov.node)
            return ("output", self.cap.outputs.index(prov.node))
        if _is_tensor(value):
            if type(prov) is _Row:
                self.node_of(value, prov)
            if _replayable_path(prov) and id(value) not in self.nodes:
                return ("source", prov)
            entry = self.nodes.get(id(value))
            if entry is None or entry[0] is not value:
                self.unsupported("a tensor of unknown origin leaves the compiled function")
            node = entry[1]
            if node.op == "placeholder":
                return ("source", self.cap.inputs[int(node.name[2:])][0])
            if node not in self.cap.outputs:
                self.cap.outputs.append(node)
            return ("output", self.cap.outputs.index(node))
        if type(value) in (list, tuple, dict, collections.OrderedDict) or (
                isinstance(value, tuple) and hasattr(value, "_fields")):
            if isinstance(prov, Source) and self.contents.changed_outside(value):
                return ("source", prov)  # the entry's own list, which the mock changes the same way
            entry = self.contents.get(id(value))
            if isinstance(prov, Source) and entry is None:
                return ("source", prov)
            kind = _CONTAINER_KINDS.get(type(value))
            if kind is not None and not self.snapshot:
                # made by the call and maybe changed later on: rebuilt as the call leaves it
                parts = []
                self.pending_objects.append((value, prov, parts))
                return (kind, parts)
            if isinstance(value, dict):
                provs = self._dict_provs(value, prov)
                return (kind, [(k, self.template(v, provs[k])) for k, v in value.items()])
            provs = self._element_provs(value, prov)
            parts = [self.template(v, p) for v, p in zip(value, provs)]
            if type(value) is list:
                return ("list", parts)
            if type(value) is tuple:
                return ("tuple", parts)
            return ("namedtuple", type(value), parts)
        if type(value) is set and prov is None and self.sets.get(id(value), (None,))[0] is value:
            adds = self.sets[id(value)][1]
            if any(p is UNKNOWN for _, p in adds):
                self.unsupported("a set of values MagPy lost track of leaves the compiled function")
            return ("set", [self.template(v, p) for v, p in adds])
        if type(value) in (set, frozenset):
            entry = self.contents.get(id(value))
            if (entry is not None and entry[0] is value) or (prov is not None and not isinstance(prov, Source)):
                self.unsupported("a set holding values from outside leaves the compiled function")
            if isinstance(prov, Source):
                return ("source", prov)
            if any(_is_tensor(v) for v in value):
                self.unsupported("a set of tensors leaves the compiled function")
            return ("set", [("const", v) for v in value]) if type(value) is set else ("const", value)
        if isinstance(prov, Source):
            return ("source", prov)
        if isinstance(prov, Expr) and isinstance(value, _SCALARS):
            return ("source", prov)  # recomputed by the mock from the entry state (no guard needed)
        made_class = isinstance(value, type) and self.made_classes.get(id(value)) is value
        if prov is None and (made_class or self.made_classes.get(id(type(value))) is type(value)):
            # a later call makes another class: handing out this one (or its instances) would differ
            self.unsupported("a class made by the call (or an instance of it) leaves it")
        if prov is None and type(value) in rules.REUSED_OBJECTS:
            return ("const", value)
        if prov is None and self.made.get(id(value)) is value and _rebuildable(type(value)):
            # a new object of this call: the mock makes a fresh one each call, with the attributes
            # this one holds when capture ends (filled in by ``finish_objects``)
            fields = []
            self.pending_objects.append((value, None, fields))
            return ("object", type(value), fields)
        if prov is None and not _immutable(value):
            # an object made by this call: a replay would hand out the first call's object again
            self.unsupported(f"a new {type(value).__name__} object made by the call leaves it")
        self.need(value, prov)
        return ("const", value)





# ---- generic operations: provenance and graph recording per opcode --------------------------------------

def _op_binary(obs, k, inputs, provs, outputs):
    a, b = inputs
    fn = NATIVE_BINARY[k]
    if fn in (operator.add, operator.iadd) and type(a) in (list, tuple) and type(b) is type(a):
        return _op_concat(obs, fn, inputs, provs, outputs[0])
    if k >= 13 and type(a) in (list, dict, set) and outputs[0] is a:
        return [_op_in_place(obs, fn, a, b, provs)]
    provs = [obs.effective(v, p) for v, p in zip(inputs, provs)]
    if k >= 13 and not _is_tensor(a) and type(a) not in (list, dict, set):
        fn = NATIVE_BINARY[k - 13]  # ``n += t`` on an immutable number is ``n = n + t`` (fx cannot write ``0 += t``)
    if _is_tensor(a) or _is_tensor(b) or _is_tensor(outputs[0]):
        obs.record(fn, (a, b), provs, None, None, outputs[0])
        return [None]
    return [_derive(fn, inputs, provs, obs)]


def _op_in_place(obs, fn, target, other, provs):
    """``xs *= n``, ``d |= e``, ``s -= t`` … on a container: it changed where it is. What it holds is
    followed for ``xs *= n`` (the count guarded); otherwise it is unknown from here when anything
    involved has a provenance. Returns the target's provenance."""
    if isinstance(provs[0], Source) or provs[0] is UNKNOWN:
        obs.unsupported(f"{getattr(fn, '__name__', fn)} changes a container from outside the call in place")
    tracked = obs.sets.pop(id(target), None) if type(target) is set else None
    entry = obs.contents.get(id(target))
    before = entry[1] if entry is not None and entry[0] is target else None
    if tracked is not None and tracked[0] is target:
        before = []  # (a set whose elements were followed: not through set operators)
    if fn is operator.iadd and type(target) is list:
        _op_list_extend_target(obs, target, other, provs[1])  # (``hooks += d.values()``: an extend)
        return provs[0]
    if fn is operator.imul and type(target) is list and type(other) is int:
        obs.need(other, provs[1])
        if before is not None:
            obs.contents[id(target)] = (target, list(before) * other if type(before) is list else None)
        return provs[0]
    if fn is operator.ior and type(target) is dict and isinstance(other, dict) and type(before) in (dict, type(None)):
        provs_now = dict(before) if before is not None else dict.fromkeys(target)
        provs_now.update(obs._dict_provs(other, provs[1]))  # (``d |= e`` is ``d.update(e)``)
        obs.contents[id(target)] = (target, provs_now)
        return provs[0]
    if before is not None or obs.effective(other, provs[1]) is not None:
        dict.__setitem__(obs.contents, id(target), (target, None))
    return provs[0]


def _op_concat(obs, fn, inputs, provs, result):
    """``xs + ys`` / ``xs += ys`` on lists or tuples: the elements of both, each with its provenance."""
    a, b = inputs
    if result is a:  # ``xs += ys`` grew the list in place
        if isinstance(provs[0], Source):
            obs._grow_outside_list(list.extend, a, provs[0], b, provs[1], "extend")
            return [provs[0]]
        _op_list_extend_target(obs, a, b, provs[1])
        return [provs[0]]
    left, right = _elements(obs, a, provs[0]), _elements(obs, b, provs[1])
    both = left + right if left is not None and right is not None else None
    return [None if obs.holds(result, both) else UNKNOWN]


def _op_compare(obs, k, inputs, provs, outputs):
    a, b = inputs
    if any(obs.holds_traced(v) for v in inputs):
        # ``hx.size() != (layers, int(batch_sizes[0]), hidden)``: a tuple holding numbers the graph
        # computes, compared in the graph
        return [obs.traced_op(NATIVE_COMPARE[k], inputs, provs)]
    provs = [obs.effective(v, p) for v, p in zip(inputs, provs)]
    fn = NATIVE_COMPARE[k]
    if _is_tensor(a) or _is_tensor(b) or _is_tensor(outputs[0]):
        obs.record(fn, (a, b), provs, None, None, outputs[0])
        return [None]
    return [_derive(fn, inputs, provs, obs)]


def _op_unary(fn):
    def op(obs, arg, inputs, provs, outputs):
        provs = [obs.effective(v, p) for v, p in zip(inputs, provs)]
        if _is_tensor(inputs[0]):
            if fn in (operator.not_, operator.truth):
                # ``not t``: a Python bool of tensor data, computed by the graph (a branch on it is
                # guarded by rerunning it)
                return [obs.scalar_of(fn, inputs, provs, outputs[0])]
            obs.record(fn, inputs, provs, None, None, outputs[0])
            return [None]
        return [_derive(fn, inputs, provs, obs)]
    return op


def _derive(fn, inputs, provs, obs=None):
    """Provenance of ``fn(*inputs)``: an expression over the entry state, a graph node when the graph
    computes an input (``obs`` given; else unknown), None for constants."""
    if all(p is None for p in provs):
        return None
    if any(p is UNKNOWN for p in provs):
        return UNKNOWN
    if any(type(p) is Traced for p in provs):
        return obs.traced_op(fn, inputs, provs) if obs is not None else UNKNOWN
    return Expr(fn, tuple(p if p is not None else Const(v) for v, p in zip(inputs, provs)))


def _op_is(obs, invert, inputs, provs, outputs):
    provs = [obs.effective(v, p) for v, p in zip(inputs, provs)]
    return [_derive(operator.is_not if invert else operator.is_, inputs, provs)]


def _op_contains(obs, invert, inputs, provs, outputs):
    item, container = inputs
    changed = obs.set_changes.get(id(container))
    if changed is not None and changed[0] is container and isinstance(provs[1], Source):
        # an outside set the call added to / discarded from: those items are known, others are as on entry
        obs.need(item, provs[0])
        if item in changed[1]:
            return [None]
        fn = _not_contains if invert else operator.contains
        return [Expr(fn, (provs[1], provs[0] if provs[0] is not None else Const(item)))]
    if type(container) is set and provs[1] is None and obs.sets.get(id(container), (None,))[0] is container \
            and _pinned(item, provs[0]) and obs.set_pinned(container):
        return [None]  # membership by identity among objects whose identities replay (a memo set)
    if _is_tensor(container) or _is_tensor(item):
        obs.unsupported("`in` on a tensor (graph break)")
    provs = [obs.effective(v, p) for v, p in zip(inputs, provs)]
    fn = _not_contains if invert else operator.contains
    return [_derive(fn, (container, item), (provs[1], provs[0]))]


def _not_contains(container, item):
    return item not in container


def _op_build(kind):
    def op(obs, n, inputs, provs, outputs):
        if any(p is not None for p in provs) or kind is list:
            obs.contents[id(outputs[0])] = (outputs[0], list(provs))
        return [None]
    return op


def _op_list_to_tuple(obs, arg, inputs, provs, outputs):
    """``(a, *rest)``: the tuple holds the list's elements, with their provenance."""
    return [None if obs.holds(outputs[0], _elements(obs, inputs[0], provs[0])) else UNKNOWN]


def _op_build_map(obs, n, inputs, provs, outputs):
    d = outputs[0]
    keys, key_provs, value_provs = inputs[0::2], provs[0::2], provs[1::2]
    for k, kp in zip(keys, key_provs):
        obs.need(k, kp)
    if any(p is not None for p in value_provs):
        obs.contents[id(d)] = (d, dict(zip(keys, value_provs)))
    return [None]


def _op_build_const_key_map(obs, n, inputs, provs, outputs):
    d = outputs[0]
    if any(p is not None for p in provs[:-1]):
        obs.contents[id(d)] = (d, dict(zip(inputs[-1], provs[:-1])))
    return [None]


def _op_map_add(obs, n, inputs, provs, outputs):
    key, value = inputs
    obs.need(key, provs[0])
    target = obs.frame.stack[-n]
    entry = obs.contents.get(id(target))
    if entry is not None and entry[0] is target:
        if type(entry[1]) is dict:  # (else what it holds is unknown already)
            entry[1][key] = provs[1]
    elif provs[1] is not None:
        obs.contents[id(target)] = (target, {**dict.fromkeys(target), key: provs[1]})
    return None


def _op_list_extend(obs, n, inputs, provs, outputs):
    return _op_list_extend_target(obs, obs.frame.stack[-n], inputs[0], provs[0])


def _op_list_extend_target(obs, target, iterable, prov):
    """``target`` (a list made here) grew by the elements of ``iterable``."""
    entry = obs.contents.get(id(target))
    if entry is not None and entry[0] is target and entry[1] is None:
        return None  # (what it holds is unknown already)
    added = _elements(obs, iterable, prov)
    count = len(target) - (len(entry[1]) if entry is not None and entry[0] is target else 0)
    if added is None and type(prov) is Expr and prov.fn is itertools.repeat and len(prov.args) == 2:
        # ``[a, *repeat(1, n - 2), b]``: n decided how many; each is the repeated value
        value, times = prov.args
        if type(times) is not Const:
            obs.guard(ValueGuard(times, count))
        added = [None if type(value) is Const else value] * count
    elif added is None and prov is None and type(iterable) is itertools.repeat:
        added = [None] * count  # a constant repeated a constant number of times
    if added is None or (type(iterable) in (list, tuple) and len(added) != len(iterable)):
        added = [UNKNOWN] * count
    if entry is not None and entry[0] is target:
        entry[1].extend(added[:count])
    elif any(p is not None for p in added):
        obs.contents[id(target)] = (target, [None] * (len(target) - len(added)) + list(added))
    return None


def _op_dict_update(obs, n, inputs, provs, outputs):
    target = obs.frame.stack[-n]
    source = inputs[0]
    entry = obs.contents.get(id(target))
    added = obs._dict_provs(source, provs[0]) if type(source) is dict else dict.fromkeys(source, UNKNOWN)
    if entry is not None and entry[0] is target and type(entry[1]) is dict:
        entry[1].update(added)
    elif any(p is not None for p in added.values()):
        obs.contents[id(target)] = (target, {**dict.fromkeys(target), **added})
    return None


def _op_set_add(obs, n, inputs, provs, outputs):
    target = obs.frame.stack[-n]
    if type(target) is set:
        return obs.set_added(target, inputs[0], provs[0])
    if any(p is not None for p in provs):
        obs.contents[id(target)] = (target, None)  # a set holding values from outside: not replayable
    return None


def _op_set_update(obs, n, inputs, provs, outputs):
    target = obs.frame.stack[-n]
    if type(target) is set:
        return obs.set_added(target, inputs[0], provs[0], many=True)
    return _op_set_add(obs, n, inputs, provs, outputs)


def _op_build_set(obs, n, inputs, provs, outputs):
    s = outputs[0]
    obs.sets[id(s)] = (s, [])
    for v, p in zip(inputs, provs):
        obs.set_added(s, v, p)
    return [None]


def _op_list_append(obs, n, inputs, provs, outputs):
    # the list is below the appended value; its identity is on the real stack (not among inputs)
    frame = obs.frame
    target = frame.stack[-n] if frame is not None else None
    if target is not None:
        entry = obs.contents.get(id(target))
        if entry is not None and entry[0] is target:
            entry[1].append(provs[0])
        elif provs[0] is not None:
            obs.contents[id(target)] = (target, [None] * (len(target) - 1) + [provs[0]])
    return None


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


def _dict_pop(obs, provs, args, arg_provs):
    """``d.pop(key[, default])`` on a dict the call made: the value's provenance, or the default's."""
    obs.need(args[0], arg_provs[0])  # (which key)
    if args[0] in provs:
        return provs.pop(args[0])
    return arg_provs[1] if len(args) > 1 else UNKNOWN


def _dict_setdefault(obs, provs, args, arg_provs):
    obs.need(args[0], arg_provs[0])
    if args[0] not in provs:
        provs[args[0]] = arg_provs[1] if len(args) > 1 else None
    return provs[args[0]]


def _dict_update(obs, provs, args, arg_provs):
    if len(args) != 1 or not isinstance(args[0], dict):
        return UNKNOWN  # (pairs, keywords: not followed)
    provs.update(obs._dict_provs(args[0], arg_provs[0]))
    return None


def _dict_clear(obs, provs, args, arg_provs):
    provs.clear()
    return None


#: mutations of a dict the call made whose contents' provenance capture keeps up to date
_DICT_CHANGES = {"pop": _dict_pop, "setdefault": _dict_setdefault, "update": _dict_update, "clear": _dict_clear}


def _module_sequence(obj):
    """A Sequential / ModuleList (or a subclass iterating as they do): its children, in order."""
    return type(obj).__iter__ in _MODULE_SEQUENCE_ITERS


def _elements(obs, obj, prov):
    """Provenance of each element ``iter(obj)`` yields (a pair list for yielded tuples), or None
    when it is unknown."""
    if _is_tensor(obj) and obj.dim() > 0:
        # native code iterating a tensor gets its rows (``Tensor.__iter__`` is ``iter(t.unbind(0))``)
        if 0 in obs.dynamic.get(obs.node_of(obj, prov), ()):
            # as many rows as the data says: this many, while the guard's rerun agrees
            length = obs.cap.graph.call_method("size", (obs.node_of(obj, prov), 0))
            obs.pin(Traced(length), obj.shape[0])
        rows = obs.cap.graph.call_method("unbind", (obs.node_of(obj, prov), 0))
        obs.cap.op_count += 1
        return [_Row(rows, k) for k in range(obj.shape[0])]
    if type(prov) is Traced and (type(obj) is np.ndarray and obj.ndim > 0 or type(obj) in (range, list, tuple)):
        # an array or range the graph computes (``np.unique(t.numpy())``, ``range(lengths.max())``): as
        # many items as the guard's rerun finds again, each computed in the graph
        obs.pin(obs.traced_op(len, (obj,), (prov,)), len(obj))
        return [obs.traced_op(operator.getitem, (obj, k), (prov, None)) for k in range(len(obj))]
    if type(obj) is set and obs.sets.get(id(obj), (None,))[0] is obj:
        if not obs.set_pinned(obj):
            return None  # the order of a set of values depends on the values
        first = {}
        for v, p in obs.sets[id(obj)][1]:
            first.setdefault(id(v), p)
        return [first.get(id(v), UNKNOWN) for v in obj]
    entry = obs.contents.get(id(obj))
    if entry is not None and entry[0] is obj:
        return list(entry[1]) if entry[1] is not None else None
    if prov is None and _module_sequence(obj):
        # a Sequential / ModuleList made here (``self.features[:-1]``): the children it was given
        return list(obs._dict_provs(obj._modules, None).values())
    if prov is None:
        if _user_made(obj):
            return None  # an object of a Python class made here: what it holds may come from outside
        return [None] * len(obj) if hasattr(obj, "__len__") else None
    if prov is UNKNOWN:
        return None
    if isinstance(obj, (list, tuple)):
        obs.guard(ValueGuard(Expr(len, (prov,)), len(obj)))
        return [_item_of(prov, k)
                for k in range(len(obj))]
    if type(obj) is dict:
        obs.guard(ValueGuard(Expr(tuple, (prov,)), tuple(obj)))
        return [None] * len(obj)
    if type(obj) is range:
        obs.guard(ValueGuard(prov, obj))
        return [None] * len(obj)
    if isinstance(prov, Source) and _module_sequence(obj):
        # a ModuleList / Sequential iterated natively (``enumerate(self.layers)``): its children in order
        children = ItemSource(AttrSource(prov, "__dict__"), "_modules")
        obs.guard(ValueGuard(Expr(tuple, (children,)), tuple(obj._modules)))
        return [ItemSource(children, k) for k in obj._modules]
    if isinstance(prov, Source) and type(obj).__iter__ is torch.nn.ModuleDict.__iter__:
        obs.guard(ValueGuard(Expr(tuple, (ItemSource(AttrSource(prov, "__dict__"), "_modules"),)),
                             tuple(obj._modules)))
        return [None] * len(obj._modules)
    if isinstance(prov, Expr) and prov.fn in _DICT_VIEWS and len(prov.args) == 1:
        dprov = prov.args[0]
        d = obj.mapping
        obs.guard(ValueGuard(Expr(tuple, (dprov,)), tuple(d)))
        kind = _DICT_VIEWS[prov.fn]
        item = functools.partial(_item_of, dprov)
        if kind == "keys":
            return [None] * len(d)
        if kind == "values":
            return [item(k) for k in d]
        return [("tuple", [None, item(k)]) for k in d]
    if isinstance(prov, Expr) and prov.fn is enumerate and len(prov.args) == 1:
        inner = _elements_of_expr(obs, prov.args[0], obj)
        return None if inner is None else [("tuple", [None, p]) for p in inner]
    if isinstance(prov, Expr) and prov.fn is zip:
        parts = [_elements_of_expr(obs, a, None) for a in prov.args]
        if any(p is None for p in parts):
            return None
        return [("tuple", list(row)) for row in zip(*parts)]
    return None


def _elements_of_expr(obs, prov, obj):
    """Elements of the iterable an enumerate()/zip() was made from (its provenance is known)."""
    if isinstance(prov, Const):
        value = prov.value
        return _elements(obs, value, None)
    holder = obs.iterables.get(prov)
    if holder is None:
        return None
    return _elements(obs, holder, prov)


def start_iteration(obs, obj, prov, it):
    known = obs.iterators.get(id(it))
    if known is not None and known[0] is it and it is not obj:
        # a Python __iter__ already made this iterator and said what it yields (``Tensor.__iter__``
        # unbinds the tensor: graph ops)
        return None
    if _is_tensor(obj):
        obs.unsupported("iterating over a tensor")
    if type(obj) in _RUN_ITERATORS and it is obj:
        made = obs.contents.get(id(obj))
        if made is not None and made[0] is obj:
            return None  # a generator the VM runs: each step's value comes from its yield
    elements = _elements(obs, obj, prov)
    if elements is None and prov is None and not _user_made(obj):
        return None  # an iterator over constants
    obs.iterators[id(it)] = (it, elements, 0)
    return None if elements is not None else UNKNOWN


def _op_get_iter(obs, arg, inputs, provs, outputs):
    return [start_iteration(obs, inputs[0], provs[0], outputs[0])]


def next_element(obs, it, prov, value):
    entry = obs.iterators.get(id(it))
    if entry is None or entry[0] is not it:
        made = obs.contents.get(id(it))
        if made is not None and made[0] is it and type(it) in _RUN_ITERATORS:
            # a generator the VM runs: what it just yielded, with the provenance it yielded it with
            if made[1] is not None:
                obs.consumed[id(it)] = (it, len(made[1]))
            return made[1][-1] if made[1] else UNKNOWN
        return None if prov is None else UNKNOWN
    _, items, k = entry
    obs.iterators[id(it)] = (it, items, k + 1)
    if items is None or k >= len(items):
        return UNKNOWN
    return _unfold(obs, value, items[k])


def _unfold(obs, value, element):
    """The provenance of a yielded ``value`` given its element entry: a ("tuple", provs) entry (what zip,
    enumerate and combinations yield, nested for ``enumerate(zip(…))``) lists the tuple's contents."""
    if type(element) is tuple and element and element[0] == "tuple":
        if not isinstance(value, tuple) or len(value) != len(element[1]):
            return UNKNOWN
        provs = [_unfold(obs, v, p) for v, p in zip(value, element[1])]
        if any(p is not None for p in provs):
            obs.contents[id(value)] = (value, provs)
        return None
    return element


def _op_for_iter(obs, arg, inputs, provs, outputs):
    return [next_element(obs, inputs[0], provs[0], outputs[0])]


def _op_unpack(obs, n, inputs, provs, outputs):
    seq, prov = inputs[0], provs[0]
    if _is_tensor(seq):
        obs.record(lambda t: tuple(t), (seq,), (prov,), None, None, tuple(reversed(outputs)))
        return [None] * len(outputs)
    return list(reversed(_unpacked(obs, seq, prov, outputs[::-1])))


def _unpacked(obs, seq, prov, values):
    """Provenance of ``values``, the items an unpacking took from ``seq`` (a Python ``__iter__``'s by
    identity: tensors the graph made, else of unknown origin)."""
    if type(seq) in (list, tuple) or isinstance(seq, tuple):
        items = obs._element_provs(seq, prov)
        if isinstance(prov, Source) and type(seq) in (list, tuple):
            obs.guard(ValueGuard(Expr(len, (prov,)), len(seq)))  # (how the items split)
        return items[:len(values)]
    if prov is None and type(seq) in _REVERSED_ITERATORS and obs.contents.get(id(seq)) is None:
        # (``reversed(range(x.dim()))`` of constants: one over values from outside has contents or a
        # provenance)
        return [None] * len(values)
    known = obs.contents.get(id(seq)) is not None or id(seq) in obs.iterators or \
        type(seq) in (dict, range, str, bytes, set, frozenset) or _module_sequence(seq)
    items = _elements(obs, seq, prov) if known and prov is not UNKNOWN else None
    if items is None or len(items) != len(values) or any(type(p) is tuple for p in items):
        items = obs.by_identity(values)
    return items


def _op_unpack_ex(obs, arg, inputs, provs, outputs):
    """``a, b, *rest = seq``: the items keep their provenance; ``rest`` is a list made here of its part."""
    before, after = arg & 0xFF, arg >> 8
    middle = outputs[after]
    values = [*outputs[after + 1:][::-1], *middle, *outputs[:after][::-1]]
    items = _unpacked(obs, inputs[0], provs[0], values)
    obs.contents[id(middle)] = (middle, list(items[before:len(items) - after]))
    return [*items[len(items) - after:][::-1], None, *items[:before][::-1]]


def _op_neutral(obs, arg, inputs, provs, outputs):
    return [p for p in provs[:len(outputs)]] + [None] * (len(outputs) - len(provs))


def _op_format(obs, arg, inputs, provs, outputs):
    if any(_is_tensor(x) for x in inputs):
        obs.unsupported("formatting a tensor as text (graph break)")
    conversion = arg & 3 if type(arg) is int else 0  # FORMAT_VALUE's !s / !r / !a
    if not conversion and type(inputs[0]) in (int, float, str, bool) and \
            all(type(spec) is str for spec in inputs[1:]):
        return [_derive(_format_value, inputs, provs, obs)]
    return [None if all(p is None for p in provs) else UNKNOWN]


def _format_value(value, spec=""):
    return format(value, spec)


def _concat(*parts):
    return "".join(parts)


def _op_format_simple(obs, arg, inputs, provs, outputs):
    if any(_is_tensor(x) for x in inputs):
        obs.unsupported("formatting a tensor as text (graph break)")
    if type(inputs[0]) not in (int, float, str, bool, type(None)):
        return _op_format(obs, arg, inputs, provs, outputs)
    return [_derive(_format_value, inputs, provs, obs)]


def _op_build_string(obs, n, inputs, provs, outputs):
    return [_derive(_concat, inputs, provs, obs)]


def _op_build_slice(obs, n, inputs, provs, outputs):
    provs = list(provs)
    for k, x in enumerate(inputs):
        if _is_tensor(x):
            # ``losses[:k]`` for a count the graph computes: a number traced as ``t.item()`` is
            # (the slice's result has as many elements as the data says)
            if x.numel() != 1 or x.is_floating_point() or x.is_complex():
                obs.unsupported("a tensor used as a slice bound (graph break)")
            provs[k] = obs.scalar_of(None, (x,), (provs[k],), None, method="__index__")
    return [_derive(slice, inputs, provs, obs)]


def _op_binary_slice(obs, arg, inputs, provs, outputs):
    obj, start, stop = inputs
    key = slice(start, stop)
    key_prov = _derive(slice, (start, stop), provs[1:], obs)
    if _is_tensor(obj):
        obs.record(operator.getitem, (obj, key), (provs[0], key_prov), None, None, outputs[0])
        return [None]
    return [obs.read_item(obj, provs[0], key, key_prov, outputs[0])]


def _op_push_exc_info(obs, arg, inputs, provs, outputs):
    return [None, provs[0]]  # (the exception handled before: restored by POP_EXCEPT)


def _op_check_exc_match(obs, arg, inputs, provs, outputs):
    """``except E:``: which way it goes depends on the exception's type, fixed where it was raised."""
    exc = obs.frame.stack[-2]
    known = obs.raises.get(id(exc))
    if known is None or known[0] is not exc or not known[1]:
        return [UNKNOWN]
    obs.need(inputs[0], provs[0])
    return [None]


_BOUND_METHODS = (types.MethodType, types.BuiltinMethodType)
_SHAPE_TRACED = object()  # ``dynamic_metadata`` listed a shape's elements in ``contents``

#: itertools functions yielding tuples of their arguments' elements (``_combinatoric``)
_COMBINATORICS = IdentitySet([itertools.combinations, itertools.permutations,
                              itertools.combinations_with_replacement, itertools.product])


_OPERATIONS = {
    "BINARY_OP": _op_binary,
    "COMPARE_OP": _op_compare,
    "COMPARE_OP_BOOL": _op_compare,
    "UNARY_NEGATIVE": _op_unary(operator.neg),
    "UNARY_POSITIVE": _op_unary(operator.pos),
    "UNARY_INVERT": _op_unary(operator.invert),
    "UNARY_NOT": _op_unary(operator.not_),
    "TO_BOOL": _op_unary(operator.truth),
    "IS_OP": _op_is,
    "CONTAINS_OP": _op_contains,
    "BUILD_TUPLE": _op_build(tuple),
    "BUILD_LIST": _op_build(list),
    "LIST_TO_TUPLE": _op_list_to_tuple,
    "INTRINSIC_LIST_TO_TUPLE": _op_list_to_tuple,
    "GET_ITER": _op_get_iter,
    "FOR_ITER": _op_for_iter,
    "UNPACK_SEQUENCE": _op_unpack,
    "LIST_APPEND": _op_list_append,
    "LIST_EXTEND": _op_list_extend,
    "DICT_UPDATE": _op_dict_update,
    "DICT_MERGE": _op_dict_update,
    "SET_ADD": _op_set_add,
    "SET_UPDATE": _op_set_update,
    "BUILD_SET": _op_build_set,
    "BUILD_MAP": _op_build_map,
    "BUILD_CONST_KEY_MAP": _op_build_const_key_map,
    "MAP_ADD": _op_map_add,
    "FORMAT_VALUE": _op_format,
    "FORMAT_SIMPLE": _op_format_simple,
    "FORMAT_WITH_SPEC": _op_format,
    "BUILD_STRING": _op_build_string,
    "BUILD_SLICE": _op_build_slice,
    "BINARY_SLICE": _op_binary_slice,
    "PUSH_EXC_INFO": _op_push_exc_info,
    "CHECK_EXC_MATCH": _op_check_exc_match,
    "UNPACK_EX": _op_unpack_ex,
}
#: opcodes that may see tensors without computing on them
_TENSOR_NEUTRAL = {"BUILD_SLICE", "BUILD_MAP", "BUILD_CONST_KEY_MAP", "BUILD_SET", "LIST_APPEND",
                   "LIST_EXTEND", "DICT_UPDATE", "DICT_MERGE", "MAP_ADD", "SET_ADD", "KW_NAMES",
                   "MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE", "BEFORE_WITH", "WITH_EXCEPT_START",
                   "PUSH_EXC_INFO", "POP_EXCEPT", "RAISE_VARARGS", "RERAISE", "CHECK_EXC_MATCH",
                   "CALL_FUNCTION_EX", "CALL_FUNCTION_EX_313", "RETURN_CONST", "LOAD_BUILD_CLASS",
                   "GET_LEN", "MATCH_SEQUENCE", "MATCH_MAPPING", "SWAP", "COPY",
                   "END_FOR", "END_FOR_313", "INTRINSIC_LIST_TO_TUPLE", "YIELD_VALUE",
                   "GET_YIELD_FROM_ITER", "SEND", "SEND_311", "END_SEND", "RETURN_GENERATOR",
                   "IMPORT_NAME", "IMPORT_FROM"}


def _run_natively(target):
    """A lookaside that runs ``target`` natively: a library function the rules table treats as pure
    over its arguments (interpreting its introspection internals gains nothing)."""
    def run(vm, args, kwargs):
        return target(*args, **kwargs)
    return run


for _target in (inspect.signature,):
    register_lookaside(_target, _run_natively(_target))

def _checkpoint_as_call(vm, args, kwargs):
    """``torch.utils.checkpoint.checkpoint(fn, *args)`` runs as ``fn(*args)``: the same values and
    gradients (activations are kept rather than recomputed in backward). Its own options are dropped;
    other keywords go to ``fn``, as checkpoint passes them."""
    from ..interp.calls import call
    provs, vm.lookaside_provs = vm.lookaside_provs, None
    if not args:
        return torch.utils.checkpoint.checkpoint(*args, **kwargs)  # (its own error)
    passed = {k: v for k, v in kwargs.items() if k not in rules.CHECKPOINT_OPTIONS}
    if provs is not None:
        vm.call_provs = (provs[0][1:], {k: p for k, p in provs[1].items() if k in passed}, provs[0][0])
    return call(vm, args[0], args[1:], passed)


register_lookaside(torch.utils.checkpoint.checkpoint, _checkpoint_as_call, delegates=True)

# A TorchScript function runs as the Python function it was scripted from (the same semantics, and
# its tensor ops then join the graph); TorchScript keeps that function for torch's own compiler.
register_call_instead(torch.jit.ScriptFunction, lambda f: getattr(f, "_torchdynamo_inline", None))

#: bookkeeping functions torch's own compiler installs (Dynamo tags every new nn.Module in its
#: ``__init__``): run natively, and nothing to replay
_BOOKKEEPING = IdentitySet()


def _register_bookkeeping():
    guard = sys.modules.get("torch._dynamo.mutation_guard")
    tag = getattr(getattr(guard, "GenerationTracker", None), "tag", None)
    if tag is not None and tag.__func__ not in _BOOKKEEPING:
        _BOOKKEEPING.add(tag.__func__)
        register_lookaside(tag.__func__, _run_natively(tag.__func__))


def capture(fn, args, kwargs):
    """Run ``fn(*args, **kwargs)`` in the VM under observation.

    Returns ``(result, exception, capture)``: exactly one of result/exception is meaningful, and
    ``capture.unsupported`` says why the call cannot be replayed (None when it can).
    """
    _register_bookkeeping()
    obs = CaptureObserver(getattr(fn, "__globals__", {}))
    obs.iterators = {}
    obs.iterables = {}
    obs.cells = {}
    obs.templates = {}
    obs.sources_of = {}
    obs.made = {}
    obs.generator_yields = {}
    obs.yielded_values = {}
    obs.consumed = {}         # id(run iterator) -> (iterator, how many of its items were taken so far)
    obs.pending_objects = []
    obs.conditions = []
    obs.made_classes = {}
    obs.grad_mode = _NOT_WRITTEN  # the provenance of the grad mode the program set, once it does
    obs.set_changes = {}
    obs.scalar_inputs = {}
    obs.snapshot = False
    obs.sets = {}
    obs.raises = {}
    obs.call_fn_prov = None
    obs.bound_from = {}       # id(bound builtin method) -> (method, provenance of the object it is bound to)
    obs.raising = None
    obs.checks = []           # (node, truth, frame) of branches on random data
    obs.dynamic = {}          # graph node whose shape depends on tensor data -> those dims
    obs.computed_inputs = {}  # Expr -> the placeholder of the tensor the entry computes with it
    obs.scalar_nodes = set()  # graph nodes computing Python numbers (``t.item()``, a dynamic size)
    vm = VM(observer=obs)
    obs.vm = vm
    try:
        result = vm.call(fn, *args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - the user's exception, re-raised by the caller
        if obs.cap.unsupported is None:
            obs.cap.unsupported = Unsupported(f"the call raised {type(exc).__name__}: {exc}")
        return None, exc, obs.cap
    for step in (obs.finish_objects, obs.guard_conditions):
        try:
            step()
        except _Abandon:
            pass
        except Exception as exc:  # noqa: BLE001 - a bug of ours must not become the user's error
            obs.cap.unsupported = obs.cap.unsupported or Unsupported(
                f"internal capture error in {step.__name__}: {type(exc).__name__}: {exc}")
    _drop_implied(obs.cap.guards)
    paths = tuple(source for source, value in obs.cap.inputs if _is_tensor(value))
    if len(paths) > 1:
        # the graph was traced with distinct input tensors; the same tensor passed twice later (an
        # in-place op on one would show through the other) needs a graph of its own
        obs.guard(TruthGuard(Expr(distinct, paths), True))
    return result, None, obs.cap


def _drop_implied(guards):
    """Drop guards on pure expressions whose every path is already pinned to one exact value (``p < 0.0``
    after ``p == 0.0``): they cannot fail when the others pass."""
    # (an identity guard does not pin a value: ``hasattr(self, 'n')`` changes while ``self`` stays)
    pinned = {g.expr for g in guards.values() if type(g) is ValueGuard or
              (type(g) is NoneGuard and g.is_none)}

    def fixed(e):
        if type(e) is Const:
            return True
        if type(e) is Expr:
            return all(fixed(a) for a in e.args)
        return e in pinned

    for key, g in list(guards.items()):
        if type(g.expr) is Expr and type(g) in (ValueGuard, TruthGuard, NoneGuard) and \
                all(fixed(a) for a in g.expr.args) and g.expr.args:
            del guards[key]


def distinct(*tensors):
    """Are these different objects? (tensors hash by identity, but through a Python ``__hash__``)"""
    return len(set(map(id, tensors))) == len(tensors)
