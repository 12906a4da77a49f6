"""The child process that runs one generated file's test cases and reports each step to the scheduler.

The scheduler forks a worker per file (and again after a timeout or crash, starting where the last one
stopped), so the worker inherits the prepared environment: torch, the stand-ins, the helpers, the compilers.
It talks through a one-way pipe, one message per step; messages are plain tuples of JSON-ready values:

    ("stage", index, stage)          about to run ``stage`` ("import", "eager" or a compiler) of case ``index``
    ("imported", names)              the file imported; the class names of its TESTCASES
    ("import_error", record)         the file did not import; nothing follows
    ("eager", index, record)         the eager record of case ``index``
    ("compiled", index, name, record) compiler ``name``'s record of case ``index``
    ("case_done", index)
    ("file_done",)

A stage that never reports back (a hang, a crash, memory exhausted) is charged to the stage last announced.
"""
from __future__ import annotations

import os
import sys
import time
import types
from dataclasses import dataclass, field

from ..harness import reasons
from ..harness.compare import Tolerance
from ..harness.compilers import COMPILERS
from ..harness.scheduler import worker_entry
from .case import run_compiled, run_eager, test_cases


@dataclass(frozen=True)
class Task:
    file_name: str
    path: str
    compilers: tuple[str, ...]
    unavailable: dict = field(default_factory=dict)     # compiler name → why it cannot run here
    start: int = 0                                      # first case to run
    skip: frozenset = frozenset()                       # compilers already charged on the start case
    backend: str = "eager"
    tolerance: Tolerance = Tolerance()
    threads: int = 1
    memory_gb: float = 0.0                              # address-space limit; 0: none
    quiet: bool = True                                  # send the file's own output to /dev/null
    merge: bool = False                                 # only some compilers: keep the others' earlier records


def _run(send, task: Task) -> None:
    send(("stage", -1, "import"))
    started = time.perf_counter()
    try:
        module = import_file(task.path)
    except BaseException as error:      # SystemExit and friends from module level count as import errors
        if isinstance(error, KeyboardInterrupt):
            raise
        send(("import_error", {**reasons.describe(error, task.file_name), "listed": listed_cases(task.path),
                               "seconds": round(time.perf_counter() - started, 3)}))
        return
    cases = test_cases(module)
    send(("imported", [case.name for case in cases]))
    for case in cases[task.start:]:
        send(("stage", case.index, "eager"))
        record, eager = run_eager(case, task.file_name, task.tolerance)
        send(("eager", case.index, record))
        if eager is not None:
            for name in task.compilers:
                if case.index == task.start and name in task.skip:
                    continue
                if name in task.unavailable:
                    send(("compiled", case.index, name,
                          {"status": "unavailable", "reason": task.unavailable[name]}))
                    continue
                send(("stage", case.index, name))
                result = run_compiled(COMPILERS[name], case, task.file_name, eager, task.backend, task.tolerance)
                send(("compiled", case.index, name, result))
        send(("case_done", case.index))
    send(("file_done",))


def import_file(path: str) -> types.ModuleType:
    """Execute a generated file as the module ``test_…`` (its first line looks itself up in sys.modules)."""
    name = os.path.basename(path)[:-3]
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    with open(path, encoding="utf-8") as source:
        code = compile(source.read(), path, "exec")
    exec(code, module.__dict__)
    return module


def listed_cases(path: str) -> int:
    """How many entries the file's ``TESTCASES = [...]`` lists, read from its syntax tree (for a file that does
    not import, so that case rates can count the cases it would have had); 0 if there is no such list."""
    import ast
    try:
        with open(path, encoding="utf-8") as source:
            tree = ast.parse(source.read())
    except (OSError, SyntaxError, ValueError):
        return 0
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "TESTCASES" for t in node.targets):
            return len(node.value.elts) if isinstance(node.value, (ast.List, ast.Tuple)) else 0
    return 0


#: the entry point of the forked worker: run one stage of a task and report; never returns
main = worker_entry(_run)
