"""Tensor sizes that change between calls: one static entry, then one symbolic entry for every size.

With ``dynamic=None`` the first capture fixes every size. When a later call misses only because an input
tensor came with other sizes, the next capture takes exactly those dims as symbolic: the guard lets any
size of at least 2 through (0 and 1 specialise), the graph reads the sizes, and what the program decided
from them (a branch, a ``range``) is guarded on the sizes themselves. Every call still equals eager.
"""
import math
import warnings

import numpy as np
import pytest
import torch

import magpy
from twin import differential, expect, plain


def batches(*sizes, rest=(8,)):
    return [(torch.randn(b, *rest),) for b in sizes]


def mlp_fn():
    torch.manual_seed(0)
    lin = torch.nn.Linear(8, 4)

    def fn(x):
        return torch.relu(lin(x)).sum(-1) * 2
    return fn


def test_varying_batch_compiles_twice():
    stats = differential(lambda: (mlp_fn(), None), batches(3, 5, 7, 9, 13, 4, 6, 17, 33, 2))
    expect(stats, compiles=2, fallbacks=0)


def test_thirteen_batch_sizes_never_reach_the_recompile_limit():
    stats = differential(lambda: (mlp_fn(), None), batches(*range(2, 15)))
    expect(stats, compiles=2, fallbacks=0, eager_calls=0)


