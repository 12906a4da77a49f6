"""Triton's types for torch dtypes, and the refusal of what the Triton printer cannot express.

Below both the ``ops`` handler (``handler.py``) and the math rows (``math.py``): each names the
type a value is computed in, and either may refuse a dtype or an op.
"""
from __future__ import annotations

import torch

TL_TYPES = {
    torch.float32: "tl.float32",
    torch.float64: "tl.float64",
    torch.float16: "tl.float16",
    torch.bfloat16: "tl.bfloat16",
    torch.bool: "tl.int1",
    torch.int8: "tl.int8",
    torch.uint8: "tl.uint8",
    torch.int16: "tl.int16",
    torch.int32: "tl.int32",
    torch.int64: "tl.int64",
}
HALF_TYPES = (torch.float16, torch.bfloat16)


class TritonUnsupported(Exception):
    """A body uses a dtype or op the Triton printer cannot express; the graph falls back."""


def tl_type(dtype: torch.dtype) -> str:
    if dtype not in TL_TYPES:
        raise TritonUnsupported(f"dtype {dtype}")
    return TL_TYPES[dtype]


def compute_type(dtype: torch.dtype) -> str:
    """The Triton type a value of ``dtype`` is computed in (halves in float32)."""
    return "tl.float32" if dtype in HALF_TYPES else tl_type(dtype)
