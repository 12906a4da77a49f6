"""Graph breaks: a call MagPy cannot keep in one graph is split there, the breaking instruction runs
natively and the rest continues in a compiled resume function. Every program runs a sequence of calls
compiled and eagerly: results, exceptions, printed output (in order) and state must be equal."""
import contextlib
import copy
import io

import pytest
import torch

import magpy


def _run(fn, args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            result, exc = fn(*args), None
        except Exception as e:  # noqa: BLE001
            result, exc = None, e
    return result, exc, out.getvalue()


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and torch.allclose(a, b, equal_nan=True)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(a) is type(b) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def check(fn, calls, compiled=None):
    """Call ``fn`` eagerly and compiled on each argument tuple of ``calls``; return the compiled one."""
    compiled = compiled or magpy.compile(fn)
    for args in calls:
        eager_args, compiled_args = copy.deepcopy(args), copy.deepcopy(args)
        want = _run(fn, eager_args)
        got = _run(compiled, compiled_args)
        assert _same(got[0], want[0]), (got[0], want[0])
        assert type(got[1]) is type(want[1]) and str(got[1]) == str(want[1]), (got[1], want[1])
        assert got[2] == want[2], (got[2], want[2])
        assert _same(compiled_args, eager_args)
    return compiled


def stats_of(compiled):
    return compiled._magpy_compiled.stats if isinstance(compiled, torch.nn.Module) else compiled.stats


def xs(*shapes, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(*(s if isinstance(s, tuple) else (s,)), generator=g),) for s in shapes]


def test_print_between_ops_splits_and_hits_the_cache():
    def f(x):
        y = x.sin()
        print(y.sum())
        return y.cos()

    c = check(f, xs(4, 4, 4, 4))
    s = c.stats
    assert s.graph_breaks == 1 and s.graphs == 2 and s.fallbacks == 0
    assert s.cache_hits == 3   # (a print of tensors is known to break before it runs: the first call splits)
    assert s.reasons[0][0].startswith("print() of a tensor")


def test_branch_on_tensor_value_takes_both_ways():
    def f(x):
        y = x * 2
        if y.sum() > 0:
            z = y + 1
        else:
            z = y - 1
        return z.relu()

    calls = [(torch.ones(3),), (-torch.ones(3),), (torch.ones(3) * 2,), (-torch.ones(3) * 3,), (torch.ones(3),)]
    c = check(f, calls)
    assert c.stats.fallbacks == 0 and c.stats.eager_calls == 0


def test_loop_whose_trip_count_depends_on_data():
    def f(x):
        n = 0
        while x.abs().max() > 1:
            x = x / 2
            n += 1
        return x, n

    calls = [(torch.tensor([5.0, 1.0]),), (torch.tensor([40.0, 3.0]),), (torch.tensor([0.5]),),
             (torch.tensor([7.0, 1.0]),)]
    c = check(f, calls)
    assert c.stats.fallbacks == 0


def test_item_in_python_arithmetic_then_tensor_ops():
    def f(x):
        s = x.sum().item()
        k = int(s * 10) % 3 + 1
        return x * k + s

    c = check(f, xs(5, 5, 5, 5, seed=3))
    assert c.stats.fallbacks == 0


def test_unknown_native_call_on_a_tensor():
    import numpy as np

    def f(x):
        y = x.exp()
        a = np.asarray(y.tolist()).argsort()   # (native code on the tensor's numbers)
        return y[torch.as_tensor(a)] * 2

    check(f, xs(6, 6, 6))


def test_break_inside_a_submodule_compiles_the_submodule_on_its_own():
    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 4)

        def forward(self, x):
            h = self.lin(x).tanh()
            print(h)   # (a tensor printed: a graph break inside the submodule)
            return h * 2

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.pre = torch.nn.Linear(4, 4)
            self.block = Block()

        def forward(self, x):
            return self.block(self.pre(x).relu()).sum(-1)

    torch.manual_seed(0)
    net = Net()
    compiled = magpy.compile(net)
    with torch.no_grad():
        check(net, xs((2, 4), (2, 4), (2, 4), (2, 4)), compiled)
    s = stats_of(compiled)
    assert s.fallbacks == 0 and s.graphs >= 3


