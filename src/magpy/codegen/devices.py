"""Which code generator serves a graph: C++ for CPU tensors, Triton for CUDA tensors.

``select(example_inputs, requested)`` names the generator, or raises ``NotServed`` saying why
none can (a device without a generator, tensors on two devices, a symbolic bool input). Sizes
and float inputs that are symbolic are served (``sizes.py``): one compiled graph for every value. The
"magpy" backend asks before it decomposes a graph: a graph no generator serves runs as it was
captured, so it costs what eager costs, never the decomposed ops one by one.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import sys
from typing import Optional, Sequence

import torch

CODEGENS = ("cpp", "triton")


class NotServed(Exception):
    """No code generator of ours can compile this graph; the message says why."""


def tensor_inputs(example_inputs: Sequence) -> list[torch.Tensor]:
    return [x for x in example_inputs if isinstance(x, torch.Tensor)]


def graph_device(example_inputs: Sequence) -> Optional[torch.device]:
    """The one device every tensor input lives on (None without tensor inputs).

    Raises NotServed when the inputs live on several devices.
    """
    devices = {x.device for x in tensor_inputs(example_inputs)}
    if len(devices) > 1:
        names = ", ".join(sorted(str(d) for d in devices))
        raise NotServed(f"tensors on several devices ({names})")
    return next(iter(devices), None)


@functools.lru_cache(maxsize=None)
def triton_installed() -> bool:
    return importlib.util.find_spec("triton") is not None


def select(example_inputs: Sequence, requested: Optional[str] = None) -> str:
    """The code generator for a graph over ``example_inputs``: "cpp" or "triton".

    ``requested`` (the ``codegen`` option) forces one; Triton on CPU tensors runs its kernels
    in Triton's interpreter (slow: for tests). Raises NotServed when no generator can compile
    the graph, ValueError for an unknown ``requested``.
    """
    if requested is not None and requested not in CODEGENS:
        raise ValueError(f"unknown codegen {requested!r}; choose one of {', '.join(CODEGENS)}")
    if any(isinstance(x, torch.SymBool) for x in example_inputs):
        raise NotServed("symbolic bool inputs")
    device = graph_device(example_inputs)
    kind = device.type if device is not None else "cpu"
    if kind == "cpu":
        chosen = requested or "cpp"
    elif kind == "cuda":
        if requested == "cpp":
            raise NotServed(f"C++ kernels take CPU tensors, not {device} ones")
        chosen = "triton"
    else:
        raise NotServed(f"no code generator for device {device}")
    if chosen == "triton" and not triton_installed():
        raise NotServed("triton is not installed")
    if chosen == "triton" and kind == "cpu":
        _interpret_triton()
    return chosen


def _interpret_triton() -> None:
    """Make Triton run kernels on CPU tensors: its interpreter, chosen when it is imported
    (``import torch._dynamo`` imports it)."""
    if "triton" in sys.modules:
        from .triton.runtime import interpreting

        if interpreting():
            return
        raise NotServed("Triton kernels on CPU tensors need TRITON_INTERPRET=1 before triton is imported")
    if torch.cuda.is_available():
        raise NotServed("Triton kernels on CPU tensors need TRITON_INTERPRET=1 (this process has a GPU)")
    os.environ["TRITON_INTERPRET"] = "1"
