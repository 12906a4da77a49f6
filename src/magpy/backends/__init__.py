"""Backend registry: name -> ``fn(gm, example_inputs) -> callable`` (the torch.compile convention).

Built-ins:
    "eager"     runs the fx graph as it is
    "inductor"  torch's own compiler (``torch._inductor.compile_fx``)
    "magpy"     (``compile_graph``: an aten-level graph goes straight to our codegen; any other through)
                AOTAutograd + our decompositions + ``magpy.codegen.compile_aten_graph`` for the
                forward and backward graphs; a graph our code generators cannot serve (its
                device, its dynamic sizes) runs as captured, undecomposed

"magpy" and "inductor" trace with AOTAutograd, which is not thread-safe: they compile holding
``magpy.compile_lock.LOCK`` (whoever calls them: our own compiles, or ``torch.compile``).

"magpy" is also a ``torch.compile`` backend (``torch.compile(model, backend="magpy")``), registered with
Dynamo once Dynamo is loaded, without importing it (``magpy/dynamo_registration.py``).
"""
from __future__ import annotations

import copy
import functools
import warnings
from typing import Callable, Optional

from ..compile_lock import LOCK
from . import settings
from .settings import check_mode, check_options, options_for, takes

_BACKENDS: dict[str, Callable] = {}


def register_backend(name: str, fn: Callable = None):
    """Register ``fn`` as backend ``name`` (usable as a decorator). Re-registering replaces."""
    if fn is None:
        return lambda f: register_backend(name, f)
    if not callable(fn):
        raise TypeError(f"backend {name!r} must be callable, got {type(fn).__name__}")
    _BACKENDS[name] = fn
    return fn


def lookup_backend(name_or_fn, options: Optional[dict] = None, mode: Optional[str] = None) -> Callable:
    """The backend callable for a name (or the callable itself). Raises KeyError for unknown names.

    With ``options`` or a ``mode`` other than "default" (``magpy.compile(..., mode=..., options=...)``),
    a backend that takes an ``options`` / ``mode`` argument gets them bound, as ``torch.compile`` passes
    them; other backends run the same whatever they are.
    """
    if callable(name_or_fn):
        fn = name_or_fn
    else:
        try:
            fn = _BACKENDS[name_or_fn]
        except KeyError:
            known = ", ".join(sorted(_BACKENDS))
            raise KeyError(f"unknown backend {name_or_fn!r}; known backends: {known}") from None
    bound = {}
    if options and takes(fn, "options"):
        bound["options"] = dict(options)
    if mode not in (None, "default") and takes(fn, "mode"):
        bound["mode"] = mode
    return functools.partial(fn, **bound) if bound else fn


def list_backends() -> list[str]:
    return sorted(_BACKENDS)


def check_settings(backend, mode=None, options=None, fullgraph=False, dynamic=None) -> None:
    """Refuse what ``magpy.compile`` cannot use (``settings.check_settings``, against this registry):
    raises ``magpy.SettingError`` naming the valid values."""
    settings.check_settings(backend, mode, options, fullgraph, dynamic, backends=_BACKENDS)


@register_backend("eager")
def eager_backend(gm, example_inputs):
    return gm.forward


@register_backend("inductor")
def inductor_backend(gm, example_inputs, mode=None, options=None):
    """torch's Inductor, in ``mode`` (its own table: ``torch._inductor.list_mode_options``) with
    ``options`` (Inductor config names, ``torch._inductor.list_options()``) winning over the mode's."""
    from torch._inductor import list_mode_options
    from torch._inductor.compile_fx import compile_fx

    check_mode(mode, "the inductor backend")
    patches = {**list_mode_options(mode or "default"), **(options or {})}
    with LOCK:
        return compile_fx(gm, example_inputs, config_patches=patches or None)


def _aten_compiler(gm, example_inputs, mode=None, compiled=None, autotune=False, pool=None):
    """A forward or backward graph of AOTAutograd compiled, called boxed; with a ``pool``
    (``cudagraphs.SharedPool``: a training graph asked to replay), replayed as a CUDA graph where its
    sizes are fixed."""
    from torch._functorch.aot_autograd import make_boxed_func

    from ..codegen import compile_aten_graph

    fn = compile_aten_graph(gm, example_inputs, mode=mode, autotune=autotune)
    if compiled is not None:
        compiled.append(fn.magpy_report)
    # AOTAutograd calls compiled graphs with one list argument ("boxed"), which a generated wrapper empties
    # to free the inputs as it goes.
    boxed = fn.boxed if hasattr(fn, "boxed") else make_boxed_func(fn)
    if pool is not None and not _sizes_vary(example_inputs, fn.magpy_report):
        from .cudagraphs import TrainingReplay, on_cuda

        if on_cuda(example_inputs):
            boxed = TrainingReplay(boxed, gm.meta.get(SAVED_FROM), pool, fn.magpy_report.written_inputs)

    def run_boxed(args):
        return boxed(args)

    run_boxed._boxed_call = True
    run_boxed.magpy_report = fn.magpy_report
    return run_boxed