@pytest.mark.parametrize("backend", ["eager", "magpy"])
def test_break_inside_no_grad_block(backend):
    # the graph before the break leaves grad off for the printing step; the resume function, entered
    # without grad, turns it back on at the block's end: what follows is differentiated as in eager
    def f(x, w):
        y = x @ w
        with torch.no_grad():
            s = y.sum()
            print("sum", s)
            z = y * s
        return z + y, torch.is_grad_enabled()

    w = torch.randn(3, 3, requires_grad=True)
    c = magpy.compile(f, backend=backend)
    for x in [torch.randn(2, 3) for _ in range(4)]:
        want = f(x, w)
        want_grad, = torch.autograd.grad(want[0].sum(), w)
        got = c(x, w)
        assert torch.is_grad_enabled()
        got_grad, = torch.autograd.grad(got[0].sum(), w)
        assert torch.allclose(got[0], want[0]) and got[1] == want[1]
        assert torch.allclose(got_grad, want_grad)
    s = c.stats
    assert s.graph_breaks == 1 and s.fallbacks == 0 and s.cache_hits == 3


@pytest.mark.parametrize("backend", ["eager", "magpy"])
def test_grad_mode_left_changed_by_the_call(backend):
    w = torch.randn(3, requires_grad=True)

    def f(x, on):
        y = x * w
        torch.set_grad_enabled(on)
        return y * 2, x * w

    c = magpy.compile(f, backend=backend)
    try:
        for on in (False, False, True, False):
            torch.set_grad_enabled(True)
            want = f(torch.ones(3), on)
            want_mode = torch.is_grad_enabled()
            torch.set_grad_enabled(True)
            got = c(torch.ones(3), on)
            assert torch.is_grad_enabled() == want_mode
            assert [t.requires_grad for t in got] == [t.requires_grad for t in want]
    finally:
        torch.set_grad_enabled(True)


def test_break_inside_try_except_finally():
    log = []

    def f(x):
        y = x + 1
        try:
            if y.sum() > 0:
                raise ValueError("positive")
            y = y * 3
        except ValueError as e:
            log.append(str(e))
            y = y - 10
        finally:
            log.append("finally")
        return y

    c = magpy.compile(f)
    want_log = []
    for x in [torch.ones(2), -torch.ones(2) * 3, torch.ones(2), -torch.ones(2) * 5]:
        log.clear()
        want = f(x)
        want_log = list(log)
        log.clear()
        got = c(x)
        assert torch.equal(got, want) and log == want_log


def test_break_inside_a_for_loop():
    def f(x, steps):
        outs = []
        for k in range(steps):
            x = x * 0.5 + k
            if x.mean() > 2:   # (data decides, every iteration)
                x = x - 1
            outs.append(x)
        return torch.stack(outs)

    calls = [(torch.full((3,), float(v)), 4) for v in (0, 5, 9, 1)]
    c = check(f, calls)
    assert c.stats.fallbacks == 0


def test_nested_breaks_two_calls_deep():
    def inner(x):
        y = x.cos()
        print("inner", y.sum() > 0)   # (a tensor printed: a graph break two calls deep)
        return y + 1

    def middle(x):
        return inner(x * 2) - 3

    def f(x):
        return middle(x.sin()).sum()

    c = check(f, xs(3, 3, 3, 3))
    assert c.stats.fallbacks == 0 and c.stats.graphs >= 4


def test_exception_raised_by_the_breaking_instruction_is_the_programs():
    def f(x):
        y = x * 2
        if y.sum() > 100:
            raise RuntimeError("too big")
        return y

    check(f, [(torch.ones(2),), (torch.ones(2) * 100,), (torch.ones(2),)])


