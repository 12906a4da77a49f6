"""One ParityBench run, start to finish: select files, prepare, schedule, score, report."""
from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass, field

from ..harness import scoring
from ..harness.compare import Tolerance
from ..harness.compilers import COMPILERS, resolve
from ..harness.report import write_json
from ..harness.scheduler import Scheduler, option_problem
from ..harness.state import State, default_path
from . import report
from .corpus import Corpus, CorpusError
from .environment import prepare
from .worker import Task, main as worker_main


class RunError(Exception):
    """A run cannot start: bad checkout, bad option."""


@dataclass
class Options:
    path: str                                   # the ParityBench checkout (or its generated/ folder)
    split: str = "public"                       # public | heldout | all
    limit: int | None = None                    # at most this many files (after sorting by name)
    offset: int = 0
    only: list[str] = field(default_factory=list)   # glob patterns (or substrings) of file names
    compilers: list[str] = field(default_factory=lambda: list(COMPILERS))
    backend: str = "eager"
    jobs: int = 2
    timeout: float = 120.0                      # seconds per stage (import, eager, each compiler + 2× eager's)
    threads: int = 1                            # torch threads per worker
    memory_gb: float = 6.0                      # address-space limit per worker (0: none)
    rtol: float = 1e-4
    atol: float = 1e-4
    compat: bool = False
    sites: list[str] = field(default_factory=list)  # extra import folders (e.g. a torchvision without C++ ops)
    state: str | None = None                    # JSONL state file (default: per checkout and settings, in cache)
    fresh: bool = False                         # forget earlier results in the state file
    redo: list[str] = field(default_factory=list)   # compilers to run again on files already done
    retry_imports: bool = False                 # run files that failed to import again
    json_path: str | None = None
    top: int = 12
    progress: bool = True
    verbose: bool = False                       # let the files' own output through


def run(options: Options, out=sys.stdout, err=sys.stderr) -> scoring.Score:
    """Run the selected files (skipping those the state file already has), print the report, write the JSON.

    Raises RunError for a bad checkout or options. Must run in a process of its own (it imports the corpus's
    packages or stand-ins, and forks workers from itself)."""
    try:
        corpus = Corpus.locate(options.path)
        files = corpus.select(options.split, options.limit, options.only, options.offset)
        compilers = resolve(options.compilers)
    except (CorpusError, KeyError) as error:
        raise RunError(str(error).strip("'\"")) from None
    problem = option_problem(options)
    if problem:
        raise RunError(problem)
    environment = prepare(corpus, options.compat, options.sites)
    unavailable = {c.name: reason for c in compilers if (reason := c.availability())}
    for compiler in compilers:
        if compiler.name not in unavailable:
            compiler.warm_up(options.backend)
    tolerance = Tolerance(options.rtol, options.atol)
    key = {"root": os.path.realpath(corpus.root), "compat": options.compat, "backend": options.backend,
           "tolerance": asdict(tolerance), "torch": environment["torch"], "python": environment["python"],
           "sites": [os.path.realpath(s) for s in options.sites]}
    state_path = options.state or default_path(key)
    state = State(state_path, fresh=options.fresh)
    names = [c.name for c in compilers]
    settings = {"path": corpus.root, "split": options.split, "limit": options.limit, "offset": options.offset,
                "only": options.only, "compilers": names, "backend": options.backend, "jobs": options.jobs,
                "timeout": options.timeout, "threads": options.threads, "memory_gb": options.memory_gb,
                "tolerance": asdict(tolerance), "compat": options.compat, "state": state_path}
    tasks = _tasks(corpus, options, files, state, names, unavailable, tolerance)
    todo = [task.file_name for task in tasks]
    state.append({"kind": "run", "time": time.strftime("%Y-%m-%d %H:%M:%S"), "settings": settings,
                  "environment": environment, "unavailable": unavailable, "to_run": len(todo)})
    header = _header(corpus, options, files, todo, environment, unavailable, state_path)
    if options.progress:
        print("\n".join(header), file=err, flush=True)
    progress = _Progress(len(todo), names, err) if options.progress else None
    scheduler = Scheduler(state, options.jobs, options.timeout, worker_main, on_file=progress, label="paritybench")
    try:
        scheduler.run(tasks)
    finally:
        state.close()
    results = [state.files[name] for name in files if name in state.files]
    score = scoring.score(results, names, len(files), top=options.top)
    print(report.text(score, header, top=options.top), file=out, flush=True)
    if options.json_path:
        write_json(options.json_path, report.to_json(score, settings, environment, results))
    return score


def _tasks(corpus: Corpus, options: Options, files: list[str], state: State, names: list[str],
           unavailable: dict, tolerance: Tolerance) -> list[Task]:
    """A Task for each file the state file does not have yet, and for each file some compiler (newly available,
    or in ``--redo``) still has to run on; the latter run only those compilers and merge with what is there."""
    available = [name for name in names if name not in unavailable]
    tasks = []
    for file_name in files:
        todo = state.todo(file_name, available, tuple(options.redo), options.retry_imports)
        if not todo and file_name in state.files:
            continue
        run_now = tuple(name for name in names if name in todo or name in unavailable)
        tasks.append(Task(file_name, corpus.path(file_name), run_now, unavailable, backend=options.backend,
                          tolerance=tolerance, threads=options.threads, memory_gb=options.memory_gb,
                          quiet=not options.verbose,
                          merge=file_name in state.files and state.files[file_name].record["status"] == "done"))
    return tasks


def _header(corpus: Corpus, options: Options, files: list[str], todo: list[str], environment: dict,
            unavailable: dict, state_path: str) -> list[str]:
    packages = ", ".join(f"{name} {what}" for name, what in {**environment["packages"],
                                                              **environment["extras"]}.items())
    compat = environment["compat"]
    lines = [
        f"ParityBench {corpus.root}: split {options.split}, {len(files)} files"
        + (f" (limit {options.limit})" if options.limit else "")
        + f"; {len(files) - len(todo)} already in the state file, {len(todo)} to run",
        f"compilers: " + ", ".join(f"{c.label} {'unavailable (' + unavailable[c.name] + ')' if c.name in unavailable else 'fullgraph=True, backend=' + repr(options.backend)}"
                                   for c in resolve(options.compilers)),
        f"python {environment['python']}, torch {environment['torch']}; packages: {packages}",
        f"helpers: {environment['helpers']}; --compat: "
        + (compat if compat == "off" else f"on (restored: {', '.join(compat) or 'nothing was missing'})"),
        f"state: {state_path}",
    ]
    return lines


class _Progress:
    """One stderr line per finished file."""

    def __init__(self, total: int, compilers: list[str], err):
        self.total, self.count, self.compilers, self.err = total, 0, compilers, err

    def __call__(self, record: dict, cases: list[dict]) -> None:
        self.count += 1
        good = [c for c in cases if (c.get("eager") or {}).get("status") == "ok"]
        if record.get("status") == "import_error":
            summary = f"import error: {record.get('reason', '')}"[:90]
        else:
            parts = [f"{len(cases)} cases, {len(good)} eager"]
            for name in self.compilers:
                statuses = [(c.get("compiled", {}).get(name) or {}).get("status") for c in good]
                if statuses and all(s == "unavailable" for s in statuses):
                    parts.append(f"{name} -")
                elif good:
                    parts.append(f"{name} {statuses.count('pass')}/{len(good)}")
            summary = ", ".join(parts)
        print(f"[{self.count}/{self.total}] {record['file']}: {summary} ({record.get('seconds', 0):.1f} s)",
              file=self.err, flush=True)
