"""Outside lists and deques the call changed without reading what they hold: their length as it comes.

A history appended to, a heap pushed to and popped from, a sorted list ``bisect.insort``-ed into, a window
of recent values: programs change such state on every call and often read only how long it is. Following
what the container holds (its shadow, ``mutations``) guards its length and, for changes decided by the
items' values, the items themselves: one cache entry per call. So a change by a callable of
``LENGTH_EFFECTS`` is replayed on the entry's container by the mock and only *recorded* here (``Unread``).
What the container holds is followed once the program reads it (``Unread.followed``: the shadow made from
the entry state and the recorded steps, guarded as ``mutations`` guards it). Its length is the entry's
length changed by each step as the table says: taken as it comes once a miss showed it changes (the
container's path is in ``dynamic_numbers``), else guarded. A value a step hands back
(``heapq.heappop(h)``) is an expression of the entry state (the steps run again on a copy: ``replayed``).
"""
import bisect
import collections
import heapq
import operator
import typing

from ..interp.identity import IdentityDict
from .guards import TruthGuard, ValueGuard
from .mutations import EFFECTS, K, V, VS, builtin_method, follow_change
from .sources import Const, Expr, ItemSource, Source
from .values import UNKNOWN, Traced, _NOT_WRITTEN

deque = collections.deque

#: ``Effect.length`` of a change that adds one item per element of its iterable argument
EACH = "each"


class Effect(typing.NamedTuple):
    """What a change does to how long a list or deque is."""
    length: object        # items it adds (negative: takes out), or EACH
    needs: int = 0        # items there must be (it raises on fewer: guarded)
    compares: tuple = None  # a helper comparing the items: the roles of its arguments after the list
                            # (``mutations.K``/``V``); None: a method of ``mutations.EFFECTS``


_PUSH = (V,)
_INSORT = (V, K, K)  # (the item; ``lo`` and ``hi``)

#: callables that change a list or deque from outside -> their effect on its length
LENGTH_EFFECTS = IdentityDict([
    (list.append, Effect(1)), (list.insert, Effect(1)), (list.extend, Effect(EACH)), (list.pop, Effect(-1, 1)),
    (deque.append, Effect(1)), (deque.appendleft, Effect(1)), (deque.extend, Effect(EACH)),
    (deque.extendleft, Effect(EACH)), (deque.pop, Effect(-1, 1)), (deque.popleft, Effect(-1, 1)),
    (heapq.heappush, Effect(1, 0, _PUSH)), (heapq.heappop, Effect(-1, 1, ())), (heapq.heapify, Effect(0, 0, ())),
    (heapq.heapreplace, Effect(0, 1, _PUSH)), (heapq.heappushpop, Effect(0, 0, _PUSH)),
    (bisect.insort_left, Effect(1, 0, _INSORT)), (bisect.insort_right, Effect(1, 0, _INSORT)),
])

#: changes that hand back an item of the container
_HAND_BACK = IdentityDict((fn, True) for fn in (list.pop, deque.pop, deque.popleft, heapq.heappop,
                                                  heapq.heapreplace, heapq.heappushpop))


def order_shape(value):
    """What decides whether two values compare without an error and without running Python code: numbers
    with numbers, text with text, tuples position by position. None for anything else."""
    tp = type(value)
    if tp in (int, float, bool):
        return "number"
    if tp in (str, bytes):
        return tp.__name__
    if tp is tuple:
        shapes = tuple(map(order_shape, value))
        return None if None in shapes else shapes
    return None


def ordered_alike(shape, items):
    """Do all ``items`` have order shape ``shape`` (so a heap or a sorted list of them is ordered as it was
    when captured, with no error and no code of the program)?"""
    return all(order_shape(v) == shape for v in items)


def replayed(sequence, *steps):
    """What the last of ``steps`` hands back, each run in turn on a copy of ``sequence``: the value a change
    of an outside container handed the program, as an expression of the call's entry state. ``steps``:
    for each, the function, how many arguments follow the container, those arguments."""
    work = deque(sequence, sequence.maxlen) if type(sequence) is deque else list(sequence)
    k, result = 0, None
    while k < len(steps):
        fn, n = steps[k], steps[k + 1]
        result = fn(work, *steps[k + 2:k + 2 + n])
        k += 2 + n
    return result


