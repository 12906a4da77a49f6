"""Differential fuzzing of capture: a compiled program leaves exactly what eager leaves.

Each example is a program from ``capture_programs.programs()`` and the changes made to its state from
outside between calls. Two worlds are built from the same source (eager and compiled: each its own
module globals, closure cells and state object); both make the same calls, and after every call must
agree on the returned value, the exception raised (type and message), the printed output, and the
complete state: the state object, the globals and the cells, compared deeply, aliasing included (which
containers are the same object). Nothing is said of how well it was captured: only that it is right.

Programs the fuzzer once found wrong are kept in ``FOUND`` and run as tests of their own. Budget:
``MAGPY_FUZZ_EXAMPLES`` examples (default 50); ``python -m fuzz capture --minutes N`` runs longer.
"""
import collections
import contextlib
import io
import os
import types
import warnings

import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

from capture_programs import programs, betweens, render  # noqa: E402

CALLS = 4
#: ``MAGPY_FUZZ_SIZES=1``: each call's ``x`` has another number of rows (a batch), so that the compiled side
#: goes through automatic dynamic shapes (a static entry, then a symbolic one)
SIZES = (2, 5, 3, 7) if os.environ.get("MAGPY_FUZZ_SIZES") == "1" else ()

_PHASES = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
if os.environ.get("MAGPY_FUZZ_SHRINK") == "1":
    _PHASES.append(Phase.shrink)

SETTINGS = settings(max_examples=int(os.environ.get("MAGPY_FUZZ_EXAMPLES", "50")), deadline=None,
                    phases=_PHASES, suppress_health_check=list(HealthCheck), print_blob=True)


class State:
    """What a program works on besides its globals and cells."""


def new_state():
    s = State()
    s.tl = [torch.full((3,), 1.5), torch.full((3,), -0.5)]
    s.alias = s.tl
    s.il = [3, 1, 2]
    s.nest = [[torch.ones(3)], [5, 4]]
    s.td = {"a": torch.ones(3), "b": torch.full((3,), 2.0)}
    s.od = collections.OrderedDict(a=torch.ones(3), b=torch.zeros(3), c=torch.full((3,), 4.0))
    s.iset = {1, 2}
    s.tq = collections.deque([torch.ones(3)], maxlen=3)
    s.n = 1
    s.t = torch.zeros(3)
    torch.manual_seed(7)
    s.mod = torch.nn.Module()
    s.mod.lin = torch.nn.Linear(3, 3)
    s.mod.register_buffer("buf", torch.zeros(3))
    s.mod.count = 1
    s.mod.hist = [torch.ones(3)]
    return s


class World:
    """One side: its own module (globals), program and cells, and state."""

    def __init__(self, source, compiled):
        import magpy
        self.globals = {"__name__": "fuzzed_capture"}
        exec(compile(source, "<fuzzed capture program>", "exec"), self.globals)
        self.program, self.cells = self.globals["make"]()
        if compiled:
            magpy.reset()
            self.program = magpy.compile(self.program, backend="eager")
        self.state = new_state()

    def call(self, x):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                result, error = self.program(self.state, x), None
            except Exception as exc:  # noqa: BLE001 - the program's own error is compared
                result, error = None, exc
        return result, error, out.getvalue()

    def everything(self):
        g = {k: v for k, v in self.globals.items() if k in ("GL", "GD", "GN", "GT")}
        return {"state": self.state, "globals": g, "cells": self.cells()}


def between(change, world):
    exec(change, {"st": world.state, "g": world.globals, "torch": torch})


