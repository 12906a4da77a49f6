"""ModelSpec: how the zoo describes one model, and the seeded construction every model uses."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch
from torch import nn

SIZES = ("small", "medium", "large")
DEFAULT_SEED = 0


@contextlib.contextmanager
def seeded(seed: int = DEFAULT_SEED) -> Iterator[None]:
    """Run the body with torch's CPU generator seeded, restoring the caller's RNG state afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


@dataclass(frozen=True)
class Tolerance:
    """Tolerances for comparing a compiled model's outputs with eager ones (torch.testing.assert_close).

    The float32 default leaves room for reordered reductions and for the different convolution algorithms a
    GPU picks per call (about 4e-4 relative on a ResNet's logits); a wrong graph is off by far more.
    """

    rtol: float = 1e-3
    atol: float = 1e-3


@dataclass(frozen=True)
class ModelSpec:
    """One model of the zoo.

    ``build(size)`` returns ``(module, example_inputs)``: a freshly initialised module (same weights on every
    call, independent of the global RNG) and a tuple of positional inputs, both on the CPU.
    ``exercises`` lists the Python features a compiler must handle to capture the model.
    """

    name: str
    summary: str
    build: Callable[[str], tuple[nn.Module, tuple[Any, ...]]]
    exercises: tuple[str, ...] = ()
    tolerance: Tolerance = field(default_factory=Tolerance)

    def make(self, size: str = "small", device: str | torch.device = "cpu") -> tuple[nn.Module, tuple[Any, ...]]:
        """Build the model in eval mode on ``device`` with its example inputs.

        Raises ValueError for an unknown size.
        """
        if size not in SIZES:
            raise ValueError(f"unknown size {size!r}; expected one of {', '.join(SIZES)}")
        with seeded():
            module, inputs = self.build(size)
        module = module.eval().to(device)
        inputs = tuple(x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs)
        return module, inputs