class Unread:
    """An outside list or deque the call changed but has not read: where it is, how long it was on entry,
    and the changes since."""
    __slots__ = ("target", "path", "entry", "steps", "replay", "replayable", "path_length", "base", "offset", "shape", "stored",
                 "checked")

    def __init__(self, target, path, entry):
        self.target = target
        self.path = path
        self.entry = entry   # its length on entry
        self.steps = []      # ("moves", class, method name, shadow arguments) | ("compares", items before,
                             #  stored (value, provenance) pairs, length after)
        self.replay = []     # the steps as ``replayed``'s arguments
        self.replayable = True  # (False once a step stored a value the graph computes)
        self.path_length = self.base = Expr(len, (path,))  # its length now: ``base + offset``
        self.offset = 0
        self.shape = None    # the order shape guarded for its items (a helper compared them)
        self.stored = []     # (value, provenance) of every item the steps stored
        self.checked = 0     # how many of ``stored`` have their shape guarded

    def length(self):
        """Its length now, as an expression of the entry state."""
        return self.base if not self.offset else Expr(operator.add, (self.base, Const(self.offset)))

    def grow(self, n, maxlen):
        self.offset += n
        if maxlen is not None and n > 0:  # (a full bounded deque drops as many as it takes)
            self.base, self.offset = Expr(min, (self.length(), Const(maxlen))), 0

    def followed(self, obs):
        """What it holds now, by provenance: its entry state (its length guarded) changed by each step as
        ``mutations`` follows it (a helper that compared items guards the values it compared)."""
        obs.guard(ValueGuard(Expr(len, (self.path,)), self.entry))
        provs = [ItemSource(self.path, k) for k in range(self.entry)]
        for step in self.steps:
            if step[0] == "moves":
                _, cls, name, args = step
                follow_change(cls, name, provs, args, {}, getattr(self.target, "maxlen", None))
                continue
            _, before, compared, after = step
            if len(before) != len(provs):
                obs.unsupported("a change of a container from outside the call whose items capture lost")
            for v, p in [*zip(before, provs), *compared]:
                obs.outside_state._comparable(v, p, "a helper over an outside list")
            provs[:] = [None] * after  # (plain values the guards fixed)
        # (against what it held after the last change recorded: a change being followed now has run)
        if len(provs) != len(obs.outside_state._items_before(self.target, "a change")):
            obs.unsupported("a container from outside the call changed in a way capture cannot follow")
        return provs


