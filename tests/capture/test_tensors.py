"""Tensor programs (the original MagPy's tensor / scalar / inplace feature tests, by behaviour):
operators with Python scalars, methods, views and indexing, shapes and dtypes, guards on metadata."""
import gc
import itertools
import operator

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import magpy

try:
    from .twin import expect_not_one_graph, fresh, differential, expect, expect_one_graph, expect_recompile, plain, unsupported, FromEnv, Call, twins
except ImportError:  # tests/capture is not a package: pytest put this folder on sys.path
    from twin import expect_not_one_graph, fresh, differential, expect, expect_one_graph, expect_recompile, plain, unsupported, FromEnv, Call, twins


def t(*shape, dtype=torch.float32):
    return torch.randn(*(shape or (2, 3))).to(dtype)


# ---- operators and scalars ------------------------------------------------------------------------------

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
          operator.pow, operator.matmul, operator.lt, operator.ge, operator.eq]


@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.__name__)
def test_binary_operator_between_tensors(op):
    def fn(a, b):
        return op(a, b.T if op is operator.matmul else b.abs() + 1)

    stats = differential(plain(fn), fresh(lambda: (t(), t())))
    expect_one_graph(stats)


def test_python_scalar_on_either_side():
    def fn(x, k):
        return (k - x) * (x + k) / (2 * k) - x ** 2 + 1 / (x.abs() + k)

    stats = differential(plain(fn), [(t(), 3), (t(), 3), (t(), 4)])
    expect_recompile(stats)


def test_float_scalar_argument_is_guarded_exactly():
    def fn(x, eps):
        return x / (x.norm() + eps)

    stats = differential(plain(fn), [(t(), 1e-6), (t(), 1e-6), (t(), 1e-5)])
    expect_recompile(stats)


def test_bool_argument_selects_a_branch():
    def fn(x, flag):
        return x.relu() if flag else x.sigmoid()

    stats = differential(plain(fn), [(t(), True), (t(), True), (t(), False)])
    expect_recompile(stats)


def test_none_argument_selects_a_branch():
    def fn(x, mask=None):
        if mask is None:
            return x.softmax(-1)
        return x.masked_fill(mask, -1e9).softmax(-1)

    mask = torch.tensor([[True, False, False], [False, False, True]])
    stats = differential(plain(fn), [(t(),), (t(),), (t(), mask)])
    expect_recompile(stats)


def test_unary_operators_and_builtin_abs():
    def fn(x):
        return -x, +x, abs(x), ~(x > 0)

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_scalar_arithmetic_on_shapes_feeds_view_ops():
    def fn(x):
        b, n = x.shape
        h = n // 2
        return x.view(b, 2, h).transpose(1, 2).reshape(b * h, -1)

    stats = differential(plain(fn), fresh(lambda: (t(2, 4),), 2) + [(t(3, 6),)])
    expect_recompile(stats)


def test_tensor_size_and_dim_queries():
    def fn(x):
        return x.new_zeros(x.size(0), x.dim()) + x.numel() + len(x)

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


# ---- methods, views and indexing ------------------------------------------------------------------------

def test_tensor_methods_chain():
    def fn(x):
        return x.abs().sqrt().log1p().clamp(min=0.1).mean(dim=1, keepdim=True).expand(-1, 3).contiguous()

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_indexing_and_slicing():
    def fn(x, idx):
        return x[0], x[:, 1:], x[..., ::2], x[idx], x[x > 0], x[None, :, -1]

    idx = torch.tensor([1, 0, 1])
    stats = differential(plain(fn), fresh(lambda: (t(), idx)))
    expect_one_graph(stats)


def test_slice_bound_from_an_int_argument():
    def fn(x, n):
        return x[:, :n], x[n:]

    stats = differential(plain(fn), [(t(3, 4), 2), (t(3, 4), 2), (t(3, 4), 1)])
    expect_recompile(stats)


def test_split_chunk_unbind_results():
    def fn(x):
        a, b = x.chunk(2, dim=1)
        parts = x.split(1, dim=0)
        rows = x.unbind(0)
        return a * b, parts, rows

    stats = differential(plain(fn), fresh(lambda: (t(2, 4),)))
    expect_one_graph(stats)


def test_torch_functions_with_lists_of_tensors():
    def fn(a, b):
        return torch.cat([a, b], 0), torch.stack((a, b)).sum(0), torch.where(a > b, a, b)

    stats = differential(plain(fn), fresh(lambda: (t(), t())))
    expect_one_graph(stats)


