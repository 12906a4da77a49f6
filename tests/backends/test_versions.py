"""Batch norm's running statistics keep eager's version counters under the magpy backend (eager's kernel writes
them without a bump; AOTAutograd's copy would bump them), so an autograd graph recorded before a compiled call
still runs its backward."""
import copy

import torch
from torch import nn

import magpy
from magpy.backends.versions import batch_norm_statistics


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 2))


def _versions(model):
    return {name: b._version for name, b in model.named_buffers()}


def test_buffers_versions_move_as_eagers_do():
    eager = _model()
    ours = copy.deepcopy(eager)
    compiled = magpy.compile(ours)
    for _ in range(3):
        x = torch.randn(6, 4)
        before = (_versions(eager), _versions(ours))
        eager(x).sum().backward()
        compiled(x).sum().backward()
        moved = [{k: v - b[k] for k, v in _versions(m).items()} for m, b in zip((eager, ours), before)]
        assert moved[1] == moved[0]   # running statistics: 0; num_batches_tracked (a Python add_): 1
    for (name, a), b in zip(eager.state_dict().items(), ours.state_dict().values()):
        torch.testing.assert_close(b, a, msg=name)


def test_two_calls_before_one_backward_with_the_first_capturing_run_as_in_eager():
    eager = _model()
    ours = copy.deepcopy(eager)
    compiled = magpy.compile(ours)
    for _ in range(3):
        xs = [torch.randn(6, 4) for _ in range(2)]
        for model in (eager, compiled):
            model.zero_grad()
            outs = [model(x) for x in xs]
            (outs[0].sum() + outs[1].pow(2).sum()).backward()
        for a, b in zip(eager.parameters(), ours.parameters()):
            torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-5)


def test_statistics_written_another_way_keep_their_bumps():
    def f(x, mean, var, other):
        y = torch.nn.functional.batch_norm(x, mean, var, training=True)
        other.add_(1)
        torch.nn.functional.batch_norm(x, other, var, training=True)
        return y

    gm = torch.fx.symbolic_trace(f)
    assert batch_norm_statistics(gm) == [1, 2]   # (``other`` is written by add_ too)
