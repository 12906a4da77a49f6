"""DistributedDataParallel with compiled modules, on 2 spawned CPU processes (gloo): every way of putting
the two together trains as eager DDP does (losses and weights after 3 optimizer steps), with the module's
forward compiled, and graphs compiled while DDP runs are split at its gradient buckets."""
import copy

import pytest
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

import magpy
from small_models import batch, model
from spawned import on_ranks

#: the magpy backend's C++ kernels sum in another order than eager's: the same to a few ulps
CLOSE = dict(rtol=1e-5, atol=1e-6)


def _compiled(net, how, backend, ddp_options):
    """(loss of a batch, the DDP module, the stats of what was compiled) for one way of putting DDP and
    ``magpy.compile`` together."""
    if how == "compile(DDP)":
        ddp = magpy.compile(DDP(net, **ddp_options), backend=backend)
        return lambda x: ddp(x).square().mean(), ddp, ddp.stats
    if how == "DDP(compile)":
        inner = magpy.compile(net, backend=backend)
        ddp = DDP(inner, **ddp_options)
        return lambda x: ddp(x).square().mean(), ddp, inner.stats
    ddp = DDP(net, **ddp_options)

    def loss_of(x):
        return ddp(x).square().mean()
    compiled = magpy.compile(loss_of, backend=backend)
    return compiled, ddp, compiled.stats


def _train(rank, name, how, backend="eager", ddp_options=None, accumulate=False, steps=3):
    """Train one model compiled (``how``) and a copy in eager DDP on the same batches; what each did."""
    torch.manual_seed(0)
    net = model(name)
    reference = copy.deepcopy(net)
    ddp_options = {"bucket_cap_mb": 0.01, **(ddp_options or {})}
    loss_of, ddp, stats = _compiled(net, how, backend, ddp_options)
    eager = DDP(reference, **ddp_options)
    runs = []
    for loss_fn, wrapper, params in ((loss_of, ddp, net.parameters), (lambda x: eager(x).square().mean(),
                                                                       eager, reference.parameters)):
        optimizer = torch.optim.SGD(params(), lr=0.1)
        losses = []
        for step in range(steps):
            if accumulate:  # (a micro-batch whose gradients stay local, then one that all-reduces both)
                with wrapper.no_sync():
                    loss_fn(batch(name, rank, 100 + step)).backward()
            loss = loss_fn(batch(name, rank, step))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses.append(loss.detach())
        runs.append((losses, [p.detach().clone() for p in params()]))
    return {"losses": runs[0][0], "weights": runs[0][1], "eager_losses": runs[1][0], "eager_weights": runs[1][1],
            "stats": {k: v for k, v in vars(stats).items() if type(v) is int},
            "reasons": [reason for reason, _ in stats.reasons],
            "left_alone": "_compiled_call_impl" not in vars(net) and "forward" not in vars(net)}


def _equal(results):
    for r in results:
        assert all(torch.equal(a, b) for a, b in zip(r["losses"], r["eager_losses"])), r["losses"]
        assert all(torch.equal(a, b) for a, b in zip(r["weights"], r["eager_weights"]))


def _close(results):
    for r in results:
        torch.testing.assert_close(r["losses"], r["eager_losses"], **CLOSE)
        torch.testing.assert_close(r["weights"], r["eager_weights"], **CLOSE)


def test_compiling_a_ddp_module_trains_as_eager_ddp():
    results = on_ranks(_train, "mlp", "compile(DDP)")
    _equal(results)
    for r in results:
        assert r["stats"]["graphs"] >= 1 and r["stats"]["fallbacks"] == 0
        assert r["left_alone"]  # (the inner module's compiled call is put in place only during each call)


def test_ddp_of_a_compiled_module_trains_as_eager_ddp():
    results = on_ranks(_train, "mlp", "DDP(compile)")
    _equal(results)
    assert all(r["stats"]["graphs"] >= 1 and r["stats"]["fallbacks"] == 0 for r in results)


def test_a_compiled_function_calling_ddp_compiles_its_module():
    results = on_ranks(_train, "mlp", "function calling DDP")
    _equal(results)
    for r in results:
        assert r["stats"]["graphs"] >= 2  # (the module's forward, and the loss after DDP's bookkeeping)
        assert any("DistributedDataParallel's bookkeeping" in reason and "its module (Sequential) is compiled"
                   in reason for reason in r["reasons"])


def test_magpy_backend_trains_a_transformer_block_as_eager_ddp():
    results = on_ranks(_train, "block", "compile(DDP)", "magpy")
    _close(results)
    assert all(r["stats"]["graphs"] >= 1 and r["stats"]["fallbacks"] == 0 for r in results)


def test_no_sync_accumulates_gradients_as_eager_ddp():
    results = on_ranks(_train, "mlp", "compile(DDP)", "eager", None, True)
    _equal(results)


def test_find_unused_parameters():
    results = on_ranks(_train, "unused", "compile(DDP)", "eager", {"find_unused_parameters": True})
    _equal(results)
    assert all(r["stats"]["graphs"] >= 1 for r in results)


def _one_function(gm, example_inputs):
    """A backend making each graph one autograd Function (AOTAutograd, its graphs run as traced)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    return aot_autograd(fw_compiler=lambda g, _: make_boxed_func(g.forward))(gm, example_inputs)


def _pieces(rank, name, bucket_cap_mb):
    """How many pieces the graph compiled under DDP has, and for each parameter the autograd node (by
    order of discovery from the loss) whose backward makes its gradient ready."""
    net = model(name)
    ddp = magpy.compile(DDP(net, bucket_cap_mb=bucket_cap_mb), backend=_one_function)
    ddp(batch(name, rank, 0)).square().mean().backward()  # (the first call runs as it is captured)
    loss = ddp(batch(name, rank, 1)).square().mean()
    owners, seen, todo = {}, {}, [loss.grad_fn]
    while todo:
        node = todo.pop(0)
        for following, _ in node.next_functions:
            if following is None:
                continue
            if hasattr(following, "variable"):
                owners.setdefault(id(following.variable), seen.setdefault(node, len(seen)))
            elif following not in seen:
                seen.setdefault(following, len(seen))
                todo.append(following)
    loss.backward()
    return ddp.stats.bucket_pieces, [owners.get(id(p)) for p in net.parameters()]


def test_a_graph_compiled_under_ddp_is_split_at_its_gradient_buckets():
    for pieces, owners in on_ranks(_pieces, "block", 0.01):
        assert pieces >= 2
        # the last layer's gradients come out of another compiled piece than the first layer's: DDP's hooks
        # for its bucket fire while the earlier pieces' backward is still to run
        assert owners[0] is not None and owners[-1] is not None and owners[0] != owners[-1]


def test_one_bucket_keeps_the_graph_whole():
    for pieces, owners in on_ranks(_pieces, "mlp", 25):
        assert pieces == 0
        assert len(set(owners)) == 1


def _explained(rank):
    ddp = DDP(model("block"), bucket_cap_mb=0.01)
    return str(magpy.explain(ddp, batch("block", rank, 0)))


def test_explain_says_ddps_bookkeeping_runs_natively_and_its_module_compiles():
    text = on_ranks(_explained)[0]
    assert "DistributedDataParallel's bookkeeping (its gradient Reducer) runs natively and its module (Block) " \
           "is compiled" in text
    assert "pieces, one per DistributedDataParallel gradient bucket" in text


if __name__ == "__main__":
    pytest.main([__file__, "-q"])
