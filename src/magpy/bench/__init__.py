"""magpy.bench — the side-by-side benchmark behind ``python -m magpy bench``.

Every zoo model runs under eager PyTorch, ``magpy.compile`` and ``torch.compile`` (Inductor); each compiled
output is checked against eager first, then all backends are timed together (medians of interleaved calls
after warm-up)::

    from magpy.bench import BenchOptions, run
    report = run(BenchOptions.build(models=["gpt", "lstm"], quick=True))

Modules: options (what to run, quick/full defaults), harness (the loop), runners (one function per backend),
timing (medians, deadlines, the run budget), report (rows, table, JSON), plot (matplotlib chart), progress
(the stderr bar).
"""
from .harness import run
from .options import BenchError, BenchOptions
from .report import ModelRow, Report
from .runners import RUNNERS, BackendResult

__all__ = ["BenchError", "BenchOptions", "run", "Report", "ModelRow", "BackendResult", "RUNNERS"]