# The meta key of a forward graph saying where its outputs for the backward begin (``_partition``).
SAVED_FROM = "magpy_saved_from"


@register_backend("magpy")
def magpy_backend(gm, example_inputs, mode=None, options=None):
    """AOTAutograd (forward and backward) + our decompositions + our codegen.

    ``options["codegen"]`` ("cpp" or "triton") forces a code generator; by default the inputs'
    device picks it. A graph no generator serves, or whose forward graph would run eagerly
    after decomposition, runs as captured: the original ops, each one eager's own kernel. On a
    GPU the first calls time the compiled graph against the captured one (and, for graphs that
    record no autograd, against the compiled graph replayed as a CUDA graph) and keep the
    fastest (``backends/choose.py``). ``options["cudagraphs"]`` True replays the graph as a CUDA
    graph whenever it can, False never (``backends/cudagraphs.py``). ``options["autotune"]`` True
    has Triton kernels time a wider set of block configs, every kernel whatever its size.
    ``mode`` stands for a set of these options (``settings.MODES``); explicit ones win.

    Raises ``magpy.SettingError`` for an unknown mode, option or option value.
    """
    from .cudagraphs import on_cuda

    check_mode(mode, "the magpy backend")
    check_options("magpy", options or {}, None, "the magpy backend")
    chosen = options_for(mode, options)
    if chosen.get("cudagraphs") and "cudagraphs" not in (options or {}) and not on_cuda(example_inputs):
        del chosen["cudagraphs"]  # (a mode's replay, on CPU tensors: nothing to replay, nothing to say)
    return _compile_for_device(gm, example_inputs, chosen)


def compile_graph(gm, example_inputs) -> Callable:
    """The "magpy" backend: a callable computing what ``gm`` computes.

    Aten-level graphs are compiled directly; others go through AOTAutograd with our
    decompositions. Never raises for graphs it cannot compile: they run eagerly (reported).
    """
    import torch

    from ..codegen import compile_aten_graph, is_aten_graph

    if is_aten_graph(gm):
        return compile_aten_graph(gm, example_inputs)
    output = next(n for n in gm.graph.nodes if n.op == "output")
    if isinstance(output.args[0], (tuple, list)):
        return magpy_backend(gm, example_inputs)
    # AOTAutograd wants tuple outputs: compile a copy returning (result,), then unwrap.
    graph = copy.deepcopy(gm.graph)
    out = next(n for n in graph.nodes if n.op == "output")
    out.args = ((out.args[0],),)
    compiled = magpy_backend(torch.fx.GraphModule(gm, graph), example_inputs)

    def call_single_output(*args):
        return compiled(*args)[0]

    return call_single_output


def _replayed(fn, example_inputs, options: dict, report=None, writes=()):
    """``fn``, replayed as a CUDA graph when ``options`` ask for it (``cudagraphs`` True) — never for a
    graph with symbolic sizes or, as its compile ``report`` says, sizes made from data (a replay's
    buffers have the sizes of the call it recorded), nor for one that writes into inputs it cannot
    name (``writes`` None: see ``_writes``)."""
    if not options.get("cudagraphs") or _sizes_vary(example_inputs, report):
        return fn
    from .cudagraphs import wrap

    if writes is None:
        warnings.warn("magpy: cudagraphs off for a graph: it writes into inputs it cannot name")
        return fn
    return wrap(fn, example_inputs, writes=writes)


def _writes(report, example_inputs) -> Optional[tuple]:
    """Positions among ``example_inputs`` of the inputs the compiled graph writes into: those its
    (forward) graph's ``report`` names, where that graph takes the inputs as they come (AOTAutograd
    adds none: no synthetic base of aliased inputs, no effect tokens); None where it writes some and
    does not take them so."""
    if report is None or not report.written_inputs:
        return ()
    return tuple(report.written_inputs) if report.inputs == len(example_inputs) else None


def _has_symbolic_sizes(example_inputs) -> bool:
    """Symbolic sizes or numbers (a replay would keep the sizes and numbers of the call it recorded)."""
    import torch

    return any(isinstance(x, (torch.SymInt, torch.SymFloat)) or isinstance(x, torch.Tensor) and
               any(isinstance(n, torch.SymInt) for n in x.shape) for x in example_inputs)


