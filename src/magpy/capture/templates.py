"""Templates: how the mock rebuilds a value the call returns or stores — a graph output, an outside path,
a constant, or a container or object made fresh on every call (aliasing kept).
"""
import collections
import copy
import types
import operator

from . import rules
from .guards import TruthGuard
from .iteration import from_outside
from .sources import Expr, Source
from .values import (Traced, UNKNOWN, _CONTAINER_KINDS, _Row, _SCALARS, _immutable, _is_tensor, _rebuildable,
    _rebuildable_mapping, _replayable_path)


_ITERATORS = frozenset(type(iter(x)) for x in ([], (), range(0), {}, {}.values(), {}.items())) | {enumerate}
_RANGE_ITERATORS = frozenset({type(iter(range(0))), type(iter(range(1 << 64)))})


def _remaining(it):
    """The items ``it`` has yet to yield, without taking them (None when that cannot be known)."""
    if type(it) is enumerate:
        _, (inner, count) = it.__reduce__()
        rest = _remaining(inner) if type(inner) in _ITERATORS else None
        return None if rest is None else list(enumerate(rest, count))
    return list(copy.copy(it))  # (builtin sequence and dict iterators copy their position, not their items)


class Templates:

    """How the mock rebuilds a value: a graph output, an outside path, a constant, a new container."""



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

    def _iterator_template(self, it):
        """An iterator part-way through (the one a ``for`` loop holds at a graph break): a ``range``'s
        rebuilt at its position; another's as an iterator over the items it has yet to yield, by the
        provenance capture followed them with."""
        if type(it) in _RANGE_ITERATORS:
            fn, args, state = it.__reduce__()
            return ("reduced", fn, args, state)
        entry = self.iterators.get(id(it))
        rest = _remaining(it)
        if entry is None or entry[0] is not it or entry[1] is None or rest is None or \
                len(entry[1]) - entry[2] != len(rest):
            self.unsupported(f"a {type(it).__name__} part-way through leaves the graph (at a graph break)")
        parts = []
        for value, prov in zip(rest, entry[1][entry[2]:]):
            if type(prov) is tuple and prov[0] == "tuple":  # (a pair ``enumerate`` / ``items()`` yields)
                parts.append(("tuple", [self.template(v, p) for v, p in zip(value, prov[1])]))
            else:
                parts.append(self.template(value, prov))
        return ("iter", parts)

    def _template(self, value, prov):
        if type(value) in _ITERATORS:
            if from_outside(self, value, prov) and _replayable_path(prov):
                # an iterator from outside (the call did not advance it: that would have been refused)
                return ("source", prov)
            return self._iterator_template(value)
        if type(value) is types.MethodType and prov is None and self.made.get(id(value.__self__)) is value.__self__:
            # a method of an object the call made (``__exit__`` of a ``with`` block open at a graph break)
            return ("method", self.template(value.__self__, None), value.__func__.__name__)
        if type(value) is types.BuiltinMethodType and prov is None and _is_tensor(value.__self__):
            # a tensor's method on the stack at a graph break (``x.chunk`` about to be called): the same
            # method of the tensor this call has there, never the first call's
            return ("method", self.template(value.__self__, None), value.__name__)
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
        if type(value) is set and prov is None:
            if self.snapshot:
                return ("set", self.set_parts(value))
            # a set the call made (``self.seen = set()``, then filled): rebuilt as the call leaves it
            parts = []
            self.pending_objects.append((value, prov, parts))
            return ("set", parts)
        if type(value) in (set, frozenset):
            if isinstance(prov, Source) and self.contents.changed_outside(value):
                return ("source", prov)  # the entry's own set, which the mock changes the same way
            entry = self.contents.get(id(value))
            if (entry is not None and entry[0] is value) or (prov is not None and not isinstance(prov, Source)):
                self.unsupported("a set holding values from outside leaves the compiled function")
            if isinstance(prov, Source):
                return ("source", prov)
            if any(_is_tensor(v) for v in value):
                self.unsupported("a set of tensors leaves the compiled function")
            return ("const", value)
        if isinstance(prov, Source):
            return ("source", prov)
        if isinstance(prov, Expr) and isinstance(value, _SCALARS):
            return ("source", prov)  # recomputed by the mock from the entry state (no guard needed)
        if type(value) is types.FunctionType and value.__closure__ and self.made.get(id(value)) is value:
            # its cells hold this call's values: handing the first call's function out again would be wrong
            self.unsupported(f"a function made by the call ({value.__qualname__}, a closure) leaves it")
        made_class = isinstance(value, type) and self.made_classes.get(id(value)) is value
        if prov is None and (made_class or self.made_classes.get(id(type(value))) is type(value)):
            # a later call makes another class: handing out this one (or its instances) would differ
            self.unsupported("a class made by the call (or an instance of it) leaves it")
        if prov is None and type(value) in rules.REUSED_OBJECTS:
            return ("const", value)
        if prov is None and isinstance(value, dict) and self.made.get(id(value)) is value and \
                _rebuildable_mapping(type(value)):
            # a dict of the program's class made by the call (a model output): the mock makes a fresh one
            # each call holding the items and attributes this one holds when capture ends
            items, fields = [], []
            self.pending_objects.append((value, None, (items, fields)))
            return ("mapping", type(value), items, fields)
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

    def set_parts(self, value):
        """The templates of what a set the call made holds now: each element with the provenance it was
        added with (a set whose elements were followed), else constants."""
        if self.sets.get(id(value), (None,))[0] is value:
            adds = self.sets[id(value)][1]
            if any(p is UNKNOWN for _, p in adds):
                self.unsupported("a set of values MagPy lost track of leaves the compiled function")
            return [self.template(v, p) for v, p in adds]
        entry = self.contents.get(id(value))
        if entry is not None and entry[0] is value:
            self.unsupported("a set holding values from outside leaves the compiled function")
        if any(_is_tensor(v) for v in value):
            self.unsupported("a set of tensors leaves the compiled function")
        return [("const", v) for v in value]
