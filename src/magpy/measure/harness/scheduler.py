"""Running many files at once, each in its own forked worker, with a time limit on every stage.

A *file* is a unit of a corpus (a ParityBench test file, a transformers architecture) holding numbered cases;
each case runs in stages: eager, then each compiler. The worker that runs a file is a function given to the
scheduler (``worker(connection, task)``); it reports through a pipe with the messages listed below. A task is
any frozen dataclass with the fields ``file_name``, ``compilers``, ``unavailable``, ``start`` (first case to
run), ``skip`` (compilers already recorded on the start case) and ``merge``.

    ("stage", index, stage)           about to run ``stage`` ("import", "eager" or a compiler) of case ``index``
    ("imported", names)               the file is loaded; the names of its cases
    ("import_error", record)          the file did not load; nothing follows
    ("eager", index, record)          the eager record of case ``index``
    ("compiled", index, name, record) compiler ``name``'s record of case ``index``
    ("handoff", index)                this process is done: go on with case ``index`` in a fresh worker
    ("case_done", index)
    ("file_done",)

The scheduler keeps up to ``jobs`` workers busy. It follows each through its messages and
writes each finished case and file to the State as soon as it is known. A worker that exceeds the time limit
of its current stage is killed (the limit is the timeout, plus twice the case's eager time for a compiler
stage, which rebuilds and reruns the module); one that dies (a segfault, memory exhausted) is noticed when
its pipe closes. Either way the stage it was in is charged with "timeout" or "crash", and a new worker takes the file up right
after it: the next case when eager was the culprit, otherwise the same case without the compilers already
charged. One bad case costs only itself; a bad file costs only itself.
"""
from __future__ import annotations

import multiprocessing
import os
import multiprocessing.connection
import time
from collections import deque
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from .state import State

_FORK = multiprocessing.get_context("fork")


@dataclass
class FileJob:
    """A file in progress: which worker runs it, where it stands, what has been learnt so far."""

    task: Any
    started: float = field(default_factory=time.monotonic)
    names: list[str] | None = None                    # names of its cases, once loaded
    cases: dict[int, dict] = field(default_factory=dict)   # case index → record being filled in
    stage: tuple[int, str] = (-1, "start")
    deadline: float = 0.0
    restarts: int = 0
    process: multiprocessing.Process | None = None
    connection: multiprocessing.connection.Connection | None = None

    @property
    def file_name(self) -> str:
        return self.task.file_name


