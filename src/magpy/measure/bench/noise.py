"""How far a speedup can be trusted: paired per-round ratios, their spread, and when a row is too noisy.

Backends are timed in interleaved rounds (``timing.interleaved_samples``), so round k of eager and round k of
a compiler ran within milliseconds of each other and saw the same machine load. The speedup of a row is the
median over rounds of ``eager time / compiler time`` of the same round: a load spike that slows both calls of
a round cancels out, where a ratio of two separately taken medians would keep it. The spread of those ratios
says whether the machine let us tell at all; the geomean's spread comes from resampling the rounds.
"""
from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass
from typing import Callable, Sequence

# A speedup is marked noisy ("~" in the table, left out of the geomean) when any rule holds. The spread is half
# the interquartile range of the per-round ratios over their median: ±10% means the middle half of the rounds
# disagree by a fifth, more than most differences between two compilers on one model.
NOISY_SPREAD = 0.10
NOISY_MIN_ROUNDS = 5
NOISE_RULES: tuple[tuple[Callable[["Speedup"], bool], str], ...] = (
    (lambda s: s.rounds < NOISY_MIN_ROUNDS, f"fewer than {NOISY_MIN_ROUNDS} rounds"),
    (lambda s: s.spread > NOISY_SPREAD, f"rounds spread over ±{NOISY_SPREAD:.0%}"),
)

# Resamples behind the geomean's spread; seeded, so one set of timings always gives one answer.
BOOTSTRAP_RESAMPLES = 200
BOOTSTRAP_SEED = 0


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """First quartile, median, third quartile (the median thrice for fewer than two values)."""
    if len(values) < 2:
        middle = statistics.median(values)
        return middle, middle, middle
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, median, q3


def spread(values: Sequence[float]) -> float:
    """Half the interquartile range over the median: the ± of the middle half of ``values``."""
    q1, median, q3 = quartiles(values)
    return (q3 - q1) / (2 * median) if median else math.inf


@dataclass(frozen=True)
class Speedup:
    """A compiler's speedup over eager on one model, from rounds timed together."""

    ratios: tuple[float, ...]      # eager time / compiler time, one per round

    @property
    def value(self) -> float:
        return statistics.median(self.ratios)

    @property
    def spread(self) -> float:
        return spread(self.ratios)

    @property
    def rounds(self) -> int:
        return len(self.ratios)

    @property
    def noisy(self) -> str | None:
        """Why this speedup cannot be told from the machine's noise, or None when it can."""
        reasons = [reason for rule, reason in NOISE_RULES if rule(self)]
        return "; ".join(reasons) or None


def paired_speedup(eager_times: Sequence[float], times: Sequence[float]) -> Speedup | None:
    """The speedup from two backends' per-round times (round k of one beside round k of the other); None
    without a common round."""
    ratios = tuple(e / t for e, t in zip(eager_times, times) if t > 0)
    return Speedup(ratios) if ratios else None


@dataclass(frozen=True)
class Geomean:
    value: float | None      # geometric mean of the trusted speedups; None when there are none
    spread: float            # ± of the geomean over resampled rounds (as Speedup.spread)
    used: int                # speedups behind the value
    noisy: int               # speedups left out as noisy


def geomean(speedups: Sequence[Speedup], left_out: int = 0) -> Geomean:
    """The geometric mean of the speedups not marked noisy, with its spread: each resample draws every row's
    rounds again (with replacement) and takes the geomean of their medians. ``left_out``: speedups the caller
    left out already (counted with the noisy ones)."""
    trusted = [s for s in speedups if s.noisy is None]
    left_out += len(speedups) - len(trusted)
    if not trusted:
        return Geomean(None, math.inf, 0, left_out)

    def mean_of_logs(values: Sequence[float]) -> float:
        return math.exp(sum(math.log(v) for v in values) / len(values))

    rng = random.Random(BOOTSTRAP_SEED)
    resampled = [mean_of_logs([statistics.median(rng.choices(s.ratios, k=s.rounds)) for s in trusted])
                 for _ in range(BOOTSTRAP_RESAMPLES)]
    return Geomean(mean_of_logs([s.value for s in trusted]), spread(resampled), len(trusted), left_out)
