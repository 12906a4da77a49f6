"""``magpy.minify``: the smallest graph on which a backend still gets a call wrong, and a script that shows it.

The method, in four steps:

1. The call, compiled with the backend, against eager (``recording``): ``magpy.testing.check_equivalent``
   over two calls, the backend wrapped so that every graph it is given is kept with the inputs of its
   first run. This says whether there is a fault at all, and of which kind (``check``): "accuracy" (the
   compiled call returns other values, or leaves its arguments otherwise) or "error" (the compiled call
   raises where eager does not, or the backend raises compiling a graph).
2. Each kept graph on its own (``fault.Probe``): compiled by the backend against ``gm(*inputs)`` run
   eagerly. The first graph that shows a fault of the same kind is the one minimized.
3. Delta debugging over its ops (``search.smallest`` over ``subgraph.Cutter``): any subset of the ops is a
   graph whose inputs are the values it reads from outside the subset (their eager values) and whose
   outputs are the ops nothing in the subset reads — so dropping ops truncates the graph (an op becomes
   an output) or turns intermediate values into new inputs. A subset is kept while the backend still
   shows the fault on it (for "error": an exception of the same type). The result is 1-minimal: without
   any one of its ops, the fault is gone.
4. The repro script (``repro``): a standalone program for the minimal graph and its inputs, run once here
   to check that it shows the fault (with seeded inputs first, with every value written out if those do
   not), and written to ``out``.

Known limit: a fault outside the graphs — each captured graph compiled alone agrees with eager, yet the
compiled call differs (a capture or replay fault of MagPy's own, not the backend's) — is not minified: there
is no delta debugging over the function's statements. The result says so (``in_graph`` False, no graph,
no script). Other limits: graphs are compiled with static shapes; a fault that needs the backend's
earlier compiles (a cache, a counter) shows as outside the graph; random ops compare eager and compiled from
the same seed, which a backend with its own random streams does not follow.

(The package is ``magpy.minifier``: ``magpy.minify`` is the function, and a submodule of that name would
take its place as an attribute of ``magpy``.)
"""
from __future__ import annotations

import math
from typing import Optional

from torch import fx

from .fault import CHECKS, Probe, Symptom
from .recording import CallFault, Recorder, call_fault
from .repro import backend_name, render, reproduces, seeds_inputs
from .search import smallest
from .subgraph import Cutter, Subgraph

__all__ = ["minify", "Minified"]


class Minified:
    """What ``magpy.minify`` found.

    ``graph``: the minimal graph (an ``fx.GraphModule``); ``inputs``: its example inputs (tensors);
    ``script``: the source of the repro script; ``path``: where it was written (None: not written);
    ``ops_before``/``ops_after``: ops of the captured graph and of the minimal one; ``symptom``: what the
    backend gets wrong on the minimal graph (the difference, or the exception); ``verified``: the script
    shows the fault when run; ``check``, ``backend`` as asked; ``graph_index``/``graph_count``: which of the
    call's graphs it came from.

    ``in_graph`` is False when the fault is outside the graphs (``graph``, ``script`` and ``path`` are then
    None, ``inputs`` empty, and ``symptom`` says how the whole call differs).
    """

    def __init__(self, check, backend, in_graph, symptom, graph=None, inputs=(), script=None, path=None,
                 ops_before=0, ops_after=0, verified=False, graph_index=0, graph_count=0):
        self.check, self.backend, self.in_graph, self.symptom = check, backend, in_graph, symptom
        self.graph: Optional[fx.GraphModule] = graph
        self.inputs = list(inputs)
        self.script, self.path, self.verified = script, path, verified
        self.ops_before, self.ops_after = ops_before, ops_after
        self.graph_index, self.graph_count = graph_index, graph_count

    def __str__(self):
        head = f"magpy.minify (backend {backend_name(self.backend)}, check {self.check!r})"
        if not self.in_graph:
            return (f"{head}: the fault is outside the graph: {self.symptom}\n"
                    "This is a capture or replay fault, which magpy.minify does not reduce (no delta "
                    "debugging over the function's statements); magpy.explain shows the graphs and guards.")
        lines = [f"{head}: {self.ops_before} op(s) -> {self.ops_after} op(s)"
                 + (f" (graph {self.graph_index + 1} of {self.graph_count})" if self.graph_count > 1 else ""),
                 f"symptom: {self.symptom}",
                 "minimal graph:\n" + self.graph.code.strip(),
                 "inputs: " + ", ".join(_described(t) for t in self.inputs)]
        if self.path is not None:
            lines.append(f"repro script written to {self.path}" +
                         ("" if self.verified else " (it did not show the fault when run here)"))
        elif not self.verified:
            lines.append("the repro script did not show the fault when run here")
        return "\n".join(lines)