class Scheduler:
    def __init__(self, state: State, jobs: int, timeout: float, worker: Callable[[Any, Any], None],
                 on_file: Callable[[dict, list[dict]], None] | None = None, label: str = "worker"):
        self.state = state
        self.worker = worker
        self.label = label
        self.jobs = max(1, jobs)
        self.timeout = timeout
        self.on_file = on_file or (lambda record, cases: None)
        self.running: dict[multiprocessing.connection.Connection, FileJob] = {}

    def run(self, tasks: list) -> None:
        """Run every task to its file line in the state; returns when all are done."""
        waiting = deque(tasks)
        try:
            while waiting or self.running:
                while waiting and len(self.running) < self.jobs:
                    self._start(FileJob(waiting.popleft()))
                self._step()
        finally:
            for job in list(self.running.values()):
                self._stop(job)

    def _start(self, job: FileJob) -> None:
        reader, writer = _FORK.Pipe(duplex=False)
        job.process = _FORK.Process(target=self.worker, args=(writer, job.task), daemon=True,
                                    name=f"{self.label} {job.file_name}")
        job.process.start()
        writer.close()                  # the worker holds the only writer: its death reads as end of file
        job.connection = reader
        job.stage = (job.task.start, "start")
        job.deadline = time.monotonic() + self.timeout
        self.running[reader] = job

    def _step(self) -> None:
        now = time.monotonic()
        next_deadline = min(job.deadline for job in self.running.values())
        ready = multiprocessing.connection.wait(list(self.running), timeout=max(0.0, next_deadline - now) + 0.05)
        for connection in ready:
            job = self.running.get(connection)
            if job is None:
                continue
            try:
                message = connection.recv()
            except (EOFError, OSError):
                self._lost(job, "crash")
                continue
            self._handle(job, message)
        now = time.monotonic()
        for job in list(self.running.values()):
            if now > job.deadline:
                self._lost(job, "timeout")

    def _handle(self, job: FileJob, message: tuple) -> None:
        kind = message[0]
        if kind == "stage":
            job.stage = (message[1], message[2])
            job.deadline = time.monotonic() + self._limit(job, message[1], message[2])
        elif kind == "imported":
            job.names = message[1]
        elif kind == "import_error":
            self._finish(job, {"status": "import_error", **message[1]})
        elif kind == "eager":
            case = job.cases.setdefault(message[1], self._new_case(job, message[1]))
            case["eager"] = message[2]
        elif kind == "compiled":
            job.cases.setdefault(message[1], self._new_case(job, message[1]))["compiled"][message[2]] = message[3]
        elif kind == "handoff":
            self._handoff(job, message[1])
        elif kind == "case_done":
            self.state.add_case(job.cases.pop(message[1]))
        elif kind == "file_done":
            self._finish(job, {"status": "done" if job.names else "empty"})

    def _limit(self, job: FileJob, index: int, stage: str) -> float:
        """Seconds allowed for ``stage``: the timeout, plus for a compiler twice what eager took on the case,
        since it builds and runs the same module again (a slow model is not a slow compiler)."""
        if stage in ("import", "eager", "start"):
            return self.timeout
        eager = (job.cases.get(index) or {}).get("eager") or {}
        return self.timeout + 2.0 * float(eager.get("seconds") or 0.0)

    def _new_case(self, job: FileJob, index: int) -> dict:
        name = job.names[index] if job.names and index < len(job.names) else f"case {index}"
        return {"file": job.file_name, "index": index, "name": name, "eager": None, "compiled": {}}

    def _lost(self, job: FileJob, how: str) -> None:
        """The worker hung past its deadline or died: charge its stage, then resume the file after it."""
        exit_code = self._stop(job)
        index, stage = job.stage
        limit = self._limit(job, index, stage)
        detail = f"worker {'killed after ' + format(limit, '.0f') + ' s' if how == 'timeout' else 'died'}" \
                 f" in {stage}" + (f" (exit code {exit_code})" if how == "crash" and exit_code is not None else "")
        lost = {"status": how, "reason": f"{how} in {stage}", "detail": detail}
        if stage in ("import", "start") and job.names is None:
            self._finish(job, {**lost, "status": "import_error"}, stopped=True)
            return
        if stage in ("import", "start"):
            resume = replace(job.task, start=job.stage[0] if job.stage[0] >= 0 else job.task.start)
            if job.restarts > 3:        # the worker dies between cases: give up on the rest of the file
                self._finish(job, {"status": "done", "note": detail}, stopped=True)
                return
        elif stage == "eager":
            case = job.cases.setdefault(index, self._new_case(job, index))
            case["eager"] = {**lost, "seconds": limit if how == "timeout" else None}
            self.state.add_case(job.cases.pop(index))
            resume = replace(job.task, start=index + 1, skip=frozenset())
        else:
            case = job.cases.setdefault(index, self._new_case(job, index))
            case["compiled"][stage] = {**lost, "seconds": limit if how == "timeout" else None}
            resume = replace(job.task, start=index, skip=frozenset(case["compiled"]))
        if job.names is not None and resume.start >= len(job.names):
            self._finish(job, {"status": "done"}, stopped=True)
            return
        job.task, job.restarts = resume, job.restarts + 1
        job.stage = (resume.start, "start")
        self._start(job)

    def _handoff(self, job: FileJob, index: int) -> None:
        """The worker asked to end here: a fresh one goes on with case ``index`` after the stages recorded."""
        self._stop(job, grace=5.0)
        case = job.cases.get(index) or {}
        job.task = replace(job.task, start=index, skip=frozenset(case.get("compiled") or ()))
        job.stage = (index, "start")
        self._start(job)

    def _stop(self, job: FileJob, grace: float = 0.0) -> int | None:
        self.running.pop(job.connection, None)
        if job.connection is not None:
            job.connection.close()
        process = job.process
        if process is None:
            return None
        if grace:
            process.join(grace)
        if process.is_alive():
            process.kill()
        process.join(10)
        return process.exitcode

    def _finish(self, job: FileJob, record: dict, stopped: bool = False) -> None:
        if not stopped:
            self._stop(job, grace=5.0)
        for index in sorted(job.cases):          # cases cut short by a lost worker keep what they had
            self.state.add_case(job.cases.pop(index))
        record = {"file": job.file_name, "cases": len(job.names or ()), **record,
                  "compilers": list(job.task.compilers),
                  "unavailable": sorted(set(job.task.unavailable) & set(job.task.compilers)),
                  "seconds": round(time.monotonic() - job.started, 2), "restarts": job.restarts}
        if job.task.merge:
            record["merge"] = True
        self.state.add_file(record)
        self.on_file(record, self.state.files[job.file_name].cases)


def limit_process(quiet: bool, memory_gb: float, threads: int) -> None:
    """What a worker does first: its output to /dev/null when ``quiet``, an address-space limit (0: none), torch's
    thread count."""
    if quiet:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)
    if memory_gb > 0:
        import resource
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = int(memory_gb * 1024 ** 3)
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    import torch
    torch.set_num_threads(max(1, threads))


def worker_entry(run):
    """The entry point of a forked worker that runs ``run(send, task)`` under the task's limits and reports
    through the connection; the entry never returns (an error of the runner itself exits 3: a crash)."""
    def main(connection, task) -> None:
        try:
            limit_process(task.quiet, task.memory_gb, task.threads)
            run(connection.send, task)
        except BaseException:
            os._exit(3)
        connection.close()
        os._exit(0)
    return main


def option_problem(options) -> str | None:
    """What is wrong with a corpus run's shared options (None: nothing)."""
    if options.jobs < 1 or options.timeout <= 0:
        return "--jobs must be at least 1 and --timeout positive"
    stray = sorted(set(options.redo) - set(options.compilers))
    if stray:
        return f"--redo names compilers this run does not include: {', '.join(stray)}"
    return None
