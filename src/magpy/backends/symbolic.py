"""Graphs with symbolic sizes, handed to a compiling backend once for every size.

A capture whose input tensors have symbolic dims (``dynamic_dims``, ``magpy.mark_dynamic``) gives a graph
that reads those sizes itself. The backend gets, as ``torch.compile``'s backends do, fake tensors whose
symbolic dims are SymInts of one ShapeEnv; what the backend's tracing relied on about them (``s0 == s1``
where two inputs broadcast, ``s0 % 4 == 0`` where a view needed it) is recorded there, and comes back as
one Python expression over the inputs' sizes that the entry's guard checks.

Ints and floats from outside the call that change (``dynamic_numbers``) come as SymInts and SymFloats of
the same ShapeEnv; a float the trace fixed to its value anyway (a fake kernel read it) makes the graph run
as captured, right for every value, instead of being compiled for one.
"""
from __future__ import annotations

import contextlib
import math
import re
from typing import Callable, Optional



#: backends known to compile from fake inputs with symbolic sizes (others run such graphs as captured)
SYMBOLIC_BACKENDS = ("magpy", "inductor")
#: … and those of them that also take sizes made from data (``nonzero``: unbacked sizes)
UNBACKED_BACKENDS = ("magpy", "inductor")
#: … and those of them that take float inputs as SymFloats (``x * scale``: one compile for every scale)
FLOAT_BACKENDS = ("magpy",)


def fake_inputs(examples, dims, unbacked=False):
    """Fake tensors like ``examples``, each symbolic along its ``dims`` (a set per input), and SymInts for
    its ints and SymFloats for its floats, in one new ShapeEnv; (fakes, shape_env)."""
    from torch._dynamo.source import LocalSource
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import DimDynamic, ShapeEnv, StatelessSymbolicContext

    env = ShapeEnv(allow_dynamic_output_shape_ops=unbacked)
    mode = FakeTensorMode(shape_env=env)
    fakes = []
    for k, (t, symbolic) in enumerate(zip(examples, dims)):
        if type(t) is int:  # a number from outside the call takes as it comes (``x[:, :n]``)
            source = LocalSource(f"in{k}")
            symbol = env.create_unspecified_symbol(t, source=source, dynamic_dim=DimDynamic.DYNAMIC)
            fakes.append(env.create_symintnode(symbol, hint=t, source=source))
            continue
        if type(t) is float:  # (``x * scale``: a double argument of the kernels that read it)
            source = LocalSource(f"in{k}")
            symbol = env.create_unspecified_symbol(t, source=source, dynamic_dim=DimDynamic.DYNAMIC)
            fakes.append(env.create_symfloatnode(symbol, hint=t, source=source))
            continue
        sizes = [DimDynamic.DYNAMIC if d in symbolic else DimDynamic.STATIC for d in range(t.dim())]
        fakes.append(mode.from_tensor(t, symbolic_context=StatelessSymbolicContext(dynamic_sizes=sizes),
                                      source=LocalSource(f"in{k}")))
    return fakes, env


def compile_symbolic(backend: Callable, gm, examples, dims, unbacked=False) -> tuple[Callable, Optional[Callable]]:
    """``backend`` applied to ``gm`` over fake inputs symbolic along ``dims``; (the compiled callable, a
    check of the relations it relied on — ``check(*inputs) -> bool`` — or None when it relied on none
    beyond what the tensor guards state). ``unbacked``: the graph makes sizes from data (``nonzero``):
    sizes no input has, which the backend takes as they come on each run."""
    from .tensor_data import symbolic_data_kept

    fakes, env = fake_inputs(examples, dims, unbacked)
    with symbolic_data_kept(gm):
        compiled = backend(gm, fakes)
    fixed = _fixed_numbers(gm, fakes, env)
    if fixed:
        # (a fake kernel read the number: ``torch.tensor(scale)``) the graph runs as captured, which is
        # right for every value, rather than compiled for this one and guarded to it
        if compiled != gm.forward:  # (a backend that runs it as captured has said why)
            from ..codegen import record_fallback

            record_fallback(gm, f"the backend's trace fixed input {', '.join(fixed)} to this call's value")
        return gm.forward, None
    code = env.produce_guards_expression(fakes, ignore_static=True)
    return compiled, _size_check(code, fakes) if code and code != "True" else None


