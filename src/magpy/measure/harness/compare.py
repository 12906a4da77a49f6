"""Comparing a test case's outputs: values within a tolerance, or only their structure.

``difference(expected, actual)`` walks both outputs together and returns None when they agree, else a short
description of the first disagreement naming where it is (``out[1]['logits']: max abs diff 0.31``).
``freeze(output)`` copies the tensors of an output so a later call that updates module state in place cannot
change an output already recorded.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Tolerance:
    rtol: float = 1e-4
    atol: float = 1e-4


def freeze(value):
    """``value`` with every tensor (inside lists, tuples, dicts) detached and copied to the CPU (where
    references are kept and compared, whichever device the model ran on)."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, list):
        return [freeze(item) for item in value]
    if isinstance(value, tuple):
        items = [freeze(item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, dict):
        try:
            frozen = type(value)()
        except Exception:
            frozen = {}
        for key, item in value.items():
            frozen[key] = freeze(item)
        return frozen
    return value


def difference(expected, actual, tolerance: Tolerance | None = Tolerance(), path: str = "out") -> str | None:
    """None when ``actual`` matches ``expected``; else where and how they differ.

    With ``tolerance=None`` only the structure is compared: container types and lengths, dict keys, and the
    shape and dtype of tensors, as for outputs that differ from call to call even in eager."""
    if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
        return _tensor_difference(expected, actual, tolerance, path)
    if type(expected) is not type(actual):
        return f"{path}: {type(expected).__name__} vs {type(actual).__name__}"
    if isinstance(expected, (list, tuple)):
        if len(expected) != len(actual):
            return f"{path}: length {len(expected)} vs {len(actual)}"
        for index, (left, right) in enumerate(zip(expected, actual)):
            found = difference(left, right, tolerance, f"{path}[{index}]")
            if found:
                return found
        return None
    if isinstance(expected, dict):
        if len(expected) != len(actual) or not all(map(_same_key, expected, actual)):
            return f"{path}: keys {list(expected)[:6]} vs {list(actual)[:6]}"
        for (key, left), right in zip(expected.items(), actual.values()):
            found = difference(left, right, tolerance, f"{path}[{key!r}]")
            if found:
                return found
        return None
    if isinstance(expected, float):
        if tolerance is None or _close(expected, actual, tolerance):
            return None
        return f"{path}: {expected!r} vs {actual!r}"
    if isinstance(expected, (bool, int, str, bytes, type(None), torch.Size, torch.dtype, torch.device)):
        if tolerance is None or expected == actual:
            return None
        return f"{path}: {_short(expected)} vs {_short(actual)}"
    if type(expected).__module__ == "numpy" and hasattr(expected, "dtype"):
        return _numpy_difference(expected, actual, tolerance, path)
    if hasattr(expected, "__dict__") and not isinstance(expected, type):
        return difference(vars(expected), vars(actual), tolerance, path)
    return None                 # an opaque object: nothing to compare it by


def _same_key(left, right) -> bool:
    """Dict keys agree when equal, or when they are objects of one type that print alike: a key may be a module
    or other object compared by identity, and each run has its own."""
    if type(left) is not type(right):
        return False
    if isinstance(left, tuple):
        return len(left) == len(right) and all(map(_same_key, left, right))
    try:
        if left == right:
            return True
    except Exception:
        pass
    return repr(left) == repr(right)


def _tensor_difference(expected, actual, tolerance: Tolerance | None, path: str) -> str | None:
    if not (isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor)):
        return f"{path}: {type(expected).__name__} vs {type(actual).__name__}"
    if expected.shape != actual.shape:
        return f"{path}: shape {tuple(expected.shape)} vs {tuple(actual.shape)}"
    if expected.dtype != actual.dtype:
        return f"{path}: dtype {expected.dtype} vs {actual.dtype}"
    if tolerance is None:
        return None
    expected, actual = _dense(expected), _dense(actual)
    if expected.is_floating_point() or expected.is_complex():
        if torch.allclose(expected, actual, rtol=tolerance.rtol, atol=tolerance.atol, equal_nan=True):
            return None
        error = (expected.to(torch.complex128 if expected.is_complex() else torch.float64)
                 - actual.to(torch.complex128 if actual.is_complex() else torch.float64)).abs()
        error = torch.nan_to_num(error, nan=math.inf)
        return f"{path}: max abs diff {error.max().item():.3g} (shape {tuple(expected.shape)})"
    if torch.equal(expected, actual):
        return None
    return f"{path}: {int((expected != actual).sum())} of {expected.numel()} elements differ"


def _numpy_difference(expected, actual, tolerance: Tolerance | None, path: str) -> str | None:
    """numpy arrays and scalars, compared as tensors where their dtype allows it."""
    try:
        left, right = torch.as_tensor(expected), torch.as_tensor(actual)
    except (TypeError, RuntimeError):
        return None if tolerance is None or bool((expected == actual).all()) else f"{path}: arrays differ"
    return _tensor_difference(left, right, tolerance, path)


def _dense(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.is_quantized:
        tensor = tensor.dequantize()
    if tensor.layout != torch.strided:
        tensor = tensor.to_dense()
    return tensor.detach().cpu()


def _close(left: float, right: float, tolerance: Tolerance) -> bool:
    if math.isnan(left) and math.isnan(right):
        return True
    return math.isclose(left, right, rel_tol=tolerance.rtol, abs_tol=tolerance.atol)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
