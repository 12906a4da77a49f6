"""The ways the benchmark runs a model: eager PyTorch, ``magpy.compile``, and ``torch.compile`` (Inductor).

A runner prepares one backend: it builds a fresh model, compiles it, times the first two calls, checks their
outputs against eager, and fills in what it learnt on a BackendResult. Both calls count as compiling
(``first_calls_s``): magpy's first call runs the captured program eagerly and its Triton kernels compile at
the second. It returns the warm call to time,
or None when the outputs were wrong. It may raise: the harness turns any exception into an "n/a (reason)"
cell (the traceback goes to the run's log) and keeps what the runner had already recorded. The harness times
all warm calls together.
"""
from __future__ import annotations

import contextlib
import functools
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from ...zoo import ModelSpec, Tolerance
from .timing import Repeats, timed_call

OK, NOT_AVAILABLE, WRONG, SKIPPED = "ok", "n/a", "wrong", "skipped"


class Unavailable(Exception):
    """The backend cannot run here; the message is the short reason shown in the table."""


class NotApplicable(Exception):
    """The model cannot be measured this way (nothing to train); the message is the reason every backend's
    cell shows."""


@dataclass
class BackendResult:
    backend: str
    status: str = OK
    reason: str = ""                     # short cause shown in the table when status is not OK
    detail: str = ""                     # the full message, for notes and JSON
    ms: float | None = None              # median steady-state time per call
    best_ms: float | None = None         # fastest timed call
    samples: int = 0                     # timed calls behind ms
    times_ms: list[float] = field(default_factory=list)   # every timed call, one per round, in round order
    first_call_s: float | None = None    # first call, compilation included
    second_call_s: float | None = None   # second call (magpy on a GPU compiles its Triton kernels in it)
    capture_s: float | None = None       # magpy: first call with the graph run eagerly (capture only)
    compile_s: float | None = None       # the first two calls (magpy: less the capture alone)
    graphs: int | None = None
    graph_breaks: int | None = None
    fallbacks: int | None = None         # magpy: calls (or parts) it ran eagerly instead of compiled
    warnings: list[str] = field(default_factory=list)   # what the compiler warned about while compiling
    max_abs_err: float | None = None
    loss_err: float | None = None        # training: first loss's distance from eager's
    weights_rel_diff: float | None = None   # training: largest distance from eager's weights after the
                                            # checked steps, relative to how far eager's steps moved them
    peak_memory_mib: float | None = None    # training on CUDA: a warm step's peak above what was allocated

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def first_calls_s(self) -> float | None:
        """The first two calls (steps) together: what compiling cost before calls were warm."""
        if self.first_call_s is None or self.second_call_s is None:
            return None
        return self.first_call_s + self.second_call_s


@dataclass
class Workload:
    """One model at one size on one device, with the eager outputs every backend must reproduce."""

    spec: ModelSpec
    size: str
    device: torch.device
    reference: Any
    repeats: Repeats
    sync: Callable[[], None]
    exact: Any = None    # the outputs without TF32, where eager computes in TF32 (see ``as_exact_as_eager``)
    mode: str | None = None  # both compilers' ``mode`` (None: their default)

    @property
    def tolerance(self) -> Tolerance:
        """The model's tolerance, widened on a GPU that computes float32 convolutions in TF32 (PyTorch's
        default for cuDNN): then each convolution is only good to about 1e-3, and backends pick algorithms
        of their own."""
        tolerance = self.spec.tolerance
        if tf32_enabled(self.device):
            return Tolerance(rtol=max(tolerance.rtol, 1e-2), atol=max(tolerance.atol, 1e-2))
        return tolerance

    def fresh(self):
        """A new, identically initialised instance, so no backend sees another's side effects."""
        return self.spec.make(self.size, self.device)


def tf32_enabled(device: torch.device) -> bool:
    return device.type == "cuda" and (torch.backends.cudnn.allow_tf32 or torch.backends.cuda.matmul.allow_tf32)


@contextlib.contextmanager
def tf32_disabled():
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def tensors_of(value: Any) -> list[torch.Tensor]:
    """The tensors of a (nested) output, in order."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_of(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_of(v)]
    return []


def detached_copy(value: Any) -> Any:
    """A copy of an output that later calls cannot overwrite (compiled code may reuse output buffers)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return {k: detached_copy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(detached_copy(v) for v in value)
    return value


def max_abs_error(actual: Any, expected: Any) -> float:
    got, want = tensors_of(actual), tensors_of(expected)
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want)):
        return math.inf
    errors = [(g.double() - w.double()).abs().max().item() for g, w in zip(got, want) if w.numel()]
    return max(errors, default=0.0)


def as_exact_as_eager(actual: Any, workload: Workload) -> bool:
    """Whether each output is, within twice eager's own error, as close to the TF32-free result as eager.

    Under TF32 two backends that pick different convolution algorithms may differ by more than any fixed
    tolerance while both are as accurate as TF32 allows; what a user may rely on is eager's accuracy."""
    if workload.exact is None:
        return False
    got, want, exact = tensors_of(actual), tensors_of(workload.reference), tensors_of(workload.exact)
    if not len(got) == len(want) == len(exact) or any(g.shape != e.shape for g, e in zip(got, exact)):
        return False
    for g, w, e in zip(got, want, exact):
        if e.numel() and not g.dtype.is_floating_point:
            return False
        if e.numel() and max_abs_error(g, e) > max(2 * max_abs_error(w, e), workload.spec.tolerance.atol):
            return False
    return True


