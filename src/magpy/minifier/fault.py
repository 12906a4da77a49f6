"""Does a backend get one graph wrong? The graph compiled by the backend against the same graph run
eagerly (``gm(*inputs)``), each on its own copies of the inputs, from the same random state.

What counts as wrong is the check (``CHECKS``): "accuracy" — both run, and the outputs or the inputs
afterwards (in-place writes) differ beyond ``magpy.testing.check_equivalent``'s tolerances; "error" —
compiling or running it compiled raises where eager does not.
"""
from __future__ import annotations

import traceback
from dataclasses import dataclass
from typing import Callable, Optional

import torch

from ..testing import difference
from .subgraph import Subgraph
from .tensors import copied


@dataclass(frozen=True)
class Symptom:
    """How the backend got a graph wrong: ``check`` (a key of CHECKS), ``detail`` (the difference, or
    the exception as Python prints it) and, for "error", ``error_type``."""
    check: str
    detail: str
    error_type: Optional[type] = None


@dataclass
class Run:
    """One side's run of a graph: what it returned (a tuple of outputs) and the inputs afterwards, or
    what it raised."""
    outputs: tuple = ()
    inputs: list = None
    error: Optional[BaseException] = None


def _accuracy(eager: Run, compiled: Run) -> Optional[Symptom]:
    if eager.error is not None or compiled.error is not None:
        return None
    detail = difference(eager.outputs, compiled.outputs, path="output") or \
        difference(eager.inputs, compiled.inputs, path="input")
    return Symptom("accuracy", detail) if detail else None


def _error(eager: Run, compiled: Run) -> Optional[Symptom]:
    if eager.error is not None or compiled.error is None:
        return None
    detail = "".join(traceback.format_exception_only(compiled.error)).strip()
    return Symptom("error", detail, type(compiled.error))


#: check name -> what it makes of the eager and the compiled run of one graph
CHECKS: dict[str, Callable[[Run, Run], Optional[Symptom]]] = {
    "accuracy": _accuracy,
    "error": _error,
}


def outputs_of(result) -> tuple:
    """A graph's result as a tuple (compiled graphs may return a list)."""
    return tuple(result) if isinstance(result, (list, tuple)) else (result,)


class Probe:
    """Runs subgraphs eagerly and through ``backend`` (a callable ``(gm, example_inputs) -> callable``)
    and says, as ``check`` does, what the backend got wrong."""

    def __init__(self, backend: Callable, check: str):
        self.backend = backend
        self.judge = CHECKS[check]

    def __call__(self, sub: Subgraph) -> Optional[Symptom]:
        eager = _run(sub, lambda inputs: sub.module()(*inputs))
        compiled = _run(sub, lambda inputs: self.backend(sub.module(), copied(sub.inputs))(*inputs))
        return self.judge(eager, compiled)


def _run(sub: Subgraph, call) -> Run:
    inputs = copied(sub.inputs)
    with torch.random.fork_rng(), torch.set_grad_enabled(sub.grad_enabled):
        torch.manual_seed(0)
        try:
            return Run(outputs_of(call(inputs)), inputs)
        except Exception as error:  # noqa: BLE001 - an exception is an outcome to judge
            return Run(error=error)
