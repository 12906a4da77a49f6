"""A toy zoo model for harness tests: built and run in microseconds, so a whole ``bench`` run takes well
under a second, and able to say which backend is calling it."""
import pytest
import torch
from torch import nn

from magpy import zoo


class Toy(nn.Module):
    """Records every call in ``calls``, under the name in ``caller`` (eager unless a fake compiler sets it)."""

    def __init__(self, calls):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.calls = calls
        self.caller = "eager"

    def forward(self, x):
        self.calls.append(self.caller)
        return self.linear(x)


class FakeCompiled:
    """Stands in for magpy.compile's result: runs the module under the name "magpy", one graph."""

    def __init__(self, module, backend="magpy", **options):
        self.module = module

        class Stats:
            graphs, graph_breaks, fallbacks = 1, 0, 0
        self.stats = Stats()

    def __call__(self, *args):
        self.module.caller = "magpy"
        try:
            return self.module(*args)
        finally:
            self.module.caller = "eager"


@pytest.fixture
def toy_zoo(monkeypatch):
    """Adds a "toy" model to the zoo; yields the list every Toy instance records its callers in."""
    calls = []
    spec = zoo.ModelSpec(name="toy", summary="one linear layer",
                         build=lambda size: (Toy(calls), (torch.randn(2, 4),)))
    real_get = zoo.get
    monkeypatch.setitem(zoo.REGISTRY, "toy", "toy")
    monkeypatch.setattr(zoo, "get", lambda name: spec if name == "toy" else real_get(name))
    return calls


@pytest.fixture
def use_compiler(monkeypatch):
    """A function that makes the bench's magpy runner compile with the given class instead."""
    from magpy.measure.bench import runners

    def use(compiled_class):
        monkeypatch.setattr(runners, "magpy_api", lambda name: compiled_class if name == "compile" else (lambda: None))
    return use


@pytest.fixture
def fake_magpy(use_compiler):
    use_compiler(FakeCompiled)
    return FakeCompiled
