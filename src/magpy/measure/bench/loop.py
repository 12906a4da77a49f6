"""The benchmark loop: every model through every backend, checked against eager, timed together, reported."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import traceback
import warnings
from typing import Callable, Iterator, TextIO

import torch

from ... import zoo
from .log import DetailLog
from .options import BenchError, BenchOptions
from .plot import plot_speedups
from .progress import Progress
from .reasons import full_story, short_reason
from .report import ModelRow, Report, render_legend, render_notes, render_table, render_wrong
from . import training
from .runners import (NOT_AVAILABLE, RUNNERS, SKIPPED, WRONG, BackendResult, NotApplicable, Workload,
                      detached_copy, tf32_disabled, tf32_enabled)
from .timing import Budget, Repeats, StepTimeout, deadline, interleaved_samples, synchronizer

MIN_STEP_S = 2.0        # a compiler step is skipped when less than this is left of the budget
MIN_TIMING_S = 5.0      # timing gets at least this long, budget or not: the eager baseline is always wanted
NOT_IN_QUICK = "not run in --quick"


def describe_run(options: BenchOptions, device: torch.device) -> dict:
    return {
        "size": options.size,
        "device": str(device),
        "quick": options.quick,
        "train": options.train,
        "amp": options.amp,
        "compile_opt": options.compile_opt,
        "mode": options.mode,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "repeats": dataclasses.asdict(options.repeats),
    }


def skip_reason(options: BenchOptions, backend: str, model: str, budget: Budget) -> str | None:
    if backend == "inductor" and options.inductor_models is not None and model not in options.inductor_models:
        return NOT_IN_QUICK
    remaining = budget.remaining()
    if backend != "eager" and remaining is not None and remaining < MIN_STEP_S:
        return "time budget"
    return None


def reference_workload(name: str, options: BenchOptions, device: torch.device) -> Workload:
    """The model's eager outputs, which every backend must reproduce."""
    spec = zoo.get(name)
    model, inputs = spec.make(options.size, device)
    reference = detached_copy(model(*inputs))
    workload = Workload(spec, options.size, device, reference, options.repeats, synchronizer(device),
                        mode=options.mode)
    if tf32_enabled(device):
        with tf32_disabled():
            model, inputs = workload.fresh()
            workload.exact = detached_copy(model(*inputs))
    return workload


@dataclasses.dataclass(frozen=True)
class Mode:
    """What a run measures of each model: how its reference is made, the backends' preparers, whether
    autograd records, and what is measured once the warm calls are timed."""

    reference: Callable[[str, BenchOptions, torch.device], object]
    runners: dict
    grad: bool
    after_timing: Callable[[dict, dict, object], None] | None = None


INFERENCE = Mode(reference_workload, RUNNERS, grad=False)
TRAINING = Mode(training.reference_workload, training.RUNNERS, grad=True,
                after_timing=training.measure_peak_memory)


@dataclasses.dataclass
class Session:
    """What every step of one run reports to: its options, clock, progress bar, report, log and stderr."""

    mode: Mode
    options: BenchOptions
    device: torch.device
    budget: Budget
    progress: Progress
    report: Report
    log: DetailLog
    err: TextIO


def fail(result: BackendResult, error: BaseException, model: str, session: Session) -> None:
    """Mark ``result`` not available: a one-line reason for the table, the whole story for the log."""
    result.status = NOT_AVAILABLE
    result.reason = short_reason(error)
    result.detail = f"{type(error).__name__}: {error}".strip()
    session.log.entry(model, result.backend, "failed", full_story(error))
    if session.options.verbose:
        traceback.print_exception(error, file=session.err)


def prepare_backend(backend: str, workload: Workload | None,
                    session: Session) -> tuple[BackendResult, Callable[[], object] | None]:
    """Compile and check one backend; its result, and the warm call to time when all went well."""
    options, budget, log = session.options, session.budget, session.log
    result = BackendResult(backend)
    if workload is None:
        result.status, result.reason = NOT_AVAILABLE, "model failed"
        return result, None
    reason = skip_reason(options, backend, workload.spec.name, budget)
    if reason is not None:
        result.status, result.reason = SKIPPED, reason
        return result, None
    # The eager baseline is cheap and always wanted: only the per-step timeout bounds it, not the budget.
    limit = options.step_timeout_s if backend == "eager" else budget.step_limit(options.step_timeout_s)
    try:
        with deadline(limit):
            call = session.mode.runners[backend](result, workload)
    except Exception as error:     # one model/backend failing must never end the run
        fail(result, error, workload.spec.name, session)
        return result, None
    if result.status == WRONG:
        log.entry(workload.spec.name, backend, f"WRONG OUTPUT ({result.reason})", result.detail)
    if result.warnings:
        log.entry(workload.spec.name, backend, "warnings while compiling", "\n".join(result.warnings))
    return result, call


