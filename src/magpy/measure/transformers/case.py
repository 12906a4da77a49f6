"""One architecture's case: eager (three calls, kept as the reference), then one compiler, in separate processes.

The eager stage builds the tiny model, picks the first input set that runs (inputs.py), calls the model on
inputs A twice (the two must agree: the model is deterministic) and on inputs B (same shapes, other values)
once, and stores the inputs, the outputs of calls A and B and the weights (with a checksum) in a reference
file. A compiler stage, in a fresh process, builds the same model and loads those weights (the checksum must
then agree), compiles it with ``fullgraph=True``, calls it on A then B (first and second call, both timed)
and compares each result with eager's. Every call runs under ``torch.no_grad()`` from the same random state.
"""
from __future__ import annotations

import os
import time

import torch

from ..harness import reasons, trial
from ..harness.compare import Tolerance, difference, freeze
from ..harness.compilers import Compiler
from .inputs import InputsError, input_sets, make_inputs
from .models import build, parameter_count

SEED = 1337
INPUT_SEEDS = (1, 2)            # inputs A and B


def run_eager(model_type: str, reference_path: str, tolerance: Tolerance, device: str = "cpu") -> dict:
    """The eager record (``status``: ok, build_error, no_inputs, run_error, reference_error); when ok, the
    reference file is written."""
    started = time.perf_counter()
    try:
        model, config = build(model_type, device)
    except Exception as error:
        return _record("build_error", error, model_type, started)
    try:
        sets = input_sets(model, config)
    except InputsError as error:
        return {"status": "no_inputs", "reason": reasons.normalise(str(error)), "detail": str(error),
                "seconds": _since(started)}
    failure = None
    for names in sets:
        inputs = [make_inputs(names, config, seed) for seed in INPUT_SEEDS]
        try:
            outputs = [freeze(_call(model, inputs[0], device)), freeze(_call(model, inputs[0], device)),
                       freeze(_call(model, inputs[1], device))]
        except Exception as error:
            failure = failure or error
            continue
        changed = difference(outputs[0], outputs[1], tolerance)
        record = {"status": "ok", "dynamic": changed is not None, "inputs": names,
                  "parameters": parameter_count(model), "seconds": _since(started)}
        if changed:
            record["detail"] = f"eager calls differ: {changed}"
        try:
            torch.save({"inputs": inputs, "outputs": [outputs[0], outputs[2]], "dynamic": changed is not None,
                        "checksum": checksum(model), "state": model.state_dict()}, reference_path)
        except Exception as error:
            return _record("reference_error", error, model_type, started)
        return record
    return _record("run_error", failure, model_type, started)


def run_compiled(compiler: Compiler, model_type: str, reference_path: str, backend: str,
                 tolerance: Tolerance, device: str = "cpu") -> dict:
    """Compiler ``compiler``'s record: pass, mismatch, break, error or fallback (as ParityBench's), with
    ``first_call_s`` and ``second_call_s``."""
    started = time.perf_counter()
    reference = torch.load(reference_path, weights_only=False)
    model, _ = build(model_type, device)
    model.load_state_dict(reference["state"])  # (a few initialisers draw from more than torch's generator)
    if checksum(model) != reference["checksum"]:
        return {"status": "error", "reason": "the model built again has other weights", "seconds": _since(started)}
    calls = [lambda compiled, inputs=inputs: _call(compiled, inputs, device) for inputs in reference["inputs"]]
    record, outputs = trial.attempt(compiler, model, calls, backend, model_type)
    if outputs is None:
        return record
    return trial.verdict(compiler, record, reference["outputs"], outputs, reference["dynamic"], tolerance)


def checksum(model) -> float:
    """A number that changes when any weight does (the weights are drawn again in each process)."""
    with torch.no_grad():
        return float(sum((torch.nan_to_num(p.double(), nan=0.5, posinf=1.5, neginf=-1.5) * (1 + i % 7)).sum()
                         for i, p in enumerate(model.state_dict().values()) if p.is_floating_point()))


def _call(model, inputs: dict, device: str):
    """The model on fresh copies of ``inputs`` (kept on the CPU in the reference) on ``device``."""
    torch.manual_seed(SEED)
    with torch.no_grad():
        return model(**{name: value.to(device, copy=True) for name, value in inputs.items()})


def _record(status: str, error: BaseException, model_type: str, started: float) -> dict:
    return {"status": status, **reasons.describe(error, model_type), "seconds": _since(started)}


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 3)


def remove_reference(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
