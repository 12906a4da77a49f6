"""FSDP2 (``fully_shard``) models compiled, on 2 spawned CPU processes (gloo): each sharded layer's forward
compiles (its all-gather and free hooks run natively around it) and training gives eager FSDP's losses
and weights after 3 optimizer steps."""
import pytest
import torch

import magpy
from small_models import batch, model
from spawned import gloo_or_skip, on_ranks

CLOSE = dict(rtol=1e-5, atol=1e-6)


def _sharded(name):
    from torch.distributed.fsdp import fully_shard

    net = model(name)
    for layer in net.modules():
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(net)
    return net


def _train(rank, name, backend, steps=3):
    runs = []
    for compiled in (True, False):
        net = _sharded(name)
        forward = magpy.compile(net, backend=backend) if compiled else net
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        losses = []
        for step in range(steps):
            loss = forward(batch(name, rank, step)).square().mean()
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.detach())
        stats = {k: v for k, v in vars(forward.stats).items() if type(v) is int} if compiled else None
        runs.append((losses, [p.full_tensor().detach().clone() for p in net.parameters()], stats))
    return runs


def _fsdp_or_skip():
    gloo_or_skip()
    try:
        from torch.distributed.fsdp import fully_shard  # noqa: F401
    except ImportError:
        pytest.skip("this torch has no FSDP2 (torch.distributed.fsdp.fully_shard)")


def test_fully_sharded_layers_compile_and_train_as_eager_fsdp():
    _fsdp_or_skip()
    for (losses, weights, stats), (eager_losses, eager_weights, _) in on_ranks(_train, "mlp", "eager"):
        assert all(torch.equal(a, b) for a, b in zip(losses, eager_losses)), (losses, eager_losses)
        assert all(torch.equal(a, b) for a, b in zip(weights, eager_weights))
        assert stats["graphs"] >= 3 and stats["fallbacks"] == 0  # (each sharded layer's forward at least)


def test_fully_sharded_block_on_the_magpy_backend_trains_as_eager_fsdp():
    _fsdp_or_skip()
    for (losses, weights, stats), (eager_losses, eager_weights, _) in on_ranks(_train, "block", "magpy"):
        torch.testing.assert_close(losses, eager_losses, **CLOSE)
        torch.testing.assert_close(weights, eager_weights, **CLOSE)
        assert stats["graphs"] >= 5 and stats["fallbacks"] == 0
