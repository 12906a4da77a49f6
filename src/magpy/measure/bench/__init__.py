"""magpy.measure.bench — the side-by-side benchmark behind ``python -m magpy bench``.

Every zoo model runs under eager PyTorch, ``magpy.compile`` and ``torch.compile`` (Inductor); each compiled
output is checked against eager first, then all backends are timed together in interleaved rounds after
warm-up; a speedup is the median over rounds of eager's time over the compiler's in the same round, marked
noisy when the rounds disagree too much to tell::

    from magpy.measure.bench import BenchOptions, run
    report = run(BenchOptions.build(models=["gpt", "lstm"], quick=True))

``BenchOptions.build(train=True)`` (``bench --train``) times training steps instead, each checked by its loss
and the weights it leaves.

Modules: options (what to run, quick/full defaults), loop (the loop, in an inference or a training mode),
runners (one function per backend), training (the training steps, their runners and checks),
timing (interleaved rounds, deadlines, the run budget), noise (paired speedups, their spread, when a row is
too noisy, the geomean), reasons (a failure as one line), report (rows, table, JSON), log (tracebacks and
every round's times), plot (matplotlib chart), progress (the stderr bar).
"""
from .loop import run
from .options import BenchError, BenchOptions
from .report import ModelRow, Report
from .runners import RUNNERS, BackendResult

__all__ = ["BenchError", "BenchOptions", "run", "Report", "ModelRow", "BackendResult", "RUNNERS"]