def attention(x):
    b, t, c = x.shape
    q = x.view(b, t, 2, c // 2).transpose(1, 2)
    w = (q @ q.transpose(-1, -2)) / (c // 2) ** 0.5
    mask = torch.tril(torch.ones(t, t))
    w = w.masked_fill(mask == 0, float("-inf")).softmax(-1)
    return (w @ q).transpose(1, 2).reshape(b, t, c)


def test_varying_sequence_length_compiles_twice():
    calls = [(torch.randn(2, t, 8),) for t in (3, 5, 7, 9, 13, 17)]
    expect(differential(plain(attention), calls), compiles=2, fallbacks=0)


def test_varying_image_size_compiles_twice():
    def make():
        torch.manual_seed(0)
        conv = torch.nn.Conv2d(3, 4, 3, padding=1)

        def fn(x):
            return torch.nn.functional.adaptive_avg_pool2d(torch.relu(conv(x)), 1).flatten(1)
        return fn, None

    calls = [(torch.randn(2, 3, h, h + 2),) for h in (8, 12, 16, 20, 24)]
    expect(differential(make, calls), compiles=2, fallbacks=0)


def test_an_int_argument_used_in_slicing_compiles_twice():
    def fn(x, n):
        return x[:, :n] * 2 + x[:, n:].sum()

    calls = [(torch.randn(4, 20), n) for n in (3, 5, 7, 9, 13)]
    expect(differential(plain(fn), calls), compiles=2, fallbacks=0)


def test_a_reshape_by_a_size_compiles_twice():
    def fn(x):
        return x.reshape(x.size(0) * 2, -1).softmax(-1) + x.flatten().mean()

    calls = [(torch.randn(b, 4, 6),) for b in (3, 5, 7, 9)]
    expect(differential(plain(fn), calls), compiles=2, fallbacks=0)


def test_a_reshape_by_an_int_argument_compiles_twice():
    def fn(x, n):
        return x.reshape(n, -1).sum(1)

    calls = [(torch.randn(12, 4), n) for n in (2, 3, 4, 6, 12)]
    expect(differential(plain(fn), calls), compiles=2, fallbacks=0)


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)
        self.step = 0

    def forward(self, x):
        self.step += 1
        return self.lin(x) * self.step


def test_a_module_counter_and_a_varying_batch_compile_twice():
    def make():
        m = Counter()
        return m, m

    stats = differential(make, batches(3, 5, 7, 9, 11, rest=(4,)), observe=lambda m: m.step)
    expect(stats, compiles=2, fallbacks=0)


def test_a_branch_on_a_size_is_guarded_on_that_size():
    def fn(x):
        if x.shape[0] > 4:
            return x * 2
        return x - 1

    # 3 static; 5 symbolic with the branch taken; 2 the other way (a miss, not a wrong answer)
    stats = differential(plain(fn), batches(3, 5, 7, 2, 9, 3, 4, rest=(3,)))
    expect(stats, compiles=3, fallbacks=0)


def test_a_range_over_a_size_pins_that_size():
    def fn(x):
        out = x
        for i in range(x.shape[0]):
            out = out + x[i]
        return out

    stats = differential(plain(fn), batches(3, 5, 7, 5, 3, rest=(2,)))
    assert stats.fallbacks == 0


def test_two_inputs_sharing_a_batch_and_then_broadcasting():
    def fn(x, y):
        return (x + y).sum(0)

    calls = [(torch.randn(b, 3), torch.randn(b, 3)) for b in (3, 5, 7, 9)]
    calls += [(torch.randn(5, 3), torch.randn(1, 3)), (torch.randn(6, 3), torch.randn(4, 3))]
    stats = differential(plain(fn), calls, raises=True)
    assert stats.fallbacks == 0


def test_sizes_zero_and_one_specialise():
    def fn(x):
        return x.sum(0) + x.shape[0]

    stats = differential(plain(fn), batches(3, 5, 1, 0, 7, 1, rest=(2,)))
    expect(stats, compiles=4, fallbacks=0)


#: programs reading sizes in the ways user code does; each is called with sizes that repeat (a pinned
#: entry is hit again, not only made)
PATTERNS = {
    "new_zeros": lambda x: x.new_zeros(x.shape) + x,
    "zeros_size": lambda x: torch.zeros(x.size()) + x,
    "view_numel": lambda x: x.view(-1, x.shape[-1]).sum(0) * x.numel(),
    "expand": lambda x: x.expand(2, *x.shape).sum(0),
    "repeat_len": lambda x: x.unsqueeze(0).repeat(len(x), 1, 1).mean(),
    "arange_matmul": lambda x: torch.arange(x.size(0)).float() @ x,
    "half": lambda x: x[x.size(0) // 2:] * 2,
    "split": lambda x: x.split(2)[0] * 3,
    "cat": lambda x: torch.cat([x, x[: x.shape[0] - 1]]).sum(0),
    "flat_slice": lambda x: x.flatten()[: x.shape[0] * x.shape[1] // 2].sum(),
    "full": lambda x: torch.full((x.shape[0], 2), float(x.shape[1])) + x[:, :2],
    "permute": lambda x: x.reshape(x.shape[0], 2, -1).permute(2, 0, 1).contiguous().sum(-1),
    "pad": lambda x: torch.nn.functional.pad(x, (0, 3 - x.shape[1] % 3)).view(x.shape[0], -1, 3).sum(-1),
    "gram": lambda x: x.t() @ x / x.shape[0],
    "shape_out": lambda x: (x.shape, x * 2),
    "rows": lambda x: [x[i].sum() for i in range(2)],
    "stride": lambda x: x.stride()[0] * x,
    "size_numel": lambda x: x * x.shape.numel(),
    "list_shape": lambda x: x.reshape(list(x.shape)[::-1]).sum(0),
    "shape_eq": lambda x: x * 2 if x.shape == (3, 4) else x,
    "shape_tail": lambda x: x.new_ones(x.shape[1:]) + x,
    "prod": lambda x: x / math.prod(x.shape),
    "count": lambda x: x * x.shape.count(4),
    "str": lambda x: (str(x.shape), x + 1),
    "fstring": lambda x: (f"{x.size(0)}", x + 1),
    "index": lambda x: x * x.shape.index(4),
    "size_eq": lambda x: x * 2 if x.size() == torch.Size([5, 4]) else x - 1,
    "Size": lambda x: x.expand(torch.Size([x.size(0), 4])) * 2,
    "divmod": lambda x: x * divmod(x.size(0), 2)[1],
    "negative": lambda x: x[-x.shape[0] // 2:],
    "in": lambda x: x * 2 if x.size(0) in (3, 5) else x,
    "sorted": lambda x: x * sorted(x.shape)[0],
    "sum": lambda x: x * sum(x.shape),
    "np_prod": lambda x: x * int(np.prod(x.shape)),
    "max": lambda x: x * max(x.shape),
    "int_out": lambda x: (x.size(0), x + 1),
    "bool": lambda x: x * 2 if x.shape[0] else x,
    "float": lambda x: x * float(x.shape[0]),
    "pow": lambda x: x * (x.shape[0] ** 2),
    "sqrt": lambda x: x / math.sqrt(x.shape[-2]),
    "view_tuple": lambda x: x.view((x.shape[0] * 2, -1)),
    "chunk": lambda x: x.chunk(x.shape[0])[0] * 2,
    "split_by_a_size": lambda x: [t.sum() for t in x.split(max(1, x.shape[0] // 2), dim=1)],
    "split_across": lambda x: [t * 2 for t in x.split(2, dim=1)],
    "tensor_of_size": lambda x: x + torch.tensor(x.shape[0]),
    "as_tensor": lambda x: x + torch.as_tensor([x.shape[0], x.shape[1]] * 2),
    "enumerate": lambda x: [i * r for i, r in enumerate(x)],
    "numpy_zeros": lambda x: x + torch.from_numpy(np.zeros(x.shape, dtype=np.float32)),
    "step": lambda x: x[::max(1, x.shape[0] // 2)],
    "arange_step": lambda x: torch.arange(0, x.shape[0], 2),
    "linspace": lambda x: torch.linspace(0, 1, x.shape[0]) @ x,
    "eye": lambda x: torch.eye(x.shape[0]) @ x,
    "as_strided": lambda x: x.as_strided((2, 2), (x.stride(0), 1)),
    "repeat": lambda x: x.repeat(x.shape[0] // 2, 1),
    "interpolate": lambda x: torch.nn.functional.interpolate(x[None, None], size=(x.shape[0] * 2, 4)),
}


@pytest.mark.parametrize("name", PATTERNS)
def test_shape_patterns_equal_eager_for_every_size(name):
    calls = [(torch.randn(b, 4),) for b in (3, 5, 7, 4, 6, 5, 3, 7)]
    assert differential(plain(PATTERNS[name]), calls).fallbacks == 0
    assert differential(plain(PATTERNS[name]), calls, dynamic=True).fallbacks == 0


def test_dynamic_true_is_symbolic_from_the_first_call():
    expect(differential(lambda: (mlp_fn(), None), batches(3, 5, 7), dynamic=True), compiles=1, fallbacks=0)


def test_dynamic_false_compiles_once_per_size():
    expect(differential(lambda: (mlp_fn(), None), batches(3, 5, 7), dynamic=False), compiles=3, fallbacks=0)


def test_mark_dynamic_makes_the_first_entry_symbolic():
    calls = batches(3, 5, 7)
    magpy.mark_dynamic(calls[0][0], 0)
    expect(differential(lambda: (mlp_fn(), None), calls), compiles=1, fallbacks=0)


def test_mark_static_keeps_a_dim_static_even_with_dynamic_true():
    calls = batches(3, 5, 7)
    for (x,) in calls:
        magpy.mark_static(x, 0)
    expect(differential(lambda: (mlp_fn(), None), calls, dynamic=True), compiles=3, fallbacks=0)


def test_mark_dynamic_rejects_a_dim_out_of_range():
    with pytest.raises(IndexError, match="out of range"):
        magpy.mark_dynamic(torch.randn(2, 3), 2)


def test_a_transposed_input_keeps_its_layout_guarded():
    def fn(x):
        return x.contiguous().view(-1) * 2 if x.is_contiguous() else x.sum(0)

    calls = [(torch.randn(4, b).t(),) for b in (3, 5, 7)] + [(torch.randn(b, 4),) for b in (3, 5)]
    stats = differential(plain(fn), calls)
    assert stats.fallbacks == 0


def test_explain_shows_symbolic_dims_and_size_guards():
    x = torch.randn(6, 3)
    magpy.mark_dynamic(x, 0)

    def fn(x):
        if x.shape[0] > 4:
            return x * 2
        return x - 1

    text = str(magpy.explain(fn, x))
    assert "symbolic" in text and "x.size(0)" in text
    assert "x.shape[0] >= 5" in text  # (the branch's condition, as the bound it sets: sizes are ints)


def test_a_tensor_method_on_the_stack_at_a_graph_break_is_the_calls_own():
    # (``x.chunk`` was loaded before the count, which the data decides, broke the graph: the live
    # values held the first call's bound method, so later calls chunked the first call's tensor)
    def fn(x, mask):
        return x.chunk(mask.nonzero().shape[0])[0] * 2

    calls = [(torch.randn(6, 3), torch.tensor([1, 0, 1])) for _ in range(3)]
    calls.append((torch.randn(6, 3), torch.tensor([1, 1, 1])))
    assert differential(plain(fn), calls).fallbacks == 0


def test_sizes_of_a_reshaped_tensor_follow_the_symbolic_size():
    def fn(x):
        y = x.transpose(0, 1).reshape(x.shape[1], -1).contiguous()
        s = y.size()[:-1] + (3,)
        return torch.zeros(s) + y.sum(), y.new_full(y.shape, 2.0), torch.reshape(y, (-1, 2))

    calls = [(torch.randn(2, b, 4),) for b in (3, 5, 6, 5)]
    assert differential(plain(fn), calls, dynamic=True).fallbacks == 0
    assert differential(plain(fn), calls).fallbacks == 0


@pytest.mark.parametrize("name, make, calls", [
    ("batch", lambda: (mlp_fn(), None), batches(3, 5, 7, 9, 13, 4)),
    ("sequence", plain(attention), [(torch.randn(2, t, 8),) for t in (3, 5, 7, 9, 13, 17)]),
    # (whole numbers: the sum is exact in any order, as a kernel's reduction order may differ from eager's)
    ("slice", plain(lambda x, n: x[:, :n] * 2 + x[:, n:].sum()),
     [(torch.randint(-8, 8, (4, 20)).float(), n) for n in (3, 5, 7, 9)]),
    ("reshape", plain(lambda x: x.reshape(x.size(0) * 2, -1).softmax(-1)), [(torch.randn(b, 4, 6),) for b in (3, 5, 7)]),
])
def test_sequences_compile_twice_through_our_codegen(name, make, calls):
    from magpy import codegen

    last = codegen.last_report()
    before = last.graph_id if last is not None else -1  # (reports() keeps only the newest 1024)
    stats = differential(make, calls, backend="magpy")
    expect(stats, compiles=2, fallbacks=0)
    reports = [r for r in codegen.reports() if r.graph_id > before]
    assert reports and all(r.graph_fallback is None for r in reports), [str(r) for r in reports]
    assert any(r.symbolic for r in reports), [str(r) for r in reports]  # (``n``: a symbolic int input)


def test_a_mask_over_a_symbolic_batch_compiles_once_with_unbacked_sizes_in_inductor(monkeypatch):
    # (the mask's count is a size from data: Inductor takes it as it comes on each run)
    import magpy.api

    compiled_graphs = []

    def spy(*args, **kwargs):
        compiled_graphs.append(compile_symbolic(*args, **kwargs))
        return compiled_graphs[-1]

    compile_symbolic = magpy.api.compile_symbolic
    monkeypatch.setattr(magpy.api, "compile_symbolic", spy)

    def fn(x):
        y = x[x > 0]
        return (y * 2).softmax(0) + y.mean()

    compiled = magpy.compile(fn, backend="inductor")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # (Inductor's own imports)
        for b in (3, 5, 7, 5):
            x = torch.randn(b * 4)
            torch.testing.assert_close(compiled(x), fn(x))
    assert compiled.stats.compiles == 2 and compiled.stats.fallbacks == 0
    assert len(compiled_graphs) == 2  # (the static graph and the symbolic one, both by Inductor)


def with_positives(n, k, *rest):
    """``n`` (times ``rest``) numbers of which exactly ``k`` are > 0."""
    x = -torch.rand(n, *rest) - 0.5
    x.view(-1)[torch.randperm(x.numel())[:k]] = torch.rand(k) + 0.5
    return x


def mask_softmax(x):
    y = x[x > 0]
    return (y * 2).softmax(0) + y.mean()


def nonzero_index(x):
    idx = torch.nonzero(x > 0)
    return x[idx[:, 0], idx[:, 1]] * 2 + idx.sum(1)


def masked_select_sum(x):
    picked = torch.masked_select(x, x > 0)
    return picked.sum() * 2, picked.numel()


# (batch, count) of each call: the first batch again with other counts, 0 and 1 among them
MASK_CALLS = [(7, 3), (9, 4), (9, 0), (9, 1), (5, 5), (12, 2), (7, 6)]


@pytest.mark.parametrize("fn, calls", [
    (mask_softmax, [(with_positives(b * 4, k),) for b, k in MASK_CALLS]),
    (nonzero_index, [(with_positives(b, k, 3),) for b, k in MASK_CALLS]),
    (masked_select_sum, [(with_positives(b, k, 2),) for b, k in MASK_CALLS]),
], ids=lambda v: getattr(v, "__name__", ""))
def test_sizes_from_data_compile_through_our_codegen_once_for_every_count(fn, calls):
    from magpy import codegen

    last = codegen.last_report()
    before = last.graph_id if last is not None else -1
    stats = differential(plain(fn), calls, backend="magpy")
    assert stats.compiles <= 2 and stats.fallbacks == 0, stats
    reports = [r for r in codegen.reports() if r.graph_id > before]
    assert reports and all(r.graph_fallback is None for r in reports), [str(r) for r in reports]
    assert all(r.sizes_from_data for r in reports), [str(r) for r in reports]
    assert any(r.kernels for r in reports), [str(r) for r in reports]


def test_a_graph_of_sizes_from_data_the_backend_cannot_trace_runs_as_captured_saying_why(monkeypatch):
    import magpy.api
    from magpy import codegen

    def cannot_trace(*args, **kwargs):
        raise RuntimeError("a guard on u0")

    monkeypatch.setattr(magpy.api, "compile_symbolic", cannot_trace)
    compiled = magpy.compile(mask_softmax)
    with pytest.warns(UserWarning, match="runs as captured: sizes from data it cannot trace"):
        for b, k in MASK_CALLS[:3]:
            x = with_positives(b * 4, k)
            torch.testing.assert_close(compiled(x), mask_softmax(x), equal_nan=True)
    assert "a guard on u0" in codegen.last_report().graph_fallback


def test_a_branch_on_a_count_goes_the_way_each_calls_count_says():
    # (the graph up to the branch returns ``count > 3``, a relation between sizes: its value, not an
    # object standing for it — which would be true whatever the count)
    def fn(x):
        y = x[x > 0]
        return y.sum() if y.shape[0] > 3 else y.mean()

    calls = [(with_positives(b, k),) for b, k in [(6, 4), (8, 5), (8, 2), (10, 7), (6, 1), (9, 3), (9, 6)]]
    stats = differential(plain(fn), calls, backend="magpy")
    assert stats.fallbacks == 0, stats


def test_gradients_through_a_mask_pick_compile_both_ways():
    # (the backward graph takes the count as an input — a size from data it does not make itself)
    from magpy import codegen

    torch.manual_seed(0)
    w = torch.randn(12, requires_grad=True)

    def fn(x):
        y = (x * w)[x > 0]
        return y.softmax(0).mul(y).sum()

    last = codegen.last_report()
    before = last.graph_id if last is not None else -1
    compiled = magpy.compile(fn)
    for k in (3, 0, 5, 1, 12):
        x = with_positives(12, k)
        grads = []
        for f in (compiled, fn):
            w.grad = None
            result = f(x)
            result.backward()
            grads.append((result.detach(), w.grad))
        torch.testing.assert_close(grads[0], grads[1], equal_nan=True)
    assert compiled.stats.compiles == 1 and compiled.stats.fallbacks == 0
    reports = [r for r in codegen.reports() if r.graph_id > before]
    assert len(reports) == 2 and all(r.graph_fallback is None for r in reports), [str(r) for r in reports]


def test_a_relation_the_compiled_graph_relied_on_is_guarded():
    # (compiled once for every n, the kernels rely on 48 % n == 0; n = 5 breaks it: the entry misses and
    # the call raises as eager does, rather than running kernels planned for a whole number of rows)
    def fn(x, n):
        return x.reshape(n, -1).sum(1) * n

    calls = [(torch.randn(12, 4), n) for n in (2, 3, 4, 6, 5, 8, 5)]
    stats = differential(plain(fn), calls, backend="magpy", raises=True)
    assert stats.fallbacks == 0 or all("raised" in r[0] for r in stats.reasons), stats.reasons


def test_the_size_of_a_slice_by_an_int_argument_is_read_from_the_graph():
    # (an n taken as it comes gave x[:, :n] a size the guards did not fix: read back, it was the
    # first n's — a wrong answer once n changed)
    def fn(x, n):
        y = x[:, :n]
        return y.new_zeros(y.shape[1]) + y.sum(), [t.sum() for t in y.split(2, dim=0)]

    calls = [(torch.randn(4, 20), n) for n in (3, 5, 7, 9, 5)]
    assert differential(plain(fn), calls).fallbacks == 0