def test_new_tensors_made_inside():
    def fn(x):
        return x + torch.ones(x.shape, dtype=x.dtype) + torch.arange(x.shape[-1]) + torch.tensor(2.0)

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


# ---- metadata guards ------------------------------------------------------------------------------------

def test_dtype_change_recompiles():
    def fn(x):
        return (x * 2).sum(0)

    stats = differential(plain(fn), [(t(),), (t(),), (t(dtype=torch.float64),)])
    expect_recompile(stats)


def test_integer_tensor_input():
    def fn(x):
        return x // 2 + x % 3, x.float().mean()

    ints = lambda: (torch.randint(-5, 5, (2, 3)),)  # noqa: E731
    stats = differential(plain(fn), fresh(ints))
    expect_one_graph(stats)


def test_dtype_branch_in_python():
    def fn(x):
        if x.dtype == torch.float64:
            return x.float()
        if x.is_floating_point():
            return x * 2
        return x

    stats = differential(plain(fn), [(t(),), (t(),), (t(dtype=torch.float64),)])
    expect_recompile(stats)


def test_non_contiguous_input():
    def fn(x):
        return x.view(-1) if x.is_contiguous() else x.reshape(-1) * 2

    calls = [(t(3, 2).T,), (t(3, 2).T,), (t(2, 3),)]
    stats = differential(plain(fn), calls)
    expect_recompile(stats)


def test_stride_dependent_view_raises_like_eager():
    def fn(x):
        return x.view(-1)

    calls = [(t(2, 3),), (t(2, 3),), (t(3, 2).T,)]
    stats = differential(plain(fn), calls, raises=True)
    assert isinstance(stats.side.outcomes[2].error, RuntimeError)


# ---- in-place chains (quantized ResNet style) -----------------------------------------------------------

def test_inplace_chain_on_an_intermediate():
    def fn(x, w):
        y = x @ w
        y.add_(1).mul_(0.5).relu_()
        y += x.sum()
        return y

    stats = differential(plain(fn), fresh(lambda: (t(), t(3, 3))))
    expect_one_graph(stats)


def test_inplace_result_aliases_its_input():
    def fn(x):
        y = x.mul_(2)
        return y, x

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_view_of_an_input_returned_sees_later_writes():
    def fn(x):
        v = x[0]
        x.add_(1)
        return v

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


# ---- Python values read from tensors beyond shape / dtype / device ---------------------------------------

def with_grad(*shape):
    w = torch.randn(*shape, requires_grad=True)
    w.grad = torch.randn(*shape)
    return w


def test_grad_presence_branch():
    # optimizers and gradient clipping test ``p.grad is not None``
    def fn(ps):
        total = torch.zeros(())
        for p in ps:
            if p.grad is not None:
                total = total + p.grad.abs().sum()
        return total

    no_grad = lambda: torch.randn(3, requires_grad=True)  # noqa: E731
    calls = [([no_grad()],), ([no_grad()],), ([with_grad(3)],)]
    stats = differential(plain(fn), calls)
    expect_recompile(stats)


def test_is_leaf_branch():
    def fn(x):
        return x * 2 if x.is_leaf else x * 3

    leaf = lambda: torch.randn(2, requires_grad=True)  # noqa: E731
    # a non-leaf cannot be deep-copied: each side builds its own, with equal values
    non_leaf = FromEnv(lambda env: torch.full((2,), 0.5, requires_grad=True) * 1)
    stats = differential(plain(fn), [(leaf(),), (leaf(),), (non_leaf,)])
    expect_recompile(stats)


def test_grad_fn_branch_on_an_input():
    # (an input's history is not in its tensor guard: the branch is guarded on the path itself)
    def fn(x):
        return x * 2 if x.grad_fn is None else x * 3

    leaf = lambda: torch.randn(2, requires_grad=True)  # noqa: E731
    non_leaf = FromEnv(lambda env: torch.full((2,), 0.5, requires_grad=True) * 1)
    stats = differential(plain(fn), [(leaf(),), (leaf(),), (non_leaf,)])
    expect_recompile(stats)


def test_storage_offset_branch():
    def fn(x):
        return x * 2 if x.storage_offset() == 0 else x * 3

    stats = differential(plain(fn), [(torch.randn(6)[:3],), (torch.randn(6)[:3],), (torch.randn(6)[3:],)])
    expect_recompile(stats)


