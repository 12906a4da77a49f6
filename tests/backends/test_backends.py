"""The backend registry and the "magpy" backend behind torch.compile (inference and training)."""
import os
import stat

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

os.environ.setdefault("MAGPY_STRICT", "1")

from magpy import backends, codegen  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_registry_has_builtins_and_accepts_new_backends():
    assert {"eager", "inductor", "magpy"} <= set(backends.list_backends())
    seen = []

    def mine(gm, example_inputs):
        seen.append(gm)
        return gm.forward

    backends.register_backend("mine_for_test", mine)
    assert backends.lookup_backend("mine_for_test") is mine
    assert backends.lookup_backend(mine) is mine
    with pytest.raises(KeyError, match="unknown backend"):
        backends.lookup_backend("no_such_backend")


def test_torch_compile_with_magpy_matches_eager():
    def fn(x, y):
        return torch.softmax(x @ y, -1).sum(0) + x.mean()

    x, y = torch.randn(8, 16), torch.randn(16, 12)
    compiled = torch.compile(fn, backend="magpy")
    torch.testing.assert_close(compiled(x, y), fn(x, y))
    report = codegen.last_report()
    assert report.graph_fallback is None
    assert any("mm" in op for op, _ in report.extern_calls)
    assert report.fallbacks == []  # mm is an expected extern call, not a fallback


def test_compile_graph_accepts_torch_level_graphs():
    gm = torch.fx.symbolic_trace(lambda x: torch.relu(x) * 2)
    x = torch.randn(5)
    fn = backends.compile_graph(gm, [x])
    out = fn(x)
    out = out[0] if isinstance(out, (list, tuple)) else out
    torch.testing.assert_close(out, torch.relu(x) * 2)


def test_unlowered_op_becomes_counted_extern_call():
    def fn(x):
        return torch.cumsum(x.sin(), -1) * 2

    x = torch.randn(4, 7)
    torch.testing.assert_close(torch.compile(fn, backend="magpy")(x), fn(x))
    report = codegen.last_report()
    assert any(op.startswith("cumsum") for op, _ in report.fallbacks)
    assert "cumsum" in str(report)


def test_in_place_update_of_an_input_is_applied():
    def fn(x, y):
        x.add_(y)
        return x * 2

    x, y = torch.randn(6), torch.randn(6)
    x_ref = x.clone()
    out = torch.compile(fn, backend="magpy")(x, y)
    expected = fn(x_ref, y)
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(x, x_ref)


def test_inputs_with_other_strides_run_correctly():
    fn = torch.compile(lambda x: x.exp() + 1, backend="magpy")
    a = torch.randn(6, 5)
    torch.testing.assert_close(fn(a), a.exp() + 1)
    b = torch.randn(5, 6).t()
    torch.testing.assert_close(fn(b), b.exp() + 1)


def _train(model, compiled_model, data, target, steps=3):
    opt_a = torch.optim.SGD(model.parameters(), lr=0.05)
    opt_b = torch.optim.SGD(compiled_model.parameters(), lr=0.05)
    losses = []
    for _ in range(steps):
        for m, opt in ((model, opt_a), (compiled_model, opt_b)):
            opt.zero_grad()
            loss = F.cross_entropy(m(data), target)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


def _models_match(make):
    torch.manual_seed(0)
    eager = make()
    twin = make()
    twin.load_state_dict(eager.state_dict())
    return eager, twin


def test_training_an_mlp_matches_eager():
    def make():
        return nn.Sequential(nn.Linear(20, 32), nn.LayerNorm(32), nn.GELU(), nn.Linear(32, 5))

    eager, twin = _models_match(make)
    compiled = torch.compile(twin, backend="magpy")
    data, target = torch.randn(16, 20), torch.randint(0, 5, (16,))
    losses = _train(eager, compiled, data, target)
    for a, b in zip(losses[0::2], losses[1::2]):
        assert abs(a - b) < 1e-4
    for p, q in zip(eager.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


def test_training_a_cnn_matches_eager():
    def make():
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 4 * 4, 10))

    eager, twin = _models_match(make)
    compiled = torch.compile(twin, backend="magpy")
    data, target = torch.randn(4, 3, 8, 8), torch.randint(0, 10, (4,))
    losses = _train(eager, compiled, data, target)
    for a, b in zip(losses[0::2], losses[1::2]):
        assert abs(a - b) < 1e-4
    for p, q in zip(eager.parameters(), twin.parameters()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)
    for p, q in zip(eager.buffers(), twin.buffers()):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5)


def test_debug_dir_dumps_graph_kernels_and_wrapper(tmp_path, monkeypatch):
    monkeypatch.setenv("MAGPY_DEBUG_DIR", str(tmp_path))
    torch.compile(lambda x: (x + 1).exp().sum(-1), backend="magpy")(torch.randn(3, 4))
    folders = list(tmp_path.iterdir())
    assert folders
    files = {p.name for p in folders[-1].iterdir()}
    assert {"graph.txt", "kernels.cpp", "wrapper.py", "report.txt"} <= files
    assert "cpp_fused_add_exp_sum" in (folders[-1] / "kernels.cpp").read_text()


def test_kernel_cache_is_private_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("MAGPY_CACHE_DIR", str(tmp_path / "cache"))
    fn = lambda x: x.tanh() * 3  # noqa: E731
    torch.compile(fn, backend="magpy")(torch.randn(9))
    cpp_dir = tmp_path / "cache" / "cpp"
    assert stat.S_IMODE(cpp_dir.stat().st_mode) == 0o700
    libraries = sorted(cpp_dir.glob("*.so"))
    assert len(libraries) == 1
    mtime = libraries[0].stat().st_mtime_ns
    torch._dynamo.reset()
    torch.compile(fn, backend="magpy")(torch.randn(9))
    assert sorted(cpp_dir.glob("*.so")) == libraries
    assert libraries[0].stat().st_mtime_ns == mtime
