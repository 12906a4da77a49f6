"""``cudagraphs.TrainingReplay``'s bookkeeping, on CPU: what it hands out in place, when a call may replay
(nothing handed out last time still held, inputs where they were), what it copies. A CUDA graph is stood in
for by one whose replay reruns the recorded function and writes the results into the recorded outputs'
memory, as a replay does (without a version bump: kernels write memory, not tensors)."""
import pytest
import torch

from magpy.backends import cudagraphs


class FakeGraph:
    """A recording: its replay reruns the graph's function on the recorded inputs (those read in place are
    the call's, those copied the recording's copies, loaded with the call's values) and writes the results
    into the recorded outputs. It holds no input between calls: a CUDA graph holds addresses, not tensors."""

    def __init__(self, outputs):
        self.outputs, self.replays, self.owner, self.args = outputs, 0, None, None

    def replay(self):
        self.replays += 1
        with torch.no_grad():
            for static, new in zip(self.outputs, self.owner.boxed(self.args)):
                if isinstance(static, torch.Tensor) and static.data_ptr() != new.data_ptr():
                    with torch.autograd._unsafe_preserve_version_counter(static):
                        static.copy_(new)
        self.args = None

    def pool(self):
        return None


@pytest.fixture
def graphs(monkeypatch):
    made = []

    def record(run, pool=None, warm_up=None):
        (warm_up or run)()  # (the warm-up)
        # (a capture runs nothing: the fake records a run that writes no input either, the warm-up's)
        made.append(FakeGraph((warm_up or run)()))
        return made[-1], made[-1].outputs

    load = cudagraphs.TrainingReplay._load

    def loaded(self, args):
        if not load(self, args):
            return False
        statics = list(args)
        for i, held in self.copies:
            statics[i] = held
        self.graph.owner, self.graph.args = self, statics
        return True

    monkeypatch.setattr(cudagraphs, "record", record)
    monkeypatch.setattr(cudagraphs.TrainingReplay, "_load", loaded)
    return made


def forward(args):
    """A forward graph, boxed: [the loss the program sees, a tensor saved for the backward]."""
    w, x = args
    args.clear()
    h = x * w
    return [h.sum(), h.exp()]


def test_saved_tensors_are_handed_out_in_place_while_nothing_holds_the_last_ones(graphs):
    w = torch.randn(4)
    replay = cudagraphs.TrainingReplay(forward, saved_from=1)
    where = set()
    for step in range(5):
        x = torch.randn(4)
        loss, saved = replay([w, x])
        torch.testing.assert_close(loss, (x * w).sum())
        torch.testing.assert_close(saved, (x * w).exp())
        if step >= 1:
            where.add(saved.data_ptr())
        del loss, saved
    assert graphs[0].replays == 4 and len(where) == 1   # (the graph's own memory, every step)


def test_a_kept_result_is_never_overwritten_and_copied_from_then_on(graphs):
    w = torch.randn(4)
    replay = cudagraphs.TrainingReplay(forward, saved_from=1)
    kept = []
    for step in range(5):
        x = torch.randn(4)
        loss, saved = replay([w, x])
        # (allclose: torch 2.11's assert_close keeps a reference to what it compared, the saved tensor here)
        assert torch.allclose(saved, (x * w).exp())
        kept.append((loss, (x * w).sum()))   # (the program keeps every loss; a backward would drop the saved)
        del saved
    for loss, expected in kept:
        torch.testing.assert_close(loss, expected)
    assert replay.copied == {0}   # the loss, once seen held; a saved tensor never
    # recorded again once (the first recording's memory left to the kept loss), replayed on every later call
    assert len(graphs) == 2 and graphs[1].replays == 3


