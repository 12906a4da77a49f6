"""Differential fuzzing of capture: a compiled program leaves exactly what eager leaves.

Each example is a ``capture_programs.Case``: a program, the changes made to its state from outside
between calls (torch's global state and the aliasing of the input views included), how the compiled
function is bound and its backend. Two worlds are built from the same source (eager and compiled: each
its own module globals, closure cells, state object and inputs); both make the same calls, and after
every call must agree on the returned value, the exception raised (type, and message unless torch
raised it), the printed output, the complete state: the state object, the globals, the class attribute,
the cells and the inputs (through their base), compared deeply, aliasing, dtypes and leaves' gradients
included, and torch's global state. Whatever global state a check changes is restored after it.
Nothing is said of how well it was captured: only that it is right.

Programs the fuzzer once found wrong are kept in ``FOUND`` and run as tests of their own. Budget:
``MAGPY_FUZZ_EXAMPLES`` examples (default 50); ``python -m fuzz capture --minutes N`` runs longer.
"""
import collections
import contextlib
import gc
import io
import os
import random
import sys
import types
import warnings

import pytest

torch = pytest.importorskip("torch")

from hypothesis import HealthCheck, Phase, given, settings, strategies as st  # noqa: E402

from capture_compare import same  # noqa: E402
from capture_families import views  # noqa: E402
from capture_programs import ALL_FAMILIES, Case, cases  # noqa: E402

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


def new_state(module):
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
    s.cnt = {"steps": 0, "lr": 1.0}
    s.obj = module["Obj"](3)
    s.memo = {}     # id -> the object itself (kept alive: no id is reused while the check runs)
    s.ids = []
    s.log = []
    s.srt = [0.5, 2.0, 3.5]
    s.heap = [5, 4, 3]
    s.hist = []
    s.win = collections.deque([2, 5], maxlen=3)
    s.recent = collections.deque()
    s.step = 0
    return s


class Call:
    """How the harness makes a call's inputs; the changes between calls may set ``views``."""

    def __init__(self):
        self.views = "disjoint"
        self.scale = 1.0    # of x's values: larger ones reach past the ends of indices


_HIGHER_ORDER_MODULES = []


class World:
    """One side: its own module (globals), program and cells, state, and every input it was given
    (kept alive, so that ids stay unique)."""

    def __init__(self, case, compiled):
        import magpy
        compiles = []

        def compile_(fn):
            compiles.append(magpy.compile(fn, backend=case.backend))
            return compiles[-1]

        source = case.source()
        self.globals = {"__name__": "fuzzed_capture"}
        if "torch.cond(" in source or "scan(" in source:
            # Eager compiles these operators' calls with Dynamo, which imports the module a function comes from
            # and guards its globals through it: each such program gets a module of its own, importable, kept
            # for the process's life (one name for all had a scan read a GT of two programs before).
            module = types.ModuleType(f"fuzzed_capture_{len(_HIGHER_ORDER_MODULES)}")
            sys.modules[module.__name__] = module
            _HIGHER_ORDER_MODULES.append(module)
            self.globals = module.__dict__
        self.globals["COMPILE"] = compile_ if compiled else (lambda fn: fn)
        if compiled:
            magpy.reset()
        exec(compile(source, "<fuzzed capture program>", "exec"), self.globals)
        self.program, self.cells = self.globals["make"]()
        self.compiles = compiles
        self.state = new_state(self.globals)
        self.how = Call()
        self.inputs = []

    def call(self, k):
        """Call ``k``: ``x`` (rows by ``SIZES``) and the views ``a``, ``b`` of a new base, as ``how`` says."""
        torch.manual_seed(k)
        random.seed(k)
        x = torch.randn(SIZES[k % len(SIZES)], 3) if SIZES else torch.randn(3, dtype=torch.float32)
        x = x * self.how.scale
        base = torch.arange(6, dtype=torch.float32) * 0.5 - 1
        a, b = views(base, self.how.views)
        self.inputs.append((x, base, a, b))
        out = io.StringIO()
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                result, error = self.program(self.state, x, a, b), None
            except Exception as exc:  # noqa: BLE001 - the program's own error is compared
                result, error = None, exc
        return result, error, out.getvalue()

    def everything(self):
        g = {k: v for k, v in self.globals.items() if k in ("GL", "GD", "GN", "GT", "GC", "GO")}
        x, base, a, b = self.inputs[-1]
        return {"state": self.state, "globals": g, "class": vars(self.globals["Obj"]).get("count"),
                "cells": self.cells(), "inputs": {"x": x, "base": base, "a": a, "b": b},
                "generators": (torch.get_rng_state(), random.getstate())}

    @property
    def stats(self):
        return self.compiles[0].stats


def between(change, world):
    exec(change, {"st": world.state, "g": world.globals, "torch": torch, "call": world.how})


