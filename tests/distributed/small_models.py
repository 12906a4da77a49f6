"""Small models for the distributed tests, and the batches each rank trains on."""
import torch
import torch.nn.functional as F
from torch import nn


def mlp():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 4))


class Block(nn.Module):
    """A transformer block with a head: ~13k parameters, several buckets at ``bucket_cap_mb=0.01``."""

    def __init__(self, width=32, heads=2):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        self.head = nn.Linear(width, 4)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=-1)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        x = x + self.mlp(self.norm2(x))
        return self.head(x)


class WithUnused(nn.Module):
    """An MLP beside a layer its forward never uses (DDP's ``find_unused_parameters``)."""

    def __init__(self):
        super().__init__()
        self.used = mlp()
        self.unused = nn.Linear(4, 4)

    def forward(self, x):
        return self.used(x)


MODELS = {"mlp": mlp, "block": Block, "unused": WithUnused}
INPUTS = {"mlp": (8, 16), "block": (4, 8, 32), "unused": (8, 16)}


def batch(name, rank, step):
    """Rank ``rank``'s batch of step ``step`` (each rank its own: DDP averages their gradients)."""
    generator = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(*INPUTS[name], generator=generator)


def model(name):
    torch.manual_seed(0)
    return MODELS[name]()
