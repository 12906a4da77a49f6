"""Changes to state the call did not create are replayed, in program order, on every call.

Each program changes a container, object, global or cell it was given (or that lives beside it) with
one kind of mutation, reads it back, and returns something computed from it. Eager and compiled run
the same sequence of calls on identical copies; results, arguments and outside state must agree after
every call (``differential``), and the program must stay one graph reused by later calls.
"""
import bisect
import collections
import heapq

import pytest
import torch

from twin import differential, expect_one_graph, fresh, plain


def t():
    return torch.randn(3)


def _tensors(n):
    return [t() for _ in range(n)]


# ---- lists -------------------------------------------------------------------------------------------

def list_append_then_pop_front(xs, x):
    xs.append(x * 2)
    oldest = xs.pop(0)
    return oldest + 1


def list_pop_last(xs, x):
    return xs.pop() * x


def list_insert(xs, x):
    xs.insert(1, x)
    return xs[1] * xs[2]


def list_remove_a_number(ns, x):
    ns.remove(2)
    return x * ns[1]


def list_reverse(xs, x):
    xs.reverse()
    return xs[0] - xs[-1] + x


def list_sort(ns, x):
    ns.sort()
    return x * ns[0] + ns[-1]


def list_sort_reversed(ns, x):
    ns.sort(reverse=True)
    return x * ns[0]


def list_clear_then_append(xs, x):
    xs.clear()
    xs.append(x)
    return x * len(xs)


def list_del_item(xs, x):
    del xs[0]
    return xs[0] + x


def list_del_slice(xs, x):
    del xs[1:]
    return xs[0] * x


def list_slice_store(xs, x):
    xs[1:3] = [x, x * 2]
    return xs[2] + xs[0]


def list_item_store(xs, x):
    xs[0] = x * 3
    return xs[0] + xs[1]


def list_iadd(xs, x):
    xs += [x]
    return xs[-1] * len(xs)


def list_imul(xs, x):
    xs *= 2
    return xs[3] + x


def list_extend(xs, x):
    xs.extend([x, x + 1])
    return xs[-1] - xs[0]


def list_store_after_growth(xs, x):
    xs.append(x)
    xs[0] = x * 2
    return xs[0]


def list_many_changes(xs, x):
    xs.insert(0, x)
    del xs[1]
    xs[1:2] = [x * 3, x]
    xs.reverse()
    tail = xs.pop()
    return xs[0] + tail


def list_iterated_after_changes(xs, x):
    xs.pop(0)
    xs.append(x)
    return sum(xs)


LIST_PROGRAMS = [
    (list_append_then_pop_front, lambda: (_tensors(2), t())),
    (list_pop_last, lambda: (_tensors(3), t())),
    (list_insert, lambda: (_tensors(3), t())),
    (list_remove_a_number, lambda: ([3, 2, 1, 2], t())),
    (list_reverse, lambda: (_tensors(3), t())),
    (list_sort, lambda: ([3, 1, 2, 1], t())),
    (list_sort_reversed, lambda: ([3, 1, 2], t())),
    (list_clear_then_append, lambda: (_tensors(3), t())),
    (list_del_item, lambda: (_tensors(3), t())),
    (list_del_slice, lambda: (_tensors(3), t())),
    (list_slice_store, lambda: (_tensors(4), t())),
    (list_item_store, lambda: (_tensors(2), t())),
    (list_iadd, lambda: (_tensors(2), t())),
    (list_imul, lambda: (_tensors(2), t())),
    (list_extend, lambda: (_tensors(2), t())),
    (list_store_after_growth, lambda: (_tensors(2), t())),
    (list_many_changes, lambda: (_tensors(4), t())),
    (list_iterated_after_changes, lambda: (_tensors(3), t())),
]


# ---- dicts and OrderedDicts ------------------------------------------------------------------------

def dict_pop(d, x):
    return d.pop("a") + x + len(d)


def dict_pop_missing_with_default(d, x):
    gone = d.pop("zz", None)
    return (x if gone is None else gone) * 2


def dict_popitem(d, x):
    key, value = d.popitem()
    return value * 2 if key == "b" else value


def dict_setdefault(d, x):
    d.setdefault("a", x)
    d.setdefault("c", x * 2)
    return d["a"] + d["c"]


def dict_update(d, x):
    d.update({"c": x, "a": x * 2})
    d.update(e=x + 1)
    return d["a"] + d["e"]


def dict_clear(d, x):
    d.clear()
    d["z"] = x
    return x * len(d)


def dict_del_item(d, x):
    del d["a"]
    return d["b"] + x


def dict_ior(d, x):
    d |= {"c": x}
    return d["c"] + d["a"]


def dict_values_after_changes(d, x):
    d.pop("a")
    d["c"] = x
    total = 0
    for v in d.values():
        total = total + v
    return total


def odict_move_to_end(d, x):
    d.move_to_end("a")
    return list(d.values())[0] + x


def odict_popitem_first(d, x):
    key, value = d.popitem(last=False)
    return value + x


