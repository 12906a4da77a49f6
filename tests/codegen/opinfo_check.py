"""PyTorch's OpInfo database (``op_db``) as the oracle of our code generator.

Each op our lowerings (with our decompositions) serve is called on its CPU sample inputs through
``magpy.compile(fn, backend="magpy")`` and compared with eager: values (integers and bools exactly,
floats within a tolerance per dtype), dtypes, shapes, what the call did to its inputs (and, for
in-place variants, that it returns its input), and exceptions (eager raises => we raise the same
type). Every sample gets a fresh compiled function called ``CALLS`` times: the first call runs in
the VM (its result is eager's by construction); the later ones must be cache hits running a graph
our code generator compiled — a silent fallback to eager makes the sample "unserved", never a pass,
and an exception of ours hidden by such a fallback is a failure. A compiled graph is also called
with values eager refuses (out-of-range indices, zero divisors: ``check_bad_values``). Where eager
computes in half or bfloat16 and differs from us, the float64 result decides who is closer.

Used by ``tests/codegen/test_opinfo.py`` (a deterministic sample) and ``python -m fuzz opinfo``
(everything, as a table of ops x dtypes). Expected failures are data: ``opinfo_expected.py``.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import operator
import warnings
from typing import Any, Callable, Optional

import torch

import magpy
import magpy.codegen as codegen

from opinfo_expected import EXPECTED, METADATA_ONLY, TOLERANCES, TRITON_EMPTY

# The dtypes we test, by the short names the table's columns use.
DTYPES = {
    "f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
    "i64": torch.int64, "i32": torch.int32, "b8": torch.bool,
}
SHORT = {dtype: short for short, dtype in DTYPES.items()}

# Calls per sample: the first captures (eager's result), the others run the compiled graph.
CALLS = 3

# Per dtype (rtol, atol) for comparing floats with eager: our kernels fuse and reorder, and compute
# half and bfloat16 in float (as eager's CPU kernels mostly do too), so they may differ from eager by
# a few units in the last place — more for reductions, hence a looser float32 than torch's default.
DEFAULT_TOLERANCES = {
    torch.float32: (1e-4, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.float16: (2e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}

# Variants of an op we call: the function, the in-place method where the OpInfo has one, and the
# function called again with values eager refuses (``check_bad_values``).
VARIANTS = ("function", "inplace", "bad values")


def full_name(op) -> str:
    """The OpInfo's name as PyTorch's tests spell it: ``name.variant_test_name``."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


@functools.lru_cache(maxsize=None)
def op_table() -> dict:
    """name -> OpInfo, for every entry of ``op_db`` (importing it takes seconds: once)."""
    from torch.testing._internal.common_methods_invocations import op_db

    return {full_name(op): op for op in op_db}


def dtypes_of(op) -> list[str]:
    """The short names of the dtypes we test that ``op`` supports on CPU, in DTYPES' order."""
    supported = op.supported_dtypes("cpu")
    return [short for short, dtype in DTYPES.items() if dtype in supported]


def samples(op, dtype: torch.dtype) -> list:
    """The OpInfo's CPU sample inputs for ``dtype``; the same ones every run (a fixed seed)."""
    torch.manual_seed(0)
    return list(op.sample_inputs("cpu", dtype, requires_grad=False))


# ------------------------------------------------------------------------------------------------
# Which ops are served


@functools.lru_cache(maxsize=None)
def unserved_reason(name: str) -> Optional[str]:
    """None when our lowerings serve op ``name``, else why not.

    An op is served when its first sample (first tested dtype), traced to aten with our
    decompositions, has at least one op and a lowering for every op — the cheap static question
    (a trace, no compile). A sample whose compiled graph still falls back is found when it runs
    (``Unserved``).
    """
    from torch.fx.experimental.proxy_tensor import make_fx

    from magpy.codegen.decompositions import decomposition_table
    from magpy.codegen.lowering import LOWERINGS

    op = op_table()[name]
    tested = dtypes_of(op)
    if not tested:
        return "no tested dtype"
    try:
        sample = samples(op, DTYPES[tested[0]])[0]
        with _quiet():
            gm = make_fx(functools.partial(_call_sample, op.op, sample.kwargs),
                         decomposition_table=decomposition_table(), tracing_mode="fake")(sample.input, *sample.args)
    except Exception as e:  # noqa: BLE001 - an op fake tensors cannot trace (data-dependent sizes, ...)
        return f"trace: {type(e).__name__}"
    targets = {n.target for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem}
    missing = sorted(str(t) for t in targets if t not in LOWERINGS)
    if not targets:
        return "no aten op in its graph"
    return f"no lowering of {', '.join(missing[:3])}" if missing else None