def minify(fn, *args, backend="magpy", check="accuracy", out="repro.py", **kwargs) -> Minified:
    """Shrink the call ``fn(*args, **kwargs)``, compiled with ``backend``, to the fewest graph ops on which
    the backend still gets it wrong.

    ``check``: "accuracy" — the compiled call's values differ from eager's (``check_equivalent``'s
    tolerances) — or "error" — it raises where eager does not, or the backend raises compiling one of its
    graphs. ``backend``: a name or a callable ``(gm, example_inputs) -> callable``. ``out``: where to write
    the repro script (None: nowhere). Keyword arguments other than these go to ``fn``.

    Returns a :class:`Minified`. Raises ValueError when the call shows no fault of that kind ("nothing to
    minify: ..."), or for an unknown ``check``; KeyError for an unknown backend name; what ``fn`` raises
    eagerly is compared, not raised.
    """
    from ..backends import lookup_backend

    if check not in CHECKS:
        raise ValueError(f"magpy.minify: check must be one of {', '.join(map(repr, CHECKS))}, not {check!r}")
    compile_with = lookup_backend(backend)
    recorder = Recorder(compile_with)
    fault = call_fault(fn, args, kwargs, recorder)
    if not fault.in_capture and not fault.shows(check):
        raise ValueError(_nothing_to_minify(fault, check))
    graphs = recorder.graphs
    probe = Probe(compile_with, check)
    found = None if fault.in_capture else _faulty_graph(graphs, probe)
    if found is None:
        where = ("the capturing call itself (MagPy's VM, before any backend) differs from eager"
                 if fault.in_capture else f"each of the call's {len(graphs)} graph(s), compiled alone, agrees "
                                          "with eager, yet the compiled call differs")
        return Minified(check, backend, False, f"{where}: {fault}", graph_count=len(graphs))
    index, cutter, symptom = found
    sub, symptom = _minimized(cutter, probe, symptom)
    script, verified = _script(sub, backend, check, symptom)
    return Minified(check, backend, True, symptom.detail, sub.gm, sub.inputs, script, _write(script, out),
                    len(cutter.ops), sub.op_count, verified, index, len(graphs))


def _faulty_graph(graphs: list, probe: Probe) -> Optional[tuple[int, Cutter, Symptom]]:
    """The first of the call's graphs on which the backend shows the fault by itself: (its index, a
    cutter over it, the symptom); None when none does."""
    for index, record in enumerate(graphs):
        try:
            cutter = Cutter(record.gm, record.inputs, record.grad_enabled)
        except Exception:  # noqa: BLE001 - it does not run eagerly on what it was given: no case to cut
            continue
        whole = cutter.subgraph(cutter.ops)
        symptom = probe(whole) if whole is not None and cutter.ops else None
        if symptom is not None:
            return index, cutter, symptom
    return None


def _nothing_to_minify(fault: CallFault, check: str) -> str:
    if fault.found is None and not fault.compile_errors:
        return "nothing to minify: compiled and eager agree on this call"
    if check == "accuracy":
        return (f"nothing to minify with check='accuracy': the compiled call's values agree, but it raised "
                f"({fault}); use check='error'")
    return (f"nothing to minify with check='error': nothing raised where eager did not, but the values "
            f"differ ({fault}); use check='accuracy'")


def _minimized(cutter: Cutter, probe: Probe, symptom: Symptom) -> tuple[Subgraph, Symptom]:
    """The 1-minimal subgraph that still shows ``symptom``'s kind of fault, and its own symptom."""
    found = {}   # ops (by name) -> the symptom their subgraph shows, or None

    def fails(ops):
        key = tuple(n.name for n in ops)
        if key not in found:
            sub = cutter.subgraph(ops)
            shown = probe(sub) if sub is not None else None
            # (for "error", an exception of the same type: not another error a malformed cut provokes)
            found[key] = shown if shown is not None and shown.error_type is symptom.error_type else None
        return found[key] is not None

    ops = smallest(cutter.ops, fails)
    return cutter.subgraph(ops), found.get(tuple(n.name for n in ops), symptom)


def _script(sub: Subgraph, backend, check: str, symptom: Symptom) -> tuple[str, bool]:
    """The repro script and whether it shows the fault: with seeded inputs where they are large, else
    (when those do not show it) with every value written out."""
    title = f"backend {backend_name(backend)} gets this {sub.op_count}-op graph wrong ({check} check):\n" + \
        symptom.detail
    script = render(sub, backend, check, title)
    if reproduces(script):
        return script, True
    if seeds_inputs(sub):
        script = render(sub, backend, check, title, inline_limit=math.inf)
        return script, reproduces(script)
    return script, False


def _write(script: str, out) -> Optional[str]:
    if out is None:
        return None
    with open(out, "w") as f:
        f.write(script)
    return str(out)


def _described(value) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)} stride {tuple(value.stride())}"
    return repr(value)
