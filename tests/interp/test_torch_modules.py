"""Real torch modules run through the VM give exactly eager's results: ``run(module, x)`` (through
nn.Module.__call__) and ``run(module.forward, x)``. Sizes are tiny; the same ops run in the same order, so the
results must be bit-identical."""
import math

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

from magpy import interp  # noqa: E402 - after the torch check, so that torch-less Pythons skip cleanly


def assert_same(actual, expected):
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)


class MLP(nn.Module):
    def __init__(self, sizes=(8, 16, 16, 4)):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
        self.act = nn.ReLU()

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = self.act(x)
        return x


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 6, kernel_size=3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(6, 8, kernel_size=3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        x = self.features(x)
        x = self.pool(x).flatten(1)
        return self.head(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, dim, heads, max_len):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.register_buffer("mask", torch.tril(torch.ones(max_len, max_len, dtype=torch.bool)))

    def forward(self, x):
        batch, length, dim = x.shape
        q, k, v = self.qkv(x).split(dim, dim=2)
        q, k, v = (t.view(batch, length, self.heads, dim // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        scores = scores.masked_fill(~self.mask[:length, :length], float("-inf"))
        weights = F.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).contiguous().view(batch, length, dim)
        return self.proj(out)


class GPTBlock(nn.Module):
    def __init__(self, dim=16, heads=2, max_len=8):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = CausalSelfAttention(dim, heads, max_len)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.mlp(self.ln2(x))
        return x


def _mlp():
    return MLP().eval(), torch.randn(3, 8)


def _cnn():
    model = SmallCNN()
    with torch.no_grad():  # non-trivial running statistics, so that eval-mode batchnorm matters
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 1.5)
    return model.eval(), torch.randn(2, 3, 8, 8)


def _encoder_eval():
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, batch_first=True)
    return layer.eval(), torch.randn(2, 5, 16)


def _encoder_train_no_dropout():
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, dropout=0.0,
                                       batch_first=True, norm_first=True, activation="gelu")
    return layer.train(), torch.randn(2, 5, 16)


def _gpt_block():
    return GPTBlock().eval(), torch.randn(2, 6, 16)


MODELS = {
    "mlp": _mlp,
    "cnn": _cnn,
    "transformer_encoder_eval": _encoder_eval,
    "transformer_encoder_train_dropout0": _encoder_train_no_dropout,
    "gpt_block": _gpt_block,
}


@pytest.fixture(params=sorted(MODELS))
def model_and_input(request):
    torch.manual_seed(0)
    return MODELS[request.param]()


def test_module_call_matches_eager(model_and_input):
    model, x = model_and_input
    expected = model(x)
    assert_same(interp.run(model, x), expected)


def test_forward_matches_eager(model_and_input):
    model, x = model_and_input
    expected = model.forward(x)
    assert_same(interp.run(model.forward, x), expected)


def test_module_call_under_no_grad_matches_eager(model_and_input):
    # No grad lets nn.TransformerEncoderLayer take its fused fast path in eval mode.
    model, x = model_and_input
    with torch.no_grad():
        expected = model(x)
        actual = interp.run(model, x)
    assert_same(actual, expected)
    assert actual.requires_grad == expected.requires_grad


def test_gradients_through_vm_match_eager():
    torch.manual_seed(0)
    model, x = _gpt_block()
    model.train()
    eager_loss = model(x).square().mean()
    eager_grads = torch.autograd.grad(eager_loss, list(model.parameters()))
    vm_loss = interp.run(model, x).square().mean()
    vm_grads = torch.autograd.grad(vm_loss, list(model.parameters()))
    assert_same(vm_loss, eager_loss)
    for got, want in zip(vm_grads, eager_grads):
        assert_same(got, want)


def test_batchnorm_in_train_mode_updates_running_stats_like_eager():
    torch.manual_seed(0)
    eager_model, x = _cnn()
    vm_model, _ = _cnn()
    vm_model.load_state_dict(eager_model.state_dict())
    eager_model.train()
    vm_model.train()
    assert_same(interp.run(vm_model, x), eager_model(x))
    for (name, got), (_, want) in zip(vm_model.state_dict().items(), eager_model.state_dict().items()):
        assert torch.equal(got, want), name


def test_forward_hooks_run_in_vm():
    torch.manual_seed(0)
    model, x = _mlp()
    seen = []
    handle = model.layers[0].register_forward_hook(lambda module, args, out: seen.append(out.shape))
    try:
        expected = model(x)
        actual = interp.run(model, x)
    finally:
        handle.remove()
    assert_same(actual, expected)
    assert seen == [torch.Size([3, 16])] * 2


def test_module_code_is_interpreted_not_called_natively():
    # Guards the tests above against a VM that would simply call the module natively.
    class FrameNames(interp.Observer):
        def __init__(self):
            self.names = []

        def enter_frame(self, frame):
            self.names.append(frame.code.co_name)

    torch.manual_seed(0)
    model, x = _gpt_block()
    observer = FrameNames()
    assert_same(interp.VM(observer=observer).call(model, x), model(x))
    assert {"_call_impl", "forward"} <= set(observer.names)
    assert observer.names.count("forward") >= 6  # block, attention, two layer norms, mlp and its layers
