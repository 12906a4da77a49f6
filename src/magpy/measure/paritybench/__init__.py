"""magpy.measure.paritybench — ``python -m magpy paritybench PATH``: the ParityBench full-graph rate, MagPy
beside Dynamo.

Every test case of a ParityBench checkout (jansel/pytorch-jit-paritybench, kept outside this repository) that
runs in eager is compiled with ``magpy.compile(fullgraph=True)`` and ``torch.compile(fullgraph=True)``, called
twice, and checked against eager; the report gives per-case and per-file rates side by side, dynamic files
apart, and the most common failure reasons::

    from magpy.measure.paritybench import Options, run
    score = run(Options("/work/paritybench", limit=150))

Setting up: a checkout of ParityBench anywhere outside this repository; optionally scipy, scikit-learn, pandas,
matplotlib (and expecttest, which ParityBench's helpers need through torch's test utilities) installed beside
torch. Packages that are missing get stand-ins (see standins.py) and the report says which. A torchvision
wheel built for another torch build can be unpacked into a folder passed with ``--site DIR``: its Python part
(models, transforms) then runs without its C++ operators. ``--compat`` restores names removed from old
Python/numpy/scipy/torch (compat.py). Results go to a JSONL state file, one per checkout and settings, so an
interrupted run resumes; ``--fresh`` starts over (do that after MagPy changes).

Modules, in the order a run uses them: corpus (files and the public/held-out split), environment (import
paths, standins for missing packages, the opt-in compat layer, helpers), worker and case (running one file and
one case), report (the ParityBench layout). The scheduler (a forked worker per file, timeouts, restarts), the
compiler table, comparing outputs, naming failures, the resumable JSONL state and scoring are shared with the
transformers runner: ``magpy.measure.harness``.
"""
from .corpus import Corpus, CorpusError, split_of
from .runner import Options, RunError, run

__all__ = ["Corpus", "CorpusError", "Options", "RunError", "run", "split_of"]