def _call_sample(fn, kwargs, *args):
    return fn(*args, **kwargs)


# ------------------------------------------------------------------------------------------------
# One sample


class Unserved(Exception):
    """The compiled calls did not (all) run our kernels: the message says what ran instead."""


class Mismatch(AssertionError):
    """The compiled function did something other than eager."""


@dataclasses.dataclass
class Call:
    """What one call did: its result or the exception it raised, and its inputs afterwards."""

    result: Any = None
    error: Optional[BaseException] = None
    inputs: Any = None


def _run(fn: Callable, args: tuple, kwargs: dict) -> Call:
    """Call ``fn`` on a deep copy of the sample (so calls never see each other's writes)."""
    args, kwargs = copy.deepcopy((args, kwargs))
    try:
        result = fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - compared with eager's
        return Call(error=e, inputs=(args, kwargs))
    return Call(result=result, inputs=(args, kwargs))


def sample_function(op, variant: str) -> Optional[Callable]:
    """A new Python function calling ``op``'s ``variant`` (None when the OpInfo has none): a new
    function object, so each sample compiles afresh."""
    target = op.op if variant == "function" else op.inplace_variant
    if target is None:
        return None

    def call_op(*args, **kwargs):
        return target(*args, **kwargs)

    return call_op


def check_sample(op, sample, dtype: torch.dtype, variant: str = "function", codegen_name: str = "cpp"):
    """Compile ``op``'s ``variant`` afresh, call it ``CALLS`` times on ``sample`` and compare every
    call with eager. Raises Mismatch (with what differs) or Unserved (our kernels did not run)."""
    fn = sample_function(op, variant)
    args, kwargs = (sample.input, *sample.args), sample.kwargs
    with _quiet():
        expected = _run(fn, args, kwargs)
        if codegen_name == "triton" and any(x.numel() == 0 for x in _tensors((expected.result, expected.inputs))):
            raise Unserved(TRITON_EMPTY)  # (it would end the process)
        compiled = magpy.compile(sample_function(op, variant), backend="magpy",
                                 options={"codegen": codegen_name})
        since = codegen.mark()
        calls = [_run(compiled, args, kwargs) for _ in range(CALLS)]
    try:
        _compare_calls(op, dtype, variant, calls, expected)
    except Mismatch:
        if not _closer_than_eager(fn, args, kwargs, calls, expected):
            raise
    if expected.error is None:
        _check_compiled_path(compiled.stats, codegen.reports(since=since), codegen_name)
    return compiled


# Values ``check_bad_values`` puts into a sample's integer tensor arguments, and what they test.
BAD_VALUES = {1 << 20: "out-of-range indices", 0: "zero divisors", -1: "negative exponents"}


def check_bad_values(op, sample, dtype: torch.dtype, codegen_name: str = "cpp") -> int:
    """Compile ``op`` on ``sample``, then call the compiled graph (a cache hit: same shapes) with
    every integer tensor argument (not the input) filled with each of BAD_VALUES; where eager raises
    on those, the compiled call must raise the same type (not read out of bounds, clamp, or divide
    by zero silently). Returns how many such checks ran (none where eager accepts the values)."""
    fn = sample_function(op, "function")
    checked = 0
    for value, what in BAD_VALUES.items():
        bad = _filled(sample, value)
        if bad is None:
            return checked
        bad_args = (bad.input, *bad.args), bad.kwargs
        with _quiet():
            expected = _run(fn, *bad_args)
            if expected.error is None:
                continue
            compiled = check_sample(op, sample, dtype, "function", codegen_name)
            hits = compiled.stats.cache_hits
            call = _run(compiled, *bad_args)
        if call.error is None and compiled.stats.cache_hits == hits:
            raise Unserved(f"the call with {what} was not a cache hit")  # (another graph ran: not ours to judge)
        _compare_calls(op, dtype, "function", [call], expected, what)
        checked += 1
    return checked


