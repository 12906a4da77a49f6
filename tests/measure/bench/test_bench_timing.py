"""Backends are timed in interleaved rounds: every round times each backend in turn, the order rotating, so
machine noise hits all alike; sample k of every backend comes from round k."""
from magpy.measure.bench import BenchOptions, run
from magpy.measure.bench import timing
from magpy.measure.bench.timing import Repeats, interleaved_samples, round_order


class FakeClock:
    """A perf_counter that only moves when a fake call runs: each call advances it by its backend's cost."""

    def __init__(self):
        self.now = 0.0
        self.order = []

    def __call__(self):
        return self.now

    def call(self, name, cost):
        def run():
            self.order.append(name)
            self.now += cost
        return run


def test_rounds_interleave_the_backends_and_rotate_who_goes_first(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    calls = {"eager": clock.call("eager", 2.0), "magpy": clock.call("magpy", 1.0),
             "inductor": clock.call("inductor", 0.5)}
    repeats = Repeats(warmup=1, repeat=3, min_repeat=3, budget_s=1e9, calls=2)
    samples, failures = interleaved_samples(calls, lambda: None, repeats)

    blocks = [clock.order[i:i + 2] for i in range(0, len(clock.order), 2)]
    assert all(a == b for a, b in blocks)                     # a backend's `calls` calls are back to back
    names = [block[0] for block in blocks]
    rounds = [names[i:i + 3] for i in range(0, len(names), 3)]
    assert rounds == [["eager", "magpy", "inductor"],         # warm-up round
                      ["magpy", "inductor", "eager"],
                      ["inductor", "eager", "magpy"],
                      ["eager", "magpy", "inductor"]]
    assert failures == {}
    assert samples == {"eager": [2.0] * 3, "magpy": [1.0] * 3, "inductor": [0.5] * 3}


def test_round_order_never_starts_two_rounds_in_a_row_with_the_same_backend():
    names = ["eager", "magpy", "inductor"]
    firsts = [round_order(names, k)[0] for k in range(6)]
    assert all(a != b for a, b in zip(firsts, firsts[1:]))
    assert all(sorted(round_order(names, k)) == sorted(names) for k in range(6))


def test_a_backend_that_raises_leaves_the_later_rounds_and_the_others_keep_their_rounds(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    count = {"n": 0}

    def flaky():
        count["n"] += 1
        if count["n"] == 3:
            raise RuntimeError("late failure")
        clock.call("magpy", 1.0)()

    calls = {"eager": clock.call("eager", 2.0), "magpy": flaky}
    samples, failures = interleaved_samples(calls, lambda: None, Repeats(warmup=0, repeat=4, min_repeat=4,
                                                                         budget_s=1e9, calls=1))
    assert list(failures) == ["magpy"] and samples == {"eager": [2.0] * 4}


def test_a_time_limit_stops_new_rounds_but_keeps_a_floor_of_rounds(monkeypatch):
    clock = FakeClock()
    monkeypatch.setattr(timing.time, "perf_counter", clock)
    calls = {"eager": clock.call("eager", 10.0), "magpy": clock.call("magpy", 10.0)}
    repeats = Repeats(warmup=0, repeat=25, min_repeat=9, budget_s=1e9, limit_s=1.0, calls=1)
    samples, _ = interleaved_samples(calls, lambda: None, repeats)
    assert len(samples["eager"]) == len(samples["magpy"]) == timing.LIMITED_ROUNDS


def test_the_harness_times_eager_and_magpy_in_interleaved_rounds(toy_zoo, fake_magpy):
    options = BenchOptions.build(models=["toy"], backends=["magpy"], quick=True, progress=False)
    row = run(options).rows[0]
    rounds, calls = row.results["magpy"].samples, options.repeats.calls
    assert row.results["magpy"].ok and len(row.results["eager"].times_ms) == rounds >= 9
    timed = toy_zoo[-2 * calls * rounds:]                      # the timing phase comes last
    assert timed == [name for k in range(rounds)
                     for name in round_order(["eager", "magpy"], options.repeats.warmup + k) for _ in range(calls)]
