"""Clocks for the benchmark: interleaved steady-state samples, device synchronisation, per-step deadlines,
a run budget."""
from __future__ import annotations

import contextlib
import signal
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator

import torch


class StepTimeout(Exception):
    """A benchmark step ran past its deadline."""


def synchronizer(device: torch.device) -> Callable[[], None]:
    """A function that waits for all queued work on ``device`` (a no-op on the CPU)."""
    if device.type == "cuda":
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def timed_call(call: Callable[[], object], sync: Callable[[], None]) -> tuple[object, float]:
    """Run ``call`` once; return its result and the seconds it took, device work included."""
    sync()
    start = time.perf_counter()
    result = call()
    sync()
    return result, time.perf_counter() - start


@dataclass(frozen=True)
class Repeats:
    """How steady-state time is sampled: ``warmup`` rounds, then up to ``repeat`` timed rounds, stopping early
    once at least ``min_repeat`` rounds are done and ``budget_s`` seconds per backend are spent, or once
    ``limit_s`` seconds of timing have passed (a floor of ``LIMITED_ROUNDS`` rounds is kept even then).

    In a round each backend is called ``calls`` times back to back and its sample is the fastest: a time slice
    lost to another process (a few ms on Linux) lands on one call, and would otherwise decide the round.
    """

    warmup: int = 3
    repeat: int = 30
    min_repeat: int = 5
    budget_s: float = 3.0
    limit_s: float | None = None
    calls: int = 3


# Rounds timed even past a time limit: fewer cannot give a median and a spread worth printing.
LIMITED_ROUNDS = 3


def round_order(names: list[str], round_index: int) -> list[str]:
    """The order of the backends in one round: rotated by one each round, so that no backend always runs
    first (on a cold cache, right after another model's build) or right after the same neighbour."""
    if not names:
        return []
    shift = round_index % len(names)
    return names[shift:] + names[:shift]


def interleaved_samples(calls: dict[str, Callable[[], object]], sync: Callable[[], None], repeats: Repeats,
                        time_limit_s: float | None = None) -> tuple[dict[str, list[float]], dict[str, Exception]]:
    """Wall times in seconds of each warm call, one per round, each round timing every backend in turn (see
    ``round_order`` and ``Repeats.calls``), so that every backend sees the same machine load: on a shared
    2-core machine, timing one backend after another mostly measures the load. Sample k of every backend
    comes from round k.
    No new round starts after ``time_limit_s`` (or ``repeats.limit_s``, the smaller), once
    ``LIMITED_ROUNDS`` timed rounds are done.

    Returns the samples of every call that never raised, and the exception of every call that did (it is
    left out of the later rounds).
    """
    calls = dict(calls)
    failures: dict[str, Exception] = {}
    limits = [s for s in (time_limit_s, repeats.limit_s) if s is not None]
    limit = min(limits) if limits else None
    rounds = 0

    def one_round(record: dict[str, list[float]] | None) -> None:
        nonlocal rounds
        for name in round_order(list(calls), rounds):
            try:
                elapsed = min(timed_call(calls[name], sync)[1] for _ in range(repeats.calls))
            except Exception as error:
                failures[name] = error
                del calls[name]
                continue
            if record is not None:
                record[name].append(elapsed)
        rounds += 1

    entered = time.perf_counter()
    for _ in range(repeats.warmup):
        one_round(None)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    started = time.perf_counter()
    for done in range(repeats.repeat):
        now = time.perf_counter()
        if done >= repeats.min_repeat and now - started > repeats.budget_s * max(len(calls), 1):
            break
        if done >= LIMITED_ROUNDS and limit is not None and now - entered > limit:
            break
        one_round(samples)
    return {name: times for name, times in samples.items() if times and name in calls}, failures


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Raise StepTimeout in the body once ``seconds`` have passed.

    Uses SIGALRM, so it only applies on Unix in the main thread; elsewhere (or with ``None``) it does nothing.
    The signal interrupts Python code only, so a single long native call finishes before the timeout lands.
    """
    usable = (seconds is not None and hasattr(signal, "setitimer")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise StepTimeout(f"timeout {seconds:.0f}s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Budget:
    """Wall-clock budget of a whole run; ``None`` means unlimited."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.started = time.perf_counter()

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def remaining(self) -> float | None:
        if self.seconds is None:
            return None
        return max(self.seconds - self.elapsed(), 0.0)

    def step_limit(self, step_timeout: float | None) -> float | None:
        """The deadline for the next step: the per-step timeout, cut to what is left of the budget."""
        limits = [s for s in (step_timeout, self.remaining()) if s is not None]
        return min(limits) if limits else None
