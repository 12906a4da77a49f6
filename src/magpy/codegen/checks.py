"""Errors a kernel reports: what eager raises where data makes an op invalid, as a table.

Eager checks some arguments element by element (an index past its dimension, an integer divided by
zero) and raises. A kernel cannot raise: a body states the condition with ``ops.check(ok, error)``,
the kernel records the error's ``code`` where it fails (and computes something harmless there:
indices are clamped into range), and the wrapper raises ``error.exception(error.message)`` after the
kernel returns, before anything is returned to the caller. Like Inductor's device-side asserts,
the check costs a comparison per element, and only bodies that take positions or divisors from data
have one.

The exception types are eager's on CPU; messages are eager's where they name no value (the kernel
reports which check failed, not which element).
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class KernelError:
    """What eager raises when ``ops.check`` fails; ``code`` is what the kernel reports (never 0)."""

    code: int
    exception: type
    message: str

    def __call__(self) -> BaseException:
        return self.exception(self.message)


@dataclasses.dataclass(frozen=True)
class IndexCheck:
    """How positions from data index a dim: ``error`` when one is out of range; ``negative``: a
    position in [-size, 0) counts from the end (``x[idx]``, ``take``), else it is out of range
    (``gather``, ``index_select``, ``embedding``)."""

    error: KernelError
    negative: bool


_TABLE = (
    # (name, exception eager raises, message)
    ("index", IndexError, "index is out of bounds for its dimension (x[index] with a tensor index)"),
    ("index_select", IndexError, "index out of range in self"),
    ("gather", RuntimeError, "index is out of bounds for the gathered dimension (gather)"),
    ("take", IndexError, "out of range: take was given an index past the tensor's elements"),
    ("zero_division", RuntimeError, "ZeroDivisionError"),
    ("scatter", RuntimeError, "index is out of bounds for the dimension scattered into (scatter_add)"),
)

ERRORS = {name: KernelError(code, exception, message)
          for code, (name, exception, message) in enumerate(_TABLE, start=1)}
BY_CODE = {error.code: error for error in ERRORS.values()}

# The wrapper's name of the one-element int32 tensor a Triton kernel stores the code into (a C++
# kernel returns it instead).
ERROR_FLAG = "_error_code"

INDEX = IndexCheck(ERRORS["index"], negative=True)
TAKE = IndexCheck(ERRORS["take"], negative=True)
INDEX_SELECT = IndexCheck(ERRORS["index_select"], negative=False)  # (embedding raises the same)
GATHER = IndexCheck(ERRORS["gather"], negative=False)
SCATTER = IndexCheck(ERRORS["scatter"], negative=False)
ZERO_DIVISION = ERRORS["zero_division"]


def error_flag(device):
    """A new zero ``ERROR_FLAG`` tensor: real even while the graph compiles under a fake mode."""
    import torch
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        return torch.zeros(1, dtype=torch.int32, device=device)


def kernel_error(code: int, flag=None) -> BaseException:
    """The exception for a code a kernel reported (what the generated wrapper raises); ``flag``:
    the tensor the kernel stored the code into, zeroed for the next call."""
    if flag is not None:
        flag.zero_()
    return BY_CODE[int(code)]()
