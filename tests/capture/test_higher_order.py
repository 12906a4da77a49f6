"""torch's higher-order operators inside compiled code (``torch.cond``, ``while_loop``, ``scan``, ``map``, the
pointwise ``associative_scan`` falcon_mamba calls on CUDA): run eagerly, their entry points compile the
operator's call with ``torch.compile``; under capture the call is followed and the operator's dense kernel
is interpreted, so its ops join the graph. Where one of torch's systems is at work (grad on tensors that
require it) the call runs as in eager, a graph break.
"""
import functools
import warnings

import pytest
import torch
import torch.utils._pytree as pytree

from twin import Call, differential, expect, expect_one_graph, fresh, plain

hops = pytest.importorskip("torch._higher_order_ops")
from torch._higher_order_ops.utils import _maybe_compile_and_run_fn  # noqa: E402
from torch._higher_order_ops.associative_scan import associative_scan_op, wrap_combine_fn_flat  # noqa: E402
from torch._higher_order_ops.map import map as map_rows  # noqa: E402
from torch._higher_order_ops.scan import scan  # noqa: E402
from torch._higher_order_ops.while_loop import while_loop  # noqa: E402


def t(*shape):
    return torch.randn(shape)


@pytest.fixture(autouse=True, scope="module")
def torch_compiler_loaded():
    """Each entry point's first eager run imports torch's compiler, which warns (once per process) on the way:
    done before the tests, so that eager's first call is not the only one to warn."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.cond(torch.tensor(True), torch.sin, torch.cos, (torch.ones(1),))
        w = torch.ones(1, requires_grad=True)
        scan(lambda c, r: (c + r * w, c.clone()), torch.zeros(1), torch.ones(2, 1))[0].sum().backward()


def combine(left, right):
    a_left, b_left = left
    a_right, b_right = right
    return a_left * a_right, a_right * b_left + b_right


def pointwise_scan(a, b):
    """``associative_scan(combine, (a, b), dim=2, combine_mode="pointwise")`` below its check that the tensors
    are on CUDA: the branch falcon_mamba takes on a GPU (``_maybe_compile_and_run_fn``, ``associative_scan_op``)."""
    leaves = [torch.movedim(a, 2, 0), torch.movedim(b, 2, 0)]
    spec = pytree.tree_flatten((a, b))[1]
    fn = functools.partial(wrap_combine_fn_flat, combine_fn=combine, spec=spec, num_leaves=2)

    def run(fn, leaves):
        return associative_scan_op(fn, leaves, additional_inputs=())

    return [torch.movedim(o, 0, 2) for o in _maybe_compile_and_run_fn(run, fn, leaves)]


def test_the_pointwise_associative_scan_falcon_mamba_takes_on_cuda_is_one_graph():
    with torch.no_grad():
        stats = differential(plain(pointwise_scan), fresh(lambda: (torch.rand(2, 3, 6), t(2, 3, 6))))
    expect_one_graph(stats)


def branches(x):
    return torch.cond(x.sum() > 0, torch.sin, lambda v: v.cos() + 1, (x,))


def test_torch_cond_on_data_is_a_branch_on_data():
    positive, negative = torch.ones(3), -torch.ones(3)
    stats = differential(plain(branches), [(positive,), (negative,), (positive * 2,), (negative * 2,)])
    expect(stats, compiles=2, graphs=2, graph_breaks=0, cache_hits=2, fallbacks=0)


def test_while_loop_is_one_graph():
    def doubled_three_times(x):
        return while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * 2), (torch.tensor(0), x))

    stats = differential(plain(doubled_three_times), fresh(lambda: (t(3),)))
    expect_one_graph(stats)


class Recurrence(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.arange(3.0))

    def forward(self, x):
        return scan(lambda c, r: (c * 0.5 + r * self.w, c.sum()), torch.zeros(3), x)


def _recurrence():
    m = Recurrence()
    return m, m


def _new_weights(m):
    with torch.no_grad():
        m.w.add_(1)


def test_scan_over_a_parameter_follows_its_changes():
    x = t(4, 3)
    with torch.no_grad():
        stats = differential(_recurrence, [Call((x,)), Call((x,), before=_new_weights),
                                           Call((x,), before=_new_weights)], observe=lambda m: m.w)
    expect_one_graph(stats)


def test_map_over_rows_reading_a_closure_tensor_is_one_graph():
    def shifted_rows(x, w):
        return map_rows(lambda r: r.sin() + w, x)

    stats = differential(plain(shifted_rows), fresh(lambda: (t(5, 3), t(3))))
    expect_one_graph(stats)


def test_an_operator_on_tensors_that_require_grad_runs_as_in_eager():
    x = t(4, 3)
    stats = differential(_recurrence, [Call((x,)), Call((x,), before=_new_weights)], observe=lambda m: m.w)
    assert stats.graph_breaks and any("require grad" in r for r, _ in stats.reasons), stats.reasons
