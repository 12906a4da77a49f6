"""Autograd through compiled calls: no_grad / enable_grad blocks, custom autograd.Function,
``.backward()`` on outputs, and a short SGD training loop that must match eager step for step."""
import copy

import pytest
import torch
import torch.nn as nn

import magpy

try:
    from .twin import fresh, differential, expect, expect_one_graph, expect_recompile, plain, \
        unsupported, Call, stats_of, assert_same, snapshot, twins
except ImportError:  # tests/capture is not a package: pytest put this folder on sys.path
    from twin import fresh, differential, expect, expect_one_graph, expect_recompile, plain, \
        unsupported, Call, stats_of, assert_same, snapshot, twins


def t(*shape, grad=False):
    return torch.randn(*(shape or (2, 3))).requires_grad_(grad)


# ---- grad modes --------------------------------------------------------------------------------------

def test_no_grad_block():
    def fn(x, w):
        with torch.no_grad():
            frozen = x * w
        return frozen + x * w

    stats = differential(plain(fn), fresh(lambda: (t(), t(grad=True))))
    expect_one_graph(stats)


def test_enable_grad_inside_no_grad():
    def fn(x, w):
        with torch.no_grad():
            a = x * w
            with torch.enable_grad():
                b = x * w
        return a, b, torch.is_grad_enabled()

    stats = differential(plain(fn), fresh(lambda: (t(), t(grad=True))))
    expect_one_graph(stats)


def test_no_grad_decorated_helper():
    @torch.no_grad()
    def ema(avg, x):
        return avg.mul_(0.5).add_(x, alpha=0.5)

    def fn(avg, x):
        ema(avg, x)
        return x * 2

    stats = differential(plain(fn), fresh(lambda: (t(), t(grad=True))))
    expect_one_graph(stats)


def test_called_under_no_grad_by_the_caller():
    def fn(x, w):
        return (x * w).sum()

    def under_no_grad(env):
        torch.set_grad_enabled(False)

    calls = fresh(lambda: (t(), t(grad=True)), 2) + [Call((t(), t(grad=True)), before=under_no_grad)]
    try:
        stats = differential(plain(fn), calls, reset=lambda: torch.set_grad_enabled(True))
    finally:
        torch.set_grad_enabled(True)
    # the graph may run in the caller's grad mode (a cache hit) or be recompiled: both are right
    expect(stats, fallbacks=0)


def test_requires_grad_of_an_input_changes_recompiles():
    def fn(x):
        return x.exp() * 2

    stats = differential(plain(fn), [(t(grad=True),), (t(grad=True),), (t(),)])
    expect_recompile(stats)


def test_detach_and_requires_grad_query():
    def fn(x):
        y = x * 3
        return y.detach(), y.requires_grad

    stats = differential(plain(fn), fresh(lambda: (t(grad=True),)))
    expect_one_graph(stats)


# ---- custom autograd.Function ----------------------------------------------------------------------------