def _filled(sample, value: int):
    """``sample`` with every non-empty integer tensor argument (not the input) filled with ``value``;
    None when it has none."""
    from torch.testing._internal.opinfo.core import SampleInput

    def fill(x):
        return torch.full_like(x, value) if isinstance(x, torch.Tensor) and x.dtype in (torch.int64, torch.int32) \
            and x.numel() else x

    args, kwargs = tuple(fill(a) for a in sample.args), {k: fill(v) for k, v in sample.kwargs.items()}
    changed = any(a is not b for a, b in zip(args, sample.args)) or any(kwargs[k] is not sample.kwargs[k] for k in kwargs)
    return SampleInput(sample.input, args=args, kwargs=kwargs) if changed else None


def _closer_than_eager(fn, args, kwargs, calls, expected) -> bool:
    """True when eager computed in half or bfloat16 and every compiled call's floats are (within
    their tolerance) at least as close as eager's to the same op computed in float64: our kernels
    compute such dtypes in float, so where eager rounds an intermediate (a cross product's
    cancelling terms) or overflows it (``exp`` in a loss), ours may differ from eager by being
    right — as Inductor's OpInfo test allows by its reference in float."""
    if expected.error is not None or not any(x.dtype in LOW_PRECISION for x in _tensors((args, kwargs))):
        return False
    reference = _run(fn, *_to_float64((args, kwargs)))
    if reference.error is not None:
        return False
    exact = _tensors((reference.result, reference.inputs))
    eager = _tensors((expected.result, expected.inputs))
    for call in calls:
        ours = _tensors((call.result, call.inputs))
        if call.error is not None or len(ours) != len(exact) or len(eager) != len(exact):
            return False
        for o, e, x in zip(ours, eager, exact):
            if o.shape != x.shape or o.dtype != e.dtype:
                return False
            if o.dtype.is_floating_point:
                rtol, atol = DEFAULT_TOLERANCES.get(o.dtype, (0, 0))
                if not bool((_error(o, x) <= _error(e, x) + atol + rtol * x.abs()).all()):
                    return False
            elif not torch.equal(o, e):
                return False
    return True


LOW_PRECISION = (torch.float16, torch.bfloat16)


def _tensors(tree) -> list:
    from torch.utils._pytree import tree_leaves

    return [x for x in tree_leaves(tree) if isinstance(x, torch.Tensor)]


def _to_float64(tree):
    from torch.utils._pytree import tree_map

    return tree_map(lambda x: x.double() if isinstance(x, torch.Tensor) and x.dtype in LOW_PRECISION else x, tree)


