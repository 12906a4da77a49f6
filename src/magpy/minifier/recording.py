"""The whole call, compiled against eager, with every graph the backend is given kept.

``magpy.testing.check_equivalent`` runs the call twice each way: the first compiled call is the capture
(MagPy's VM runs it on real values, so it is eager's result, and the captured graphs go to the backend);
the second runs the compiled graphs. A ``Recorder`` stands in for the backend: it hands each graph on,
and keeps a copy of it, the grad mode it was compiled in, what compiling it raised (magpy.compile would
run such a graph as captured, with a warning) and the inputs of its first run.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Callable, Optional

import torch
from torch import fx

from ..testing import NotEquivalent, check_equivalent
from .tensors import copied


@dataclass
class Recorded:
    """One graph the backend was given: ``gm`` as it came (before the backend rewrote it), ``inputs``
    (of its first run; the compile's example inputs until then), ``grad_enabled``, and ``compile_error``."""
    gm: fx.GraphModule
    inputs: list
    grad_enabled: bool
    compile_error: Optional[BaseException] = None
    ran: bool = False


class Recorder:
    """A backend that compiles with ``backend`` and records each graph (``graphs``, in compile order)."""

    def __init__(self, backend: Callable):
        self.backend = backend
        self.graphs: list[Recorded] = []

    def __call__(self, gm, example_inputs):
        record = Recorded(copy.deepcopy(gm), copied(list(example_inputs)), torch.is_grad_enabled())
        self.graphs.append(record)
        try:
            compiled = self.backend(gm, example_inputs)
        except Exception as error:  # noqa: BLE001 - recorded; the call goes on with the graph as captured
            record.compile_error = error
            compiled = gm.forward

        def run(*args):
            if not record.ran:
                record.inputs, record.ran = copied(list(args)), True
            return compiled(*args)
        return run


@dataclass
class CallFault:
    """How the compiled call went: ``found``, the first difference from eager
    (``magpy.testing.NotEquivalent``, None when none), and ``compile_errors``, what compiling its
    graphs raised."""
    found: Optional[NotEquivalent]
    compile_errors: list

    @property
    def in_capture(self) -> bool:
        """The capturing call itself differs from eager (MagPy's VM, not a backend)."""
        return self.found is not None and self.found.call == 1

    @property
    def raised(self) -> bool:
        """The compiled call raised where eager did not."""
        f = self.found
        return f is not None and isinstance(f.compiled, BaseException) and not isinstance(f.eager, BaseException)

    def shows(self, check: str) -> bool:
        """Does the call show a fault of this kind (a key of ``fault.CHECKS``)?"""
        if check == "error":
            return bool(self.compile_errors) or self.raised and not self.in_capture
        return self.found is not None and not self.raised and not self.in_capture

    def __str__(self):
        if self.found is not None:
            return str(self.found)
        error = self.compile_errors[0]
        return f"compiling a graph raised {type(error).__name__}: {error}"


def call_fault(fn, args: tuple, kwargs: dict, recorder: Recorder) -> CallFault:
    """``fn(*args, **kwargs)`` compiled with ``recorder`` as the backend, against eager."""
    target, inputs = _positional(fn, args, kwargs)
    found = None
    try:
        # (the second call takes each side's inputs as the first left them: the same call again)
        check_equivalent(target, *inputs, calls=2, mutate=lambda _: None, backend=recorder)
    except NotEquivalent as difference:
        found = difference
    return CallFault(found, [r.compile_error for r in recorder.graphs if r.compile_error is not None])


def _positional(fn, args, kwargs):
    """(callable, inputs) for check_equivalent, which passes positional arguments only: keyword
    arguments ride as one trailing dict (so each side still gets its own copy of them)."""
    if not kwargs:
        return fn, args

    def call(*inputs):
        *positional, keywords = inputs
        return fn(*positional, **keywords)
    return call, (*args, kwargs)