def test_graph_break_marker():
    def f(x):
        y = x.sin()
        magpy.graph_break()
        return y.cos()

    c = check(f, xs(3, 3, 3))
    assert c.stats.graph_breaks == 1 and c.stats.graphs == 2


def test_fullgraph_still_raises():
    def f(x):
        y = x.sin()
        print(y)
        return y

    with pytest.raises(magpy.GraphBreakError):
        magpy.compile(f, fullgraph=True)(torch.ones(2))


def test_gradients_through_a_split_function():
    def f(x, w):
        h = (x @ w).tanh()
        if h.sum() > 0:
            h = h * 2
        return (h ** 2).sum()

    w1 = torch.randn(3, 3, requires_grad=True)
    w2 = w1.detach().clone().requires_grad_()
    c = magpy.compile(f)
    for k in range(3):
        x = torch.randn(2, 3)
        f(x, w1).backward()
        c(x, w2).backward()
        assert torch.allclose(w1.grad, w2.grad)


def test_break_in_a_loop_over_a_range_and_over_a_module_list():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(3, 3) for _ in range(3)])

        def forward(self, x, n):
            for k in range(n):
                x = x * 0.9 + k
                magpy.graph_break()
            for i, layer in enumerate(self.layers):
                x = layer(x) + i
                magpy.graph_break()
            return x

    torch.manual_seed(0)
    net = Net()
    compiled = magpy.compile(net)
    with torch.no_grad():
        check(net, [(torch.randn(2, 3), n) for n in (2, 3, 3, 5, 2)], compiled)
    assert stats_of(compiled).graph_breaks >= 1


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.lin(x).relu()


class BlockDrop(torch.nn.Module):
    """A policy's output decides, block by block, whether the block runs (``.item()`` and a Python if)."""

    def __init__(self):
        super().__init__()
        self.policy = torch.nn.Linear(8, 5)
        self.blocks = torch.nn.ModuleList([_Block() for _ in range(5)])

    def forward(self, x):
        probs = torch.sigmoid(self.policy(x.mean(0)))
        for i, block in enumerate(self.blocks):
            if probs[i].item() > 0.5:
                x = x + block(x)
        return x


def test_blockdrop_whose_policy_decides_which_blocks_run():
    torch.manual_seed(0)
    model = BlockDrop()
    compiled = magpy.compile(model)
    g = torch.Generator().manual_seed(1)
    calls = [(torch.randn(4, 8, generator=g) * 3,) for _ in range(14)]
    with torch.no_grad():
        check(model, calls, compiled)
        s = stats_of(compiled)
        compiles = s.compiles
        check(model, calls, compiled)
    # (the branch that keeps going other ways becomes a graph break rather than one entry per combination;
    # the loop goes on one block per resume call, each compiled: nothing runs eagerly, and the same inputs
    # again compile nothing more)
    assert s.graph_breaks >= 1 and s.fallbacks == 0 and s.eager_calls == 0 and s.compiles == compiles


