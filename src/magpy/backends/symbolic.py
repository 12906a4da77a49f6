"""Graphs with symbolic sizes, handed to a compiling backend once for every size.

A capture whose input tensors have symbolic dims (``dynamic_dims``, ``magpy.mark_dynamic``) gives a graph
that reads those sizes itself. The backend gets, as ``torch.compile``'s backends do, fake tensors whose
symbolic dims are SymInts of one ShapeEnv; what the backend's tracing relied on about them (``s0 == s1``
where two inputs broadcast, ``s0 % 4 == 0`` where a view needed it) is recorded there, and comes back as
one Python expression over the inputs' sizes that the entry's guard checks.
"""
from __future__ import annotations

from typing import Callable, Optional



#: backends known to compile from fake inputs with symbolic sizes (others run such graphs as captured)
SYMBOLIC_BACKENDS = ("magpy", "inductor")
#: … and those of them that also take sizes made from data (``nonzero``: unbacked sizes)
UNBACKED_BACKENDS = ("magpy", "inductor")


def fake_inputs(examples, dims, unbacked=False):
    """Fake tensors like ``examples``, each symbolic along its ``dims`` (a set per input), and SymInts for
    its ints, in one new ShapeEnv; (fakes, shape_env)."""
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
        sizes = [DimDynamic.DYNAMIC if d in symbolic else DimDynamic.STATIC for d in range(t.dim())]
        fakes.append(mode.from_tensor(t, symbolic_context=StatelessSymbolicContext(dynamic_sizes=sizes),
                                      source=LocalSource(f"in{k}")))
    return fakes, env


def compile_symbolic(backend: Callable, gm, examples, dims, unbacked=False) -> tuple[Callable, Optional[Callable]]:
    """``backend`` applied to ``gm`` over fake inputs symbolic along ``dims``; (the compiled callable, a
    check of the relations it relied on — ``check(*inputs) -> bool`` — or None when it relied on none
    beyond what the tensor guards state). ``unbacked``: the graph makes sizes from data (``nonzero``):
    sizes no input has, which the backend takes as they come on each run."""
    fakes, env = fake_inputs(examples, dims, unbacked)
    compiled = backend(gm, fakes)
    code = env.produce_guards_expression(fakes, ignore_static=True)
    return compiled, _size_check(code, env, fakes) if code and code != "True" else None


def _size_check(code: str, env, fakes) -> Optional[Callable]:
    """``code`` (over ``L['t0']``, ``L['t1']`` …, the inputs in order) as a function of the inputs."""
    # (always checked: besides the guards it lists, a symbol the trace replaced by a number — a size it
    # specialised — shows only in the code)
    relied = [str(g.expr) for g in env.guards if getattr(g.expr, "free_symbols", None)]
    checked = compile(code, "<magpy size guard>", "eval")
    names = [f"t{k}" for k in range(len(fakes))]

    def sizes_hold(*inputs):
        return bool(eval(checked, {"L": dict(zip(names, inputs))}))  # noqa: S307 - our own generated code

    sizes_hold.__qualname__ = sizes_hold.__name__ = "sizes_hold"
    sizes_hold.relations = relied  # (for explanations)
    return sizes_hold


def is_symbolic_backend(name_or_fn, unbacked=False) -> bool:
    return isinstance(name_or_fn, str) and name_or_fn in (UNBACKED_BACKENDS if unbacked else SYMBOLIC_BACKENDS)


def note_captured(name_or_fn, gm, reason: str) -> None:
    """Say why a graph given to our own backend ("magpy") runs as captured, in our codegen's reports
    (other backends report as they do)."""
    if name_or_fn == "magpy":
        from ..codegen import record_fallback

        record_fallback(gm, reason)
