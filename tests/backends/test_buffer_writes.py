"""Writes into a compiled graph's inputs stay in the graph (AOTAutograd's ``keep_inference_input_mutations``):
batch norm's running statistics and ``num_batches_tracked`` are stored by our kernels, with no copy of AOTAutograd
after the call, in training and in inference graphs, through the C++ kernels and the Triton ones (in Triton's
interpreter on CPU tensors). Every test compares with eager PyTorch: results, gradients, buffers, versions."""
import copy
import os

os.environ.setdefault("MAGPY_STRICT", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

import magpy  # noqa: E402
from magpy import codegen  # noqa: E402


def _triton_runs() -> bool:
    from magpy.codegen.devices import triton_installed

    if not triton_installed():
        return False
    from magpy.codegen.triton.runtime import interpreting

    return interpreting()


@pytest.fixture(params=["cpp", "triton"])
def generator(request):
    if request.param == "triton" and not _triton_runs():
        pytest.skip("Triton cannot run here")
    return request.param


def _versions(model):
    return {name: b._version for name, b in model.named_buffers()}


def _train_both(make, inputs, generator, steps=4, rtol=1e-4, atol=1e-5):
    """Train an eager model and a compiled twin ``steps`` SGD steps on ``inputs``; check that outputs,
    gradients, buffers and the buffers' version moves agree after each step. Returns the compile reports."""
    torch.manual_seed(0)
    eager = make()
    ours = copy.deepcopy(eager)
    compiled = magpy.compile(ours, options={"codegen": generator})
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (eager, ours)]
    since = codegen.mark()
    for step in range(steps):
        x = inputs()
        before = (_versions(eager), _versions(ours))
        results = []
        for model, optimizer, run in ((eager, optimizers[0], eager), (ours, optimizers[1], compiled)):
            optimizer.zero_grad()
            out = run(x)
            (out.float().pow(2).mean()).backward()
            results.append(out)
        moved = [{k: v - b[k] for k, v in _versions(m).items()} for m, b in zip((eager, ours), before)]
        assert moved[1] == moved[0], f"versions at step {step}"
        torch.testing.assert_close(results[1], results[0], rtol=rtol, atol=atol, msg=f"output at step {step}")
        for (name, p), q in zip(eager.named_parameters(), ours.parameters()):
            torch.testing.assert_close(q.grad, p.grad, rtol=rtol, atol=atol, msg=f"{name}.grad at step {step}")
        for (name, a), b in zip(eager.named_buffers(), ours.buffers()):
            torch.testing.assert_close(b, a, rtol=rtol, atol=atol, msg=f"{name} at step {step}")
        for optimizer in optimizers:
            optimizer.step()
    assert compiled.stats.fallbacks == 0
    return codegen.reports(since=since)


def _cnn():
    return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8, momentum=0.3), nn.ReLU())


def test_batch_norm_2d_training_steps_match_eager(generator):
    reports = _train_both(_cnn, lambda: torch.randn(4, 3, 6, 6), generator)
    forward = [r for r in reports if r.written_inputs]
    # (the forward graph writes 6 buffers: two batch norms' statistics and counts)
    assert len(forward) == 1 and len(forward[0].written_inputs) == 6
    assert "aten.copy_" not in forward[0].wrapper and forward[0].fallbacks == []


def test_batch_norm_2d_training_steps_match_eager_channels_last(generator):
    def make():
        return _cnn().to(memory_format=torch.channels_last)

    _train_both(make, lambda: torch.randn(4, 3, 6, 6).contiguous(memory_format=torch.channels_last), generator)


def test_batch_norm_1d_training_steps_match_eager(generator):
    def make():
        return nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4), nn.BatchNorm1d(4))

    _train_both(make, lambda: torch.randn(10, 6), generator)


def test_the_running_mean_is_stored_by_the_kernel_summing_the_batch():
    reports = _train_both(lambda: nn.Sequential(nn.Linear(6, 16), nn.BatchNorm1d(16)),
                          lambda: torch.randn(10, 6), "cpp", steps=2)
    (forward,) = [r for r in reports if r.written_inputs]
    launches = [line for line in forward.wrapper.splitlines() if "cpp_fused" in line and "(" in line]
    names = [line.split("(")[0].strip() for line in launches]
    sums = [line for name, line in zip(names, launches) if "sum" in name]
    # the statistics kernel takes the running mean and variance as arguments (written in place)
    placeholders = forward.wrapper.split("= args")[0].split("\n")[-1]
    written = [placeholders.replace(" ", "").split(",")[i] for i in forward.written_inputs]
    assert any(all(f"{w}.data_ptr()" in line for w in written[1:]) for line in sums), written