@unsupported("Tensor.data_ptr() values cannot be replayed")
def test_shared_storage_check_with_data_ptr():
    def fn(x, y):
        return x.data_ptr() == y.data_ptr()

    a = t()
    stats = differential(plain(fn), [(t(), t()), (t(), t()), (a, a)])
    expect_recompile(stats)


def test_negative_zero_float_argument_is_not_zero():
    def fn(x, k):
        return 1 / (x.abs() * k)

    def signs(stats):
        return [torch.signbit(o.result).tolist() for o in stats.side.outcomes]

    stats = differential(plain(fn), [(t(), 0.0), (t(), 0.0), (t(), -0.0)])
    assert signs(stats)[2] == [[True] * 3] * 2
    expect_recompile(stats)


# ---- aliasing between inputs ---------------------------------------------------------------------------

def test_same_tensor_passed_twice_with_an_inplace_update():
    def fn(x, y):
        x.add_(1)
        return y * 2

    a = t()
    stats = differential(plain(fn), [(t(), t()), (t(), t()), (a, a)])
    expect(stats, fallbacks=0)


def test_one_tensor_passed_twice_then_two_different_ones():
    # the first call reads one tensor by two paths; a later call with two tensors must not reuse it
    def fn(x, y):
        return x + y * 2

    a, b = t(), t()
    stats = differential(plain(fn), [(a, a), (t(), t()), (b, b)])
    expect(stats, fallbacks=0, compiles=2)