def _error(x: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """|x - exact| in float64, 0 where both are the same infinity or both NaN, inf where only one is NaN."""
    x, exact = x.double(), exact.double()
    same = (x == exact) | (x.isnan() & exact.isnan())
    return torch.where(same, torch.zeros_like(x), (x - exact).abs().nan_to_num(nan=float("inf")))


def _compare_calls(op, dtype, variant, calls, expected, what="call"):
    tolerance = TOLERANCES.get((full_name(op), SHORT[dtype]))  # (None: by each float's dtype)
    metadata_only = full_name(op) in METADATA_ONLY
    for k, call in enumerate(calls):
        _compare_call(call, expected, tolerance, metadata_only, f"{what} {k + 1}", variant)


def _compare_call(call: Call, expected: Call, tolerance, metadata_only: bool, where: str, variant: str):
    if expected.error is not None:
        if call.error is None:
            raise Mismatch(f"{where}: eager raised {type(expected.error).__name__}: "
                           f"{_first_line(expected.error)}; compiled returned")
        if type(call.error) is not type(expected.error):
            raise Mismatch(f"{where}: eager raised {type(expected.error).__name__}, compiled raised "
                           f"{type(call.error).__name__}: {_first_line(call.error)}")
        return
    if call.error is not None:
        raise Mismatch(f"{where}: compiled raised {type(call.error).__name__}: {_first_line(call.error)}")
    compare(call.result, expected.result, tolerance, metadata_only, f"{where}: result")
    compare(call.inputs, expected.inputs, tolerance, metadata_only, f"{where}: inputs afterwards")
    if variant == "inplace" and call.result is not call.inputs[0][0]:
        raise Mismatch(f"{where}: the in-place variant did not return its input")


# The exceptions by which the code generator declines a graph (``compile_aten_graph``); any other
# exception turning a graph eager is a crash of ours, hidden by the fallback: a failure.
REFUSALS = frozenset({"GraphFallback", "CppUnsupported", "TritonUnsupported", "NotServed", "UnsupportedSize"})
# How ``magpy.compile`` reports an exception of ours while building a cache entry (``api.py``).
CRASHED = "compiling the captured graph failed"


def _check_compiled_path(stats, reports, codegen_name: str):
    """Raise Unserved unless every call after the first ran a graph our code generator compiled
    (Mismatch when it would have, but crashed)."""
    crashes = [reason for reason, _ in stats.reasons if reason.startswith(CRASHED)]
    if crashes:
        raise Mismatch(f"MagPy crashed (the call ran eagerly): {crashes[0]}")
    if stats.graph_breaks or stats.fallbacks or stats.eager_calls or stats.eager_while_compiling:
        raise Unserved(f"compiled calls ran eagerly or broke the graph: {stats}")
    if stats.compiles != 1 or stats.cache_hits != CALLS - 1:
        raise Unserved(f"later calls were not cache hits: {stats}")
    if not reports:
        raise Unserved("no graph reached the code generator")
    for report in reports:
        crashed = report.mode != "captured" and report.graph_fallback  # (captured: declined before compiling)
        if crashed and report.graph_fallback.split(":")[0] not in REFUSALS:
            raise Mismatch(f"the compiler crashed (the graph runs eagerly): {report.graph_fallback}")
        if report.graph_fallback:
            raise Unserved(f"graph runs eagerly: {report.graph_fallback}")
        if report.mode != codegen_name:
            raise Unserved(f"graph compiled for {report.mode}, not {codegen_name}")
        if report.extern_calls:  # (library calls like mm, and ops a lowering refused)
            raise Unserved("extern " + "; ".join(f"{op} ({why})" for op, why in report.extern_calls[:2]))


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:160] if text else ""


@contextlib.contextmanager
def _quiet():
    """Warnings (ours about graphs run eagerly, torch's deprecations) are not what we check."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# ------------------------------------------------------------------------------------------------
# Comparing results


def compare(actual, expected, tolerance, metadata_only: bool, where: str):
    """Raise Mismatch where ``actual`` differs from eager's ``expected``: structure, Python values,
    tensor shapes and dtypes, then values (unless ``metadata_only``: an op whose values are
    undefined, like ``empty``). Floats within ``tolerance`` (rtol, atol), by default their dtype's."""
    if isinstance(expected, torch.Tensor):
        _compare_tensor(actual, expected, tolerance, metadata_only, where)
    elif isinstance(expected, (list, tuple)):
        if type(actual) is not type(expected) or len(actual) != len(expected):
            raise Mismatch(f"{where}: {type(actual).__name__} of {_length(actual)}, "
                           f"eager {type(expected).__name__} of {len(expected)}")
        for k, (a, e) in enumerate(zip(actual, expected)):
            compare(a, e, tolerance, metadata_only, f"{where}[{k}]")
    elif isinstance(expected, dict):
        if not isinstance(actual, dict) or actual.keys() != expected.keys():
            raise Mismatch(f"{where}: keys differ")
        for key in expected:
            compare(actual[key], expected[key], tolerance, metadata_only, f"{where}[{key!r}]")
    elif type(actual) is not type(expected):
        raise Mismatch(f"{where}: a {type(actual).__name__}, eager a {type(expected).__name__}")
    elif isinstance(expected, PLAIN_VALUES) and actual != expected and not _both_nan(actual, expected):
        raise Mismatch(f"{where}: {actual!r}, eager {expected!r}")


# Python values compared by value; other objects (a module passed as an argument, deep-copied for
# each call) only by type.
PLAIN_VALUES = (bool, int, float, complex, str, bytes, type(None), torch.dtype, torch.device, torch.memory_format)


