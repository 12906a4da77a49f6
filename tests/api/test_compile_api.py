"""The public API of magpy: compile (functions, methods, modules, decorator form), stats, fullgraph,
the one fallback warning, explain, trace, reset, the recompile limit and backends."""
import copy
import inspect
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn

import magpy


def line_of(fn, text):
    """The line number in this file of the first line of ``fn`` containing ``text``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


def double_plus_one(x):
    return x * 2 + 1


def tensor_branch(x):
    total = np.zeros(1)
    total[0] = x.sum()  # tensor data written into a numpy array: a graph break
    if total[0] > 0:
        return x * 2
    return x - 1


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.register_buffer("seen", torch.zeros(()))

    def forward(self, x):
        y = self.fc(x)
        return y * 0.5 if self.training else y.relu()


# ---- compile --------------------------------------------------------------------------------------------

def test_compile_counts_calls_compiles_and_cache_hits():
    f = magpy.compile(double_plus_one, backend="eager")
    x = torch.randn(3)
    for _ in range(3):
        assert torch.equal(f(x), double_plus_one(x))
    s = f.stats
    assert (s.calls, s.compiles, s.cache_hits, s.graphs, s.fallbacks, s.graph_breaks) == (3, 1, 2, 1, 0, 0)
    assert isinstance(s, magpy.Stats)


def test_compile_as_a_decorator_keeps_the_name():
    @magpy.compile(backend="eager")
    def scaled(x, k=3):
        return x * k

    x = torch.randn(2)
    assert torch.equal(scaled(x), x * 3)
    assert scaled.__name__ == "scaled"


def test_compile_a_bound_method():
    class Holder:
        def __init__(self):
            self.w = torch.randn(3)

        def apply(self, x):
            return x * self.w

    h = Holder()
    f = magpy.compile(h.apply, backend="eager")
    x = torch.randn(3)
    for _ in range(2):
        assert torch.equal(f(x), h.apply(x))
    assert f.stats.cache_hits == 1


def test_decorated_methods_bind_like_functions():
    # ``@magpy.compile`` on a method (a module's forward, a plain class's method) is a descriptor, as the
    # function is: the instance becomes the first argument, each instance sees its own state
    class Scale(nn.Module):
        def __init__(self, k):
            super().__init__()
            self.k = nn.Parameter(torch.full((3,), float(k)))

        @magpy.compile
        def forward(self, x):
            return x * self.k + 1

    class Shift:
        def __init__(self, k):
            self.k = k

        @magpy.compile(backend="eager")
        def apply(self, x, *, twice=False):
            return x + (2 * self.k if twice else self.k)

    x = torch.randn(3)
    modules, holders = [Scale(2), Scale(3)], [Shift(1), Shift(5)]
    for _ in range(3):
        for m in modules:
            assert torch.allclose(m(x), x * m.k + 1)
        for h in holders:
            assert torch.equal(h.apply(x), x + h.k)
            assert torch.equal(h.apply(x, twice=True), x + 2 * h.k)
    assert Scale.forward.stats.cache_hits >= 4
    assert Scale.__dict__["forward"] is Scale.forward  # (looked up on the class: the compiled function)
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        modules[0].forward()


def test_compile_rejects_what_it_cannot_compile():
    with pytest.raises(TypeError):
        magpy.compile(42)


def test_compiled_module_shares_the_originals_state():
    m = Small()
    cm = magpy.compile(m, backend="eager")
    assert isinstance(cm, nn.Module) and isinstance(cm, Small)
    assert all(a is b for a, b in zip(cm.parameters(), m.parameters()))
    assert cm.fc is m.fc
    with torch.no_grad():
        cm.fc.weight.fill_(0.5)
    assert torch.equal(m.fc.weight, torch.full((3, 3), 0.5))
    assert cm.state_dict().keys() == m.state_dict().keys()
    cm.eval()
    assert not m.training and not m.fc.training
    cm.train()
    assert m.training
    cm.requires_grad_(False)
    assert not m.fc.weight.requires_grad


def test_compiled_module_train_eval_switch_is_honoured():
    m = Small()
    cm = magpy.compile(m, backend="eager")
    x = torch.randn(2, 3)
    for mode in (True, False, True, False):
        cm.train(mode)
        assert torch.equal(cm(x), m(x))
    stats = cm._magpy_compiled.stats
    assert stats.calls == 4 and stats.fallbacks == 0


def test_compiled_module_state_dict_round_trip():
    m = Small()
    cm = magpy.compile(m, backend="eager")
    other = Small()
    other.load_state_dict(cm.state_dict())
    x = torch.randn(2, 3)
    assert torch.equal(other(x), cm(x))


def test_compiled_module_deepcopy_is_independent():
    m = Small()
    cm = magpy.compile(m, backend="eager")
    x = torch.randn(2, 3)
    cm(x)
    clone = copy.deepcopy(m)
    with torch.no_grad():
        clone.fc.weight.zero_()
    assert torch.equal(cm(x), m(x))


# ---- fullgraph and the fallback warning -------------------------------------------------------------------

def test_fullgraph_raises_graph_break_error_naming_the_line():
    f = magpy.compile(tensor_branch, backend="eager", fullgraph=True)
    with pytest.raises(magpy.GraphBreakError) as info:
        f(torch.ones(3))
    err = info.value
    assert err.reason
    assert err.filename == __file__
    assert err.lineno == line_of(tensor_branch, "total[0] = x.sum()")


def test_unsupported_code_warns_once_and_stays_correct():
    f = magpy.compile(tensor_branch, backend="eager")
    inputs = [torch.ones(3), -torch.ones(3), torch.ones(3) * 2]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for x in inputs:
            assert torch.equal(f(x), tensor_branch(x))
    mine = [w for w in caught if "magpy" in str(w.message)]
    if f.stats.fallbacks:
        assert len(mine) == 1
        text = str(mine[0].message)
        assert "tensor_branch" in text
        assert f"{__file__}:{line_of(tensor_branch, 'total[0] = x.sum()')}" in text
        reason, where = f.stats.reasons[0]
        assert reason in text
    else:
        assert mine == []


def test_graph_break_error_is_a_magpy_error():
    from magpy.errors import MagpyError
    assert issubclass(magpy.GraphBreakError, MagpyError)


# ---- explain / trace / reset ----------------------------------------------------------------------------------

def test_explain_runs_the_program_exactly_once():
    calls = []

    def fn(x, n):
        calls.append(n)
        return (x + n).relu()

    magpy.explain(fn, torch.randn(3), 2)
    assert calls == [2]


def test_explain_reports_graph_guards_and_ops():
    def fn(x, n):
        return (x + n).relu()

    report = magpy.explain(fn, torch.randn(3), 2)
    assert report.graph_count == 1 and report.graph_break_count == 0
    assert report.op_count >= 2
    assert any("x" in g for g in report.guards)
    assert isinstance(report.graphs[0], torch.fx.GraphModule)
    assert "graph" in str(report)


def test_explain_reports_a_break_with_its_line():
    report = magpy.explain(tensor_branch, torch.ones(3))
    assert report.graph_break_count >= 1
    brk = report.breaks[0]
    assert brk.filename == __file__
    assert brk.lineno == line_of(tensor_branch, "total[0] = x.sum()")
    assert "break" in str(report)


def test_explain_reraises_the_programs_exception():
    def fn(x):
        raise ValueError("nope")

    with pytest.raises(ValueError, match="nope"):
        magpy.explain(fn, torch.ones(1))


def test_trace_runs_in_the_vm_every_call():
    traced = magpy.trace(double_plus_one)
    x = torch.randn(3)
    for _ in range(2):
        assert torch.equal(traced(x), double_plus_one(x))
    assert traced.last is not None


def test_interp_run_returns_and_raises_like_the_function():
    from magpy import interp
    assert interp.run(lambda a, b=2: a * b, 4) == 8
    with pytest.raises(ZeroDivisionError):
        interp.run(lambda: 1 / 0)


def test_reset_drops_compiled_entries():
    f = magpy.compile(double_plus_one, backend="eager")
    x = torch.randn(3)
    f(x)
    f(x)
    magpy.reset()
    assert torch.equal(f(x), double_plus_one(x))
    assert f.stats.compiles == 2 and f.stats.cache_hits == 1


def test_recompile_limit_falls_back_to_eager_with_one_warning():
    def fn(x, k):
        for _ in range(k):   # (an iteration count: each value another graph)
            x = x * 2
        return x

    f = magpy.compile(fn, backend="eager")
    x = torch.randn(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k in range(12):
            assert torch.equal(f(x, k), fn(x, k))
    assert f.stats.compiles == 8
    assert f.stats.fallbacks >= 1
    assert len([w for w in caught if "recompile limit" in str(w.message)]) == 1


def test_graph_break_marker_is_a_no_op_eagerly():
    def fn(x):
        y = x + 1
        magpy.graph_break()
        return y * 2

    x = torch.randn(3)
    assert torch.equal(fn(x), (x + 1) * 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f = magpy.compile(fn, backend="eager")
        for _ in range(2):
            assert torch.equal(f(x), (x + 1) * 2)


# ---- backends -------------------------------------------------------------------------------------------------

def test_a_callable_backend_receives_the_graph_and_example_inputs():
    seen = []

    def backend(gm, example_inputs):
        seen.append((gm, [tuple(t.shape) for t in example_inputs]))
        return gm.forward

    f = magpy.compile(double_plus_one, backend=backend)
    x = torch.randn(4)
    for _ in range(2):
        assert torch.equal(f(x), double_plus_one(x))
    assert len(seen) == 1
    assert isinstance(seen[0][0], torch.fx.GraphModule) and seen[0][1] == [(4,)]


def test_registered_backend_by_name():
    used = []

    def counting(gm, example_inputs):
        used.append(1)
        return gm.forward

    magpy.register_backend("counting_for_api_test", counting)
    f = magpy.compile(double_plus_one, backend="counting_for_api_test")
    x = torch.randn(2)
    assert torch.equal(f(x), double_plus_one(x))
    assert used == [1]


def test_magpy_backend_matches_eager():
    pytest.importorskip("magpy.codegen")
    try:
        from magpy import backends
        backends.lookup_backend("magpy")
    except Exception as exc:  # noqa: BLE001 - the codegen backend is optional here
        pytest.skip(f"magpy backend unavailable: {exc}")

    def fn(x, y):
        return torch.relu(x * y + 1).sum(-1)

    f = magpy.compile(fn, backend="magpy")
    for _ in range(3):
        x, y = torch.randn(4, 8), torch.randn(4, 8)
        torch.testing.assert_close(f(x, y), fn(x, y))
    assert f.stats.cache_hits == 2


class BranchOnTensor(nn.Module):
    def forward(self, x):
        total = np.zeros(1)
        total[0] = x.sum()  # tensor data written into a numpy array: a graph break
        if total[0] > 0:
            return x * 2
        return x - 1


@pytest.mark.parametrize("kind", ["function", "module"])
def test_fallback_warning_is_attributed_to_the_callers_line(kind):
    target = tensor_branch if kind == "function" else BranchOnTensor()
    compiled = magpy.compile(target, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(torch.ones(3))  # the call the warning should point at
    stats = compiled.stats if kind == "function" else compiled._magpy_compiled.stats
    mine = [w for w in caught if "magpy" in str(w.message)]
    if not stats.fallbacks:
        pytest.skip("captured without a fallback: nothing to warn about")
    assert len(mine) == 1
    assert mine[0].filename == __file__


def test_deepcopy_of_a_compiled_module_runs_the_copy():
    # EMA / teacher models are made by deep-copying the (compiled) model
    torch.manual_seed(0)  # (a ReLU of random weights can be all zeros: then the check below means nothing)
    m = Small().eval()
    cm = magpy.compile(m, backend="eager")
    x = torch.randn(2, 3)
    assert cm(x).abs().sum() > 0
    twin = copy.deepcopy(cm)
    with torch.no_grad():
        for p in twin.parameters():
            p.zero_()
    assert torch.equal(twin(x), torch.zeros(2, 3))
    # (the original's output may be all zeros too, after relu: its weights are what must be untouched)
    assert cm.fc.weight.abs().sum() > 0 and torch.equal(cm(x), m(x))
