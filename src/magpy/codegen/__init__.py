"""magpy.codegen — our fusion compiler: aten fx graph -> fused kernels + a Python wrapper.

It knows nothing of the interpreter nor of the backends above it: ``magpy.backends.compile_graph`` turns
any fx graph into aten graphs (AOTAutograd) for it.

One IR and one schedule; two printers: C++/OpenMP for CPU tensors, Triton for CUDA tensors. The rooms,
in the order a graph goes through them:

    decompositions, accumulate_scatters, batch_matmul
                  the aten graph made ready: the decomposition table, graph rewrites before lowering
    lowering/     the lowering table (``registry``) and its rooms by domain, each op a registered function
    graph         GraphLowering: the fx graph -> buffers and IR nodes, in program order
    scheduler, loop_merge
                  IR nodes fused into kernels; a kernel's adjacent loop dims merged
    cpp/          the C++ printer (kernels, loop nests, the ops handler, reductions, scatters)
    triton/       the Triton printer (types, math, the ops handler, launch plans, kernels, runtime)
    input_writes  ``copy_`` into a graph input: a node stored into the input's memory, fused where
                  the graph's order allows
    wrapper       the generated Python that runs a graph's kernels; ``devices`` picks the printer
    compile_cache building C++ kernels with the system compiler, cached by content, loaded with ctypes

    shared by them: ``ir`` (buffers, layouts, Pointwise/Reduction/ExternCall), ``ops`` (the swappable
    handler bodies call), ``sizes`` (symbolic sizes), ``checks`` (errors kernels report),
    ``channels_last``, ``reference`` (the torch evaluator: the test oracle)

Public names:
    compile_aten_graph(gm, example_inputs, mode=None)
                                         an aten-level graph -> callable; ``mode`` "cpp" or
                                         "triton" (None: by the inputs' device); "reference" runs
                                         the same schedule with the torch reference evaluator.
                                         A graph traced with symbolic sizes compiles once for
                                         every size its ShapeEnv's guards allow.
    reports(since=None)                  CompileReports of recent graphs (kernels, extern calls,
                                         fallbacks, sources, the inputs it writes into);
                                         ``last_report()`` the newest;
                                         ``since=mark()`` taken before: only the graphs after it.

``MAGPY_DEBUG_DIR=/some/dir`` dumps each graph, its kernels and its wrapper there.
"""
from __future__ import annotations

import collections
import dataclasses
import itertools
import operator
import os
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Optional

import torch
import torch.fx

__all__ = ["compile_aten_graph", "reports", "mark", "last_report", "CompileReport"]


@dataclasses.dataclass
class CompileReport:
    """What compiling one graph produced."""

    graph_id: int
    mode: str
    kernels: list = dataclasses.field(default_factory=list)  # kernel names
    kernel_sources: dict = dataclasses.field(default_factory=dict)
    extern_calls: list = dataclasses.field(default_factory=list)  # (op, reason)
    fallbacks: list = dataclasses.field(default_factory=list)  # (op, reason), counted
    wrapper: str = ""
    graph_fallback: Optional[str] = None  # why the whole graph runs eagerly, if it does
    chosen: Optional[str] = None  # on a GPU: compiled or captured graph, whichever ran faster
    compile_seconds: float = 0.0
    symbolic: list = dataclasses.field(default_factory=list)  # symbolic input sizes: "in0.size(0)=s0"
    # (… and sizes made from data, read from the library call making them: "buf1.size(0)=u0")
    sizes_from_data: list = dataclasses.field(default_factory=list)  # their symbols: "u0"
    autotune: bool = False  # Triton kernels time the wider set of block configs (mode "max-autotune")
    inputs: int = 0  # how many inputs the graph takes
    written_inputs: list = dataclasses.field(default_factory=list)  # positions of the inputs it writes into

    @property
    def kernel_count(self) -> int:
        return len(self.kernels)

    def __str__(self):
        lines = [f"graph {self.graph_id} ({self.mode}): {len(self.kernels)} kernels, "
                 f"{len(self.extern_calls)} extern calls, {len(self.fallbacks)} fallbacks, "
                 f"{self.compile_seconds:.2f}s"]
        if self.graph_fallback:
            lines.append(f"  whole graph runs eagerly: {self.graph_fallback}")
        if self.chosen:
            lines.append(f"  runs the {self.chosen}")
        if self.autotune:
            lines.append("  block configs: the wider set, timed for every kernel on a GPU (max-autotune)")
        if self.symbolic:
            lines.append(f"  symbolic sizes: {', '.join(self.symbolic)}")
        lines += [f"  kernel {k}" for k in self.kernels]
        lines += [f"  extern {op}: {why}" for op, why in self.extern_calls]
        lines += [f"  fallback {op}: {why}" for op, why in self.fallbacks]
        return "\n".join(lines)