DICT_PROGRAMS = [
    (dict_pop, lambda: ({"a": t(), "b": t()}, t())),
    (dict_pop_missing_with_default, lambda: ({"a": t()}, t())),
    (dict_popitem, lambda: ({"a": t(), "b": t()}, t())),
    (dict_setdefault, lambda: ({"a": t()}, t())),
    (dict_update, lambda: ({"a": t(), "b": t()}, t())),
    (dict_clear, lambda: ({"a": t(), "b": t()}, t())),
    (dict_del_item, lambda: ({"a": t(), "b": t()}, t())),
    (dict_ior, lambda: ({"a": t()}, t())),
    (dict_values_after_changes, lambda: ({"a": t(), "b": t()}, t())),
    (odict_move_to_end, lambda: (collections.OrderedDict(a=t(), b=t(), c=t()), t())),
    (odict_popitem_first, lambda: (collections.OrderedDict(a=t(), b=t()), t())),
]


# ---- sets, deques, native helpers ------------------------------------------------------------------

def set_changes(s, x):
    s.add(4)
    s.discard(1)
    s.remove(3)
    s |= {7}
    s -= {2}
    s.update([8, 9])
    return x * 2


def set_clear(s, x):
    s.clear()
    s.add(5)
    return x + 1


def deque_changes(dq, x):
    dq.append(x * 2)      # (full: drops from the left)
    first = dq.popleft()
    dq.appendleft(x)
    dq.rotate(1)
    return first + dq[0]


def deque_extend_and_store(dq, x):
    dq.extendleft([x, x + 1])
    dq[1] = x * 5
    del dq[0]
    return dq[0] + dq.pop()


def heap_push_pop(h, x):
    heapq.heappush(h, 2)
    smallest = heapq.heappop(h)
    return x * smallest * h[0]


def insort(ns, x):
    bisect.insort(ns, 4)
    return x * ns[2]


OTHER_PROGRAMS = [
    (set_changes, lambda: ({1, 2, 3}, t())),
    (set_clear, lambda: ({1, 2}, t())),
    (deque_changes, lambda: (collections.deque(_tensors(2), maxlen=3), t())),
    (deque_extend_and_store, lambda: (collections.deque(_tensors(3)), t())),
    (heap_push_pop, lambda: ([1, 5, 3], t())),
    (insort, lambda: ([1, 3, 5], t())),
]


@pytest.mark.parametrize("fn, make_args", LIST_PROGRAMS + DICT_PROGRAMS + OTHER_PROGRAMS,
                         ids=lambda v: getattr(v, "__name__", ""))
def test_mutation_of_an_argument_is_replayed(fn, make_args):
    stats = differential(plain(fn), fresh(make_args, 4))
    expect_one_graph(stats, calls=4)


# ---- state that lives on between calls -----------------------------------------------------------------

class Buffer(torch.nn.Module):
    """A module keeping a window of its last inputs (a list, a dict and a deque, all changed in forward)."""

    def __init__(self):
        super().__init__()
        self.window = [torch.zeros(3), torch.ones(3)]
        self.seen = {"first": torch.zeros(3)}
        self.recent = collections.deque([torch.ones(3)], maxlen=2)

    def forward(self, x):
        self.window.append(x * 2)
        oldest = self.window.pop(0)
        self.seen.pop("first", None)
        self.seen["last"] = x
        self.recent.append(x + 1)
        return oldest + self.recent[0]


def test_a_window_kept_on_a_module_is_left_as_eager_leaves_it():
    def make():
        m = Buffer()
        return m, m

    stats = differential(make, fresh(lambda: (t(),), 4),
                         observe=lambda m: (m.window, m.seen, list(m.recent)))
    assert stats.fallbacks == 0 and stats.cache_hits >= 2


class Holder:
    pass


def test_deleting_an_attribute_of_an_argument_is_replayed():
    def fn(obj, x):
        y = obj.scale * x
        del obj.scale
        obj.result = y
        return y

    def make_args():
        h = Holder()
        h.scale = t()
        return h, t()

    stats = differential(plain(fn), fresh(make_args, 3),
                         observe=lambda env: None)
    expect_one_graph(stats)


STATE = {}
counter = 0


def _restore():
    global counter
    counter = 0
    STATE.clear()
    globals().pop("scratch", None)


def test_deleting_a_global_is_replayed():
    def fn(x):
        global scratch
        scratch = x * 2
        y = scratch + 1
        del scratch
        return y

    stats = differential(plain(fn), fresh(lambda: (t(),)), reset=_restore,
                         observe=lambda env: "scratch" in globals())
    expect_one_graph(stats)


def test_deleting_a_closure_variable_is_replayed():
    def make():
        box = torch.ones(3)

        def fn(x):
            nonlocal box
            y = box * x
            del box
            return y

        def alive():
            try:
                return box
            except NameError:
                return "deleted"
        return fn, alive

    stats = differential(make, [(t(),)], observe=lambda alive: alive())
    assert stats.fallbacks == 0


def test_a_list_reached_twice_is_changed_once():
    # the same list as two arguments: one object on entry, so one object changed by the replay
    def fn(a, b, x):
        a.append(x)
        b.pop(0)
        return len(a) * x

    def calls():
        shared = _tensors(2)
        return (shared, shared, t())

    stats = differential(plain(fn), fresh(calls, 3))
    assert stats.fallbacks == 0
