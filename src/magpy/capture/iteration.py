"""Iteration: the provenance of each element a container or iterator yields, and unpacking.
"""
import collections
import functools
import itertools
import operator
import types

import torch
import numpy as np

from .guards import ValueGuard
from .sources import AttrSource, Const, Expr, ItemSource, Source
from .values import (Traced, UNKNOWN, _DICT_VIEWS, _MODULE_SEQUENCE_ITEMS, _MODULE_SEQUENCE_ITERS,
    _MODULE_SEQUENCE_LENGTHS, _REVERSED_ITERATORS, _RUN_ITERATORS, _Row,
    _is_tensor, _item_of, _user_made)


def _module_sequence(obj):
    """A Sequential / ModuleList (or a subclass iterating as they do): its children, in order."""
    return type(obj).__iter__ in _MODULE_SEQUENCE_ITERS


def reads_backwards(obj):
    """Does ``reversed(obj)`` yield ``obj``'s elements backwards: a list, tuple or dict (their own
    ``__reversed__``: the items, or keys, last first), or a Sequential / ModuleList with no
    ``__reversed__``, read by their own ``__len__`` and ``__getitem__`` (the sequence protocol)?"""
    tp = type(obj)
    if tp in (list, tuple, dict):
        return True
    return _module_sequence(obj) and getattr(tp, "__reversed__", None) is None and \
        tp.__getitem__ in _MODULE_SEQUENCE_ITEMS and tp.__len__ in _MODULE_SEQUENCE_LENGTHS


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
        if type(entry[1]) is dict:
            return [None] * len(obj)  # (a dict yields its keys: constants, guarded where they came from)
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
    if type(obj) in (set, frozenset) and isinstance(prov, (Source, Expr)) and all(type(v) in (str, int) for v in obj):
        # an outside set of names or numbers: its items in the order it yields them now (the guard
        # compares that order too: equal sets may iterate differently)
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
    if type(it) is types.GeneratorType and it is not obj and obs.contents.get(id(it)) is None:
        obs.follow_generator(it)  # (made by a Python ``__iter__``, which the VM called itself)
    if type(it) in _RUN_ITERATORS:
        made = obs.contents.get(id(it))
        if made is not None and made[0] is it:
            # a generator the VM runs (iterated itself, or made by a Python ``__iter__``: a Sequence's
            # ``self[i]`` loop): each step's value comes from its yield
            return None
    elements = _elements(obs, obj, prov)
    if elements is None and prov is None and not _user_made(obj):
        return None  # an iterator over constants
    obs.iterators[id(it)] = (it, elements, 0)
    if elements is not None:
        return None
    # (an iterator from outside is itself again: the same object, reached by the same path)
    return prov if it is obj and isinstance(prov, Source) else UNKNOWN


def _op_get_iter(obs, arg, inputs, provs, outputs):
    return [start_iteration(obs, inputs[0], provs[0], outputs[0])]


def zip_steps(obs, args, provs):
    """How each argument of a ``zip`` over a generator the VM runs gives the provenance of its item at each
    step: ``("yield", generator)`` (what it just yielded), ``("items", provs)`` (elements known up front; an
    iterator's remaining ones, which it stops reporting itself). None when some argument's items are
    unknown, or no argument is such a generator (the rules for known elements apply)."""
    steps = []
    for arg, prov in zip(args, provs):
        made = obs.contents.get(id(arg))
        entry = obs.iterators.get(id(arg))
        if type(arg) is types.GeneratorType and made is not None and made[0] is arg and made[1] is not None:
            steps.append(("yield", arg))
        elif entry is not None and entry[0] is arg:
            if entry[1] is None:
                return None
            steps.append(("items", entry[1][entry[2]:]))
        else:
            items = _elements(obs, arg, prov)
            if items is None:
                return None
            steps.append(("items", items))
    if not any(kind == "yield" for kind, _ in steps):
        return None
    for arg in args:  # (the zip takes their items now: later direct use is of unknown provenance)
        if obs.iterators.get(id(arg), (None,))[0] is arg:
            obs.iterators[id(arg)] = (arg, None, 0)
    return steps


def _zip_row(obs, steps, k):
    row = []
    for kind, source in steps:
        if kind == "yield":
            yielded = obs.contents[id(source)][1]
            obs.consumed[id(source)] = (source, len(yielded))
            row.append(yielded[-1] if yielded else UNKNOWN)
        else:
            row.append(source[k] if k < len(source) else UNKNOWN)
    return row