_REPORTS: collections.deque = collections.deque(maxlen=1024)
_graph_ids = itertools.count()
_next_id = 0


def _new_graph_id() -> int:
    global _next_id
    _next_id = next(_graph_ids) + 1
    return _next_id - 1


def reports(since: Optional[int] = None) -> list[CompileReport]:
    """The newest reports (at most 1024); ``since``: of the graphs compiled after ``mark()`` gave it."""
    return [r for r in _REPORTS if since is None or r.graph_id >= since]


def mark() -> int:
    """What ``reports(since=...)`` takes: the id the next graph compiled will get."""
    return _next_id


def last_report() -> Optional[CompileReport]:
    return _REPORTS[-1] if _REPORTS else None


def is_aten_graph(gm: torch.fx.GraphModule) -> bool:
    for node in gm.graph.nodes:
        if node.op in ("call_module", "call_method", "get_attr"):
            return False
        if node.op == "call_function" and node.target is not operator.getitem and not isinstance(
            node.target, torch._ops.OpOverload
        ) and not _size_arithmetic(node):
            return False
    return True


def _size_arithmetic(node) -> bool:
    """True for arithmetic on symbolic sizes in an aten graph (``operator.mul(s0, 4)``,
    ``torch.sym_float(s1)``)."""
    module = getattr(node.target, "__module__", None)
    return (module in ("_operator", "operator") or getattr(node.target, "__name__", "").startswith("sym_")) and \
        isinstance(node.meta.get("val"), (torch.SymInt, torch.SymFloat, torch.SymBool))


def _ensure_meta(gm, example_inputs):
    if all("val" in n.meta for n in gm.graph.nodes if n.op in ("placeholder", "call_function")):
        return
    from torch._guards import detect_fake_mode
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    # Fake inputs keep their own mode: a new one would make their symbolic sizes concrete.
    mode = detect_fake_mode(example_inputs) or FakeTensorMode(allow_non_fake_inputs=True)
    fake = [mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for x in example_inputs]
    FakeTensorProp(gm, mode).propagate_dont_convert_inputs(*fake)


def compile_aten_graph(gm: torch.fx.GraphModule, example_inputs, mode: Optional[str] = None,
                       fuse: bool = True, autotune: bool = False) -> Callable:
    """Compile an aten-level graph; the callable takes the graph's inputs positionally.

    ``mode`` is "cpp" (gcc-built kernels), "triton" or "reference" (the torch reference
    evaluator running the same schedule — the test oracle); None picks by the inputs' device
    (``devices.select``). ``fuse=False`` gives one kernel per buffer. ``autotune``: Triton kernels
    time a wider set of block configs, every kernel whatever its size (``triton.plan``; mode
    "max-autotune"); C++ kernels have no such choice. A graph we cannot compile runs eagerly
    (``report.graph_fallback`` says why).
    """
    from .accumulate_scatters import accumulate_scatters
    from .batch_matmul import batch_shared_matmuls
    from .devices import NotServed, select
    from .graph import GraphFallback, GraphLowering
    from .input_writes import written_placeholders
    from .cpp.handler import CppUnsupported
    from .sizes import UnsupportedSize
    from .triton.dtypes import TritonUnsupported

    started = time.perf_counter()
    report = CompileReport(graph_id=_new_graph_id(), mode=mode or "auto")
    _REPORTS.append(report)
    eager = _eager_callable(gm)
    report.inputs, report.written_inputs = len(example_inputs), written_placeholders(gm)
    try:
        if mode is None:
            mode = report.mode = select(example_inputs)
        _ensure_meta(gm, example_inputs)
        batch_shared_matmuls(gm)
        accumulate_scatters(gm)
        lowering = GraphLowering(gm, example_inputs, device=_device_of(example_inputs))
        report.symbolic = lowering.sizes.symbolic
        lowering.run()
        fn = _build(gm, lowering, report, mode, fuse, eager, started, autotune)
    except Exception as e:
        # A graph we cannot compile still runs (eagerly); MAGPY_STRICT=1 surfaces our bugs.
        expected = isinstance(e, (GraphFallback, CppUnsupported, TritonUnsupported, NotServed, UnsupportedSize))
        if os.environ.get("MAGPY_STRICT") == "1" and not expected:
            raise
        report.graph_fallback = f"{type(e).__name__}: {e}"
        warnings.warn(f"magpy: graph {report.graph_id} runs eagerly: {report.graph_fallback}")
        fn = eager
    if not report.compile_seconds:
        report.compile_seconds = time.perf_counter() - started
    fn.magpy_report = report
    return fn


def _device_of(example_inputs) -> torch.device:
    from .devices import graph_device

    return graph_device(example_inputs) or torch.device("cpu")


