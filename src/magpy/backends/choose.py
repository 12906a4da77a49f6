"""Never slower than eager on a GPU: the first calls time the compiled graph against the graph as
captured (and, for inference, against the compiled graph replayed as a CUDA graph), and keep the
fastest.

Whether fused kernels beat eager's on a GPU depends on more than bytes moved: a graph that is
mostly library calls (convolutions, matrix products) gains little from fusion and can lose more
in launch overhead than it gains, and a graph of many small kernels can be bound by the time the
CPU takes to launch them, which a CUDA graph replay removes. So the first ``SAMPLES`` calls of
each candidate after the first call run them by turns (each call returns its own, correct,
result), timing each with the device synchronised, and every later call runs the winner: the
compiled graph unless another's fastest call beats the compiled graph's by ``margin`` (a few
calls of a short graph are noisy). The first call only runs the compiled graph and checks that
it leaves its inputs alone: a graph that writes to its inputs, or that records autograd, is never
run twice for timing's sake and stays compiled. Candidates that lose are dropped (a replay's
memory with them).
"""
from __future__ import annotations

import time
from typing import Callable, Optional

import torch

SAMPLES = 5  # timed calls of each before choosing
MARGIN = 1.1  # how much faster a rival must be than the compiled graph: for short calls,
MARGIN_LONG = 1.03  # and for calls of LONG_S or more, whose synchronised timings vary far less
LONG_S = 1e-3


def margin(seconds: float) -> float:
    """The factor by which a rival's best call must beat a compiled graph's best of ``seconds``:
    10% for short calls, down to 3% for long ones (BERT-large's replay on an H200: 5.5 ms against
    6.07 compiled, within 10%)."""
    return max(MARGIN_LONG, min(MARGIN, 1 + (MARGIN - 1) * LONG_S / max(seconds, 1e-9)))


def faster_of(compiled: Callable, captured: Callable, example_inputs, report=None,
              replayed: Optional[Callable] = None) -> Callable:
    """``compiled``, ``captured`` or ``replayed`` (optional), whichever runs faster (on CUDA
    inputs; else ``compiled``).

    ``report`` (a CompileReport) gets the choice in ``report.chosen``."""
    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    if not tensors or any(t.device.type != "cuda" for t in tensors) or compiled is captured:
        return compiled
    return FasterOf(compiled, captured, report, replayed=replayed)


class FasterOf:
    """Runs ``compiled``, ``captured`` (and ``replayed``) by turns, timed, then only the fastest."""

    def __init__(self, compiled: Callable, captured: Callable, report=None, sync: Callable = None,
                 replayed: Optional[Callable] = None):
        self.compiled = compiled
        self.captured = captured
        self.candidates = {"compiled": compiled, "captured": captured}
        if replayed is not None:
            self.candidates["replayed"] = replayed
        self.turns = ["captured", "compiled", "replayed"][:len(self.candidates)]
        self.report = report
        self.chosen: Optional[Callable] = None
        self.times = {name: [] for name in self.candidates}
        self.calls = 0
        self.sync = sync or torch.cuda.synchronize
        self.capturing = torch.cuda.is_current_stream_capturing if torch.cuda.is_available() else bool

    def __call__(self, *args):
        if self.chosen is not None:
            return self.chosen(*args)
        if self.capturing():  # inside a CUDA graph's capture: no timing (it synchronises)
            return self.compiled(*args)
        self.calls += 1
        if self.calls == 1:
            return self._first(args)
        if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
            return self._choose("compiled", "it records autograd")(*args)
        name = self.turns[self.calls % len(self.turns)]
        result = self._timed(name, args)
        if all(len(t) >= SAMPLES for t in self.times.values()):
            best = {name: min(times) for name, times in self.times.items()}
            rival = min((n for n in best if n != "compiled"), key=best.__getitem__)
            winner = rival if best[rival] * margin(best["compiled"]) < best["compiled"] else "compiled"
            self._choose(winner, ", ".join(f"{n} {t * 1e3:.3f} ms" for n, t in best.items()) + " per call")
        return result

    def _first(self, args):
        versions = [a._version for a in args if isinstance(a, torch.Tensor)]
        result = self.compiled(*args)
        if versions != [a._version for a in args if isinstance(a, torch.Tensor)]:
            self._choose("compiled", "it writes to its inputs")
        return result

    def _timed(self, name: str, args):
        fn = self.candidates[name]
        self.sync()
        start = time.perf_counter()
        result = fn(*args)
        self.sync()
        self.times[name].append(time.perf_counter() - start)
        return result

    def _choose(self, name: str, why: str) -> Callable:
        self.chosen = self.candidates[name]
        self.candidates = {name: self.chosen}  # the others, a replay's memory with them, are dropped
        if self.report is not None:
            self.report.chosen = f"{name} ({why})"
        return self.chosen