class Decoder(torch.nn.Module):
    """An LSTM decoder whose loop stops on a predicted end token."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(10, 16)
        self.cell = torch.nn.LSTMCell(16, 16)
        self.out = torch.nn.Linear(16, 10)

    def forward(self, h, c, max_len: int = 12):
        tok = torch.zeros(h.shape[0], dtype=torch.long)
        outs = []
        for _ in range(max_len):
            h, c = self.cell(self.emb(tok), (h, c))
            tok = self.out(h).argmax(-1)
            outs.append(tok)
            if (tok == 3).all():
                break
        return torch.stack(outs, 1)


def test_lstm_decoder_that_stops_on_an_end_token():
    torch.manual_seed(0)
    model = Decoder()
    compiled = magpy.compile(model)
    g = torch.Generator().manual_seed(2)
    calls = [(torch.randn(1, 16, generator=g) * 2, torch.randn(1, 16, generator=g)) for _ in range(10)]
    with torch.no_grad():
        check(model, calls * 2, compiled)
        s = stats_of(compiled)
        compiles = s.compiles
        check(model, calls, compiled)
    # (the loop goes on one step per resume call once the end-token test has gone both ways)
    assert s.fallbacks == 0 and s.eager_calls == 0 and s.compiles == compiles


def test_break_after_a_no_grad_block_keeps_gradients():
    def f(x, w):
        y = x @ w
        with torch.no_grad():
            s = y.sum()
        print("sum", s)   # (a graph break after the block closed)
        return y * s + y, torch.is_grad_enabled()

    w1 = torch.randn(3, 3, requires_grad=True)
    w2 = w1.detach().clone().requires_grad_()
    c = magpy.compile(f)
    with contextlib.redirect_stdout(io.StringIO()):
        for k in range(4):
            x = torch.randn(2, 3)
            want, got = f(x, w1), c(x, w2)
            assert torch.allclose(got[0], want[0]) and got[1] == want[1]
            want[0].sum().backward()
            got[0].sum().backward()
            assert torch.allclose(w1.grad, w2.grad)
    assert c.stats.graph_breaks == 1 and c.stats.fallbacks == 0 and c.stats.cache_hits >= 2


def test_explain_lists_every_break_and_the_graphs_between():
    def f(x):
        y = x.sin()
        print("y", y.sum())
        z = y.cos() * 2
        magpy.graph_break()
        return z + 1

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report = magpy.explain(f, torch.ones(3))
    assert out.getvalue().count("y tensor") == 1   # (the call ran once)
    lines = [b.lineno for b in report.breaks]
    first = f.__code__.co_firstlineno
    assert lines == [first + 2, first + 4] and report.graph_count == 3
    assert [b.reason for b in report.breaks] == ["print() of a tensor (graph break)",
                                                "magpy.graph_break() (graph break)"]
    assert "segment 3" in str(report)


def test_first_call_splits_at_a_print_of_tensors():
    def f(x):
        y = x * 2
        print(y)
        return y + 1

    c = check(f, xs(3, 3))
    assert c.stats.graph_breaks == 1 and c.stats.cache_hits == 1 and c.stats.fallbacks == 0


def test_break_in_a_function_whose_locals_inner_functions_capture():
    # the resume function makes its own cells holding the same values; a closure that shares them and
    # is still alive at the break cannot leave the graph, so that call is not split (eager, still right)
    def cells(x, n):
        scale = n * 2
        y = (lambda t: t * scale)(x)
        print("y", y.sum())
        scale = scale + 1
        return (lambda t: t + scale)(y)

    def shared(x, n):
        scale = n * 2
        g = lambda t: t * scale
        y = g(x)
        print("y", y.sum())
        scale = scale + 1
        return g(y) + scale

    calls = [(torch.randn(3), n) for n in (1, 2, 3, 3)]
    c = check(cells, calls)
    assert c.stats.graph_breaks == 1 and c.stats.fallbacks == 0 and c.stats.cache_hits == 2
    check(shared, calls)


def test_break_inside_a_modules_hook_does_not_compile_the_same_call_again():
    # the compiled module call breaks at its ``self._call_impl(...)``: the callee compiled there is that
    # ``_call_impl``, not the module's whole call again (which would break there again, without end)
    @torch.compiler.disable
    def doubled(module, args):
        return (args[0] * 2,)

    m = torch.nn.Linear(4, 4)
    m.register_forward_pre_hook(doubled)
    compiled = magpy.compile(m)
    x = torch.randn(2, 4)
    with pytest.warns(UserWarning, match="runs eagerly"):
        for _ in range(3):
            assert torch.equal(compiled(x), m(x))
