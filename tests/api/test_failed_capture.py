"""A call whose capture gives up runs eagerly that once; it does not make the function eager for ever.

Its guards so far are remembered as an eager entry: later calls like it run eagerly at once (no capture),
and calls that go another way are still captured and compiled.
"""
import contextlib
import io
import random
import warnings

import pytest
import torch

import magpy


def _printing(x, flag):
    y = x.sin()
    try:
        raise KeyError(flag)
    except KeyError:
        if flag:
            # a tensor printed inside an except block: capture gives up here, and the call cannot be
            # split there (a resume function cannot start inside a handler)
            print("total", y.sum())
    return y.cos()


def _run(fn, calls):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [fn(*args) for args in calls]
    return results, out.getvalue(), [w for w in caught if "magpy" in str(w.message)]


def _calls(flags):
    return [(torch.full((3,), float(k)), flag) for k, flag in enumerate(flags)]


def test_calls_that_go_another_way_are_still_compiled():
    calls = _calls([True, False, True, False, False, True])
    want, printed, _ = _run(_printing, calls)
    compiled = magpy.compile(_printing, backend="eager")
    got, got_printed, mine = _run(compiled, calls)
    assert all(torch.equal(a, b) for a, b in zip(got, want))
    assert got_printed == printed
    stats = compiled.stats
    assert (stats.compiles, stats.graph_breaks, stats.fallbacks) == (1, 1, 1)
    assert stats.cache_hits == 2 and stats.eager_calls == 2   # (no call was captured twice)
    assert len(mine) == 1 and "runs eagerly" in str(mine[0].message)


def test_a_capture_that_always_gives_up_is_not_repeated():
    def fn(x):
        try:
            raise KeyError("x")
        except KeyError:
            print(x.sum())   # (inside a handler: no split)
        return x * 2

    compiled = magpy.compile(fn, backend="eager")
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(5):
            x = torch.full((2,), float(k))
            assert torch.equal(compiled(x), x * 2)
    assert compiled.stats.graph_breaks == 1 and compiled.stats.eager_calls == 4


def test_a_capture_that_gave_up_after_a_random_draw_is_tried_again_up_to_the_limit():
    def fn(x):
        if random.random() > 2.0:   # (never): a draw, then a capture that gives up
            return x
        print(x.sum())
        return x + 1

    compiled = magpy.compile(fn, backend="eager")
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k in range(12):
            random.seed(k)
            want_state = (random.random(), random.getstate())[1]
            random.seed(k)
            x = torch.full((2,), float(k))
            assert torch.equal(compiled(x), x + 1)
            assert random.getstate() == want_state   # (one draw, as eager makes)
    stats = compiled.stats
    assert stats.graph_breaks <= 8 and stats.calls == 12


def test_fullgraph_still_raises_at_the_line():
    compiled = magpy.compile(_printing, backend="eager", fullgraph=True)
    with pytest.raises(magpy.GraphBreakError) as err, contextlib.redirect_stdout(io.StringIO()):
        compiled(torch.ones(3), True)
    assert "print" in str(err.value) and str(_printing.__code__.co_firstlineno + 8) in str(err.value)