def next_element(obs, it, prov, value):
    zipped = obs.zips.get(id(it))
    if zipped is not None and zipped[0] is it:
        _, steps, k = zipped
        obs.zips[id(it)] = (it, steps, k + 1)
        return _unfold(obs, value, ("tuple", _zip_row(obs, steps, k)))
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


def unfollowed_reason(it):
    # (how many items it yields is a decision the guards would not make again: the loop's trip count)
    return (f"a loop over an iterator ({type(it).__name__}) whose items MagPy cannot follow (from outside "
            "the call, or made by a call it has no rule for)")


def _unfollowed(obs, it):
    obs.unsupported(unfollowed_reason(it))


def from_outside(obs, it, prov):
    """Is ``it`` an iterator from outside the call (reached by a path) whose items capture does not know?"""
    entry = obs.iterators.get(id(it))
    return isinstance(prov, Source) and (entry is None or entry[0] is not it or entry[1] is None) and \
        hasattr(type(it), "__next__")


def _op_for_iter(obs, arg, inputs, provs, outputs):
    if from_outside(obs, inputs[0], provs[0]):
        _unfollowed(obs, inputs[0])
    return [next_element(obs, inputs[0], provs[0], outputs[0])]


def _op_for_iter_end(obs, arg, inputs, provs, outputs):
    """A loop's iterator with provenance is exhausted: its length decided the loop, so one from outside
    whose items capture does not know (an argument) is refused (its first step is too)."""
    if from_outside(obs, inputs[0], provs[0]):
        _unfollowed(obs, inputs[0])
    return []


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
    if isinstance(element, Source) and isinstance(value, (list, dict, set, collections.deque)):
        obs.outside_state.saw(value, element)  # (a container reached by iterating: its state on entry)
    return element


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
        type(seq) in (dict, range, str, bytes, set, frozenset) or _module_sequence(seq) or \
        (_is_tensor(seq) and seq.dim() > 0) or \
        (type(prov) is Expr and prov.fn in _DICT_VIEWS)  # (``f(*t)``: its rows; ``f(*d.values())``: d's items)
    items = _elements(obs, seq, prov) if known and prov is not UNKNOWN else None
    if items is not None and len(items) == len(values):
        items = [_unfold(obs, v, p) for v, p in zip(values, items)]  # (``rows, cols = zip(*pairs)``)
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


def chains(fn):
    """Is ``fn`` ``itertools.chain`` or its ``from_iterable`` (a classmethod: bound anew at each read)?"""
    return fn is itertools.chain or (getattr(fn, "__self__", None) is itertools.chain and
                                     getattr(fn, "__name__", None) == "from_iterable")


def combinatoric_contents(obs, fn, args, arg_provs, kwargs, kw_provs, result):
    """``combinations(ts, 2)``, ``product(xs, ys)`` … over values with known provenance: the tuples it
    will yield, each element with its provenance (the same function over their indices)."""
    count = len(args) if fn is itertools.product else 1
    for value, prov in [*zip(args[count:], arg_provs[count:]), *((kwargs[k], kw_provs.get(k)) for k in kwargs)]:
        obs.need(value, prov)  # (r, repeat)
    parts = [_elements(obs, a, p) for a, p in zip(args[:count], arg_provs[:count])]
    if any(part is None for part in parts):
        obs.unsupported(f"{fn.__name__}() over tensors and values of unknown origin")
    indices = fn(*(range(len(part)) for part in parts), *args[count:], **kwargs)
    if fn is itertools.product:
        parts = parts * kwargs.get("repeat", 1)
        rows = [[parts[k][i] for k, i in enumerate(row)] for row in indices]
    else:
        rows = [[parts[0][i] for i in row] for row in indices]
    obs.contents[id(result)] = (result, [("tuple", r) for r in rows])
    return None


def chain_contents(obs, fn, args, arg_provs, result):
    """``chain(*groups.values())``, ``chain.from_iterable(lists)``: the elements of each iterable in turn,
    each with its provenance (reading them guards the containers as iterating each would)."""
    if fn is not itertools.chain:  # (``from_iterable``)
        if len(args) != 1:
            return UNKNOWN
        outer = _elements(obs, args[0], arg_provs[0])
        args, arg_provs = list(args[0]) if outer is not None else (), outer
        if outer is None:
            obs.unsupported("chain.from_iterable() over an iterable of unknown origin")
    parts = [_elements(obs, a, p) for a, p in zip(args, arg_provs)]
    if any(part is None for part in parts):
        obs.unsupported("chain() over an iterable of unknown origin")
    obs.contents[id(result)] = (result, [p for part in parts for p in part])
    return None