def _sizes_vary(example_inputs, report=None) -> bool:
    return _has_symbolic_sizes(example_inputs) or bool(report is not None and report.sizes_from_data)


def _records_autograd(example_inputs) -> bool:
    import torch

    return torch.is_grad_enabled() and any(isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)


def _replay_candidate(fn, example_inputs, options: dict, report=None, writes=()):
    """By default (``cudagraphs`` unset), ``fn`` replayed as a CUDA graph for the faster-of
    timing to weigh, for graphs that record no autograd (and write no input they cannot name); else
    None."""
    from .cudagraphs import wrap

    if "cudagraphs" in options or _records_autograd(example_inputs) or _sizes_vary(example_inputs, report) \
            or writes is None:
        return None

    replayed = wrap(fn, example_inputs, quiet=True, writes=writes)
    return replayed if replayed is not fn else None


def _partition(joint, joint_inputs, **kwargs):
    """What the backward needs of the forward: the fewest bytes to save, recomputing in the backward's fused
    kernels what pointwise ops make cheaply (Inductor's min-cut), not every intermediate it reads. The
    min-cut refuses some joint graphs (a symbolic float the forward computes for the backward: "Node mul_270
    was invalid, but is output" on fake quantization); those save what the backward reads."""
    from torch._functorch.partitioners import default_partition, min_cut_rematerialization_partition

    try:
        forward, backward = min_cut_rematerialization_partition(joint, joint_inputs, **kwargs)
    except AssertionError:
        forward, backward = default_partition(joint, joint_inputs, **kwargs)
    if "num_fwd_outputs" in kwargs:
        forward.meta[SAVED_FROM] = kwargs["num_fwd_outputs"]
    return forward, backward


def _compile_for_device(gm, example_inputs, options: dict):
    from ..codegen import record_fallback
    from ..codegen.devices import NotServed, select
    from .attention import fuse_attention
    from .scalar_tensors import tensor_values_as_arithmetic
    from .versions import batch_norm_statistics, keeping_versions

    tensor_values_as_arithmetic(gm)
    fuse_attention(gm, example_inputs)
    # (inputs the graph as captured writes without a version bump, which a replay must be told of; the
    # compiled graph keeps their versions as eager does)
    statistics = tuple(batch_norm_statistics(gm))
    try:
        # (before Dynamo is imported, which imports triton: Triton on CPU tensors needs its
        # interpreter chosen before that)
        mode = select(example_inputs, options.get("codegen"))
    except NotServed as why:
        record_fallback(gm, str(why))
        return _replayed(gm.forward, example_inputs, options, writes=statistics)
    from torch._dynamo.backends.common import aot_autograd

    from ..codegen.decompositions import decomposition_table
    from .symbolic import floats_kept

    forward = []
    autotune = options.get("autotune", False)
    pool = None
    if options.get("cudagraphs") and _records_autograd(example_inputs):
        # (a training graph: its forward and backward replay, each boxed inside AOTAutograd's Function)
        from .cudagraphs import SharedPool

        pool = SharedPool()
    backend = aot_autograd(
        fw_compiler=functools.partial(_aten_compiler, mode=mode, compiled=forward, autotune=autotune, pool=pool),
        bw_compiler=functools.partial(_aten_compiler, mode=mode, autotune=autotune, pool=pool),
        decompositions=decomposition_table(mode),
        partition_fn=_partition,
        keep_inference_input_mutations=True,
    )
    with LOCK, floats_kept(example_inputs):
        compiled = backend(gm, example_inputs)
    if forward and forward[0].graph_fallback:
        # The decomposed graph would run op by op: slower than the ops as captured.
        return _replayed(gm.forward, example_inputs, options, writes=statistics)
    if forward and _has_symbolic_sizes(example_inputs) and not forward[0].symbolic:
        # asked for every size, the trace came out for this one (a size it fixed without saying so, a
        # float a fake kernel read): the ops as captured serve every size and value
        record_fallback(gm, "the trace fixed the symbolic sizes or floats it was given")
        return gm.forward
    from .choose import faster_of

    # Replayed before it is timed: the timing's synchronisations cannot run inside a capture.
    report = forward[0] if forward else None
    compiled = keeping_versions(compiled, statistics)
    writes = _writes(report, example_inputs)
    whole = compiled if pool is not None else _replayed(compiled, example_inputs, options, report, writes)
    return faster_of(whole, gm.forward, example_inputs,
                     report, _replay_candidate(compiled, example_inputs, options, report, writes))