def warm_repeats(options: BenchOptions, workload: Workload) -> Repeats:
    """The repeats to time with: on a GPU, warm until magpy has chosen among compiled, captured and replayed
    (its first calls take them by turns, see ``magpy.backends.choose``), so no timed call is one of those."""
    if workload.device.type != "cuda":
        return options.repeats
    from ...backends.choose import SAMPLES

    settled = -(-(3 * SAMPLES + 1) // options.repeats.calls)     # rounds, each calling a backend `calls` times
    return dataclasses.replace(options.repeats, warmup=max(options.repeats.warmup, settled))


def time_backends(results: dict[str, BackendResult], calls: dict[str, Callable[[], object]],
                  workload: Workload, session: Session) -> None:
    """Fill in every round's time and the median (and best) of every prepared backend, timing them in
    interleaved rounds."""
    options = session.options
    limit = session.budget.step_limit(options.step_timeout_s)
    soft_limit = None if limit is None else max(limit, MIN_TIMING_S)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with deadline(options.step_timeout_s):
                samples, failures = interleaved_samples(calls, workload.sync, warm_repeats(options, workload),
                                                        soft_limit)
        except StepTimeout as error:
            samples, failures = {}, {name: error for name in calls}
    # Warnings of warm calls (a late recompile, a fallback) would tear the progress bar: note them instead.
    known = {message for result in results.values() for message in result.warnings}
    for message in dict.fromkeys(str(w.message).splitlines()[0] for w in caught):
        if message not in known:
            session.report.notes.append(f"while timing {workload.spec.name}: {message}")
    for name, times in samples.items():
        results[name].times_ms = [1e3 * t for t in times]
        results[name].ms = 1e3 * statistics.median(times)
        results[name].best_ms = 1e3 * min(times)
        results[name].samples = len(times)
    session.log.rounds(workload.spec.name, samples)
    for name, error in failures.items():
        fail(results[name], error, workload.spec.name, session)


def measure_model(name: str, session: Session) -> ModelRow:
    progress = session.progress
    progress.status(f"{name}: build")
    row = ModelRow(name, session.options.size)
    try:
        workload = session.mode.reference(name, session.options, session.device)
    except NotApplicable as error:
        row.results = {b: BackendResult(b, status=SKIPPED, reason=str(error)) for b in session.options.backends}
        progress.advance(len(session.options.backends) + 1)
        return row
    except Exception as error:
        workload = None
        session.report.notes.append(f"{name} failed to build or run eagerly: {short_reason(error)}")
        session.log.entry(name, "eager", "failed to build or run", full_story(error))
    calls = {}
    for backend in session.options.backends:
        progress.start(f"{name}: {backend}")
        row.results[backend], call = prepare_backend(backend, workload, session)
        if call is not None:
            calls[backend] = call
        progress.advance()
    progress.start(f"{name}: timing {', '.join(calls) or 'nothing'}")
    if calls:
        time_backends(row.results, calls, workload, session)
        if session.mode.after_timing is not None:
            session.mode.after_timing(row.results, calls, workload)
    progress.advance()
    return row


@contextlib.contextmanager
def quiet_compilers() -> Iterator[None]:
    """Silence graph-break logs from Dynamo, Inductor's advice and fake-tensor tracebacks for the body: they
    would tear the progress bar, and the table and its notes report breaks and failures instead."""
    loggers = [logging.getLogger(name) for name in ("torch._dynamo", "torch._inductor", "torch._subclasses")]
    levels = [logger.level for logger in loggers]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\._(dynamo|inductor)")
        for logger in loggers:
            logger.setLevel(logging.CRITICAL)
        try:
            yield
        finally:
            for logger, level in zip(loggers, levels):
                logger.setLevel(level)


# Where each compiler keeps its on-disk caches; --fresh-cache points them all at an empty folder.
CACHE_VARIABLES = ("MAGPY_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")


@contextlib.contextmanager
def fresh_caches(enabled: bool) -> Iterator[None]:
    """Give the compilers empty on-disk caches for the body, so compile times are those of a first run."""
    if not enabled:
        yield
        return
    saved = {name: os.environ.get(name) for name in CACHE_VARIABLES}
    with tempfile.TemporaryDirectory(prefix="magpy-bench-") as root:
        for name in CACHE_VARIABLES:
            os.environ[name] = os.path.join(root, name.lower())
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def preface_notes(options: BenchOptions, report: Report) -> None:
    if not options.fresh_cache and len(options.backends) > 1:
        report.notes.append("compile times include hits in the compilers' on-disk caches from earlier runs; "
                            "--fresh-cache measures first-run compiles")
    if options.inductor_models is not None and "inductor" in options.backends:
        report.notes.append(
            f"--quick runs torch.compile (inductor) on {', '.join(options.inductor_models)} only, the cheapest to "
            "compile (its first compile takes 10-60 s per model on a 2-core CPU); --backends eager,magpy,inductor "
            "runs it on every model")
    load, cpus = report.meta["load_average"], report.meta["cpus"]
    if report.meta["device"] == "cpu" and load is not None and cpus and load > 0.75 * cpus:
        advice = "" if options.threads == 1 else "; --threads 1 steadies them"
        report.notes.append(f"the machine was busy when the run started (load {load:.1f} on {cpus} CPUs): "
                            f"CPU timings are noisy{advice}")


def publish(report: Report, options: BenchOptions, elapsed_s: float, out: TextIO, err: TextIO) -> None:
    meta = report.meta
    kind = ("train (bf16 autocast) · " if meta.get("amp") else "train · ") if meta.get("train") else ""
    print(f"MagPy bench · {kind}size {meta['size']} · {meta['device']} · {meta['threads']} threads · "
          f"torch {meta['torch']} · Python {meta['python']}{' · quick' if options.quick else ''} · "
          f"{elapsed_s:.0f} s", file=out)
    for part in (render_table(report), render_legend(report), render_wrong(report), render_notes(report)):
        if part:
            print(part, file=out)
    if report.log_path:
        print(f"details (tracebacks, compiler warnings, every round's times): {report.log_path}", file=out)
    if options.json_path:
        with open(options.json_path, "w") as handle:
            handle.write(report.to_json())
        print(f"wrote {options.json_path}", file=out)
    if options.plot_path:
        problem = plot_speedups(report, options.plot_path)
        print(problem or f"wrote {options.plot_path}", file=out if problem is None else err)


def run(options: BenchOptions, out: TextIO | None = None, err: TextIO | None = None) -> Report:
    """Run the benchmark, print the table (and notes) to ``out``, write JSON / plot files when asked.

    Progress goes to ``err``. Returns the Report. Raises BenchError for a device that is not available.
    Ctrl-C stops early and still reports the models finished so far.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    device = torch.device(options.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise BenchError("--device cuda: no CUDA device is available to this torch build")
    threads = torch.get_num_threads()
    if options.threads:
        torch.set_num_threads(options.threads)
    report = Report(meta=describe_run(options, device), backends=options.backends, log_path=options.log_path)
    preface_notes(options, report)
    log = DetailLog(options.log_path)
    log.write(json.dumps(report.meta))
    budget = Budget(options.budget_s)
    progress = Progress(len(options.models) * (len(options.backends) + 1), stream=err, enabled=options.progress)
    mode = TRAINING if options.train else INFERENCE
    session = Session(mode, options, device, budget, progress, report, log, err)
    try:
        with torch.set_grad_enabled(mode.grad), fresh_caches(options.fresh_cache), \
                (contextlib.nullcontext() if options.verbose else quiet_compilers()):
            for name in options.models:
                report.rows.append(measure_model(name, session))
    except KeyboardInterrupt:
        report.notes.append("interrupted: the table shows the models finished so far")
    finally:
        progress.close()
        log.close()
        torch.set_num_threads(threads)
    if any(r.reason == "time budget" for row in report.rows for r in row.results.values()):
        report.notes.append(f"compiler steps after {budget.seconds:.0f} s were skipped (time budget; "
                            "--budget 0 lifts it)")
    publish(report, options, budget.elapsed(), out, err)
    return report