class ScaleGrad(torch.autograd.Function):
    """DeBERTa-style: saves tensors and a Python value on ctx; backward scales the gradient."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        ctx.save_for_backward(x)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ctx.scale + x * 0, None


def test_custom_autograd_function_forward():
    def fn(x):
        return ScaleGrad.apply(x, 3.0).sum(-1)

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


@pytest.mark.filterwarnings("ignore:magpy:UserWarning")  # compiled outside the harness
def test_custom_autograd_function_backward_matches_eager():
    def fn(x):
        return ScaleGrad.apply(x.sin(), 3.0).sum()

    def make():
        return fn, None

    eager_x, compiled_x = t(grad=True), None
    compiled_x = eager_x.detach().clone().requires_grad_()
    compiled = magpy.compile(fn, backend="eager")
    for _ in range(3):
        fn(eager_x).backward()
        compiled(compiled_x).backward()
        assert torch.allclose(compiled_x.grad, eager_x.grad)
    stats = differential(make, fresh(lambda: (t(grad=True),)))
    expect_one_graph(stats)


class _RunsModule(torch.autograd.Function):
    """A reversible-network coupling: the Function is handed the module it runs (and counts its runs
    on it, an effect of every forward)."""

    @staticmethod
    def forward(ctx, x, module):
        module.runs += 1
        ctx.module = module
        return module(x).detach() * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2, None


class _Coupling(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(3, 3)
        self.inner.runs = 0

    def forward(self, x):
        return _RunsModule.apply(x, self.inner) + x


def test_a_custom_autograd_function_handed_a_module():
    stats = differential(twins(_Coupling()), fresh(lambda: (t(2, 3),)),
                         observe=lambda m: m.inner.runs)
    expect_one_graph(stats)


# ---- backward through compiled outputs --------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def _grads(m):
    return {name: p.grad.clone() for name, p in m.named_parameters()}


def test_backward_on_a_compiled_output_matches_eager():
    torch.manual_seed(0)
    eager = MLP()
    model = copy.deepcopy(eager)
    compiled = magpy.compile(model, backend="eager")
    for k in range(3):
        x = t(3, 4, grad=True)
        xc = x.detach().clone().requires_grad_()
        eager(x).pow(2).sum().backward()
        compiled(xc).pow(2).sum().backward()
        assert_same(_grads(model), _grads(eager), f"step {k}: parameter grads")
        assert_same(xc.grad, x.grad, f"step {k}: input grad")
    expect_one_graph(stats_of(compiled))


def test_training_loop_with_sgd_matches_eager_step_for_step():
    torch.manual_seed(0)
    eager = MLP()
    model = copy.deepcopy(eager)
    compiled = magpy.compile(model, backend="eager")
    opt_e = torch.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    opt_c = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    target = torch.randn(5, 2)
    for step in range(3):
        x = torch.randn(5, 4)
        losses = []
        for m, opt in ((eager, opt_e), (compiled, opt_c)):
            opt.zero_grad()
            loss = nn.functional.mse_loss(m(x), target)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        assert_same(losses[1], losses[0], f"step {step}: loss")
        assert_same(snapshot(model), snapshot(eager), f"step {step}: parameters")
    expect_one_graph(stats_of(compiled))


def test_loss_computed_inside_the_compiled_function():
    def step(model, x, y):
        return nn.functional.cross_entropy(model(x), y)

    torch.manual_seed(0)
    eager = MLP()
    model = copy.deepcopy(eager)
    compiled = magpy.compile(step, backend="eager")
    for k in range(3):
        x, y = torch.randn(4, 4), torch.tensor([0, 1, 1, 0])
        step(eager, x, y).backward()
        compiled(model, x, y).backward()
        assert_same(_grads(model), _grads(eager), f"call {k}: grads")
    expect_one_graph(compiled.stats)


def test_grad_attribute_read_inside():
    def fn(w):
        return w.grad * -0.1 + w

    def make_w():
        w = t(grad=True)
        (w * w).sum().backward()
        return (w,)

    stats = differential(plain(fn), fresh(make_w))
    expect_one_graph(stats)


def test_hand_written_sgd_step_on_parameters():
    def step(params, lr):
        for p in params:
            if p.grad is not None:
                p.data.add_(p.grad, alpha=-lr)
                p.grad.zero_()

    def params():
        ps = [torch.randn(3, requires_grad=True), torch.randn(2, requires_grad=True)]
        for p in ps:
            p.grad = torch.randn_like(p)
        return (ps, 0.1)

    stats = differential(plain(step), fresh(params))
    expect_one_graph(stats)


# ---- module backward hooks: registered on the autograd node of a graph tensor -----------------------

class _Hooked(nn.Module):
    """Old-style (non-full) backward hooks, as pruning and learning-rate tricks use them: one records
    the gradient reaching an inner module, the other rescales the gradient a conv passes back."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.act = nn.Identity()
        self.act.register_backward_hook(self._record)
        self.conv.register_backward_hook(self._halve)
        self.seen = []

    def _record(self, module, grad_input, grad_output):
        self.seen.append((type(module).__name__, [g.sum().item() for g in grad_output]))

    @staticmethod
    def _halve(module, grad_input, grad_output):
        return tuple(None if g is None else g * 0.5 for g in grad_input)

    def forward(self, x):
        return self.act(torch.relu(self.conv(x))) * 2


def _hooked_twins():
    torch.manual_seed(0)
    eager, model = _Hooked(), _Hooked()
    model.load_state_dict(eager.state_dict())
    return eager, model


@pytest.mark.filterwarnings("ignore::FutureWarning")   # torch's notice on non-full hooks, on both sides
@pytest.mark.parametrize("backend", ["eager", "magpy"])
def test_module_backward_hooks_fire_as_in_eager(backend):
    eager, model = _hooked_twins()
    compiled = magpy.compile(model, backend=backend, fullgraph=True)
    for k in range(3):
        x = torch.randn(2, 3, 5, 5)
        for m in (eager, model):
            m.zero_grad()
            m.seen.clear()
        want, got = eager(x), compiled(x)
        assert_same(got, want, f"call {k}: output")
        want.sum().backward()
        got.sum().backward()
        assert model.seen == eager.seen and len(eager.seen) == 1, (model.seen, eager.seen)
        assert_same(_grads(model), _grads(eager), f"call {k}: grads (the conv's hook halves them)")
    expect_one_graph(stats_of(compiled))


def test_reading_an_autograd_node_beyond_its_kind_falls_back():
    def fn(x, w):
        y = x * w
        return y.grad_fn.metadata, y.grad_fn.name()

    compiled = magpy.compile(fn, backend="eager")
    x, w = torch.randn(3), torch.randn(3, requires_grad=True)
    meta, name = compiled(x, w)
    assert (meta, name) == ({}, "MulBackward0")
    assert any("grad_fn.metadata" in r for r, _ in compiled.stats.reasons)