def test_tied_parameters_read_by_two_paths():
    class Tied(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = torch.nn.Linear(4, 4, bias=False)
            self.dec = torch.nn.Linear(4, 4, bias=False)
            self.dec.weight = self.enc.weight

        def forward(self, x):
            return self.dec(self.enc(x))

    def untie(env):
        env.dec.weight = torch.nn.Parameter(torch.randn(4, 4))

    calls = [Call((t(2, 4),)), Call((t(2, 4),)), Call((t(2, 4),), before=untie)]
    stats = differential(twins(Tied()), calls)
    expect(stats, fallbacks=0, compiles=2)


def test_view_of_one_input_passed_as_another():
    def fn(x, y):
        y.mul_(2)
        return x + 0

    b = t()
    stats = differential(plain(fn), [(t(), t(3)), (t(), t(3)), (b, b[0])])
    expect(stats, fallbacks=0)


def test_torch_builtin_with_a_differently_named_python_wrapper():
    # torch.broadcast_tensors / torch.norm are Python wrappers over _VF builtins of the same name that take
    # other arguments: the graph must call the builtin that ran, not the wrapper fx would name
    def fn(a, b):
        x, y = torch.broadcast_tensors(a, b)
        return x + y + torch.norm(a, dim=(0,), keepdim=True)

    stats = differential(plain(fn), fresh(lambda: (torch.rand(3, 1), torch.rand(1, 4))))
    expect_one_graph(stats)


def test_type_conversion_by_tensor_class():
    def fn(x):
        return x.type(torch.DoubleTensor) * 2 + x.type(torch.IntTensor)

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_sum_accumulated_from_a_python_zero():
    def fn(xs):
        loss = 0
        for x in xs:
            loss += 0.5 * x.sum()
        return loss

    stats = differential(plain(fn), fresh(lambda: ([t(), t()],)))
    expect_one_graph(stats)


def test_shape_tuple_built_with_repeat_and_stored():
    class SpatialDropoutShape:
        noise_shape = None

    def fn(state, x, k):
        state.noise_shape = x.shape[0], *itertools.repeat(1, x.dim() - 2), x.shape[-1]
        state.pad = (*itertools.repeat(0, k), 1)
        return x.new_ones(state.noise_shape) * x

    stats = differential(lambda: (fn, SpatialDropoutShape()),
                         [(FromEnv(), t(2, 3, 4), 2), (FromEnv(), t(2, 3, 4), 2), (FromEnv(), t(2, 3, 4), 3)])
    expect_recompile(stats)


def test_enumerate_and_zip_over_tensor_rows():
    def fn(x, y, scales):
        rows = [r * k for k, r in enumerate(x)]
        pairs = [a - b * s for a, b, s in zip(x, y, scales)]
        return torch.stack(rows), torch.stack(pairs)

    stats = differential(plain(fn), [(t(3, 2), t(3, 2), [1.0, 2.0, 3.0]), (t(3, 2), t(3, 2), [1.0, 2.0, 3.0]),
                                     (t(3, 2), t(3, 2), [1.0, 2.0, 4.0])])
    expect_recompile(stats)


# ---- library corners met in real models ---------------------------------------------------------------

def test_a_branch_on_torch_equal_is_guarded_by_rerunning_it():
    def fn(q, k):
        if torch.equal(q, k):
            return q * 2       # self-attention: one projection serves both
        return q - k

    same = t()
    calls = [(same, same.clone()), (t(), t()), (same, same.clone()), (t(), t())]
    stats = differential(plain(fn), calls)
    expect(stats, compiles=2, fallbacks=0)


def test_einsum_of_three_operands_reads_torch_backends_flags():
    def fn(a, b, c):
        return torch.einsum("ij,jk,kl->il", a, b, c)

    stats = differential(plain(fn), fresh(lambda: (t(2, 3), t(3, 4), t(4, 5))))
    expect_one_graph(stats)


class _FixedEncoding(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pe = torch.randn(4, 3)

    def forward(self, x):
        # (a new Parameter of a constant table, made on every call)
        return x + torch.nn.Parameter(self.pe, requires_grad=False)


def test_a_parameter_made_in_forward():
    torch.manual_seed(0)
    stats = differential(twins(_FixedEncoding()), fresh(lambda: (t(4, 3),)))
    expect_one_graph(stats)


# ---- shapes that depend on tensor data --------------------------------------------------------------

def test_the_size_of_a_boolean_mask_selection_is_read_on_every_call():
    # (how many elements ``x[x > 0]`` holds is data: a size read from it must not be the first call's)
    def fn(x):
        y = x[x > 0]
        return y.sum() / y.shape[0], torch.zeros(len(y)), y.numel() + y.size(0)

    calls = [(torch.tensor([1., 2., -1.]),), (torch.tensor([1., -2., -1.]),), (torch.tensor([1., 2., 3.]),)]
    stats = differential(plain(fn), calls)
    expect_one_graph(stats)


def test_a_count_of_nonzero_elements_decides_a_branch():
    def fn(x):
        idx = x.nonzero()
        if idx.shape[0] > 2:
            return x * 2, idx
        return x - 1, idx

    calls = [(torch.tensor([1., 0., 3., 4.]),), (torch.tensor([0., 0., 3., 0.]),),
             (torch.tensor([1., 2., 3., 0.]),), (torch.tensor([0., 2., 0., 0.]),)]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0, compiles=2, cache_hits=2)


def test_only_the_dims_that_depend_on_data_are_read_from_the_graph():
    # (sparse graph attention: as many edges as the adjacency has, but the node count and the sparse
    # matrix's size are fixed; that size passes behind a dropout, which a guard cannot rerun)
    def fn(x, adj, w):
        n = x.size()[0]
        edge = adj.nonzero().t()                       # (2, edges): only dim 1 is data
        h = x @ w
        pairs = torch.cat((h[edge[0, :], :], h[edge[1, :], :]), dim=1).t()
        values = torch.exp(-pairs.sum(0))
        values = F.dropout(values, 0.5, training=True)
        a = torch.sparse_coo_tensor(edge, values, torch.Size([n, n]), check_invariants=False)
        out = torch.sparse.mm(a, h)
        rows = out.size(0)                             # fixed: n
        return out.reshape(rows, -1) * edge.shape[0] + pairs.shape[0], len(edge)

    def call(seed):
        g = torch.Generator().manual_seed(seed)
        return (torch.randn(5, 3, generator=g), (torch.rand(5, 5, generator=g) > 0.6).float(),
                torch.randn(3, 2, generator=g))

    stats = differential(plain(fn), [call(k) for k in range(4)])
    expect_one_graph(stats, calls=4)


def test_a_stride_over_a_dim_that_depends_on_data_is_read_every_call():
    # (dim 0 of the (1, n) index list is fixed, but its stride is n)
    def fn(x):
        idx = x.nonzero().t().contiguous()
        return torch.zeros(idx.stride(0)), idx.size(0)

    calls = [(torch.tensor(v),) for v in ([1., 0., 2.], [1., 1., 1.], [0., 0., 3.])]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0)


def test_a_count_the_graph_computes_as_a_slice_bound():
    # (RetinaFace's hard negative mining: keep three negatives per positive)
    def fn(x):
        losses, _ = torch.sort(x, descending=True)
        keep = (x > 0).sum() * 3
        return losses[:keep].mean(), losses[1:keep]

    stats = differential(plain(fn), [(torch.tensor(v),) for v in
                                     ([1., -2., -3., -1., -5.], [1., 2., -3., -1., -5.], [-1., -2., -3., 4., 5.])])
    expect_one_graph(stats)