def applied(change, world):
    """``between``; the exception the change raised, or None."""
    try:
        between(change, world)
    except Exception as exc:  # noqa: BLE001 - compared across the two sides
        return exc
    return None


#: torch's process-wide state a program or a change between calls may set: (name, read, write)
GLOBAL_STATE = (
    ("default dtype", torch.get_default_dtype, torch.set_default_dtype),
    ("grad mode", torch.is_grad_enabled, torch.set_grad_enabled),
    ("deterministic", torch.are_deterministic_algorithms_enabled, torch.use_deterministic_algorithms),
    ("matmul precision", torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
    ("autocast", lambda: torch.is_autocast_enabled("cpu"), lambda on: torch.set_autocast_enabled("cpu", on)),
    ("autocast dtype", lambda: torch.get_autocast_dtype("cpu"), lambda t: torch.set_autocast_dtype("cpu", t)),
    # (read only: what a context or a guard the program entered leaves behind if it is not undone in time)
    ("functorch layers", torch._C._functorch.get_dynamic_layer_stack_depth, None),
    ("dispatch keys included", lambda: str(torch._C._dispatch_tls_local_include_set()), None),
    ("dispatch keys excluded", lambda: str(torch._C._dispatch_tls_local_exclude_set()), None),
    ("torch-function modes", torch._C._len_torch_function_stack, None),
)


def global_state():
    return {name: read() for name, read, _ in GLOBAL_STATE}


def set_global_state(values):
    for name, _, write in GLOBAL_STATE:
        if write is not None:
            write(values[name])


@contextlib.contextmanager
def global_state_kept():
    """Whatever a program and its changes do to torch's global state is undone after it."""
    saved = global_state()
    try:
        yield
    finally:
        set_global_state(saved)


#: exception types torch raises for bad values (indices, divisors, sizes): only the type is compared (a
#: generated kernel words the same failure its own way)
TYPE_ONLY = (RuntimeError, IndexError)


def same_error(want, got, where):
    """The same exception type, and the same message unless torch words it (``TYPE_ONLY``)."""
    assert type(got) is type(want), f"{where}: raised {got!r}, eager {want!r}"
    if not isinstance(want, TYPE_ONLY):
        assert str(got) == str(want), f"{where}: raised {got!r}, eager {want!r}"


def check(case):
    """Run ``case`` eagerly and compiled, call by call; raise AssertionError at the first difference.
    Gives the compiled side's Stats."""
    exact = case.backend == "eager"    # (generated kernels may round differently)
    with global_state_kept():
        eager, compiled = World(case, False), World(case, True)
        for k, change in enumerate(case.changes):
            # (a drawn change may not apply: an item of a list an earlier change emptied; it fails alike on
            # both sides, and the calls go on)
            refused = [applied(change, eager), applied(change, compiled)]
            if refused != [None, None]:
                same_error(*refused, f"the change before call {k + 1}")
            before = global_state()
            want = eager.call(k)
            want_global = global_state()
            set_global_state(before)
            got = compiled.call(k)
            where = f"call {k + 1}"
            if want[1] is not None or got[1] is not None:
                same_error(want[1], got[1], where)
                # (an exception kept here holds, through its traceback, the frame that keeps it: a cycle on
                # either side, freed when the collector runs; what the program's objects did when they
                # died is compared once it has)
                gc.collect()
            else:
                same(want[0], got[0], f"{where}: result", exact)
            assert got[2] == want[2], f"{where}: printed {got[2]!r}, eager {want[2]!r}"
            same(eager.everything(), compiled.everything(), f"{where}: after", exact)
            same(want_global, global_state(), f"{where}: torch's global state")
        stats = compiled.stats
        if case.most_compiles is not None:  # (a steady state: not one entry per call)
            assert stats.compiles <= case.most_compiles, \
                f"compiled {stats.compiles} times over {len(case.changes)} calls, not a steady state: {stats}"
        return stats


#: (the families share the examples budget: each test names the family that went wrong)
FAMILY_SETTINGS = settings(SETTINGS, max_examples=max(3, SETTINGS.max_examples // len(ALL_FAMILIES)))


@pytest.mark.parametrize("family", sorted(ALL_FAMILIES))
@FAMILY_SETTINGS
@given(data=st.data())
def test_compiled_programs_leave_what_eager_leaves(family, data):
    check(data.draw(cases(CALLS, [family], ["function"])))


@FAMILY_SETTINGS
@given(cases(CALLS, ["containers"], ["method", "module", "bound"]))
def test_compiled_methods_bind_as_functions(case):
    check(case)


#: programs the fuzzer found wrong, kept as tests: (statements, changes between calls)
FOUND = [
    Case(["GL.append(x * 1)", "if GL: GL[-1] = acc * 2", "acc = acc + GL[0]"], ["pass"] * CALLS),
    Case(["st.alias.append(x * 2)", "if len(st.tl) > 1: acc = acc + st.tl.pop(0)"], ["pass"] * CALLS),
    # a lookup that failed after the list grew was guarded on the entry's length (a wrong answer once the
    # list grown through another path reached the index)
    Case(["st.alias.append(x * 1)", "try:\n    acc = acc + st.nest[0][5]\nexcept IndexError:\n    acc = acc - 1"],
         ["pass", "pass", "st.nest[0] = st.tl", "pass"]),
    # a second graph break, inside the first one's resume function: its own stack parameters were taken
    # for locals of the original (the rewrite failed, raising into the program's call)
    Case(["if len(st.tl) > 1: print(acc.sum())", "if st.n > 1: print(acc)"],
         ["st.n += 1", "pass", "st.nest[0] = st.tl", "st.alias = st.tl"]),
    # (found by the families; wrong on the code they were found on, one per family)
    # a value the call wrote, read back through anything but its key or attribute, was the first call's
    Case(["GC['steps'] = GC['steps'] - 2", "acc = acc + sum(v for _, v in GC.items())"], ["pass"] * CALLS),
    Case(["type(st.obj).count += 1", "acc = acc + st.obj.count"], ["pass"] * CALLS),
    Case(["st.obj.n += 1", "acc = acc + copy.copy(st.obj).n"], ["pass"] * CALLS),
    # a write through one input view, read through another that overlaps it only from the third call on
    Case(["b.clamp_(min=0)", "acc = acc + a.sum()"], ["pass", "pass", "call.views = 'overlap'", "pass"],
         backend="magpy"),
    # an id used as a key: the first call's id replayed
    Case(["st.memo[hash(x)] = x"], ["pass"] * CALLS),
    # the text of a tensor's values: the first call's
    Case(["st.log.append(repr(x.max()))"], ["pass"] * CALLS),
    Case(["acc = acc + float(format(x.sum(), '.2f'))"], ["pass"] * CALLS),
    # a gradient retained in the call and read after its backward
    Case(["h = st.mod.lin(acc.detach())\nh.retain_grad()\nh.pow(2).sum().backward()\nacc = acc + h.grad"],
         ["pass"] * CALLS, backend="magpy"),
    # torch's global state changed between calls
    Case(["acc = acc + torch.zeros(3)"], ["pass", "pass", "torch.set_default_dtype(torch.float64)", "pass"],
         backend="magpy"),
    Case(["st.keep = st.mod.lin(x)\nst.keep.retain_grad()\nst.keep.sum().backward()"],
         ["pass", "pass", "pass", "torch.set_grad_enabled(False)"]),
    Case(["acc = acc + (torch.get_float32_matmul_precision() == 'highest')"],
         ["pass", "pass", "torch.set_float32_matmul_precision('medium')", "pass"]),
    # values past the ends: eager raises, the generated kernel did not
    Case(["acc = acc + torch.arange(3) // (x > 0).long()"], ["pass"] * CALLS, backend="magpy"),
    Case(["acc = acc + acc[(x * 2).long()]"], ["pass", "pass", "call.scale = 3.0", "pass"], backend="magpy"),
    # a compiled method, decorated: bound like a function
    Case(["acc = acc + 1"], ["pass"] * CALLS, binding="method"),
    Case(["acc = acc + 1"], ["pass"] * CALLS, binding="module"),
    # (found on the fixed code, then fixed) an item of an object's __dict__ written, read as its attribute
    Case(["vars(GO)['n'] += 1", "acc = acc + getattr(GO, 'n')"], ["pass", "g['GO'].n = 5", "pass", "pass"]),
    Case(["GO.__dict__['n'] = 1", "acc = acc + copy.copy(GO).n", "vars(GO)['n'] += 1"], ["pass"] * CALLS,
         backend="magpy"),
    # a Python int past int64 taken by the graph as an input
    Case(["acc = acc + torch.tensor(1 << (21 * st.n)).float()", "acc = acc * (1 << (30 * st.n))"],
         ["pass", "pass", "st.n += 1", "pass"], backend="magpy"),
    # one element of an input view written: the C++ loops split at that index, and the second part read the
    # first part's stored value for the input's old elements (a replayed call filled the whole view)
    Case(["b += 2", "a.add_(x)", "acc = acc + a * b", "a.sub_(b)", "acc = acc + a * b", "b[0] = acc[0]"],
         ["call.views = 'same_region'", "call.views = 'disjoint'", "call.views = 'same'", "call.views = 'disjoint'"],
         backend="magpy"),
    # an expanded view (elements sharing memory) written in place
    Case(["b.mul_(1)", "a[0] = acc[0]", "acc = acc + a * b", "b.clamp_(min=0)"],
         ["call.views = 'separate'", "call.views = 'same_region'", "call.views = 'expanded'", "pass"],
         backend="magpy"),
]


@pytest.mark.parametrize("case", FOUND, ids=lambda case: f"{case.binding}-{case.body[-1][:40]}")
def test_found_program(case):
    check(case)