def _compare_tensor(actual, expected: torch.Tensor, tolerance, metadata_only: bool, where: str):
    if not isinstance(actual, torch.Tensor):
        raise Mismatch(f"{where}: {type(actual).__name__}, eager a tensor")
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        raise Mismatch(f"{where}: {actual.dtype}{list(actual.shape)}, eager {expected.dtype}{list(expected.shape)}")
    if metadata_only:
        return
    floating = expected.dtype.is_floating_point or expected.is_complex()
    rtol, atol = (tolerance or DEFAULT_TOLERANCES.get(expected.dtype, (0, 0))) if floating else (0, 0)
    try:
        torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True, check_stride=False)
    except AssertionError as e:
        raise Mismatch(f"{where}: {_differences(actual, expected, rtol, atol, e)}") from None


def _differences(actual, expected, rtol, atol, error) -> str:
    """The first differing element, readably (assert_close's message spans many lines)."""
    if actual.dtype.is_complex:
        return " ".join(str(error).split())[:300]
    a, e = actual.detach().double().flatten(), expected.detach().double().flatten()
    bad = ~(torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True))
    count = int(bad.sum())
    if not count:
        return " ".join(str(error).split())[:300]
    k = int(bad.nonzero()[0])
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(k), actual.shape)) if actual.dim() else ()
    return f"{count}/{a.numel()} elements differ, first at {index}: {a[k].item()!r}, eager {e[k].item()!r}"


def _length(x) -> str:
    return str(len(x)) if isinstance(x, (list, tuple)) else "-"


def _both_nan(a, b) -> bool:
    return isinstance(a, float) and isinstance(b, float) and a != a and b != b


# ------------------------------------------------------------------------------------------------
# One cell of the table: an op at one dtype


@dataclasses.dataclass
class Outcome:
    """How op ``name`` fared at ``dtype``: ``status`` is one of STATUSES."""

    name: str
    dtype: str
    status: str
    detail: str = ""
    served: int = 0   # samples (and variants) that ran our kernels and matched eager
    unserved: int = 0   # samples whose compiled calls did not all run our kernels


# pass: every sample matched eager and at least one ran our kernels; xfail: failed as
# opinfo_expected.EXPECTED says; xpass: listed there but passed; FAIL: differs from eager;
# skip: not served (no lowering, or no sample ran our kernels).
STATUSES = ("pass", "xfail", "xpass", "FAIL", "skip")


def check_cell(name: str, dtype_name: str, codegen_name: str = "cpp", limit: Optional[int] = None,
               variants=VARIANTS) -> Outcome:
    """Run op ``name``'s samples at ``dtype_name`` (the first ``limit`` of them; all for None)."""
    why = unserved_reason(name)
    if why is not None:
        return Outcome(name, dtype_name, "skip", why)
    op, dtype = op_table()[name], DTYPES[dtype_name]
    outcome = Outcome(name, dtype_name, "pass")
    failure = None
    for k, sample in enumerate(samples(op, dtype)[:limit]):
        for variant in variants:
            if variant != "bad values" and sample_function(op, variant) is None:
                continue
            try:
                if variant == "bad values":
                    outcome.served += check_bad_values(op, sample, dtype, codegen_name)
                    continue
                check_sample(op, sample, dtype, variant, codegen_name)
                outcome.served += 1
            except Unserved as e:
                outcome.unserved += 1
                outcome.detail = outcome.detail or f"sample {k} {variant}: {e}"
            except Mismatch as e:
                failure = failure or f"sample {k} {variant}: {e}"
    reason = expected_failure(name, dtype_name, codegen_name)
    if failure is not None:
        outcome.status, outcome.detail = ("xfail", reason) if reason else ("FAIL", failure)
    elif reason and tuple(variants) == VARIANTS:  # (with fewer variants, the failing one may not have run)
        outcome.status = "xpass"
        outcome.detail = reason
    elif not outcome.served:
        outcome.status = "skip"
    return outcome


def expected_failure(name: str, dtype_name: str, codegen_name: str) -> Optional[str]:
    """Why op ``name`` is expected to fail at ``dtype_name`` with ``codegen_name``, or None."""
    for key in ((name, dtype_name, codegen_name), (name, dtype_name), (name, "*", codegen_name), (name, "*")):
        if key in EXPECTED:
            return EXPECTED[key]
    return None
