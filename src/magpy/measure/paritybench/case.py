"""Running one ParityBench test case: eager twice, then each compiler on a fresh copy of the module, twice.

A test case is a module class with a function giving its constructor's arguments and one giving its forward's.
Every construction and every call starts from the same random state, and every call gets a fresh copy of the
same inputs, so the eager results are the reference for the compiled ones call by call: compiled call k is
compared with eager call k. Each compiler gets its own module, a deep copy of the eager module taken before
its first call, so a compiler that changes or breaks a module cannot affect another's result. (A module that
cannot be deep-copied is built again from the same seed and loaded with the eager module's initial state; one
that cannot be built twice either is shared, after its eager calls, as ParityBench itself does.)

A case whose two eager calls disagree is *dynamic* (its output depends on more than its inputs: time, a counter,
uninitialised memory); its compiled outputs are checked for structure (types, shapes, dtypes) only.
"""
from __future__ import annotations

import copy
import random
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..harness import reasons, trial
from ..harness.compare import Tolerance, difference, freeze
from ..harness.compilers import Compiler

SEED = 1337


@dataclass
class TestCase:
    index: int
    name: str                           # the module class's name
    module_class: type
    init_arguments: Callable[[], tuple[list, dict]]
    forward_arguments: Callable[[], tuple[list, dict]]


def test_cases(module) -> list[TestCase]:
    """The TESTCASES of an imported generated file, in order."""
    found = []
    for index, entry in enumerate(getattr(module, "TESTCASES", None) or ()):
        module_class, init_arguments, forward_arguments = entry[0], entry[1], entry[2]
        found.append(TestCase(index, getattr(module_class, "__name__", str(module_class)), module_class,
                              init_arguments, forward_arguments))
    return found


def reset_random_state() -> None:
    torch.manual_seed(SEED)
    random.seed(SEED)
    try:
        import numpy
        numpy.random.seed(SEED)
    except Exception:
        pass


@dataclass
class EagerRun:
    """What the compiled runs are checked against."""

    inputs: tuple[list, dict]           # pristine forward arguments; each call gets a deep copy
    outputs: list[Any]                  # frozen outputs of eager calls 1 and 2
    pristine: Any                       # a deep copy of the module before its first call, or None
    initial_state: dict | None          # the module's state_dict before its first call
    module: Any                         # the eager module itself (after its two calls)
    dynamic: bool


class _Failed(Exception):
    """Internal: a stage of the eager run failed; carries its record."""

    def __init__(self, record: dict):
        self.record = record


def run_eager(case: TestCase, file_name: str, tolerance: Tolerance) -> tuple[dict, EagerRun | None]:
    """Build the module and call it twice. Returns the eager record and, when it ran, the reference."""
    started = time.perf_counter()
    try:
        if getattr(case.module_class.forward, "__name__", "") == "_forward_unimplemented":
            raise _Failed({"status": "no_forward", "reason": "module has no forward()"})
        module = _build(case, file_name, "init_error")
        pristine = _deep_copy(module)
        initial_state = None if pristine is not None else _state_copy(module)
        try:
            reset_random_state()
            inputs = copy.deepcopy(case.forward_arguments())
        except Exception as error:
            raise _Failed({"status": "args_error", **reasons.describe(error, file_name)})
        outputs = []
        for _ in range(2):
            try:
                outputs.append(freeze(_call(module, inputs)))
            except Exception as error:
                raise _Failed({"status": "run_error", **reasons.describe(error, file_name)})
    except _Failed as failed:
        return {**failed.record, "seconds": round(time.perf_counter() - started, 3)}, None
    changed = difference(outputs[0], outputs[1], tolerance)
    record = {"status": "ok", "dynamic": changed is not None, "seconds": round(time.perf_counter() - started, 3)}
    if changed:
        record["detail"] = f"eager calls differ: {changed}"
    return record, EagerRun(inputs, outputs, pristine, initial_state, module, changed is not None)


def run_compiled(compiler: Compiler, case: TestCase, file_name: str, eager: EagerRun, backend: str,
                 tolerance: Tolerance) -> dict:
    """Compile a fresh module with ``compiler`` (full graph) and check two calls against eager's.

    Status: pass, mismatch (ran, wrong output), break (graph break), error (any other exception), or
    fallback (the compiler says it ran the calls uncompiled)."""
    module = _fresh_module(case, file_name, eager)
    calls = [lambda compiled: _call(compiled, eager.inputs)] * 2
    record, outputs = trial.attempt(compiler, module, calls, backend, file_name)
    if outputs is None:
        return record
    return trial.verdict(compiler, record, eager.outputs, outputs, eager.dynamic, tolerance)


def _fresh_module(case: TestCase, file_name: str, eager: EagerRun):
    """A module in the state the eager one had before its first call (see the module docstring)."""
    if eager.pristine is not None:
        copied = _deep_copy(eager.pristine)
        if copied is not None:
            return copied
    try:
        module = _build(case, file_name, "error")
    except _Failed:
        return eager.module
    if eager.initial_state is not None:
        try:
            module.load_state_dict(eager.initial_state, strict=False)
        except Exception:
            pass                        # built from the same seed, the state is normally equal anyway
    return module


def _deep_copy(module):
    """A deep copy, or None where copying loses state (``nn.Module.__getstate__`` drops ``__slots__``) or
    behaviour: a TorchScript module copies as a ``RecursiveScriptModule``, without the Python methods of its
    class (a ``ScriptModule`` subclass whose ``forward`` is plain Python has none). Where it is None the
    module is built again from the same seed, as a user wanting a second one would."""
    try:
        copied = copy.deepcopy(module)
    except Exception:
        return None
    if isinstance(module, torch.nn.Module) and (
            type(copied) is not type(module) or
            [type(m) for m in module.modules()] != [type(m) for m in copied.modules()]):
        return None
    slots = {name for cls in type(module).__mro__ for name in cls.__dict__.get("__slots__", ())
             if isinstance(name, str)}
    if any(hasattr(module, name) and not hasattr(copied, name) for name in slots):
        return None
    return copied


def _build(case: TestCase, file_name: str, status: str):
    try:
        reset_random_state()
        args, kwargs = case.init_arguments()
        module = case.module_class(*args, **kwargs)
    except Exception as error:
        raise _Failed({"status": status, **reasons.describe(error, file_name)})
    try:
        module.eval()
    except Exception:
        pass                            # as ParityBench: a module without eval() still runs
    return module


def _call(callable_, inputs: tuple[list, dict]):
    args, kwargs = copy.deepcopy(inputs)
    reset_random_state()
    return callable_(*args, **kwargs)


def _state_copy(module) -> dict | None:
    try:
        return {key: value.detach().clone() if isinstance(value, torch.Tensor) else copy.deepcopy(value)
                for key, value in module.state_dict().items()}
    except Exception:
        return None