def record_fallback(gm, reason: str) -> CompileReport:
    """Report ``gm`` as a graph run as captured because ``reason`` (no generator serves it)."""
    report = CompileReport(graph_id=_new_graph_id(), mode="captured", graph_fallback=reason)
    _REPORTS.append(report)
    warnings.warn(f"magpy: graph {report.graph_id} runs as captured: {reason}")
    return report


def _eager_callable(gm):
    forward = gm.forward   # (not the module: its call prints fx's own traceback when the graph raises)

    def run_eagerly(*args):
        return forward(*args)

    return run_eagerly


def _build(gm, lowering, report, mode, fuse, eager, started, autotune=False):
    from .ir import ExternCall
    from .scheduler import Kernel, Scheduler
    from .wrapper import WrapperWriter

    outputs = set()

    def collect(o):
        if isinstance(o, (list, tuple)):
            for x in o:
                collect(x)
        elif isinstance(o, str):
            outputs.add(o)

    collect(lowering.outputs)
    scheduler = Scheduler(lowering.nodes, lowering.layouts, outputs, fuse=fuse)
    kernels = [it for it in scheduler.items if isinstance(it, Kernel)]
    if mode == "triton":
        callables, params, bodies, sizes, checked = _triton_kernels(kernels, lowering, autotune)
        report.autotune = autotune
    elif mode in ("cpp", "reference"):
        callables, params, bodies, sizes, checked = _cpp_kernels(kernels, lowering, outputs, mode)
    else:
        raise ValueError(f"unknown mode {mode!r}")
    writer = WrapperWriter(lowering, scheduler, params, "pointer" if mode == "cpp" else "tensor", sizes,
                           checked=checked)
    source = writer.write(callables, eager)
    call = _exec_wrapper(source, writer.namespace, report)
    report.kernels = [k.name for k in kernels]
    report.kernel_sources = bodies
    report.wrapper = source
    report.extern_calls = [
        (str(it.target), it.reason) for it in scheduler.items if isinstance(it, ExternCall)
    ]
    report.fallbacks = list(lowering.fallbacks)
    report.sizes_from_data = [str(s) for s in lowering.sizes.made()]
    report.compile_seconds = time.perf_counter() - started
    _dump(gm, report)
    symbolic = lowering.sizes.symbolic or lowering.sizes.shape_env is not None
    if mode != "triton" or not kernels or symbolic:
        return call  # (direct launches write the sizes into their source: static graphs only)
    from .triton.runtime import TritonGraph

    def bind():
        """The wrapper launching kernels directly, once every kernel can be (None before)."""
        direct = {name: launcher.direct() for name, launcher in callables.items()}
        if not any(direct.values()):
            return None
        direct = {name: launch for name, launch in direct.items() if launch is not None}
        writer = WrapperWriter(lowering, scheduler, params, "tensor", direct=direct)
        source = writer.write(callables, eager, general=call)
        report.wrapper = source
        _dump(gm, report)
        return _exec_wrapper(source, writer.namespace, report)

    return TritonGraph(call, bind)


def _exec_wrapper(source: str, namespace: dict, report: CompileReport) -> Callable:
    code = compile(source, f"<magpy wrapper {report.graph_id}>", "exec")
    exec(code, namespace)
    call = namespace["call"]
    call.boxed = namespace["call_boxed"]   # (takes AOTAutograd's list of inputs, and empties it)
    return call


def _cpp_kernels(kernels, lowering, outputs, mode):
    """(callables, parameter buffers, sources, size symbols, names of the kernels returning an
    error code) of C++ kernels, or of the reference evaluator (which raises the error itself)."""
    from .compile_cache import WIDE_VECTORS, KernelBuild, load_function
    from .cpp.kernel import kernel_source, render_kernel
    from .cpp.scatter import render_scatter
    from .reference import ReferenceKernel
    from .scheduler import ScatterKernel
    from .sizes import is_float_symbol

    params, bodies, callables, sizes, checked = {}, {}, {}, {}, set()
    build = KernelBuild(kernel_source) if mode == "cpp" else None  # (gcc starts while later kernels print)
    for kernel in kernels:
        render = render_scatter if isinstance(kernel, ScatterKernel) else render_kernel
        body, kernel_params, sizes[kernel.name], checks = render(kernel, lowering.layouts, outputs)
        params[kernel.name] = kernel_params
        bodies[kernel.name] = body
        if checks:
            checked.add(kernel.name)
        if build is not None:
            build.add(kernel.name, body, WIDE_VECTORS if _vector_math(kernel) else ())
    if build is not None:
        paths = build.finish()
        for kernel in kernels:
            callables[kernel.name] = load_function(paths[kernel.name], kernel.name, len(params[kernel.name]),
                                                   [float if is_float_symbol(s) else int for s in sizes[kernel.name]],
                                                   kernel.name in checked)
    else:
        for kernel in kernels:
            callables[kernel.name] = ReferenceKernel(kernel, params[kernel.name], lowering.layouts,
                                                     sizes[kernel.name])
    return callables, params, bodies, sizes, checked


