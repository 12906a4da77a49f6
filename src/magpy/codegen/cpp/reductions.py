"""What C++ reductions start from and how their partial results combine: shared by the row and the column
(``columns``) kernels, and the accumulator's dtype by Triton's."""
from __future__ import annotations

import torch

from .handler import cpp_constant, ctype

REDUCTION_COMBINE = {"sum": "+", "prod": "*", "max": "max", "min": "min", "any": "|", "all": "&"}


# Rows of at least this many elements sum float32 in double. Each SIMD lane (and thread) adds its
# share one after another: past ~1e5 elements a float32 lane sum strays ~1e-5 relative from eager's
# cascade sum (2M elements: 3e-5). Rows that long are read from memory, not cache: the wider adds
# cost nothing there, and short rows (softmax, norms) keep float32.
LONG_SUM = 65536


def reduction_init(reduction_type: str, dtype: torch.dtype) -> str:
    t = ctype(dtype)
    if reduction_type == "sum":
        return cpp_constant(0, dtype)
    if reduction_type == "prod":
        return cpp_constant(1, dtype)
    if reduction_type == "any":
        return "0"
    if reduction_type == "all":
        return "1"
    if dtype == torch.bool:
        return "false" if reduction_type in ("max", "argmax") else "true"
    low = reduction_type in ("max", "argmax")
    if dtype.is_floating_point:
        return f"{'-' if low else ''}std::numeric_limits<{t}>::infinity()"
    return f"std::numeric_limits<{t}>::{'lowest' if low else 'max'}()"


def accumulator_dtype(reduction_type: str, src_dtype: torch.dtype, out_dtype: torch.dtype):
    if reduction_type in ("argmax", "argmin", "max", "min"):
        return src_dtype
    if reduction_type in ("any", "all"):
        return torch.int32
    return out_dtype
