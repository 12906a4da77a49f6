"""One transformers run, start to finish: select architectures, prepare, schedule, score, report."""
from __future__ import annotations

import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, field

from ..harness import scoring
from ..harness.compare import Tolerance
from ..harness.compilers import COMPILERS, resolve
from ..harness.report import plain, write_json
from ..harness.scheduler import Scheduler, option_problem
from ..harness.state import State, default_path
from . import report
from .architectures import SelectionError, select
from .worker import Task, main as worker_main


class RunError(Exception):
    """A run cannot start: transformers missing, bad option."""


@dataclass
class Options:
    split: str = "public"                       # public | heldout
    limit: int | None = None
    offset: int = 0
    only: list[str] = field(default_factory=list)   # model types (or globs)
    compilers: list[str] = field(default_factory=lambda: list(COMPILERS))
    backend: str = "eager"
    jobs: int = 2
    timeout: float = 60.0                       # seconds per stage (eager; each compiler + 2× eager's)
    threads: int = 1
    memory_gb: float = 8.0
    device: str = "cpu"                         # cpu | cuda: where models and inputs live
    rtol: float = 1e-4
    atol: float = 1e-4
    state: str | None = None
    fresh: bool = False
    redo: list[str] = field(default_factory=list)
    json_path: str | None = None
    top: int = 12
    progress: bool = True
    verbose: bool = False


def run(options: Options, out=sys.stdout, err=sys.stderr) -> scoring.Score:
    """Run the selected architectures (skipping those the state file has), print the report, write the JSON.

    Raises RunError for a missing transformers or bad options. Must run in a process of its own (it forks
    workers from itself)."""
    try:
        names = select(options.split, options.limit, options.only, options.offset)
        compilers = resolve(options.compilers)
    except (SelectionError, KeyError) as error:
        raise RunError(str(error).strip("'\"")) from None
    problem = option_problem(options)
    if problem:
        raise RunError(problem)
    environment = prepare()
    unavailable = {c.name: reason for c in compilers if (reason := c.availability())}
    for compiler in compilers:
        if compiler.name not in unavailable:
            compiler.warm_up(options.backend)
    tolerance = Tolerance(options.rtol, options.atol)
    key = {"backend": options.backend, "tolerance": asdict(tolerance), **environment}
    if options.device != "cpu":     # (the CPU's key as it always was: earlier state files stay valid)
        key["device"] = options.device
    state_path = options.state or default_path(key, "transformers")
    state = State(state_path, fresh=options.fresh)
    references = state_path + ".references"
    os.makedirs(references, exist_ok=True)
    compiler_names = [c.name for c in compilers]
    settings = {"split": options.split, "limit": options.limit, "offset": options.offset, "only": options.only,
                "compilers": compiler_names, "backend": options.backend, "jobs": options.jobs,
                "timeout": options.timeout, "threads": options.threads, "memory_gb": options.memory_gb,
                "device": options.device, "tolerance": asdict(tolerance), "state": state_path}
    # (an address-space limit leaves CUDA no room to map the device's memory: on a GPU none is set)
    memory_gb = options.memory_gb if options.device == "cpu" else 0.0
    tasks = []
    for name in names:
        todo = state.todo(name, [n for n in compiler_names if n not in unavailable], tuple(options.redo))
        if not todo and name in state.files:
            continue
        run_now = tuple(n for n in compiler_names if n in todo or n in unavailable)
        tasks.append(Task(name, os.path.join(references, f"{name}.pt"), run_now, unavailable,
                          backend=options.backend, tolerance=tolerance, threads=options.threads,
                          memory_gb=memory_gb, device=options.device, quiet=not options.verbose,
                          merge=name in state.files and state.files[name].record["status"] == "done"))
    state.append({"kind": "run", "time": time.strftime("%Y-%m-%d %H:%M:%S"), "settings": settings,
                  "environment": environment, "unavailable": unavailable, "to_run": len(tasks)})
    header = report.header(options, names, len(tasks), environment, compilers, unavailable, state_path)
    if options.progress:
        print("\n".join(header), file=err, flush=True)
    progress = report.Progress(len(tasks), compiler_names, err) if options.progress else None
    scheduler = Scheduler(state, options.jobs, options.timeout, worker_main, on_file=progress,
                          label="transformers")
    try:
        scheduler.run(tasks)
    finally:
        state.close()
    results = [state.files[name] for name in names if name in state.files]
    score = scoring.score(results, compiler_names, len(names), top=options.top)
    print(report.text(score, results, header, top=options.top), file=out, flush=True)
    if options.json_path:
        write_json(options.json_path, {"settings": settings, "environment": environment, "score": plain(score),
                                       "times": report.first_call_times(results, compiler_names),
                                       "cases": [case for result in results for case in result.cases]})
    return score


def prepare() -> dict:
    """Load torch and transformers once, quietly, before any worker is forked; what was loaded, for the
    report and the state file's key."""
    import warnings

    import torch
    import transformers
    from transformers.utils import logging

    torch.set_num_threads(1)        # the workers set their own
    logging.set_verbosity_error()
    warnings.filterwarnings("ignore")
    return {"python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__}
