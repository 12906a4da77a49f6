"""``dynamic=True`` and changing batch sizes on ordinary models: module settings stay static (a
BatchNorm's ``eps`` and ``momentum``, a Dropout's ``p``), sizes are symbolic, a size used to split a
tensor is a size, and the graphs compile to kernels (no "runs as captured"); a training loop whose last
batch is smaller compiles at most twice, with BatchNorm, Dropout and LayerNorm in train mode.
"""
import copy
import warnings

import pytest
import torch
from torch import nn

import magpy
from magpy import codegen


class Block(nn.Module):
    """A transformer block: ``qkv(h).split(C, -1)`` with ``C`` from the input's shape."""

    def __init__(self, C=16, H=2):
        super().__init__()
        self.ln = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.proj = nn.Linear(C, C)
        self.drop = nn.Dropout(0.1)
        self.H = H

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln(x)).split(C, -1)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.drop(self.proj(a.transpose(1, 2).reshape(B, T, C)))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.ln = nn.LayerNorm(8)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        h = self.bn(self.conv(x)).relu().mean((2, 3))
        return self.fc(self.drop(self.ln(h)))


def _no_graph_runs_as_captured(since):
    reports = codegen.reports(since)
    assert reports, "no graph reached the code generator"
    assert not [r.graph_fallback for r in reports if r.graph_fallback], \
        [r.graph_fallback for r in reports if r.graph_fallback]


def test_dynamic_true_compiles_a_transformer_block_once_for_every_batch_and_length():
    torch.manual_seed(0)
    block = Block().eval()
    compiled = magpy.compile(block, dynamic=True)
    since = codegen.mark()
    for B, T in [(2, 8), (3, 8), (4, 12), (5, 7)]:
        x = torch.randn(B, T, 16)
        torch.testing.assert_close(compiled(x), block(x))
    stats = compiled._magpy_compiled.stats
    assert (stats.compiles, stats.graph_breaks, stats.cache_hits) == (1, 0, 3), stats
    _no_graph_runs_as_captured(since)


def _train(model, batches, compiled=None):
    torch.manual_seed(1)
    step_of = compiled or model
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for x, y in batches:
        loss = nn.functional.cross_entropy(step_of(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach())
    return losses


@pytest.mark.parametrize("dynamic", [None, True])
def test_a_smaller_last_batch_in_training_compiles_at_most_twice(dynamic):
    torch.manual_seed(0)
    model = SmallCNN().train()
    twin = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(2)
    batches = [(torch.randn(b, 3, 6, 6, generator=gen), torch.randint(0, 5, (b,), generator=gen))
               for b in [8, 8, 8, 3, 8, 8, 5, 8, 6, 8]]
    want = _train(model, batches)
    compiled = magpy.compile(twin, dynamic=dynamic)
    since = codegen.mark()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a graph that runs as captured, or gives up, warns)
        got = _train(twin, batches, compiled)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        torch.testing.assert_close(q, p, rtol=1e-4, atol=1e-5, msg=name)
    torch.testing.assert_close(twin.bn.running_var, model.bn.running_var, rtol=1e-4, atol=1e-5)
    stats = compiled._magpy_compiled.stats
    assert stats.compiles <= 2 and stats.fallbacks == 0 and stats.eager_calls == 0, stats
    _no_graph_runs_as_captured(since)


def test_dynamic_true_keeps_module_settings_static():
    model = SmallCNN().train()
    compiled = magpy.compile(model, dynamic=True)
    compiled(torch.randn(4, 3, 6, 6))
    text = compiled._magpy_compiled.cache.entries[0].text
    assert "self.bn.eps == 1e-05" in text and "self.drop.p == 0.2" in text, text
    model.drop.p = 0.5   # (a changed setting is a new entry, as torch.compile's guard on it)
    compiled(torch.randn(4, 3, 6, 6))
    assert compiled._magpy_compiled.stats.compiles == 2
