"""A graph that raises partway on a later call's data (an index past the end, a class target past the
classes) leaves what eager leaves: the effects the program made before the failing op done, those after
it not, the inputs it wrote in place written up to there, the random generators advanced as far as
eager's, and eager's own exception. Each program makes effects around a failing op; eager and compiled
run the same calls, the failing one in the middle, and must agree after every call.
"""
import contextlib
import io
import random
import traceback

import pytest
import torch
import torch.nn.functional as F

import magpy
from twin import Call, FromEnv, differential, expect

BACKENDS = ["eager", "magpy"]

GOOD = torch.tensor([0, 1, 2, 3, 4])
BAD = torch.tensor([0, 9, 1, 1, 1])
INDICES = [GOOD, torch.tensor([4, 4, 0, 0, 1]), BAD, torch.tensor([2, 2, 2, 2, 2])]


class Log:
    def __init__(self):
        self.seen = []
        self.steps = 0
        self.meta = {}


def log_env():
    return Log()


def effects_around_a_gather(x, idx, log):
    y = x * 2
    log.seen.append(float(x.sum()))      # (a Python number from the graph: after the graph in the mock)
    log.steps += 1
    log.meta["last"] = "gather"
    out = y.gather(0, idx)
    log.seen.append("after")             # eager never gets here on a bad index
    return out + 1


def input_written_before_the_error(x, idx, acc):
    acc.add_(x)
    acc.mul_(0.5)
    return x[idx] + acc


def dropout_before_the_error(x, idx):
    h = F.dropout(x, 0.5, training=True)
    return h.gather(0, idx)


def python_draw_before_the_error(x, idx, log):
    k = random.randint(1, 5)
    log.seen.append(k)
    return x.index_select(0, idx) * k


def _calls(*extra):
    return [Call((torch.arange(5.0), i, *extra)) for i in INDICES]