class Lengths:
    """Changes of outside lists and deques recorded without following their items; their lengths."""

    def change_unread(self, fn, target, prov, args, arg_provs, kwargs, result):
        """``fn`` changed ``target`` (from outside, reached by ``prov``) with ``args``: when the table knows
        it and the container is not followed item by item, the change is replayed and recorded
        (``Unread``). Returns the provenance of what it handed back, or ``_NOT_WRITTEN`` where
        ``mutations`` must follow it instead."""
        if kwargs or not isinstance(prov, Source) or type(target) not in (list, deque):
            return _NOT_WRITTEN
        method = fn if LENGTH_EFFECTS.get(fn) is not None else \
            (builtin_method(target, getattr(fn, "__name__", "")) or (None, None))[1]
        effect = LENGTH_EFFECTS.get(method) if method is not None else None
        if effect is None or (effect.needs and effect.compares is None and args):
            return _NOT_WRITTEN  # (``xs.pop(k)``: where it takes from is followed item by item)
        roles = effect.compares if effect.compares is not None else EFFECTS[type(target)][method.__name__]
        hands_back = _HAND_BACK.get(method, False)
        if len(args) > len(roles) or hands_back and not _plain(result) or \
                any(p is UNKNOWN or type(p) is tuple for p in arg_provs):
            return _NOT_WRITTEN
        unread = self._unread(target, prov)
        if unread is None:
            return _NOT_WRITTEN
        what = f"{getattr(method, '__qualname__', '')}()"
        replay = [self._at_entry(a, p, r) for a, p, r in zip(args, arg_provs, roles)]
        replayable = unread.replayable and all(isinstance(r, (Const, Source, Expr)) for r in replay)
        if hands_back and not replayable:
            return _NOT_WRITTEN  # (what it hands back depends on a value the graph computes)
        given = [(a, r) for a, r, role in zip(args, replay, roles) if role == V]
        shape = self._alike(unread, given, what) if effect.compares is not None else None
        if effect.compares is not None and shape is None:
            return _NOT_WRITTEN
        shadow_args, templates = self.outside_state._arguments(roles, args, arg_provs, what)
        for a, role, s in zip(args, roles, shadow_args):
            if role == VS:
                given += [(v, p if p is not None else Const(v)) for v, p in zip(list(a), s)]
        if effect.compares is not None:
            self._guard_shapes(unread, shape, given)
            unread.steps.append(("compares", list(self.outside_state._items_before(target, what)),
                                 list(zip(args, arg_provs)), len(target)))
        else:
            unread.steps.append(("moves", type(target), method.__name__, shadow_args))
        unread.stored += given
        unread.replayable = replayable
        if effect.needs:
            self.guard(TruthGuard(Expr(operator.ge, (unread.length(), Const(effect.needs))), True))
        unread.replay += [Const(method), Const(len(args)), *replay]
        unread.grow(len(shadow_args[0]) if effect.length == EACH else effect.length,
                    getattr(target, "maxlen", None))
        if self.contents.grown.get(id(target)) is not unread:
            self.contents.grow(id(target), unread)
        self.cap.side_effects.append(("call", method, [("source", prov), *templates], {}))
        self.outside_state.changed(target)
        return Expr(replayed, (prov, *unread.replay)) if hands_back and result is not None else None

    def _unread(self, target, prov):
        """The record of ``target``'s changes (a new one, if this is the first), or None when what it
        holds is followed item by item already."""
        unread = self.contents.grown.get(id(target))
        if unread is not None and unread.target is target:
            return unread
        followed = dict.get(self.contents, id(target))
        entry = self.outside_state.entry.get(id(target))
        if (followed is not None and followed[0] is target) or entry is None or entry[0] is not target:
            return None
        return Unread(target, prov, len(entry[2]))  # (kept once it records its first change)

    def _at_entry(self, value, prov, role):
        """An argument of a change as an expression of the entry state (``Const``, a path, an ``Expr``),
        a ``Traced`` value the graph computes, or None where it is neither."""
        if role == K:
            return Const(value)  # (a position: guarded)
        found = self.effective(value, prov)  # (a container made here: the expression rebuilding it)
        if found is None:
            return Const(tuple(value) if role == VS else value)
        return found if isinstance(found, (Source, Expr, Traced)) else None

    def _alike(self, unread, given, what):
        """The one order shape of the items a helper compares — all the container holds, all it was
        given — or None when they have several, or one is of unknown origin."""
        values = [*self.outside_state._items_before(unread.target, what), *(v for v, _ in given),
                  *(v for v, _ in unread.stored)]
        shapes = set(map(order_shape, values))
        if unread.shape is not None:
            shapes.add(unread.shape)
        if len(shapes) != 1 or None in shapes or any(e is None for _, e in (*given, *unread.stored)):
            return None
        return next(iter(shapes))

    def _guard_shapes(self, unread, shape, given):
        """The items a helper compares keep the order shape they had: the entry's items and every value
        stored since (a constant keeps its own; a number the graph computes, the type the graph fixes)."""
        if unread.shape is None:
            unread.shape = shape
            self.guard(TruthGuard(Expr(ordered_alike, (Const(shape), unread.path)), True))
        for _, e in [*unread.stored[unread.checked:], *given]:
            if isinstance(e, (Source, Expr)):
                self.guard(TruthGuard(Expr(operator.eq, (Expr(order_shape, (e,)), Const(shape))), True))
        unread.checked = len(unread.stored) + len(given)

    def unread_length(self, target):
        """``len(target)`` of an outside list or deque changed unread: its length on entry changed by the
        steps — taken as it comes where it changes from call to call (a miss showed it), else its entry
        length guarded (a constant: None). Taken as it comes also on the first capture where the steps
        change the length (they will again on the next call). ``_NOT_WRITTEN`` when ``target`` is not such a container."""
        unread = self.contents.grown.get(id(target))
        if unread is None or unread.target is not target:
            return _NOT_WRITTEN
        length = unread.length()
        if self.number_changes(unread.path):
            return length
        if length != unread.path_length:
            # (this call changed how long it is: so will the next one, most likely — a history, a window)
            self.dynamic_numbers = self.dynamic_numbers.with_paths((unread.path,))
            return length
        self.guard(ValueGuard(Expr(len, (unread.path,)), unread.entry))
        return None


def _plain(value):
    return type(value) in (int, float, bool, str, bytes, type(None)) or \
        (type(value) is tuple and all(map(_plain, value)))
