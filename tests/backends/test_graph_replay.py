"""``cudagraphs.GraphReplay`` of a graph that writes into its inputs, on CPU: each call writes once, where
the program sees it, and bumps the versions a call bumps. A CUDA graph is stood in for by one whose replay
reruns the recorded function on the recorded inputs and writes its results into the recorded outputs; the
host code of a call (AOTAutograd's version bumps) does not run in a replay."""
import pytest
import torch

from magpy.backends import cudagraphs

REPLAYING = [False]


class FakeGraph:
    def __init__(self, run, outputs):
        self.run, self.outputs, self.replays = run, outputs, 0

    def replay(self):
        self.replays += 1
        REPLAYING[0] = True
        try:
            with torch.no_grad():
                self.outputs.copy_(self.run())
        finally:
            REPLAYING[0] = False


@pytest.fixture
def graphs(monkeypatch):
    made = []

    def record(run, pool=None, warm_up=None):
        (warm_up or run)()  # (the warm-up)
        outputs = (warm_up or run)()  # (a capture runs nothing: nor writes, as the warm-up does not)
        made.append(FakeGraph(run, outputs))
        return made[-1], outputs

    monkeypatch.setattr(cudagraphs, "record", record)
    return made


def compiled(w, buf, x):
    """A graph that writes a buffer as our kernels do (no bump), AOTAutograd bumping its version after."""
    h = x * w
    with torch.no_grad(), torch.autograd._unsafe_preserve_version_counter(buf):
        buf.mul_(0.5).add_(h)
    if not REPLAYING[0]:
        torch.autograd.graph.increment_version(buf)
    return h.exp()


def test_a_buffer_read_in_place_is_written_once_a_call_and_its_version_bumped(graphs):
    w, buf = torch.randn(4), torch.zeros(4)
    expected = buf.clone()
    replay = cudagraphs.GraphReplay(compiled, writes=[1])
    version = buf._version
    for step in range(5):
        x = torch.randn(4)
        out = replay(w, buf, x)
        expected.mul_(0.5).add_(x * w)
        torch.testing.assert_close(buf, expected)
        torch.testing.assert_close(out, (x * w).exp())
    assert not replay.disabled and graphs[0].replays == 4
    assert buf._version - version == 5


def test_a_written_input_copied_in_is_copied_back(graphs):
    w = torch.randn(4)
    replay = cudagraphs.GraphReplay(compiled, writes=[1])
    for step in range(5):
        buf, x = torch.randn(4), torch.randn(4)   # (another tensor each call: copied in)
        expected = buf * 0.5 + x * w
        replay(w, buf, x)
        torch.testing.assert_close(buf, expected)
    assert not replay.disabled and graphs[0].replays == 4


def test_a_write_it_was_not_told_of_is_never_replayed(graphs):
    replay = cudagraphs.GraphReplay(compiled, quiet=True)
    w, buf = torch.randn(4), torch.zeros(4)
    for _ in range(3):
        replay(w, buf, torch.randn(4))
    assert replay.disabled == "it writes to its inputs" and not graphs