def matches(result: BackendResult, actual: Any, workload: Workload) -> bool:
    """Compare with the eager outputs; on a mismatch mark ``result`` wrong and say by how much."""
    tolerance = workload.tolerance
    try:
        try:
            torch.testing.assert_close(actual, workload.reference, rtol=tolerance.rtol, atol=tolerance.atol,
                                       equal_nan=True)
        except (AssertionError, TypeError, ValueError):
            if not as_exact_as_eager(actual, workload):
                raise
    except (AssertionError, TypeError, ValueError) as error:
        result.status = WRONG
        result.max_abs_err = max_abs_error(actual, workload.reference)
        result.reason = f"max err {result.max_abs_err:.1e}"
        result.detail = str(error).strip() or type(error).__name__
        return False
    result.max_abs_err = max_abs_error(actual, workload.reference)
    return True


def checked(result: BackendResult, call: Callable[[], Any], output: Any, workload: Workload):
    """``call`` if its first output and one more call (timed: ``second_call_s``) both match eager, else None
    (``result`` says why)."""
    if not matches(result, output, workload):
        return None
    second, result.second_call_s = timed_call(call, workload.sync)
    if not matches(result, second, workload):
        result.reason = "2nd call " + result.reason
        return None
    return call


def prepare_eager(result: BackendResult, workload: Workload):
    model, inputs = workload.fresh()
    call = lambda: model(*inputs)
    output, result.first_call_s = timed_call(call, workload.sync)
    return checked(result, call, output, workload)


def magpy_api(name: str):
    """``magpy.<name>``, or Unavailable saying in a few words why it cannot be had (the API is lazy)."""
    try:
        import magpy
        return getattr(magpy, name)
    except AttributeError as error:
        raise Unavailable(f"magpy.{name} missing") from error
    except ImportError as error:
        missing = getattr(error, "name", None)
        raise Unavailable(f"{missing} missing" if missing else f"magpy.{name} not importable") from error


def magpy_stats(compiled):
    """The Stats of what ``magpy.compile`` returned, or None.

    DESIGN.md promises ``.stats`` on every compiled object; module wrappers have kept theirs on the
    ``_magpy_compiled`` function so far, so look there too.
    """
    try:
        return compiled.stats
    except AttributeError:
        inner = getattr(compiled, "_magpy_compiled", None)
        return getattr(inner, "stats", None)


@contextlib.contextmanager
def recording_warnings(result: BackendResult):
    """Keep the first line of every distinct warning of the body on ``result`` (the compiler's, to report)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            result.warnings = list(dict.fromkeys(str(w.message).splitlines()[0] for w in caught))


def record_magpy_stats(result: BackendResult, compiled) -> None:
    stats = magpy_stats(compiled)
    result.graphs = getattr(stats, "graphs", None)
    result.graph_breaks = getattr(stats, "graph_breaks", None)
    result.fallbacks = getattr(stats, "fallbacks", None)


def prepare_magpy(result: BackendResult, workload: Workload):
    with recording_warnings(result):
        return compile_with_magpy(result, workload)


def compile_with_magpy(result: BackendResult, workload: Workload):
    compile_fn = magpy_api("compile")
    try:
        reset = magpy_api("reset")
    except Unavailable:
        reset = lambda: None

    # Capture alone: the same compile with the graph run by eager PyTorch instead of our codegen.
    reset()
    captured = None
    try:
        model, inputs = workload.fresh()
        captured = compile_fn(model, backend="eager")
        result.capture_s = timed_call(lambda: captured(*inputs), workload.sync)[1]
    except Exception as error:    # the full compile below reports the failure that matters
        result.detail = f"capture-only pass failed: {type(error).__name__}: {error}"
    finally:
        captured = None
        reset()

    model, inputs = workload.fresh()
    compiled = with_mode(compile_fn, workload.mode)(model)
    call = lambda: compiled(*inputs)
    output, result.first_call_s = timed_call(call, workload.sync)
    record_magpy_stats(result, compiled)
    warm = checked(result, call, output, workload)
    if result.capture_s is not None and result.first_calls_s is not None:
        result.compile_s = max(result.first_calls_s - result.capture_s, 0.0)
    return warm


def with_mode(compile_fn: Callable, mode: str | None) -> Callable:
    """``compile_fn`` given ``mode=mode`` (as is, for the compilers' default mode)."""
    return compile_fn if mode is None else functools.partial(compile_fn, mode=mode)


def compile_with_inductor(model, mode: str | None = None):
    """``torch.compile(model)`` with Dynamo's caches and counters emptied, so its stats are this model's."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    return with_mode(torch.compile, mode)(model)


def record_inductor_stats(result: BackendResult) -> None:
    from torch._dynamo.utils import counters

    # Graphs only: Dynamo may skip a whole frame at a break inside a loop and compile its callees instead,
    # so it has no break count comparable with ours.
    result.graphs = counters["stats"]["unique_graphs"]


def prepare_inductor(result: BackendResult, workload: Workload):
    model, inputs = workload.fresh()
    compiled = compile_with_inductor(model, workload.mode)
    call = lambda: compiled(*inputs)
    output, result.first_call_s = timed_call(call, workload.sync)
    record_inductor_stats(result)
    warm = checked(result, call, output, workload)
    result.compile_s = result.first_calls_s
    return warm


# backend name -> preparer; the table's column groups follow this order.
RUNNERS: dict[str, Callable[[BackendResult, Workload], Callable[[], Any] | None]] = {
    "eager": prepare_eager,
    "magpy": prepare_magpy,
    "inductor": prepare_inductor,
}
