"""Attention written out by hand runs as one scaled_dot_product_attention call (backends/attention.py)."""
import math

import pytest
import torch
import torch.nn.functional as F

import magpy
from magpy.backends.attention import fuse_attention

CAUSAL = torch.tril(torch.ones(8, 8)).view(1, 1, 8, 8)


def bert_style(q, k, v, mask):
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
    return torch.matmul(F.softmax(s + mask, dim=-1), v).permute(0, 2, 1, 3)


def gpt_style(q, k, v):
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(CAUSAL[:, :, :8, :8] == 0, float("-inf"))
    return F.softmax(att, dim=-1) @ v


def unscaled(q, k, v):
    return torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v


def mask_before_scale(q, k, v, mask):  # (softmax((s + m) * c): not what the fused call computes)
    return F.softmax((q @ k.transpose(-1, -2) + mask) * 0.5, dim=-1) @ v


def scores_also_returned(q, k, v):
    s = q @ k.transpose(-1, -2)
    return F.softmax(s, dim=-1) @ v, s


def qkv(requires_grad=False):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(2, 4, 8, 16, generator=g, requires_grad=requires_grad) for _ in range(3)]


CASES = [(bert_style, lambda: (*qkv(True), torch.randn(2, 1, 1, 8)), 1),
         (gpt_style, lambda: tuple(qkv(True)), 1),
         (unscaled, lambda: tuple(qkv(True)), 1),
         (mask_before_scale, lambda: (*qkv(), torch.randn(2, 1, 1, 8)), 0),
         (scores_also_returned, lambda: tuple(qkv()), 0)]


@pytest.mark.parametrize("fn, make, fused", CASES, ids=[c[0].__name__ for c in CASES])
def test_attention_patterns_match_eager(fn, make, fused):
    counts = []

    def backend(gm, example_inputs):
        counts.append(fuse_attention(gm, example_inputs))
        return gm.forward

    args = make()
    got = magpy.compile(fn, backend=backend)(*args)
    assert counts == [fused]
    want = fn(*args)
    for a, b in zip(got if isinstance(got, tuple) else [got], want if isinstance(want, tuple) else [want]):
        assert torch.allclose(a, b, atol=1e-5)
    if args[0].requires_grad:
        grads = torch.autograd.grad(got.sum(), args[:3])
        for a, b in zip(grads, torch.autograd.grad(want.sum(), args[:3])):
            assert torch.allclose(a, b, atol=1e-5)


def test_the_magpy_backend_fuses_attention():
    q, k, v = qkv(True)
    compiled = magpy.compile(gpt_style)
    for _ in range(2):
        assert torch.allclose(compiled(q, k, v), gpt_style(q, k, v), atol=1e-5)
