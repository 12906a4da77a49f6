"""magpy.measure.transformers — ``python -m magpy transformers``: every transformers base model, MagPy beside Dynamo.

Each base-model architecture transformers maps (``MODEL_MAPPING_NAMES``) of the chosen split is built from its
default config shrunk to tiny sizes (configs.py) with seeded random weights, in eval mode, and called on
inputs made from its config and ``forward``'s parameters (inputs.py). Eager runs first (twice on the same
inputs: a deterministic architecture gives the same outputs), then ``magpy.compile`` and ``torch.compile``
(``fullgraph=True``), each in a fresh worker process, on the same inputs and on new ones of the same shapes;
both results are compared with eager's and the first call is timed. The report gives, of the architectures
that run deterministically in eager, the share each compiler keeps in one graph matching eager, median
first-call times and the most common failure reasons::

    from magpy.measure.transformers import Options, run
    score = run(Options(only=["bert", "gpt2"]))

Modules: architectures (the corpus and its public/held-out split), configs, models, inputs, case (eager and
compiled stages), worker (one stage per process), runner, report. Scheduling, state, compilers, comparison,
reasons and scoring are ``magpy.measure.harness``'s, shared with the ParityBench runner.
"""
from .architectures import SelectionError, select, split_of
from .runner import Options, RunError, run

__all__ = ["Options", "RunError", "SelectionError", "run", "select", "split_of"]