def _triton_kernels(kernels, lowering, autotune=False):
    """(launchers, parameter buffers, sources, size symbols, names of the kernels taking the error
    flag ``ERROR_FLAG`` among their buffers) of Triton kernels; ``autotune``: launched with the
    wider set of block configs."""
    from .checks import ERROR_FLAG
    from .scheduler import ScatterKernel
    from .triton.kernel import render_kernel as render_fused
    from .triton.plan import autotuned
    from .triton.scatter import render_scatter
    from .triton.dtypes import TritonUnsupported
    from .triton.runtime import ALTERNATIVE, SymbolicLauncher, TritonLauncher, interpreting, load_kernel

    params, bodies, callables, sizes = {}, {}, {}, {}
    interpret = interpreting()
    for kernel in kernels:
        kernel.name = "triton" + kernel.name[len("cpp"):] if kernel.name.startswith("cpp") else kernel.name
        render_kernel = render_scatter if isinstance(kernel, ScatterKernel) else render_fused
        body, kernel_params, plan, sizes[kernel.name] = render_kernel(kernel, lowering.layouts, interpret)
        if autotune:
            plan = autotuned(plan, interpret)
        params[kernel.name] = kernel_params
        bodies[kernel.name] = body
        rewrites = _rewritten(kernel, kernel_params)
        if not plan.symbolic:  # (its numbers, if any, are float inputs)
            callables[kernel.name] = TritonLauncher(load_kernel(body, kernel.name), plan, kernel.name,
                                                    len(sizes[kernel.name]), rewrites)
            continue
        # Each form the launcher may take (the same parameters): persistent where rows fit, tiled
        # where the tiles' rows fit the grid, int32 indexes where every index fits.
        forms = {}
        for kind in (plan.kind, ALTERNATIVE[plan.kind]) if plan.kind in ALTERNATIVE else (plan.kind,):
            for wide in (True, False):
                if (kind, wide) == (plan.kind, True):
                    source = body
                else:
                    source, form_params, _, form_sizes = render_kernel(kernel, lowering.layouts, interpret, kind, wide)
                    if (form_params, form_sizes) != (kernel_params, sizes[kernel.name]):
                        raise TritonUnsupported(f"the {kind} form of {kernel.name} takes other arguments")
                forms[kind, wide] = load_kernel(source, kernel.name)
        callables[kernel.name] = SymbolicLauncher(forms, plan, kernel.name, sizes[kernel.name], rewrites)
    if not interpret:  # (compiled for the GPU in worker processes while we go on)
        from .triton.precompile import precompile_graph

        precompile_graph({n: c for n, c in callables.items() if isinstance(c, TritonLauncher)}, params, sizes,
                         lowering.layouts)
    checked = {name for name, names in params.items() if ERROR_FLAG in names}
    return callables, params, bodies, sizes, checked


def _rewritten(kernel, kernel_params) -> list[int]:
    """Positions among ``kernel``'s buffers of those it updates from their own values: a graph input it
    writes over (a running mean), a scatter's buffer. Timing block configs runs a kernel many times:
    these are put back after (``triton.runtime.fastest``)."""
    from .input_writes import InputWrite
    from .scheduler import ScatterKernel

    names = {n.name for n in kernel.nodes if isinstance(n, InputWrite) or isinstance(kernel, ScatterKernel)}
    return [i for i, name in enumerate(kernel_params) if name in names]


def _vector_math(kernel) -> bool:
    """True when ``kernel`` calls transcendental functions (worth the widest vectors)."""
    from .graph import TRANSCENDENTAL

    return any(op in TRANSCENDENTAL for node in kernel.nodes for op in node.op_names())


def _dump(gm, report: CompileReport):
    folder = os.environ.get("MAGPY_DEBUG_DIR")
    if not folder:
        return
    path = Path(folder) / f"graph_{report.graph_id}"
    path.mkdir(parents=True, exist_ok=True)
    (path / "graph.txt").write_text(gm.print_readable(print_output=False))
    (path / "wrapper.py").write_text(report.wrapper)
    if report.mode == "triton":
        from .triton.kernel import PRELUDE

        (path / "kernels.py").write_text(PRELUDE + "\n\n" + "\n\n".join(report.kernel_sources.values()))
    else:
        from .cpp.prelude import PRELUDE

        (path / "kernels.cpp").write_text(PRELUDE + "\n" + "\n".join(report.kernel_sources.values()))
    (path / "report.txt").write_text(str(report) + "\n")