def same(a, b, path, ids_a, ids_b):
    """Deep comparison; ``ids_*`` number the mutable objects in order of first sight (aliasing)."""
    if isinstance(a, torch.nn.Module):  # (its state: parameters, buffers, attributes, children)
        same(_module_state(a), _module_state(b), path, ids_a, ids_b)
        return
    if isinstance(a, (list, dict, set, collections.deque, State)) or isinstance(a, torch.Tensor):
        first_a, first_b = ids_a.setdefault(id(a), len(ids_a)), ids_b.setdefault(id(b), len(ids_b))
        assert first_a == first_b, f"{path}: aliasing differs (compiled shares it differently)"
        if first_a != len(ids_a) - 1:
            return  # seen before, compared there
    assert type(a) is type(b), f"{path}: {type(b).__name__} vs eager {type(a).__name__}"
    if isinstance(a, torch.Tensor):
        assert a.shape == b.shape and torch.equal(a.detach(), b.detach()), f"{path}: {b} vs eager {a}"
        assert a.requires_grad == b.requires_grad, f"{path}: requires_grad differs"
    elif isinstance(a, (list, tuple, collections.deque)):
        assert len(a) == len(b), f"{path}: length {len(b)} vs eager {len(a)}: {b!r} vs {a!r}"
        if isinstance(a, collections.deque):
            assert a.maxlen == b.maxlen, f"{path}: maxlen"
        for k, (u, v) in enumerate(zip(a, b)):
            same(u, v, f"{path}[{k}]", ids_a, ids_b)
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys {list(b)} vs eager {list(a)}"
        for k in a:
            same(a[k], b[k], f"{path}[{k!r}]", ids_a, ids_b)
    elif isinstance(a, State):
        same(vars(a), vars(b), f"{path}.__dict__", ids_a, ids_b)
    else:
        assert a == b, f"{path}: {b!r} vs eager {a!r}"


def _module_state(m):
    return {"state": dict(m.state_dict(keep_vars=True)), "training": m.training,
            "attributes": {k: v for k, v in vars(m).items() if not k.startswith("_") and k != "training"},
            "children": dict(m._modules)}


def check(source, changes):
    eager, compiled = World(source, False), World(source, True)
    for k, change in enumerate(changes):
        between(change, eager)
        between(change, compiled)
        torch.manual_seed(k)
        x = torch.randn(SIZES[k % len(SIZES)], 3) if SIZES else torch.randn(3)
        want, got = eager.call(x.clone()), compiled.call(x.clone())
        where = f"call {k + 1}"
        if want[1] is not None or got[1] is not None:
            assert type(got[1]) is type(want[1]) and str(got[1]) == str(want[1]), \
                f"{where}: raised {got[1]!r}, eager {want[1]!r}"
        else:
            same(want[0], got[0], f"{where}: result", {}, {})
        assert got[2] == want[2], f"{where}: printed {got[2]!r}, eager {want[2]!r}"
        same(eager.everything(), compiled.everything(), f"{where}: after", {}, {})
    return compiled.program.stats


@SETTINGS
@given(programs(), betweens(CALLS))
def test_compiled_programs_leave_what_eager_leaves(source, changes):
    check(source, changes)


#: programs the fuzzer found wrong, kept as tests: (statements, changes between calls)
FOUND = [
    (["GL.append(x * 1)", "if GL: GL[-1] = acc * 2", "acc = acc + GL[0]"], ["pass"] * CALLS),
    (["st.alias.append(x * 2)", "if len(st.tl) > 1: acc = acc + st.tl.pop(0)"], ["pass"] * CALLS),
    # a lookup that failed after the list grew was guarded on the entry's length (a wrong answer once the
    # list grown through another path reached the index)
    (["st.alias.append(x * 1)", "try:\n    acc = acc + st.nest[0][5]\nexcept IndexError:\n    acc = acc - 1"],
     ["pass", "pass", "st.nest[0] = st.tl", "pass"]),
    # a second graph break, inside the first one's resume function: its own stack parameters were taken
    # for locals of the original (the rewrite failed, raising into the program's call)
    (["if len(st.tl) > 1: print(acc.sum())", "if st.n > 1: print(acc)"],
     ["st.n += 1", "pass", "st.nest[0] = st.tl", "st.alias = st.tl"]),
]


@pytest.mark.parametrize("body, changes", FOUND)
def test_found_program(body, changes):
    check(render(body), changes)
