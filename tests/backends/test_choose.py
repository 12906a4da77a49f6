"""On a GPU the first calls time the compiled graph against the captured one and keep the faster."""
import pytest
import torch

from magpy.backends import choose
from magpy.backends.choose import MARGIN, MARGIN_LONG, SAMPLES, FasterOf, faster_of, margin


class _Clock:
    """The choice's clock, advanced only by the candidates' calls: timings are exact, whatever the load."""
    now = 0.0

    @classmethod
    def perf_counter(cls):
        return cls.now


@pytest.fixture(autouse=True)
def exact_clock(monkeypatch):
    monkeypatch.setattr(choose, "time", _Clock)


def _slow(result, seconds):
    calls = []

    def fn(*args):
        calls.append(args)
        _Clock.now += seconds
        return result

    fn.calls = calls
    return fn


def test_cpu_inputs_keep_the_compiled_graph():
    compiled, captured = _slow(1, 0), _slow(2, 0)
    assert faster_of(compiled, captured, [torch.randn(2)]) is compiled


def test_the_faster_one_wins_and_every_call_returns_a_result():
    compiled, captured = _slow("compiled", 0.004), _slow("captured", 0.0)
    runner = FasterOf(compiled, captured, sync=lambda: None)
    results = [runner(torch.zeros(1)) for _ in range(1 + 2 * SAMPLES + 3)]
    assert runner.chosen is captured
    assert results[-3:] == ["captured"] * 3
    assert len(compiled.calls) == 1 + SAMPLES


def test_a_graph_writing_its_inputs_is_never_run_twice():
    def compiled(x):
        x.add_(1)
        return x

    captured = _slow(None, 0)
    runner = FasterOf(compiled, captured, sync=lambda: None)
    x = torch.zeros(2)
    for _ in range(4):
        runner(x)
    assert runner.chosen is compiled and captured.calls == []
    torch.testing.assert_close(x, torch.full((2,), 4.0))


def test_a_clearly_faster_replay_wins_and_the_losers_are_dropped():
    compiled, captured, replayed = _slow("compiled", 0.004), _slow("captured", 0.006), _slow("replayed", 0.0)
    runner = FasterOf(compiled, captured, sync=lambda: None, replayed=replayed)
    results = [runner(torch.zeros(1)) for _ in range(1 + 3 * SAMPLES + 2)]
    assert runner.chosen is replayed and results[-2:] == ["replayed"] * 2
    assert list(runner.candidates) == ["replayed"]
    assert len(replayed.calls) == SAMPLES + 2


def test_a_rival_within_the_margin_leaves_the_compiled_graph():
    compiled, captured, replayed = _slow("compiled", 0.004), _slow("captured", 0.01), _slow("replayed", 0.0039)
    runner = FasterOf(compiled, captured, sync=lambda: None, replayed=replayed)
    for _ in range(1 + 3 * SAMPLES):
        runner(torch.zeros(1))
    assert runner.chosen is compiled


def test_a_long_call_needs_a_smaller_gain_than_a_short_one():
    assert margin(2e-4) == MARGIN and margin(0.02) == MARGIN_LONG
    compiled, captured, replayed = _slow("compiled", 0.02), _slow("captured", 0.03), _slow("replayed", 0.0185)
    runner = FasterOf(compiled, captured, sync=lambda: None, replayed=replayed)
    for _ in range(1 + 3 * SAMPLES):
        runner(torch.zeros(1))
    assert runner.chosen is replayed      # 7.5% faster: within 10%, past 3%
