"""Running the ParityBench runner from tests: each run in a forked child, with two fake compilers registered.

The runner imports packages or stand-ins and forks its own workers; doing that in a child keeps the test process
clean. torch, Dynamo and the installed optional packages are imported here once, so each child starts warm.
"""
from __future__ import annotations

import importlib
import json
import multiprocessing
import os
import time

import pytest
import torch
import torch._dynamo  # noqa: F401

from magpy.measure.paritybench import Options, run
from magpy.measure.harness.compilers import COMPILERS, Compiler
from magpy.measure.paritybench.standins import PACKAGES

for _package in PACKAGES:
    if _package not in ("torchvision", "torchaudio", "torchtext", "tensorflow"):
        try:
            importlib.import_module(_package)
        except Exception:
            pass


class Chaos(Compiler):
    """A compiler that crashes on modules named CrashWhenCompiled and hangs on HangWhenCompiled."""

    name, label = "chaos", "Chaos"

    def availability(self):
        return None

    def compile(self, module, backend):
        kind = type(module).__name__
        if kind == "CrashWhenCompiled":
            return lambda *args: os._exit(11)
        if kind == "HangWhenCompiled":
            return lambda *args: time.sleep(60)
        return module


class Absent(Compiler):
    name, label = "absent", "Absent"

    def availability(self):
        return "ImportError: not installed here"


def _child(options: Options, out_path: str) -> None:
    COMPILERS.setdefault("chaos", Chaos())
    COMPILERS.setdefault("absent", Absent())
    try:
        with open(out_path, "w") as out, open(os.devnull, "w") as err:
            run(options, out=out, err=err)
    except BaseException as error:
        with open(out_path, "a") as out:
            out.write(f"\nRUN FAILED: {error!r}\n")
        os._exit(1)
    os._exit(0)


def _run(tmp_path, **overrides) -> tuple[dict, str]:
    settings = dict(path=str(tmp_path / "pb"), compilers=["dynamo"], jobs=2, timeout=5.0, memory_gb=0,
                    state=str(tmp_path / "state.jsonl"), json_path=str(tmp_path / "report.json"), progress=False)
    settings.update(overrides)
    out_path = str(tmp_path / "report.txt")
    child = multiprocessing.get_context("fork").Process(target=_child, args=(Options(**settings), out_path))
    child.start()
    child.join(120)
    text = open(out_path).read() if os.path.exists(out_path) else ""
    assert child.exitcode == 0, text
    with open(settings["json_path"]) as report:
        return json.load(report), text


@pytest.fixture
def run_paritybench(tmp_path):
    """``run_paritybench(**options) -> (json document, text report)``; defaults: the fake tree at tmp_path/pb,
    Dynamo only, 2 jobs, 5 s per stage, state and report in tmp_path."""
    def run_it(**overrides):
        return _run(tmp_path, **overrides)
    return run_it
