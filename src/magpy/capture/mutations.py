"""Changes the call makes to containers it did not create: recorded in program order, replayed by the mock.

A later call must leave an argument's list, a module's dict or a global set exactly as eager leaves it,
and must read back what the program stored. So each change to such a container is

* replayed: a ``("call", method, [target, *arguments], keywords)`` side effect on the entry's own object
  (found by its path before anything changes), in program order;
* followed: the container's *shadow* — the provenance of each element it holds now, a list (sequences)
  or a dict by key (mappings) kept in ``contents`` where every read looks first — is changed by the same
  method, called on the shadow with provenances in place of the stored values. The shadow starts from
  the container's state on entry (each element read by its path; its length or keys guarded), which
  ``saw`` records when the program first reaches the container.

What a method does is data (``EFFECTS``): per builtin type, the role of each argument — a position or
key (its value decides where: guarded), a stored value, an iterable or mapping of stored values. The
table serves subclasses and ``super()`` calls (the method is found on the first builtin class of the
object's MRO). Two methods depend on the elements' values (``remove``, ``sort``): they are followed only
over elements whose values the guards can fix. After every change the shadow is checked against the
real container (length, keys, element identities where known); a change capture cannot follow exactly
is a graph break with its reason, never a replay that differs.
"""
import bisect
import collections
import heapq
import operator
import weakref

from ..interp.identity import IdentitySet
from .guards import TruthGuard
from .sources import Source, ItemSource, Expr

#: roles of a method's arguments: K a position or key (guarded; the real value is used),
#: V a stored value, VS an iterable of stored values, M a mapping of stored values,
#: KV a stored value, or an iterable of them when the key is a slice (``xs[1:3] = ys``)
K, V, VS, M, KV = "key", "value", "values", "mapping", "slice-value"

_SEQUENCE = {"append": (V,), "extend": (VS,), "insert": (K, V), "pop": (K,), "clear": (), "reverse": (),
             "__setitem__": (K, KV), "__delitem__": (K,), "__iadd__": (VS,), "__imul__": (K,)}
_MAPPING = {"__setitem__": (K, V), "__delitem__": (K,), "pop": (K, V), "popitem": (), "setdefault": (K, V),
            "update": (M,), "clear": (), "__ior__": (M,)}

#: builtin container type -> method name -> argument roles (or the name of a value-dependent rule)
EFFECTS = {
    list: {**_SEQUENCE, "remove": "remove", "sort": "sort"},
    collections.deque: {**_SEQUENCE, "pop": (), "popleft": (), "appendleft": (V,), "extendleft": (VS,),
                        "rotate": (K,), "__setitem__": (K, V), "remove": "remove"},
    dict: _MAPPING,
    collections.OrderedDict: {**_MAPPING, "popitem": (K,), "move_to_end": (K, K)},
    collections.defaultdict: _MAPPING,
    # (a set's members are hashable values: each one a change involves is guarded, see ``_set_change``)
    set: dict.fromkeys(("add", "discard", "remove", "clear", "update", "difference_update",
                        "intersection_update", "symmetric_difference_update", "__ior__", "__iand__",
                        "__isub__", "__ixor__"), ()),
}
#: keyword arguments that act as positions (guarded)
_KEY_KEYWORDS = {"last", "reverse"}
#: in-place operators on containers, as the method the mock calls
IN_PLACE = {operator.iadd: "__iadd__", operator.imul: "__imul__", operator.ior: "__ior__",
            operator.iand: "__iand__", operator.isub: "__isub__", operator.ixor: "__ixor__"}
#: the kinds of container whose entry state ``saw`` keeps
CONTAINERS = (list, dict, set, collections.deque)
#: how long a mapping may be for its keys to be compared after each change (else only its length)
_COMPARED_KEYS = 1024


#: native functions that reorder or grow the list they are given by comparing its elements (by identity:
#: any callable is looked up here, and some are unhashable, as pybind11's ``instancemethod``)
LIST_HELPERS = IdentitySet([heapq.heappush, heapq.heappop, heapq.heapify, heapq.heapreplace,
                            heapq.heappushpop, bisect.insort_left, bisect.insort_right])


