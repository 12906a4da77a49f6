"""Containers the call made: what each holds by provenance (``contents``), how one is rebuilt as an
expression of its parts (``effective``), sets, iterators consumed by native calls, changes by their
methods; and the provenance of arguments a call packs or unpacks.
"""
import collections
import operator
import types

from . import rules
from .guards import ValueGuard
from .names import callable_name
from .sources import AttrSource, Const, Expr, ItemSource, Source
from .values import (Traced, UNKNOWN, _LIST_REARRANGES, _NOT_WRITTEN, _RUN_ITERATORS, _SCALARS, _bound_self, _build_deque,
    _build_dict, _build_list, _build_set, _build_tuple, _event, _item_of, _pinned)
from .iteration import _elements, _unpacked


#: containers a native call may read whole (their text, a copy, a sum of their elements)
_WHOLE_READS = (dict, list, tuple, set, frozenset, collections.deque)


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

class Containers:

    """Containers the call made (what each holds, by provenance), iterators it consumed, and how

    they are rebuilt; changes to lists and dicts; arguments packed and unpacked by calls."""



    def _as_written(self, value, prov):
        """A container from outside whose items the call wrote (by key) is read whole (``d.values()``,
        ``dict(d)``, ``str(d)``, iterated): from here on what it holds is followed item by item, from its
        state on entry and the writes since (``mutations.OutsideState.shadow``); where capture cannot, the
        read is of unknown origin (a break), never the entry state's value. True when ``value`` is such
        a container."""
        if self.items_written.get(id(value)) is not value:
            return False
        if self.contents.changed_outside(value):
            return True
        if isinstance(prov, Source) and type(value) in (dict, list, collections.OrderedDict) and \
                self.outside_state.entry.get(id(value), (None,))[0] is value:
            self.outside_state.shadow(value, f"a read of all of a {type(value).__name__} the call changed")
        else:
            self.contents[id(value)] = (value, None)  # (what it holds is unknown from here)
            self.contents.outside.add(id(value))
        return True

    def reads_written_deeply(self, fn, args, arg_provs):
        """Does native call ``fn`` read, through a container from outside, state the call wrote deeper
        than capture follows whole containers (``str(cfg)`` after ``cfg["opt"]["lr"] *= 0.5``)? Calls that
        read one level by key or ask about the container itself (``len``, ``d.get(k)``) do not."""
        return bool(self.objects_written) and fn not in rules.SHALLOW_READS and any(
            isinstance(p, Source) and isinstance(a, _WHOLE_READS) and self._holds_written(p)
            for a, p in zip(args, arg_provs))

    def _holds_written(self, prov):
        """Does the outside object at path ``prov`` hold, at any depth capture knows a path for, an object
        whose items or attributes the call wrote (``str(cfg)`` after ``cfg["opt"]["lr"] *= 0.5``)?"""
        for obj in self.objects_written.values():
            known = self.outside_state.paths.get(id(obj))
            if known is None or known[0] is not obj:
                continue
            for path in known[1]:
                path = getattr(path, "base", None)
                while path is not None:
                    if path == prov:
                        return True
                    path = getattr(path, "base", None)
        return False

    def _element_provs(self, container, prov):
        if isinstance(prov, Source):
            self._as_written(container, prov)
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
        if isinstance(prov, Source):
            self._as_written(d, prov)
        entry = self.contents.get(id(d))
        if entry is not None and entry[0] is d and type(entry[1]) is dict:
            return {k: entry[1].get(k) for k in d}
        if entry is not None and entry[0] is d and entry[1] is None:
            return dict.fromkeys(d, UNKNOWN)  # (capture lost track of what it holds)
        if prov is None:
            return dict.fromkeys(d)
        if isinstance(prov, Source):
            self.guard(ValueGuard(Expr(tuple, (prov,)), tuple(d)))
            return {k: ItemSource(prov, k) for k in d}
        if isinstance(prov, Expr) and type(d) in (dict, collections.OrderedDict):
            # a dict an expression computes (one held in a tuple read from a table): its keys guarded,
            # each value that expression indexed
            self.guard(ValueGuard(Expr(tuple, (prov,)), tuple(d)))
            return {k: _item_of(prov, k) for k in d}
        return dict.fromkeys(d, UNKNOWN)

    def effective(self, value, prov):
        """``prov``, except that a container (or generator) made inside that holds values from outside
        is the expression that rebuilds it from their provenance, or UNKNOWN — never a constant. (So is a
        container from outside whose items the call wrote: ``_as_written``.)"""
        written = False
        if self.items_written and prov is not None and type(prov) is not Traced:
            written = self._as_written(value, prov)
        if prov is not None and not (isinstance(prov, Source) and self.contents.changed_outside(value)) and \
                not written:
            return prov
        if self.outside_state.constant_sets.get(id(value)) is value:
            return None
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
        values = list(value) if type(value) in (list, tuple, collections.deque) else None
        if values is None or len(values) != len(items):
            if values is None and all(p is not None for p in items):
                return Expr(_build_tuple, tuple(items))  # a consumed generator: what it yielded
            return UNKNOWN
        parts = tuple(p if p is not None else Const(v) for p, v in zip(items, values))
        if type(value) is collections.deque:  # (a history kept in a deque: rebuilt with its bound)
            return Expr(_build_deque, (Const(value.maxlen), *parts))
        return Expr(_build_list if type(value) is list else _build_tuple, parts)

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
            if type(parts) is tuple:  # a dict of the program's class: its items, then its attributes
                items, fields = parts
                provs = self._dict_provs(obj, prov)  # (unknown items: UNKNOWN, never constants)
                items.extend((k, self.template(v, provs[k])) for k, v in obj.items())
                for name, value in vars(obj).items():
                    fields.append((name, self.template(value, self.written.get((id(obj), name), UNKNOWN))))
            elif type(obj) is list:
                parts.extend(self.template(v, p) for v, p in zip(obj, self._element_provs(obj, prov)))
            elif type(obj) is set:
                parts.extend(self.set_parts(obj))
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

    def dict_of_pairs(self, result, pairs, prov):
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

    def _mutation(self, fn, args, arg_provs, kwargs, kw_provs, result):
        self_obj = _bound_self(fn)
        if self_obj is not None and not isinstance(self_obj, types.ModuleType):
            target, target_prov, others = self_obj, self.provenance_of(self_obj), arg_provs
        else:
            target, target_prov, others = args[0], arg_provs[0], arg_provs[1:]
        name = getattr(fn, "__name__", "")
        if isinstance(target_prov, Source):
            given = args[len(args) - len(others):]
            # (a list or deque changed but not read needs no guard on its length: a history, a window)
            done = self.change_unread(fn, target, target_prov, given, list(others), kwargs, result)
            if done is not _NOT_WRITTEN:
                return done
            return self.outside_state.call(fn, target, target_prov, given, list(others), kwargs, kw_provs, result)
        entry = self.contents.get(id(target))
        inside = entry is not None and entry[0] is target
        if type(target) is set and target_prov is None and name in ("add", "update") and len(others) == 1:
            return self.set_added(target, args[-1], others[0], many=name == "update")
        if type(target) is set and self.sets.get(id(target), (None,))[0] is target:
            # ``s.discard(x)``, ``s.pop()`` …: what it added no longer says what it holds (its elements are
            # followed as a constant set's are, below)
            del self.sets[id(target)]
        if not inside and target_prov is not None:
            self.unsupported(f"{callable_name(fn)}() mutates a container from outside the call")
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
