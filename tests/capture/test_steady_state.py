"""State that changes on every call reaches a steady state: over any number of calls, at most two
compiles, with eager's results and eager's state after each call.

The programs change outside state as programs keep it — a history appended to, a heap pushed to and
popped from, a sorted list ``bisect.insort``-ed into, a window of recent values, a counter in a dict or
on an object — and read how long it is or what number it holds. Lengths and numbers read from such
state are taken as they come (graph inputs, or conditions where a branch decides on them), never one
entry per value; what the program reads item by item stays guarded, and is still eager's.
"""
import bisect
import collections
import heapq

import torch

try:
    from .twin import Call, FromEnv, differential, expect, fresh
except ImportError:  # tests/capture is not a package: pytest put this folder on sys.path
    from twin import Call, FromEnv, differential, expect, fresh

CALLS = 8


def t():
    return torch.randn(2, 3)


class State:
    def __init__(self):
        self.history = []
        self.ordered = [0.5, 2.0]
        self.heap = [5, 4, 3]
        self.counts = {"n": 0}
        self.recent = collections.deque()
        self.window = collections.deque(maxlen=3)
        self.step = 0


def steady(fn, n=CALLS, before=None, **compile_kw):
    """``fn(state, x)`` called ``n`` times on one ``State`` (each side its own), compared with eager."""
    calls = [Call((FromEnv(), t()), before=before) for _ in range(n)]
    return differential(lambda: (fn, State()), calls, **compile_kw)


def expect_steady(stats, compiles=2):
    assert stats.compiles <= compiles, stats
    expect(stats, fallbacks=0, graph_breaks=0)


# ---- lengths of containers the call changes --------------------------------------------------------------

def test_a_history_appended_to_is_steady():
    # (the length changes on every call: taken as it comes, it is a graph input from the first call on)
    def fn(state, x):
        state.history.append(x.mean())
        return x * len(state.history) + state.step

    expect_steady(steady(fn))


def test_insort_into_an_outside_list_whose_length_is_read():
    def fn(state, x):
        bisect.insort(state.ordered, float(len(state.ordered) % 3))
        return x * len(state.ordered)

    expect_steady(steady(fn))


def test_insort_into_an_argument_list():
    def fn(ordered, x):
        bisect.insort_left(ordered, 1.5)
        return x + len(ordered)

    state = [1.0, 2.0]
    calls = [(FromEnv(lambda env: env), t()) for _ in range(CALLS)]
    stats = differential(lambda: (fn, list(state)), calls)
    expect_steady(stats)


def test_a_heap_pushed_to_whose_length_is_read():
    def fn(state, x):
        heapq.heappush(state.heap, len(state.heap))
        return x * len(state.heap)

    expect_steady(steady(fn))


def test_a_heap_pushed_and_popped_keeps_its_length_as_it_comes():
    def fn(state, x):
        heapq.heappush(state.heap, 7)
        heapq.heappush(state.heap, 2)
        heapq.heappop(state.heap)
        return x * len(state.heap)

    expect_steady(steady(fn))


def test_top_k_heap_popped_when_too_long():
    # (the length decides a branch: a condition on it, not its value; once full it stays full)
    def fn(state, x):
        heapq.heappush(state.heap, state.step)
        state.step += 1
        if len(state.heap) > 5:
            heapq.heappop(state.heap)
        return x * len(state.heap)

    expect_steady(steady(fn, n=10), compiles=3)


def test_what_heappop_hands_back_is_the_entry_state_s():
    # (the smallest item: found again on each call from the heap it is given, not a constant)
    def fn(state, x):
        heapq.heappush(state.heap, state.step * 3 % 7 + 2)
        state.step += 1
        smallest = heapq.heappop(state.heap)
        return x * smallest + len(state.heap)

    expect_steady(steady(fn))


def test_a_value_popped_from_a_heap_decides_a_branch():
    def fn(state, x):
        heapq.heappush(state.heap, 10 - state.step)
        state.step += 1
        if heapq.heappop(state.heap) < 3:
            return x + 1
        return x - 1

    stats = steady(fn)
    expect(stats, fallbacks=0)


def test_heap_items_read_after_a_push_stay_guarded():
    # (what it holds is read: followed item by item, its values guarded — eager's every call)
    def fn(state, x):
        heapq.heappush(state.heap, 10 - state.step)
        state.step += 1
        return x * state.heap[0] + sum(state.heap)

    expect(steady(fn), fallbacks=0)


def test_a_number_the_graph_computes_pushed_on_a_heap():
    def fn(state, x):
        heapq.heappush(state.heap, x.sum().item())
        return x * len(state.heap)

    stats = steady(fn)
    expect(stats, fallbacks=0)
    assert stats.compiles <= 2, stats


def test_a_heap_holding_other_kinds_of_items_on_a_later_call():
    # (the items' kinds are guarded: strings instead of numbers make the push raise, as in eager)
    def fn(state, x):
        heapq.heappush(state.heap, 2)
        return x * len(state.heap)

    def spoil(state):
        if len(state.heap) == 6:
            state.heap[:] = ["a", "b"]

    stats = steady(fn, before=spoil, raises=True)
    expect(stats, fallbacks=0)


def test_popping_an_empty_heap_raises_as_eager_does():
    def fn(state, x):
        heapq.heappop(state.heap)
        return x * len(state.heap)

    stats = steady(fn, n=5, raises=True)
    expect(stats, fallbacks=0)


def test_a_list_popped_and_appended_hands_back_its_last_item():
    def fn(state, x):
        state.history.append(state.step)
        state.history.append(state.step + 10)
        state.step += 1
        last = state.history.pop()
        return x * last + len(state.history)

    expect_steady(steady(fn))


def test_the_length_of_an_unbounded_deque_decides_a_branch():
    def fn(state, x):
        state.recent.append(x.sum())
        if len(state.recent) > 3:
            return x * 2
        return x - 1

    expect_steady(steady(fn))


def test_a_deque_kept_short_by_popleft_decides_a_branch():
    def fn(state, x):
        state.recent.append(1)
        if len(state.recent) > 3:
            state.recent.popleft()
            return x * 2
        return x - 1

    expect_steady(steady(fn))


def test_a_bounded_deque_filled_from_both_ends():
    def fn(state, x):
        state.window.appendleft(state.step)
        state.window.extend([state.step, 1])
        state.step += 1
        return x * len(state.window) + state.window.popleft()

    expect_steady(steady(fn))


def test_a_window_of_tensors_summed_once_full():
    # (what it holds is read once full: its length is guarded from then on, and stays 3. Entries: length
    # 1 (0 and 1 specialise), the lengths before it is full, full after being 2, full after being full)
    def fn(state, x):
        state.window.append(x.mean())
        if len(state.window) == state.window.maxlen:
            return x * sum(state.window)
        return x - len(state.window)

    stats = steady(fn)
    expect(stats, fallbacks=0, graph_breaks=0)
    assert stats.compiles <= 4, stats


# ---- numbers the call changes -----------------------------------------------------------------------------

def test_a_counter_in_a_dict_incremented_in_place():
    def fn(state, x):
        state.counts["n"] += 1
        return x * state.counts["n"]

    expect_steady(steady(fn))


def test_a_counter_in_a_dict_counted_with_get():
    def fn(state, x):
        state.counts["k"] = state.counts.get("k", 0) + 1
        return x * state.counts["k"]

    expect_steady(steady(fn))


def test_an_object_step_counter_in_arithmetic():
    # (a module's counter: ``test_dynamic_numbers``)
    def fn(state, x):
        state.step += 1
        return x * state.step + state.step / 2

    expect_steady(steady(fn))
