"""The benchmark loop: every model through every backend, checked against eager, timed together, reported."""
from __future__ import annotations

import contextlib
import dataclasses
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

from .. import zoo
from .options import BenchError, BenchOptions
from .plot import plot_speedups
from .progress import Progress
from .report import ModelRow, Report, render_notes, render_table
from .runners import (NOT_AVAILABLE, RUNNERS, SKIPPED, BackendResult, Unavailable, Workload, detached_copy,
                      tf32_disabled, tf32_enabled)
from .timing import Budget, Repeats, StepTimeout, deadline, interleaved_samples, synchronizer

MIN_STEP_S = 2.0        # a compiler step is skipped when less than this is left of the budget
MIN_TIMING_S = 5.0      # timing gets at least this long, budget or not: the eager baseline is always wanted


def describe_run(options: BenchOptions, device: torch.device) -> dict:
    return {
        "size": options.size,
        "device": str(device),
        "quick": options.quick,
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "repeats": {"warmup": options.repeats.warmup, "repeat": options.repeats.repeat},
    }


def skip_reason(options: BenchOptions, backend: str, model: str, budget: Budget) -> str | None:
    if backend == "inductor" and options.inductor_models is not None and model not in options.inductor_models:
        return "quick"
    remaining = budget.remaining()
    if backend != "eager" and remaining is not None and remaining < MIN_STEP_S:
        return "time budget"
    return None


def underlying_timeout(error: BaseException) -> StepTimeout | None:
    """The StepTimeout behind ``error``: compilers may catch it and raise their own error from it."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, StepTimeout):
            return error
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return None


def short_reason(error: BaseException) -> str:
    timeout = underlying_timeout(error)
    if timeout is not None:
        return str(timeout)
    if isinstance(error, Unavailable):
        return str(error)
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def describe(error: BaseException) -> str:
    """The full message of a failure, with the underlying cause of an Unavailable."""
    timeout = underlying_timeout(error)
    if timeout is not None:
        return str(timeout)
    if isinstance(error, Unavailable):
        cause = error.__cause__
        return f"{error} ({type(cause).__name__}: {cause})" if cause is not None else str(error)
    return f"{type(error).__name__}: {error}".strip()


def fail(result: BackendResult, error: BaseException, options: BenchOptions, err: TextIO) -> None:
    result.status = NOT_AVAILABLE
    result.reason = short_reason(error)
    result.detail = describe(error)
    if options.verbose:
        traceback.print_exception(error, file=err)


def reference_workload(name: str, options: BenchOptions, device: torch.device) -> Workload:
    """The model's eager outputs, which every backend must reproduce."""
    spec = zoo.get(name)
    model, inputs = spec.make(options.size, device)
    reference = detached_copy(model(*inputs))
    workload = Workload(spec, options.size, device, reference, options.repeats, synchronizer(device))
    if tf32_enabled(device):
        with tf32_disabled():
            model, inputs = workload.fresh()
            workload.exact = detached_copy(model(*inputs))
    return workload


def prepare_backend(backend: str, workload: Workload | None, options: BenchOptions, budget: Budget,
                    err: TextIO) -> tuple[BackendResult, Callable[[], object] | None]:
    """Compile and check one backend; its result, and the warm call to time when all went well."""
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
            return result, RUNNERS[backend](result, workload)
    except Exception as error:     # one model/backend failing must never end the run
        fail(result, error, options, err)
        return result, None


def warm_repeats(options: BenchOptions, workload: Workload) -> Repeats:
    """The repeats to time with: on a GPU, warm until magpy has chosen among compiled, captured and replayed
    (its first calls take them by turns, see ``magpy.backends.choose``), so no timed call is one of those."""
    if workload.device.type != "cuda":
        return options.repeats
    from ..backends.choose import SAMPLES

    settled = 3 * SAMPLES + 1
    return dataclasses.replace(options.repeats, warmup=max(options.repeats.warmup, settled))


def time_backends(results: dict[str, BackendResult], calls: dict[str, Callable[[], object]],
                  workload: Workload, options: BenchOptions, budget: Budget, report: Report,
                  err: TextIO) -> None:
    """Fill in the median (and best) call time of every prepared backend, timing them together."""
    limit = budget.step_limit(options.step_timeout_s)
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
            report.notes.append(f"while timing {workload.spec.name}: {message}")
    for name, times in samples.items():
        results[name].ms = 1e3 * statistics.median(times)
        results[name].best_ms = 1e3 * min(times)
        results[name].samples = len(times)
    for name, error in failures.items():
        fail(results[name], error, options, err)


def measure_model(name: str, options: BenchOptions, device: torch.device, budget: Budget, progress: Progress,
                  report: Report, err: TextIO) -> ModelRow:
    progress.status(f"{name}: build")
    try:
        workload = reference_workload(name, options, device)
    except Exception as error:
        workload = None
        report.notes.append(f"{name} failed to build or run eagerly: {short_reason(error)}")
    row = ModelRow(name, options.size)
    calls = {}
    for backend in options.backends:
        progress.start(f"{name}: {backend}")
        row.results[backend], call = prepare_backend(backend, workload, options, budget, err)
        if call is not None:
            calls[backend] = call
        progress.advance()
    progress.start(f"{name}: timing {', '.join(calls) or 'nothing'}")
    if calls:
        time_backends(row.results, calls, workload, options, budget, report, err)
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
            f"--quick runs inductor on {', '.join(options.inductor_models)} only (its first compile takes "
            "10-60 s per model on a small CPU); pass --backends eager,magpy,inductor to run it on every model")
    load, cpus = report.meta["load_average"], report.meta["cpus"]
    if report.meta["device"] == "cpu" and load is not None and cpus and load > 0.75 * cpus:
        advice = "" if options.threads == 1 else "; --threads 1 steadies them"
        report.notes.append(f"the machine was busy when the run started (load {load:.1f} on {cpus} CPUs): "
                            f"CPU timings are noisy{advice}")


def publish(report: Report, options: BenchOptions, elapsed_s: float, out: TextIO, err: TextIO) -> None:
    meta = report.meta
    print(f"MagPy bench · size {meta['size']} · {meta['device']} · {meta['threads']} threads · "
          f"torch {meta['torch']} · Python {meta['python']}{' · quick' if options.quick else ''} · "
          f"{elapsed_s:.0f} s", file=out)
    print(render_table(report), file=out)
    notes = render_notes(report)
    if notes:
        print(notes, file=out)
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
    report = Report(meta=describe_run(options, device), backends=options.backends)
    preface_notes(options, report)
    budget = Budget(options.budget_s)
    progress = Progress(len(options.models) * (len(options.backends) + 1), stream=err, enabled=options.progress)
    try:
        with torch.no_grad(), fresh_caches(options.fresh_cache), \
                (contextlib.nullcontext() if options.verbose else quiet_compilers()):
            for name in options.models:
                report.rows.append(measure_model(name, options, device, budget, progress, report, err))
    except KeyboardInterrupt:
        report.notes.append("interrupted: the table shows the models finished so far")
    finally:
        progress.close()
        torch.set_num_threads(threads)
    if any(r.reason == "time budget" for row in report.rows for r in row.results.values()):
        report.notes.append(f"compiler steps after {budget.seconds:.0f} s were skipped (time budget; "
                            "--budget 0 lifts it)")
    publish(report, options, budget.elapsed(), out, err)
    return report