def test_a_random_cut_as_a_slice_bound():
    # (audio augmentation: cut a random length from the start or the end)
    def fn(x):
        side = torch.randint(0, 2, (1,))
        cut = torch.randint(1, 4, (1,))
        if side == 0:
            return x[:-cut, :]
        return x[cut:, :]

    stats = differential(plain(fn), [(torch.randn(6, 2),) for _ in range(8)])
    expect(stats, fallbacks=0)


def test_only_the_dims_a_selection_or_a_bound_makes_depend_on_data():
    # (VITS's spline: rows picked by a mask, scaled, split along their fixed last dim; a channel count
    # kept in a tensor made of constants bounds a slice)
    def fn(x):
        rows = x[x[:, 0] > 0, :] * 0.5
        halves = rows.split(2, dim=1)
        count = torch.IntTensor([2])
        first, second = x[:, :count[0]].unbind(1)
        pairs = x.repeat_interleave(2, dim=-1).unbind(0)
        return halves[0].sum() - halves[1].sum(), first * second, len(pairs)

    calls = [(torch.tensor(v),) for v in ([[1., 2., 3., 4.], [-1., 2., 3., 4.]],
                                          [[1., 2., 3., 4.], [1., -2., 3., 4.]],
                                          [[-1., 2., 3., 4.], [-1., -2., 3., 4.]])]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0, graph_breaks=0)


def test_iterating_over_a_selection_pins_its_length():
    # (how many rows the mask selects is pinned: the guard reruns the count, another count is another entry)
    def fn(x):
        total = x.new_zeros(())
        for v in x[x > 0]:
            total = total + v * v
        return total

    calls = [(torch.tensor([1., 2., -1.]),), (torch.tensor([1., 2., 3.]),), (torch.tensor([-4., 5., 6.]),)]
    stats = differential(plain(fn), calls)
    expect(stats, compiles=2, cache_hits=1, fallbacks=0)


def test_a_loop_over_the_experts_a_router_hit():
    # (a mixture-of-experts layer: ``for idx in hit`` over ``nonzero()``'s rows; each count its own entry)
    def fn(x, w):
        hit = (x.sum(-1) > 0).nonzero()
        out = torch.zeros_like(x)
        for idx in hit:
            out[idx] = x[idx] * w
        return out

    g = torch.Generator().manual_seed(0)
    calls = [(torch.randn(6, 3, generator=g), torch.randn(3, generator=g)) for _ in range(5)]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0, graph_breaks=0)


# ---- memory -------------------------------------------------------------------------------------------

_LIVE = []


def _count_live_tensors():
    _LIVE.append(sum(1 for o in gc.get_objects() if isinstance(o, torch.Tensor)))


def test_capture_does_not_keep_the_activations_of_the_call_alive():
    # (eager frees each intermediate as soon as it is consumed; the first, captured call must too, or a
    # large model runs out of memory on its first call)
    def fn(x):
        for _ in range(30):
            x = torch.relu(x * 1.01 + 0.5)
        _count_live_tensors()   # (an unknown native call: capture stops here, after the loop)
        return x

    x = torch.randn(8, 8)
    _LIVE.clear()
    fn(x)
    magpy.compile(fn, backend="eager")(x)
    eager, captured = _LIVE
    assert captured <= eager + 10, (eager, captured)


class _Deep(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList(torch.nn.Linear(8, 8) for _ in range(30))

    def forward(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))   # (each module call keeps its arguments in a closure cell)
        _count_live_tensors()
        return x


def test_capture_does_not_keep_the_inputs_of_module_calls_alive():
    m, x = _Deep(), torch.randn(4, 8)
    _LIVE.clear()
    with torch.no_grad():
        m(x)
        magpy.compile(m, backend="eager")(x)
    eager, captured = _LIVE
    assert captured <= eager + 10, (eager, captured)


def test_a_legacy_tensor_made_from_an_array_in_forward_and_type_names():
    # (RealtimeStereo builds ``torch.Tensor(np.reshape(...))`` in forward; YOLOX compares ``t.type()``)
    def fn(x):
        disp = torch.Tensor(np.reshape(np.array(range(4)), [1, 4]))
        if x.type() == "torch.FloatTensor":
            return x * disp
        return x

    stats = differential(plain(fn), fresh(lambda: (torch.randn(3, 4),)))
    expect_one_graph(stats)
