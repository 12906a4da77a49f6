"""options={"cudagraphs": True}: a compiled graph replayed as a CUDA graph, or run as compiled when it cannot be."""
import pytest
import torch

from magpy.backends import cudagraphs

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")


def test_cpu_inputs_run_without_graphs_and_say_so():
    compiled = lambda x: x + 1  # noqa: E731
    with pytest.warns(UserWarning, match="cudagraphs needs CUDA tensor inputs"):
        assert cudagraphs.wrap(compiled, [torch.randn(3)]) is compiled


@cuda
def test_replays_match_eager_for_new_inputs():
    import magpy

    w = torch.nn.Parameter(torch.randn(64, device="cuda"))

    def fn(x):
        return torch.softmax(x * w, -1) + x.sin()

    compiled = magpy.compile(fn, options={"cudagraphs": True})
    with torch.no_grad():
        for _ in range(4):
            x = torch.randn(32, 64, device="cuda")
            out = compiled(x)
            torch.testing.assert_close(out, fn(x))


@cuda
def test_a_graph_writing_its_inputs_is_not_replayed():
    calls = []

    def compiled(x):
        calls.append(1)
        return x.add_(1)

    replay = cudagraphs.wrap(compiled, [torch.zeros(4, device="cuda")])
    x = torch.zeros(4, device="cuda")
    with pytest.warns(UserWarning, match="writes to its inputs"):
        replay(x)
    replay(x)
    replay(x)
    assert replay.graph is None and len(calls) == 3
    torch.testing.assert_close(x, torch.full((4,), 3.0, device="cuda"))


@cuda
def test_inputs_seen_twice_are_read_in_place_and_others_copied():
    w = torch.randn(64, device="cuda")
    replay = cudagraphs.wrap(lambda x, w: x * w + 1, [torch.randn(64, device="cuda"), w])
    for _ in range(4):
        x = torch.randn(64, device="cuda")
        torch.testing.assert_close(replay(x, w), x * w + 1)
    assert replay.graph is not None and replay.pointers[0] is None and replay.pointers[1] == w.data_ptr()
    w.mul_(2)  # read where it is: the replay sees the new values
    torch.testing.assert_close(replay(x, w), x * w + 1)


@cuda
def test_outputs_sharing_memory_with_inputs_are_not_replayed():
    replay = cudagraphs.wrap(lambda x: (x.view(-1), x + 1), [torch.randn(8, device="cuda")], quiet=True)
    x = torch.randn(8, device="cuda")
    for _ in range(3):
        flat, _ = replay(x)
    assert replay.graph is None and "share memory" in replay.disabled
    assert flat.data_ptr() == x.data_ptr()


# Training graphs (mode="reduce-overhead"): AOTAutograd's forward and backward replayed, saved tensors handed
# from one to the other in place. (On a GPU, run with MAGPY_TEST_DEVICE=cuda: Triton's interpreter, which the
# CPU run chooses, copies to the host and cannot be captured.)

def _replays(monkeypatch):
    count = []
    replay = torch.cuda.CUDAGraph.replay

    def counted(self):
        count.append(1)
        return replay(self)

    monkeypatch.setattr(torch.cuda.CUDAGraph, "replay", counted)
    return count


def _mlp(norm=True):
    torch.manual_seed(0)
    middle = [torch.nn.BatchNorm1d(64)] if norm else []
    return torch.nn.Sequential(torch.nn.Linear(32, 64), *middle, torch.nn.ReLU(), torch.nn.Linear(64, 8)).cuda()


@cuda
def test_training_steps_replay_forward_and_backward_and_train_as_eager(monkeypatch):
    import copy

    import magpy

    eager = _mlp()
    ours = copy.deepcopy(eager)
    compiled = magpy.compile(ours, mode="reduce-overhead")
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (eager, ours)]
    replays = _replays(monkeypatch)
    for step in range(10):
        x = torch.randn(16, 32, device="cuda")
        losses = []
        for model, opt in zip((eager, compiled), optimizers):
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[1] == pytest.approx(losses[0], rel=1e-4)
    for (name, a), b in zip(eager.state_dict().items(), ours.state_dict().values()):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5, msg=name)
    # (the first calls take turns with the graph run by eager's kernels, timed: some of them replay)
    assert len(replays) >= 2


@cuda
def test_two_forwards_before_a_backward_and_outputs_kept_across_steps_stay_right():
    import copy

    import magpy

    # (no batch norm: its statistics' versions with a capturing call first are tests/backends/test_versions.py's)
    eager = _mlp(norm=False)
    ours = copy.deepcopy(eager)
    compiled = magpy.compile(ours, mode="reduce-overhead")
    kept, expected = [], []
    for step in range(5):
        xs = [torch.randn(16, 32, device="cuda") for _ in range(2)]
        for model in (eager, compiled):
            model.zero_grad()
            outs = [model(x) for x in xs]
            (outs[0].sum() + outs[1].pow(2).sum()).backward()
            (expected if model is eager else kept).append(outs[0])
        for a, b in zip(eager.parameters(), ours.parameters()):
            torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-4)
    for a, b in zip(expected, kept):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)


@cuda
def test_replayed_dropout_draws_new_masks_that_its_backward_agrees_with(monkeypatch):
    import magpy

    w = torch.nn.Parameter(torch.ones(64, device="cuda"))

    def fn(x):
        return torch.nn.functional.dropout(x * w, 0.5, training=True)

    compiled = magpy.compile(fn, mode="reduce-overhead")
    replays = _replays(monkeypatch)
    x = torch.rand(32, 64, device="cuda") + 0.5
    masks = []
    for _ in range(5):
        w.grad = None
        out = compiled(x)
        out.sum().backward()
        kept = out != 0
        torch.testing.assert_close(w.grad, (kept * 2.0 * x).sum(0))
        masks.append(kept)
    assert len(replays) >= 2 and not torch.equal(masks[-1], masks[-2])


@cuda
def test_a_backward_run_twice_with_retain_graph_gives_the_same_gradients():
    import copy

    import magpy

    eager = _mlp()
    ours = copy.deepcopy(eager)
    compiled = magpy.compile(ours, mode="reduce-overhead")
    for _ in range(4):
        x = torch.randn(16, 32, device="cuda")
        for model in (eager, compiled):
            model.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward(retain_graph=True)
            loss.backward()
        for a, b in zip(eager.parameters(), ours.parameters()):
            torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-5)
