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