def test_a_compiled_step_makes_no_copy_into_the_buffers():
    """(AOTAutograd's epilogue would copy each buffer's new values in: one ``aten::copy_`` per buffer; a
    dispatch mode would not see them compiled: magpy guards on the modes active, and recompiles)"""
    torch.manual_seed(0)
    model = _cnn()
    compiled = magpy.compile(model)
    for _ in range(2):
        compiled(torch.randn(2, 3, 6, 6)).sum().backward()
    before = [b.clone() for b in model.buffers()]
    compiles = compiled.stats.compiles
    with torch.profiler.profile(record_shapes=True) as profile:
        compiled(torch.randn(2, 3, 6, 6)).sum().backward()
    assert compiled.stats.compiles == compiles
    shapes = {tuple(b.shape) for b in model.buffers()}
    copies = [e.input_shapes for e in profile.events() if e.name == "aten::copy_"]
    assert not [c for c in copies if tuple(c[0]) in shapes], copies
    assert all(not torch.equal(a, b) for a, b in zip(before, model.buffers()))   # (and yet they moved)


# ----------------------------------------------------------------------------------------------
# Inference graphs writing their inputs


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.int64))
        self.register_buffer("total", torch.zeros(5))

    def forward(self, x):
        self.count += 1
        self.total.add_(x.sum(0))
        return x * self.count


def test_buffers_written_by_an_inference_graph_match_eager(generator):
    eager = Counter()
    ours = copy.deepcopy(eager)
    compiled = magpy.compile(ours, options={"codegen": generator})
    since = codegen.mark()
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(3, 5)
            before = (_versions(eager), _versions(ours))
            torch.testing.assert_close(compiled(x), eager(x))
            moved = [{k: v - b[k] for k, v in _versions(m).items()} for m, b in zip((eager, ours), before)]
            assert moved[1] == moved[0]
    torch.testing.assert_close(ours.total, eager.total)
    assert ours.count.item() == eager.count.item() == 4
    (report,) = [r for r in codegen.reports(since=since) if r.written_inputs]
    assert "aten.copy_" not in report.wrapper


def test_an_argument_written_in_place_and_read_after_matches_eager(generator):
    def fn(x, y):
        before = x * 2      # the old values
        x.mul_(y).add_(1)   # written in place
        return before + x   # and read after: the new values

    compiled = magpy.compile(fn, options={"codegen": generator})
    for _ in range(3):
        x, y = torch.randn(7), torch.randn(7)
        ours, theirs = x.clone(), x.clone()
        version = ours._version
        torch.testing.assert_close(compiled(ours, y), fn(theirs, y))
        torch.testing.assert_close(ours, theirs)
        assert ours._version > version


def test_a_slice_of_an_argument_written_in_place_matches_eager(generator):
    def fn(x, y):
        x[1:].add_(y)
        return x.sum()

    compiled = magpy.compile(fn, options={"codegen": generator})
    for _ in range(3):
        x, y = torch.randn(6, 4), torch.randn(5, 4)
        ours, theirs = x.clone(), x.clone()
        torch.testing.assert_close(compiled(ours, y), fn(theirs, y))
        torch.testing.assert_close(ours, theirs)


def test_batch_norm_in_train_mode_under_no_grad_updates_its_statistics_once_a_call(generator):
    torch.manual_seed(0)
    eager = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    ours = copy.deepcopy(eager)
    compiled = magpy.compile(ours, options={"codegen": generator})
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(2, 3, 5, 5)
            torch.testing.assert_close(compiled(x), eager(x), rtol=1e-4, atol=1e-5)
    for (name, a), b in zip(eager.named_buffers(), ours.buffers()):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5, msg=name)


def test_torch_compile_keeps_an_inputs_write_in_the_graph():
    def fn(x, y):
        x.add_(y)
        return x * 2

    torch._dynamo.reset()
    since = codegen.mark()
    x, y = torch.randn(6), torch.randn(6)
    theirs = x.clone()
    out = torch.compile(fn, backend="magpy")(x, y)
    torch.testing.assert_close(out, fn(theirs, y))
    torch.testing.assert_close(x, theirs)
    (report,) = codegen.reports(since=since)
    assert report.written_inputs == [0] and "aten.copy_" not in report.wrapper
    torch._dynamo.reset()
