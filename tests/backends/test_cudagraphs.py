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