@pytest.mark.parametrize("backend", BACKENDS)
def test_effects_before_the_failing_op_are_done_and_after_it_are_not(backend):
    stats = differential(lambda: (effects_around_a_gather, log_env()), _calls(FromEnv()), raises=True,
                         backend=backend)
    expect(stats, compiles=1, graph_errors=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_input_written_before_the_failing_op_is_written_once(backend):
    def make():
        acc = torch.zeros(5)
        return input_written_before_the_error, acc

    stats = differential(make, _calls(FromEnv()), raises=True, backend=backend)
    expect(stats, compiles=1, graph_errors=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_running_statistics_are_updated_once_when_an_embedding_index_is_out_of_range(backend):
    class Tagger(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.BatchNorm1d(4)
            self.table = torch.nn.Embedding(6, 4)

        def forward(self, x, ids):
            return self.norm(x) + self.table(ids)

    torch.manual_seed(0)
    model = Tagger()

    def make():
        import copy
        m = copy.deepcopy(model)
        return m, m

    ids = [torch.tensor([0, 1, 2]), torch.tensor([5, 5, 1]), torch.tensor([1, 7, 2]), torch.tensor([3, 3, 3])]
    stats = differential(make, [Call((torch.randn(3, 4), i)) for i in ids], raises=True, backend=backend,
                         observe=lambda m: (m.norm.running_mean, m.norm.running_var, m.norm.num_batches_tracked))
    expect(stats, compiles=1, graph_errors=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_random_generators_advance_as_far_as_eagers(backend):
    # (after the failing call, the next call's dropout mask must be the one eager draws)
    stats = differential(lambda: (dropout_before_the_error, None), _calls(), raises=True, backend=backend,
                         observe=lambda env: torch.get_rng_state())
    expect(stats, compiles=1, graph_errors=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_python_draw_before_the_failing_op_is_drawn_once(backend):
    stats = differential(lambda: (python_draw_before_the_error, log_env()), _calls(FromEnv()), raises=True,
                         backend=backend, observe=lambda env: (env.seen, random.getstate()))
    expect(stats, graph_errors=0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_error_after_a_graph_break_leaves_the_first_segments_effects(backend):
    def fn(x, idx, log):
        log.seen.append(1)
        y = (x + 1).sum()
        magpy.graph_break()
        log.seen.append(2)
        return x[idx] * y

    differential(lambda: (fn, log_env()), _calls(FromEnv()), raises=True, backend=backend)


def test_a_cached_call_raises_eagers_exception_at_the_users_line():
    compiled = magpy.compile(input_written_before_the_error)
    acc = torch.zeros(5)
    compiled(torch.arange(5.0), GOOD, acc)
    with pytest.raises(IndexError) as raised:
        compiled(torch.arange(5.0), BAD, acc)
    with pytest.raises(IndexError) as eager:
        input_written_before_the_error(torch.arange(5.0), BAD, torch.zeros(5))
    assert str(raised.value) == str(eager.value)
    last = traceback.extract_tb(raised.value.__traceback__)[-1]
    assert last.filename == __file__ and last.line == "return x[idx] + acc"
    assert compiled.stats.cache_hits == 0 and compiled.stats.graph_errors == 0


def test_a_graph_that_raises_where_eager_does_not_still_gives_eagers_answer(monkeypatch):
    monkeypatch.delenv("MAGPY_STRICT", raising=False)

    def broken(gm, example_inputs):
        def run(*args):   # (the first call is captured: it runs no graph)
            raise RuntimeError("kernel failed")
        return run

    def fn(x, log):
        log.append(1)
        return x.exp()

    compiled = magpy.compile(fn, backend=broken)
    log = []
    x = torch.randn(3)
    assert torch.equal(compiled(x, log), x.exp())
    with pytest.warns(UserWarning, match="raised where eager did not .RuntimeError: kernel failed"):
        assert torch.equal(compiled(x, log), x.exp())
    assert log == [1, 1]   # (the eager rerun appended; the graph's failed run did not)
    assert compiled.stats.graph_errors == 1


def test_the_error_of_a_graph_after_a_break_shows_in_the_users_stats(monkeypatch):
    monkeypatch.delenv("MAGPY_STRICT", raising=False)

    def broken_after_the_first(gm, example_inputs):
        made.append(gm)
        if len(made) == 1:
            return gm.forward

        def run(*args):
            raise RuntimeError("kernel failed")
        return run

    def fn(x):
        y = x.exp()
        print("between", y.sum())     # (a tensor printed: a graph break)
        return y.sin()

    made = []
    compiled = magpy.compile(fn, backend=broken_after_the_first)
    x = torch.randn(3)
    with contextlib.redirect_stdout(io.StringIO()), pytest.warns(UserWarning, match="kernel failed"):
        for _ in range(3):
            assert torch.equal(compiled(x), fn(x))
    assert compiled.stats.graph_errors >= 1
    assert str(compiled.stats.last_graph_error) == "kernel failed"


# ---- conditions on data checked after the graph runs (a draw decides): its run undone when one goes
# ---- the other way, so writes into inputs and effects before the graph do not stop capture

def input_written_then_a_drawn_branch(x, acc):
    acc.add_(x)
    if torch.rand(()) + acc.sum() * 0 > 0.5:    # (a draw: checked after the graph, not rerun before)
        return acc * 2
    return acc - 1


def effect_then_a_drawn_branch(x, log):
    log.steps += 1
    log.meta["last"] = x.shape[0]
    if torch.rand(()) > 0.5:
        return x + 1
    return x - 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_drawn_condition_after_an_input_is_written_undoes_the_write_when_it_goes_the_other_way(backend):
    def make():
        return input_written_then_a_drawn_branch, torch.zeros(5)

    stats = differential(make, [Call((torch.arange(5.0), FromEnv()))] * 8, backend=backend)
    expect(stats, graph_breaks=0, fallbacks=0, graph_errors=0)
    assert stats.compiles <= 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_effects_before_a_drawn_condition_wait_for_its_check(backend):
    stats = differential(lambda: (effect_then_a_drawn_branch, log_env()), [Call((torch.arange(5.0), FromEnv()))] * 8,
                         backend=backend)
    expect(stats, graph_breaks=0, fallbacks=0, graph_errors=0)
    assert stats.compiles <= 2


class NormThenBranch(torch.nn.Module):
    """(BlockDrop in training: a policy after batch norm decides which way the rest goes)"""

    def __init__(self):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(3)

    def forward(self, x):
        h = self.bn(x)
        if h[0, 0] > 0:          # (the running statistics move in the same graph: checked after it)
            return h * 2
        return h - 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_branch_after_batch_norm_in_training_puts_the_statistics_back_when_it_goes_the_other_way(backend):
    from twin import twins

    torch.manual_seed(0)
    stats = differential(twins(NormThenBranch()), [Call((torch.randn(4, 3),)) for _ in range(8)], backend=backend)
    expect(stats, graph_breaks=0, fallbacks=0, graph_errors=0)
    assert stats.compiles <= 2


def test_a_condition_rerun_that_raises_prints_nothing_of_ours(capfd):
    # (the guard reruns ``x[idx].sum() > 0`` on the new index: it raises, and the call raises as eager does,
    # with no traceback of a generated graph on stderr)
    def fn(x, idx):
        if x[idx].sum() > 0:
            return x * 2
        return x

    compiled = magpy.compile(fn)
    x = torch.arange(1.0, 6.0)
    compiled(x, torch.tensor([1, 2]))
    capfd.readouterr()
    with pytest.raises(IndexError, match="index 9 is out of bounds"):
        compiled(x, torch.tensor([1, 9]))
    assert capfd.readouterr().err == ""