def _size_check(code: str, fakes) -> Optional[Callable]:
    """``code`` (over ``L['t0']``, ``L['t1']`` …, the inputs in order) as a function of the inputs."""
    # (always checked: besides the guards it lists, a symbol the trace replaced by a number — a size it
    # specialised — shows only in the code)
    names = ", ".join(f"t{k}" for k in range(len(fakes)))
    body = re.sub(r"L\['(t\d+)'\]", r"\1", code)
    # (``math``: a float input's guard — ``not math.isnan(L['t1'])``)
    sizes_hold = eval(f"lambda {names}: bool({body})", {"math": math})  # noqa: S307 - torch's printed guards
    sizes_hold.__qualname__ = sizes_hold.__name__ = "sizes_hold"
    sizes_hold.guard_code = code  # (``capture.size_guards`` folds it into the entry's other size conditions)
    return sizes_hold


def _fixed_numbers(gm, fakes, env) -> list[str]:
    """The inputs (named by their sources) that the trace replaced by their values: floats, and ints past
    int32 — torch stores some ints it fixes through 32 bits (``torch.tensor`` of a SymInt, kept symbolic
    by ``tensor_data``; any other such path would bake in a wrapped constant, right only for small values)."""
    import torch

    names = [n.meta.get("source", n.name) for n in gm.graph.nodes if n.op == "placeholder"]
    fixed = []
    for name, f in zip(names, fakes):
        if isinstance(f, torch.SymFloat) and env.replace(f.node.expr).is_number:
            fixed.append(str(name))
        elif isinstance(f, torch.SymInt) and env.replace(f.node.expr).is_number and \
                not -2**31 <= int(env.replace(f.node.expr)) < 2**31:
            fixed.append(str(name))
    return fixed


@contextlib.contextmanager
def floats_kept(example_inputs):
    """While AOTAutograd traces a graph over ``example_inputs``: where they hold SymFloats, without torch's
    pass that turns ops on them into ops on tensors (``tensorify_python_scalars``, made for Dynamo's
    floats passed as tensors): it would fix to its traced value every float that reaches an op it does
    not turn (``clamp``, ``pow``), and make the others 0-d float32 tensors, where our code generator takes
    each as the number it is. (Swapped out of AOTAutograd's module while the caller holds the lock; its
    on/off switch is read once per process, so it cannot be used.)"""
    import torch

    try:
        from torch._functorch._aot_autograd import graph_compile
    except ImportError:  # (a torch without the pass)
        graph_compile = None
    apply = getattr(graph_compile, _TENSORIFY, None)
    if apply is None or not any(isinstance(x, torch.SymFloat) for x in example_inputs):
        yield
        return
    setattr(graph_compile, _TENSORIFY, _leave_floats)
    try:
        yield
    finally:
        setattr(graph_compile, _TENSORIFY, apply)


_TENSORIFY = "_apply_tensorify_python_scalars"


def _leave_floats(module) -> None:
    """(AOTAutograd's tensorify pass, left out)"""


def is_symbolic_backend(name_or_fn, unbacked=False, floats=False) -> bool:
    return isinstance(name_or_fn, str) and name_or_fn in (UNBACKED_BACKENDS if unbacked else SYMBOLIC_BACKENDS) \
        and (not floats or name_or_fn in FLOAT_BACKENDS)
def note_captured(name_or_fn, gm, reason: str) -> None:
    """Say why a graph given to our own backend ("magpy") runs as captured, in our codegen's reports
    (other backends report as they do)."""
    if name_or_fn == "magpy":
        from ..codegen import record_fallback

        record_fallback(gm, reason)
