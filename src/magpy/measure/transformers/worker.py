"""The child process that runs one stage of one architecture and reports it to the scheduler.

Each architecture is a "file" of one case. Its eager stage and each compiler's stage run in fresh processes
(forked from the runner, which has torch, transformers and the compilers loaded): a worker runs the eager
stage when the case has no reference yet, otherwise the first compiler still to run, then hands the case off
(``("handoff", 0)``) to a fresh worker for the next compiler. Messages as in ``magpy.measure.harness.scheduler``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..harness.compare import Tolerance
from ..harness.compilers import COMPILERS
from ..harness.scheduler import worker_entry
from .case import remove_reference, run_compiled, run_eager

INDEX = 0               # the one case of an architecture


@dataclass(frozen=True)
class Task:
    file_name: str                                      # the model type
    reference: str                                      # where the eager stage keeps what compilers check
    compilers: tuple[str, ...]
    unavailable: dict = field(default_factory=dict)
    start: int = 0
    skip: frozenset = frozenset()                       # compilers already recorded
    backend: str = "eager"
    tolerance: Tolerance = Tolerance()
    threads: int = 1
    memory_gb: float = 0.0
    device: str = "cpu"
    quiet: bool = True
    merge: bool = False


def _run(send, task: Task) -> None:
    send(("imported", [task.file_name]))
    if task.start > INDEX:
        send(("file_done",))
        return
    todo = [name for name in task.compilers if name not in task.skip]
    if not os.path.exists(task.reference):
        send(("stage", INDEX, "eager"))
        record = run_eager(task.file_name, task.reference, task.tolerance, task.device)
        send(("eager", INDEX, record))
        if record["status"] != "ok" or not todo:
            _done(send, task)
            return
        send(("handoff", INDEX))
        return
    while todo and todo[0] in task.unavailable:
        name = todo.pop(0)
        send(("compiled", INDEX, name, {"status": "unavailable", "reason": task.unavailable[name]}))
    if todo:
        name = todo.pop(0)
        send(("stage", INDEX, name))
        send(("compiled", INDEX, name, run_compiled(COMPILERS[name], task.file_name, task.reference,
                                                    task.backend, task.tolerance, task.device)))
    if todo:
        send(("handoff", INDEX))
        return
    _done(send, task)


def _done(send, task: Task) -> None:
    remove_reference(task.reference)
    send(("case_done", INDEX))
    send(("file_done",))


#: the entry point of the forked worker: run one stage of a task and report; never returns
main = worker_entry(_run)