def test_two_forwards_before_the_backward_run_the_second_unreplayed(graphs):
    w = torch.randn(4)
    replay = cudagraphs.TrainingReplay(forward, saved_from=1)
    replay([w, torch.randn(4)])
    replay([w, torch.randn(4)])          # recorded and replayed
    first = replay([w, x1 := torch.randn(4)])
    second = replay([w, x2 := torch.randn(4)])   # the first one's saved tensor is held
    torch.testing.assert_close(first[1], (x1 * w).exp())
    torch.testing.assert_close(second[1], (x2 * w).exp())
    assert first[1].data_ptr() != second[1].data_ptr()


def test_an_input_read_in_place_found_elsewhere_runs_unreplayed(graphs):
    w = torch.randn(4)
    replay = cudagraphs.TrainingReplay(forward, saved_from=1)
    for _ in range(3):
        replay([w, torch.randn(4)])
    replays = graphs[0].replays
    other = w.clone() + 1
    x = torch.randn(4)
    loss, _ = replay([other, x])
    torch.testing.assert_close(loss, (x * other).sum())
    assert graphs[0].replays == replays


def test_the_backward_reads_the_forwards_saved_tensors_where_they_are_and_copies_kept_gradients(graphs):
    w = torch.randn(4)
    fw = cudagraphs.TrainingReplay(forward, saved_from=1)

    def backward(args):
        saved, grad = args
        args.clear()
        return [saved * grad]

    bw = cudagraphs.TrainingReplay(backward)
    grads = []
    for step in range(5):
        x = torch.randn(4)
        _, saved = fw([w, x])
        (g,) = bw([saved, torch.ones(4)])
        torch.testing.assert_close(g, (x * w).exp())
        del saved
        if step == 3:
            grads.append((g, (x * w).exp()))   # a gradient the program keeps (a .grad accumulated into)
        del g
    assert [position for position, *_ in bw.places] == [0] and [p for p, _ in bw.copies] == [1]
    x = torch.randn(4)
    _, saved = fw([w, x])
    (g,) = bw([saved, torch.ones(4)])   # the kept gradient is still held: unreplayed, then copied
    torch.testing.assert_close(g, (x * w).exp())
    torch.testing.assert_close(grads[0][0], grads[0][1])   # (not overwritten by a replay)
    assert bw.copied == {0}


def forward_writing(args):
    """A forward that writes a buffer (position 1), as our kernels store a running mean."""
    w, buf, x = args
    args.clear()
    h = x * w
    buf.mul_(0.5).add_(h)
    return [h.sum(), h.exp()]


def test_a_buffer_read_in_place_is_written_once_a_call_where_it_is(graphs):
    w, buf = torch.randn(4), torch.zeros(4)
    expected = buf.clone()
    replay = cudagraphs.TrainingReplay(forward_writing, saved_from=1, writes=[1])
    for step in range(5):
        x = torch.randn(4)
        loss, saved = replay([w, buf, x])
        expected.mul_(0.5).add_(x * w)
        torch.testing.assert_close(buf, expected)   # (the capturing call's warm-up wrote a copy)
        torch.testing.assert_close(loss, (x * w).sum())
        del loss, saved
    assert not replay.disabled and graphs[0].replays == 4 and 1 in replay.placed


def test_a_written_input_copied_in_is_copied_back_after_the_replay(graphs):
    w = torch.randn(4)
    replay = cudagraphs.TrainingReplay(forward_writing, saved_from=1, writes=[1])
    for step in range(5):
        buf, x = torch.randn(4), torch.randn(4)   # (another buffer each call: copied in)
        expected = buf * 0.5 + x * w
        loss, saved = replay([w, buf, x])
        torch.testing.assert_close(buf, expected)
        del loss, saved
    assert not replay.disabled and graphs[0].replays == 4 and [p for p, _ in replay.copies] == [1, 2]


def test_a_write_it_was_not_told_of_runs_it_unreplayed(graphs):
    w, buf = torch.randn(4), torch.zeros(4)
    replay = cudagraphs.TrainingReplay(forward_writing, saved_from=1)
    with pytest.warns(UserWarning, match="writes to inputs it was not told of"):
        replay([w, buf, torch.randn(4)])
    replay([w, buf, torch.randn(4)])
    assert replay.disabled and not graphs