def changes(fn, self_obj, args):
    """The container a native call of ``fn`` changes by the table, or None."""
    name = getattr(fn, "__name__", None)
    if self_obj is not None:
        target = self_obj
    else:
        owner = getattr(fn, "__objclass__", None)
        if not isinstance(owner, type) or owner not in EFFECTS or not args or not isinstance(args[0], owner):
            return None
        target = args[0]
    return target if builtin_method(target, name) is not None else None


def builtin_method(obj, name):
    """``(builtin class, its method)`` that a native call of ``name`` on ``obj`` ran: the first class of
    the MRO that the table knows and that defines it (a Python override calls it through ``super()``)."""
    for cls in type(obj).__mro__:
        table = EFFECTS.get(cls)
        if table is not None and name in cls.__dict__:
            return (cls, cls.__dict__[name]) if name in table else None
    return None


def distinct_from(obj, *others):
    """Is ``obj`` none of ``others`` (by identity)?"""
    return all(o is not obj for o in others)


def _plain(value):
    """A value the guards fix by equality, whose hash and order do not depend on identity."""
    return type(value) in (int, float, str, bytes, bool, type(None)) or \
        (type(value) is tuple and all(map(_plain, value)))


def _keys(mapping):
    """The keys of a dict (or subclass) in iteration order, without running Python code of the program."""
    if isinstance(mapping, collections.OrderedDict):
        return list(collections.OrderedDict.__iter__(mapping))  # (its own order, not the dict's)
    return list(dict.keys(mapping))


def _clear_cell(cell):
    del cell.cell_contents


