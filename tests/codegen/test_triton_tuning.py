"""Timing a Triton kernel's block configs runs it many times: buffers it updates from their own values (a graph
input written over, as a running mean; a scatter's buffer) must hold, after the timing, what they held before,
so that the launch after it applies its update once (on a GPU, the first compiled step of a batch-norm model
otherwise moved its running statistics several times)."""
import os

import pytest
import torch
from torch import nn

import magpy
from magpy import codegen
from magpy.codegen.triton import runtime


def test_fastest_puts_back_what_the_trials_update_in_place(monkeypatch):
    running = torch.arange(4.0)
    before = running.clone()
    version = running._version
    tried = []

    def trials(configs, trial, name):
        for config in configs:
            trial(config)
        return configs[-1]

    monkeypatch.setattr(runtime, "_fastest", trials)
    monkeypatch.setattr(runtime, "interpreting", lambda: False)  # (as on a GPU)
    chosen = runtime.fastest(["a", "b", "c"], lambda c: (tried.append(c), running.mul_(0.9).add_(1)), "k",
                             keep=[running])
    assert chosen == "c" and tried == ["a", "b", "c"]
    assert torch.equal(running, before)
    assert running._version == version + 6   # (the trials' own bumps; putting back adds none)


def test_one_config_runs_no_trial():
    assert runtime.fastest([("x", 1, 4)], lambda c: pytest.fail("timed"), "k", keep=[torch.ones(1)]) == ("x", 1, 4)


def _triton_interpreting() -> bool:
    from magpy.codegen.devices import triton_installed

    return triton_installed() and runtime.interpreting()


@pytest.mark.skipif(not _triton_interpreting(), reason="Triton's interpreter is not on")
def test_the_kernels_writing_running_statistics_and_scatters_are_marked(monkeypatch):
    made = []
    for cls in (runtime.TritonLauncher, runtime.SymbolicLauncher):
        init = cls.__init__

        def recording(self, *args, _init=init, **kwargs):
            _init(self, *args, **kwargs)
            made.append(self)

        monkeypatch.setattr(cls, "__init__", recording)
    bn = nn.BatchNorm1d(6).train()
    compiled = magpy.compile(bn, options={"codegen": "triton"})
    with torch.no_grad():
        for _ in range(2):
            compiled(torch.randn(5, 6))
    marked = [k.__name__ for k in made if k.rewrites]
    assert len(marked) >= 1, "the kernel storing the running statistics"
    del made[:]
    scatter = magpy.compile(lambda t, i, g: t + torch.zeros_like(t).index_put((i,), g, accumulate=True),
                            options={"codegen": "triton"})
    for _ in range(2):
        scatter(torch.zeros(5), torch.tensor([0, 1, 1]), torch.ones(3))
    assert any(k.rewrites for k in made), "the scatter's kernel"
    assert not all(k.rewrites for k in made), "a kernel that only writes is not marked"


@pytest.mark.skipif(not _triton_interpreting(), reason="Triton's interpreter is not on")
def test_with_interpreted_trials_tuning_launches_every_config_and_buffers_end_as_eager_leaves_them(monkeypatch):
    monkeypatch.setenv("MAGPY_TRITON_TRIALS", "1")
    launches = []
    launch = runtime._Launch.__call__
    monkeypatch.setattr(runtime._Launch, "__call__", lambda self, tensors: launches.append(self.blocks) or
                        launch(self, tensors))
    torch.manual_seed(0)
    ours, theirs = nn.BatchNorm1d(6).train(), nn.BatchNorm1d(6).train()
    compiled = magpy.compile(ours, options={"codegen": "triton"})
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(40, 6)
            torch.testing.assert_close(compiled(x), theirs(x))
    assert len({tuple(blocks.items()) for blocks in launches}) >= 2, "two block configs tried"
    torch.testing.assert_close(ours.running_mean, theirs.running_mean)
    torch.testing.assert_close(ours.running_var, theirs.running_var)
    assert ours.num_batches_tracked.item() == theirs.num_batches_tracked.item() == 3
