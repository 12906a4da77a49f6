"""Copies of example inputs that keep their layout.

A backend may compile differently for other strides (a transposed input, a broadcast one with stride 0),
so every copy the minifier makes, and every tensor a repro script rebuilds, has the original's sizes and
strides over a storage of its own: the *span* of memory the original's elements cover, from its first
element on.
"""
import torch


def extent(t: torch.Tensor) -> int:
    """How many storage elements ``t``'s elements span (0 for an empty tensor)."""
    if t.numel() == 0:
        return 0
    return 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))


def span(t: torch.Tensor) -> torch.Tensor:
    """The storage ``t`` covers, flat, as a new tensor: ``span(t).as_strided(t.shape, t.stride())``
    equals ``t``."""
    return t.detach().as_strided((extent(t),), (1,), t.storage_offset()).clone()


def copy_strided(t: torch.Tensor) -> torch.Tensor:
    """A new leaf tensor equal to ``t``, with its sizes, strides, dtype, device and requires_grad."""
    if t.layout != torch.strided:  # (sparse and other layouts: their own copy is the best there is)
        return t.detach().clone().requires_grad_(t.requires_grad)
    return span(t).as_strided(t.shape, t.stride()).requires_grad_(t.requires_grad)


def copied(value):
    """``value`` with every tensor in it (alone, or in a list or tuple) a fresh ``copy_strided``."""
    if isinstance(value, torch.Tensor):
        return copy_strided(value)
    if type(value) in (list, tuple):
        return type(value)(copied(v) for v in value)
    return value