class OutsideState:
    """The outside containers one capture saw and changed (an attribute of the capture observer)."""

    def __init__(self, observer):
        self.obs = weakref.proxy(observer)  # (no cycle: see ``_Contents``)
        self.paths = {}     # id -> (object, the paths the program reached it by), for objects from outside
        self.entry = {}     # id -> (container, its path, its state on entry: list of items / of keys)
        self.before = {}    # id -> (container, its items before the next change) for sequences
        self.constant_sets = {}  # id -> outside set of plain values, changed: what it holds is a constant

    # ---- entry states ----------------------------------------------------------------------------
    def saw(self, obj, prov):
        """The program reached ``obj`` (a container or a user object) by ``prov``: keep the path, and for a
        container what it holds now (its state on entry, should the program change it later)."""
        if not isinstance(prov, Source):
            return
        known = self.paths.get(id(obj))
        if known is None:
            if self.obs.made_here(obj):
                return
            self.paths[id(obj)] = (obj, [prov])
            if isinstance(obj, CONTAINERS):
                self.entry[id(obj)] = (obj, prov, _keys(obj) if isinstance(obj, dict) else list(obj))
        elif known[0] is obj and prov not in known[1]:
            known[1].append(prov)

    def guard_aliasing(self, changed):
        """Objects the program changed (``changed``: their ids) must be, on a later call, the same objects
        by the same paths, and no other object the call read: a write through one path shows through
        every other path to the same object."""
        obs = self.obs
        by_type = {}
        for obj, paths in self.paths.values():
            by_type.setdefault(type(obj), []).append((obj, paths[0]))
        for oid in changed:
            known = self.paths.get(oid)
            if known is None:
                continue
            obj, paths = known
            for other in paths[1:]:
                obs.guard(TruthGuard(Expr(operator.is_, (other, paths[0])), True))
            others = [p for o, p in by_type[type(obj)] if o is not obj]
            if others:
                obs.guard(TruthGuard(Expr(distinct_from, (paths[0], *others)), True))

    def _entry(self, obj, what):
        known = self.entry.get(id(obj))
        if known is None or known[0] is not obj:
            self.obs.unsupported(f"{what} changes a container from outside the call that capture did not "
                                 "see before the change")
        return known

    def shadow(self, obj, what):
        """The provenance of what ``obj`` holds now, following every change so far (a list, or a dict by
        key); made on first use from the entry state, whose length or keys are then guarded."""
        obs = self.obs
        entry = obs.contents.get(id(obj))  # (an outside list that only grew is made here, length guarded)
        if entry is not None and entry[0] is obj and entry[1] is not None:
            return entry[1]
        _, prov, state = self._entry(obj, what)
        if isinstance(obj, dict):
            obs.guard_value(Expr(tuple, (prov,)), tuple(state))
            provs = {k: ItemSource(prov, k) for k in state}
        else:
            obs.guard_value(Expr(len, (prov,)), len(state))
            provs = [ItemSource(prov, k) for k in range(len(state))]
        # items the program stored before (``d[k] = v`` needs no shadow): in the order it stored them
        for (key, name), p in list(obs.written.items()):
            if key == id(obj) and type(name) is tuple and name[0] == "item":
                provs[name[1]] = p
        obs.contents[id(obj)] = (obj, provs)
        obs.contents.outside.add(id(obj))
        return provs  # (as on entry: the change being followed is applied next)

    def _check(self, obj, provs, what):
        same = len(provs) == len(obj)
        if same and isinstance(obj, dict) and len(obj) <= _COMPARED_KEYS:
            same = list(provs) == _keys(obj)
        if not same:
            self.obs.contents[id(obj)] = (obj, None)
            self.obs.unsupported(f"{what} left a container from outside the call in a state capture cannot "
                                 "follow")

    def _items_before(self, obj, what):
        known = self.before.get(id(obj))
        if known is not None and known[0] is obj:
            return known[1]
        return self._entry(obj, what)[2]

    def changed(self, obj):
        """After any change of a sequence: what it holds is the state the next change starts from."""
        if not isinstance(obj, dict) and not isinstance(obj, (set, frozenset)):
            self.before[id(obj)] = (obj, list(obj))

    # ---- changes -------------------------------------------------------------------------------------
    def call(self, fn, target, prov, args, arg_provs, kwargs, kw_provs, result):
        """``target.<method>(*args, **kwargs)`` ran natively on an outside container: replay it and follow
        it. Returns the provenance of what it returned."""
        obs = self.obs
        name = getattr(fn, "__name__", "")
        found = builtin_method(target, name)
        what = f"{type(target).__name__}.{name}()"
        if found is None:
            obs.unsupported(f"{what} on a container from outside the call: MagPy has no rule for it")
        cls, method = found
        roles = EFFECTS[cls][name]
        if cls is set:
            return self._set_change(method, target, prov, args, arg_provs, kwargs, kw_provs, what)
        provs = self.shadow(target, what)
        if type(roles) is str:
            return self._by_value(roles, method, target, prov, provs, args, arg_provs, kwargs, kw_provs, what)
        shadow_args, templates = self._arguments(roles, args, arg_provs, what)
        shadow_kw = {}
        kw_templates = {}
        for k, v in kwargs.items():
            if k not in _KEY_KEYWORDS and not (cls in (dict, collections.OrderedDict,
                                                       collections.defaultdict) and name == "update"):
                obs.unsupported(f"{what} with keyword {k!r} on a container from outside the call")
            if k in _KEY_KEYWORDS:
                obs.need(v, kw_provs.get(k))
                shadow_kw[k] = v
            else:
                shadow_kw[k] = kw_provs.get(k)
            kw_templates[k] = obs.template(v, kw_provs.get(k))
        returned = self._apply(cls, name, target, provs, shadow_args, shadow_kw)
        obs.cap.side_effects.append(("call", method, [("source", prov), *templates], kw_templates))
        self.changed(target)
        return self._result(result, returned, target, prov)

    def _arguments(self, roles, args, arg_provs, what):
        """The shadow's arguments for the real ones (provenance in place of stored values) and how the
        mock rebuilds each."""
        obs = self.obs
        shadow_args, templates = [], []
        for k, (a, p) in enumerate(zip(args, arg_provs)):
            role = roles[k] if k < len(roles) else None
            if role == KV:
                role = VS if type(args[0]) is slice else V
            if role == K:
                obs.need(a, p)
                shadow_args.append(a)
                templates.append(("const", a))  # (its value or identity is guarded)
            elif role == V:
                shadow_args.append(p)
                templates.append(obs.template(a, p))
            elif role == VS:
                elements = self._stored_elements(a, p, what)
                shadow_args.append([e for _, e in elements])
                templates.append(("list", [obs.template(v, e) for v, e in elements]))
            elif role == M:
                if not isinstance(a, dict):
                    obs.unsupported(f"{what} with pairs that are not a dict, on a container from outside the call")
                stored = obs._dict_provs(a, p)
                shadow_args.append(stored)
                templates.append(("dict", [(key, obs.template(v, stored[key])) for key, v in a.items()]))
            else:
                obs.unsupported(f"{what} with {len(args)} arguments on a container from outside the call")
        return shadow_args, templates

    def _stored_elements(self, value, prov, what):
        """(value, provenance) of each element an iterable argument hands over (copied into the target)."""
        obs = self.obs
        if isinstance(value, dict):
            values = list(value)
        elif type(value) in (list, tuple, collections.deque, range, str) or isinstance(value, tuple):
            values = list(value)
        else:
            obs.unsupported(f"{what} of a {type(value).__name__} (consumed by the call) on a container from "
                            "outside the call")
        elements = obs.element_provenance(value, prov)
        if elements is None or len(elements) != len(values) or \
                any(type(e) is tuple or e is obs.UNKNOWN for e in elements):
            obs.unsupported(f"{what} of values of unknown origin on a container from outside the call")
        return list(zip(values, elements))

    def _apply(self, cls, name, target, provs, args, kwargs):
        """Run the method on the shadow; check that it still mirrors the container."""
        returned = follow_change(cls, name, provs, args, kwargs, getattr(target, "maxlen", None))
        self._check(target, provs, f"{type(target).__name__}.{name}()")
        return returned

    def _result(self, result, returned, target, prov):
        obs = self.obs
        if result is target:
            return prov  # (``xs.__iadd__(ys)`` returns xs)
        if result is None or returned is None:
            return None
        if type(returned) is tuple and type(result) is tuple and len(result) == 2:
            # ``d.popitem()``: (key, value) — a tuple made here; its key is fixed by the keys' guard
            obs.contents[id(result)] = (result, [None, returned[1]])
            return None
        return returned

    # ---- changes decided by the elements' values ------------------------------------------------------
    def _by_value(self, rule, method, target, prov, provs, args, arg_provs, kwargs, kw_provs, what):
        obs = self.obs
        before = self._items_before(target, what)
        if len(before) != len(provs):
            obs.unsupported(f"{what} on a container from outside the call whose items capture lost")
        if rule == "remove":
            if len(args) != 1 or kwargs:
                obs.unsupported(f"{what} with unexpected arguments")
            value, value_prov = args[0], arg_provs[0]
            at = self._position_of(before, provs, value, value_prov, what)
            order = [k for k in range(len(before)) if k != at]
            templates = [obs.template(value, value_prov)]
        else:  # sort
            if args or set(kwargs) - {"reverse"} or kwargs.get("key") is not None:
                obs.unsupported(f"{what} with a key function on a container from outside the call")
            reverse = kwargs.get("reverse", False)
            obs.need(reverse, kw_provs.get("reverse"))
            for v, p in zip(before, provs):
                self._comparable(v, p, what)
            order = sorted(range(len(before)), key=before.__getitem__, reverse=bool(reverse))
            templates = []
        if len(order) != len(target) or any(before[k] is not v for k, v in zip(order, target)):
            obs.unsupported(f"{what} left a container from outside the call in a state capture cannot follow")
        provs[:] = [provs[k] for k in order]
        kw = {k: obs.template(v, kw_provs.get(k)) for k, v in kwargs.items()}
        obs.cap.side_effects.append(("call", method, [("source", prov), *templates], kw))
        self.changed(target)
        return None

    def _position_of(self, before, provs, value, value_prov, what):
        """Where ``remove(value)`` found it: every element compared on the way is guarded."""
        for k, (v, p) in enumerate(zip(before, provs)):
            if v is value:
                if p != value_prov and self.obs.replayable(p) and self.obs.replayable(value_prov):
                    self.obs.guard(TruthGuard(Expr(operator.is_, (p, value_prov)), True))
                elif p != value_prov:
                    self._comparable(v, p, what)
                    self._comparable(value, value_prov, what)
                return k
            self._comparable(v, p, what)
            self._comparable(value, value_prov, what)
            if v == value:
                return k
        self.obs.unsupported(f"{what} did not find its value")

    def _comparable(self, value, prov, what):
        """A value the method compares: the guards fix its value, or the comparison is not replayable."""
        if not isinstance(value, (int, float, str, bytes, bool, type(None), tuple)):
            self.obs.unsupported(f"{what} compares {type(value).__name__} values of a container from outside "
                                 "the call")
        self.obs.need(value, prov)

    # ---- native helpers over lists --------------------------------------------------------------------
    def helper(self, fn, args, arg_provs, kwargs, kw_provs):
        """``heapq.heappush(h, v)``, ``bisect.insort(xs, v)``: what they do follows from the values of
        the list's elements and of the item, all guarded (so they must be plain values); replayed on an
        outside list. Afterwards its elements are those guarded values."""
        obs = self.obs
        what = f"{fn.__module__}.{fn.__name__}()"
        if not args or type(args[0]) is not list:
            obs.unsupported(f"{what} on a {type(args[0]).__name__ if args else 'missing'} argument")
        target, prov = args[0], arg_provs[0]
        outside = isinstance(prov, Source)
        provs = self.shadow(target, what) if outside else obs.element_provenance(target, None)
        before = self._items_before(target, what) if outside else None
        if before is not None and len(before) != len(provs):
            obs.unsupported(f"{what} on a list whose items capture lost")
        for v, p in zip(before if before is not None else target, provs or [None] * len(target)):
            self._comparable(v, p, what)
        for a, p in [*zip(args[1:], arg_provs[1:]), *((v, kw_provs.get(k)) for k, v in kwargs.items())]:
            self._comparable(a, p, what)
        if outside:
            templates = [obs.template(a, p) for a, p in zip(args[1:], arg_provs[1:])]
            kw = {k: obs.template(v, kw_provs.get(k)) for k, v in kwargs.items()}
            obs.cap.side_effects.append(("call", fn, [("source", prov), *templates], kw))
            provs[:] = [None] * len(target)  # (plain values the guards fixed)
            self.changed(target)
        elif provs is not None and any(p is not None for p in provs):
            obs.contents[id(target)] = (target, [None] * len(target))
        return None

    # ---- sets ---------------------------------------------------------------------------------------------
    def _set_change(self, method, target, prov, args, arg_provs, kwargs, kw_provs, what):
        """A set holds hashable values: each one the change involves is guarded and handed over as it is.
        What the set holds afterwards is unknown to the rest of the call, except single adds and discards."""
        obs = self.obs
        if kwargs:
            obs.unsupported(f"{what} with keywords")
        templates = []
        for a, p in zip(args, arg_provs):
            if isinstance(a, (set, frozenset, list, tuple, dict)):
                if p is not None or obs.effective(a, None) is not None:
                    obs.unsupported(f"{what} with a container of values from outside the call")
                for v in a:
                    self._comparable(v, None, what)
                templates.append(("const", frozenset(a)))
            else:
                obs.need(a, p)
                templates.append(obs.template(a, p))
        obs.cap.side_effects.append(("call", method, [("source", prov), *templates], {}))
        dict.__setitem__(obs.contents, id(target), (target, None))  # its order: unknown (iterating it fails)
        obs.contents.outside.add(id(target))
        entry = self.entry.get(id(target))
        if entry is not None and entry[0] is target and all(map(_plain, entry[2])) and all(map(_plain, target)):
            # plain values only: with the entry's members guarded (not their order), what it holds now
            # follows from them — a constant to the rest of the call
            if id(target) not in self.constant_sets:
                obs.guard_value(Expr(frozenset, (prov,)), frozenset(entry[2]))
            self.constant_sets[id(target)] = target
            obs.set_changes.pop(id(target), None)
        elif method.__name__ in ("add", "discard", "remove") and len(args) == 1:
            obs.set_changes.setdefault(id(target), (target, {}))[1][args[0]] = method.__name__ == "add"
        else:
            obs.set_changes.pop(id(target), None)  # (membership of anything: unknown from here)
        return None

    # ---- item stores and deletions -------------------------------------------------------------------------
    def store_item(self, obj, prov, key, value, value_prov):
        """``obj[key] = value`` on an outside container whose shadow exists: replayed, and followed."""
        obs = self.obs
        what = f"{type(obj).__name__}[...] = ..."
        provs = self.shadow(obj, what)
        if isinstance(obj, dict):
            provs[key] = value_prov
            stored = obs.template(value, value_prov)
        elif type(key) is slice:
            elements = self._stored_elements(value, value_prov, what)
            provs[key] = [e for _, e in elements]
            stored = ("list", [obs.template(v, e) for v, e in elements])
        else:
            provs[key] = value_prov
            stored = obs.template(value, value_prov)
        self._check(obj, provs, what)
        obs.cap.side_effects.append(("call", operator.setitem, [("source", prov), ("const", key), stored], {}))
        self.changed(obj)

    def delete_item(self, obj, prov, key, key_prov):
        """``del obj[key]`` on an outside container: replayed, and followed."""
        obs = self.obs
        what = f"del {type(obj).__name__}[...]"
        if type(obj) is set or not isinstance(obj, (list, dict, collections.deque)):
            obs.unsupported(f"{what}: deleting an item of an outside {type(obj).__name__}")
        obs.need(key, key_prov)
        provs = self.shadow(obj, what)
        del provs[key]
        self._check(obj, provs, what)
        obs.cap.side_effects.append(("call", operator.delitem, [("source", prov), ("const", key)], {}))
        self.changed(obj)

    def in_place(self, fn, target, prov, other, other_prov):
        """``xs *= n``, ``d |= e``, ``s -= t`` on an outside container: its in-place method, replayed."""
        name = IN_PLACE.get(fn)
        if name is None:
            self.obs.unsupported(f"{getattr(fn, '__name__', fn)} changes a container from outside the call in place")
        method = builtin_method(target, name)
        if method is None:
            self.obs.unsupported(f"{name} on a {type(target).__name__} from outside the call")
        self.call(method[1], target, prov, (other,), [other_prov], {}, {}, target)
        return prov  # (the name is bound to the same container again)


def follow_change(cls, name, provs, args, kwargs, maxlen=None):
    """Method ``name`` of builtin class ``cls`` run on a shadow ``provs`` (provenances in place of the
    values, in ``args`` too), as it ran on the container; returns what it returned."""
    if cls is collections.deque:
        work = collections.deque(provs, maxlen)
        returned = getattr(work, name)(*args, **kwargs)
        provs[:] = list(work)
        return provs if returned is work else returned
    if isinstance(provs, dict):
        work = collections.OrderedDict(provs) if cls is collections.OrderedDict else provs
        returned = getattr(work, name)(*args, **kwargs)
        if work is not provs:
            provs.clear()
            provs.update(work)
        return provs if returned is work else returned
    return getattr(provs, name)(*args, **kwargs)


def clear_cell(cell):
    """What the mock runs for ``del x`` of a closure variable from outside the call."""
    _clear_cell(cell)
