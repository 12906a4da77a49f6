"""index_put, scatter_add and scatter_reduce lowered to scatter kernels (``codegen/lowering/scatter.py``), against
eager: through the reference evaluator, compiled C++ (one thread, and several: the atomic and the
partitioned parallel loops) and Triton's interpreter; positions out of range raise eager's exception;
the gradient of a bilinear ``F.interpolate`` (four gathers) is one scatter kernel.
"""
import os

if os.environ.get("MAGPY_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import magpy  # noqa: E402
import magpy.codegen  # noqa: E402
from codegen_check import check  # noqa: E402
from test_semantics import CODEGENS, differential  # noqa: E402

aten = torch.ops.aten
T = torch.tensor


def _triton_ready():
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    from magpy.codegen.triton.runtime import interpreting

    return interpreting()


TRITON = pytest.param("triton", marks=pytest.mark.skipif(not _triton_ready(), reason="needs triton's interpreter"))


@pytest.fixture(params=["reference", "cpp", TRITON])
def generator(request):
    return request.param


def _scatter_kernels(report):
    return [k for k in report.kernels if "_scatter_" in k]


def _values(shape, dtype):
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype)
    return torch.randint(-50, 50, shape, dtype=dtype)


# ------------------------------------------------------------------------------------------------
# index_put


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64, torch.int32], ids=str)
def test_index_put_accumulates_duplicate_and_negative_indices(generator, dtype):
    x, v = _values((6, 5), dtype), _values((7, 5), dtype)
    i = T([0, 2, 2, -1, 5, -6, 2])
    report = check(lambda x, i, v: torch.index_put(x, (i,), v, True), x, i, v, mode=generator)
    assert len(_scatter_kernels(report)) == 1, report.kernels


def test_index_put_broadcasts_index_tensors_and_values(generator):
    x = torch.randn(4, 6, 5)
    rows, columns = T([[0], [3], [3]]), T([1, -1, 1, 4])  # (3, 1) and (4,): positions (3, 4)
    values = torch.randn(4, 5)  # broadcast to (3, 4, 5)
    check(lambda x, r, c, v: torch.index_put(x, (r, c), v, True), x, rows, columns, values, mode=generator)


def test_index_put_with_indices_apart_puts_their_dims_first(generator):
    x = torch.randn(3, 4, 5, 2)
    a, b = T([0, 2, 2]), T([4, 0, 4])  # dims 0 and 2, apart: the value's dims are (3, 4, 2)
    check(lambda x, a, b, v: aten.index_put(x, [a, None, b], v, True), x, a, b, torch.randn(3, 4, 2),
          mode=generator)


def test_index_put_after_whole_dims_takes_them_as_they_are(generator):
    x = torch.randn(2, 3, 6, 7)
    h, w = T([[0], [5], [5]]), T([0, 6, 6, 3])
    check(lambda x, h, w, v: aten.index_put(x, [None, None, h, w], v, True), x, h, w, torch.randn(2, 3, 3, 4),
          mode=generator)


def test_index_put_without_accumulating_stores(generator):
    x, i = torch.randn(6, 5), T([4, 0, -3])
    report = check(lambda x, i, v: torch.index_put(x, (i,), v), x, i, torch.randn(3, 5), mode=generator)
    assert any("_scatter_store_" in k for k in report.kernels), report.kernels


def test_index_add_is_an_accumulating_index_put(generator):
    x, i = torch.randn(5, 3), T([0, 4, 0, 2])
    check(lambda x, i, s: torch.index_add(x, 0, i, s, alpha=2.0), x, i, torch.randn(4, 3), mode=generator)


def test_an_empty_index_changes_nothing(generator):
    if generator == "triton":
        pytest.skip("Triton's interpreter ends the process on a kernel over no elements")
    x = torch.randn(4, 3)
    check(lambda x, i, v: torch.index_put(x, (i,), v, True), x, torch.zeros(0, dtype=torch.long),
          torch.randn(0, 3), mode=generator)


@pytest.mark.parametrize("codegen", CODEGENS)
def test_index_put_raises_index_error_past_the_dimension(codegen):
    x, v = torch.zeros(5, 2), torch.ones(2, 2)
    calls = [(x, T([1, 1]), v), (x, T([-5, 4]), v), (x, T([5, 0]), v), (x, T([0, -6]), v), (x, T([3, 3]), v)]
    differential(lambda x, i, v: torch.index_put(x, (i,), v, True) * 2, calls, codegen)
    differential(lambda x, i, v: torch.index_put(x, (i,), v) * 2, calls[1:-1], codegen)


@pytest.mark.parametrize("codegen", CODEGENS)
def test_accumulating_into_a_view_updates_the_viewed_tensor(codegen):
    def fn(x, i, v):
        x[:, 1:].index_put_((i,), v, accumulate=True)
        return x * 1

    i, v = T([0, 2, 2]), torch.randn(3, 4)
    compiled = magpy.compile(fn, options={"codegen": codegen})
    for _ in range(3):
        x = torch.randn(3, 5)
        expected_x = x.clone()
        expected = fn(expected_x, i, v)
        got = compiled(x, i, v)
        torch.testing.assert_close(got, expected)
        torch.testing.assert_close(x, expected_x)


def test_deterministic_algorithms_leave_accumulation_to_eager():
    x, i, v = torch.randn(4, 3), T([0, 0, 3]), torch.randn(3, 3)
    torch.use_deterministic_algorithms(True)
    try:
        report = check(lambda x, i, v: torch.index_put(x, (i,), v, True), x, i, v)
    finally:
        torch.use_deterministic_algorithms(False)
    assert not _scatter_kernels(report) and report.extern_calls, report


def test_half_floats_and_bools_are_not_added_into():
    for dtype in (torch.float16, torch.bool):
        x, v = torch.zeros(4, dtype=dtype), torch.ones(3, dtype=dtype)
        report = check(lambda x, i, v: torch.index_put(x, (i,), v, True), x, T([1, 1, 2]), v)
        assert not _scatter_kernels(report), report


# ------------------------------------------------------------------------------------------------
# scatter_add, scatter_reduce


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_add_adds_along_a_dim(generator, dim):
    x = torch.randn(4, 6)
    index = torch.randint(0, x.shape[dim], (3, 4))  # (smaller than the source and x)
    src = torch.randn(4, 5)
    check(lambda x, i, s: torch.scatter_add(x, dim, i, s), x, index, src, mode=generator)


@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_sum_with_and_without_self(generator, include_self):
    x, index, src = torch.randn(3, 5), T([[0, 4, 4], [1, 1, 1], [2, 0, 3]]), torch.randn(3, 3)
    check(lambda x, i, s: torch.scatter_reduce(x, 1, i, s, "sum", include_self=include_self), x, index, src,
          mode=generator)


def test_scatter_add_of_integers(generator):
    x, index = torch.randint(0, 9, (3, 4)), T([[0, 0, 3]])
    check(lambda x, i, s: torch.scatter_add(x, 1, i, s), x, index, torch.randint(0, 9, (1, 3)), mode=generator)


@pytest.mark.parametrize("codegen", CODEGENS)
def test_scatter_add_raises_runtime_error_for_a_negative_or_too_large_index(codegen):
    x, src = torch.zeros(3, 4), torch.ones(3, 2)
    calls = [(x, T([[0, 3]] * 3), src), (x, T([[4, 0]] * 3), src), (x, T([[1, -1]] * 3), src), (x, T([[2, 2]] * 3), src)]
    differential(lambda x, i, s: torch.scatter_add(x, 1, i, s) + 1, calls, codegen)


# ------------------------------------------------------------------------------------------------
# The C++ loops in parallel


@pytest.mark.parametrize("threads", [1, 2])
def test_many_adds_to_few_elements_in_parallel(threads):
    # (no dim is disjoint: atomic adds with 2 threads, plain ones with 1)
    x, i = torch.zeros(7, dtype=torch.float64), torch.randint(-7, 7, (50000,))
    v = torch.rand(50000, dtype=torch.float64)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        report = check(lambda x, i, v: torch.index_put(x, (i,), v, True), x, i, v)
    finally:
        torch.set_num_threads(before)
    assert "omp atomic" in report.kernel_sources[_scatter_kernels(report)[0]]


@pytest.mark.parametrize("threads", [1, 2])
def test_whole_dims_run_in_parallel_without_atomics(threads):
    x, h = torch.randn(16, 8, 40), torch.randint(0, 8, (400, 1))
    w = torch.randint(0, 40, (1, 30))
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        report = check(lambda x, h, w, v: aten.index_put(x, [None, h, w], v, True), x, h, w, torch.randn(16, 400, 30))
    finally:
        torch.set_num_threads(before)
    source = report.kernel_sources[_scatter_kernels(report)[0]]
    assert "omp parallel for" in source and "omp atomic" not in source, source


# ------------------------------------------------------------------------------------------------
# Gradients of gathers


def _gradients(fn, x, codegen, *args):
    magpy.reset()
    since = magpy.codegen.mark()
    compiled = magpy.compile(fn, options={"codegen": codegen})
    for _ in range(2):
        grad = torch.randn_like(fn(x, *args))
        expected = torch.autograd.grad(fn(x, *args), x, grad)[0]
        got = torch.autograd.grad(compiled(x, *args), x, grad)[0]
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    reports = magpy.codegen.reports(since=since)
    assert all(r.graph_fallback is None for r in reports), [str(r) for r in reports]
    return reports


@pytest.mark.parametrize("align_corners", [True, False])
@pytest.mark.parametrize("size", [dict(scale_factor=2), dict(scale_factor=1.7), dict(size=(7, 12)), dict(size=(3, 4))],
                         ids=["x2", "x1.7", "to 7x12", "to 3x4"])
def test_bilinear_upsample_gradient_is_eager_s_from_one_scatter_kernel(align_corners, size):
    x = torch.randn(2, 3, 5, 6, requires_grad=True)

    def fn(x):
        return F.interpolate(x, mode="bilinear", align_corners=align_corners, **size) * 2

    reports = _gradients(fn, x, "cpp")
    backward = reports[-1]
    assert len(_scatter_kernels(backward)) == 1 and not backward.fallbacks, backward


@pytest.mark.skipif(not _triton_ready(), reason="needs triton's interpreter")
def test_bilinear_upsample_gradient_in_triton_adds_atomically():
    x = torch.randn(1, 2, 4, 5, requires_grad=True)
    reports = _gradients(lambda x: F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False), x, "triton")
    backward = reports[-1]
    (name,) = _scatter_kernels(backward)
    assert backward.kernel_sources[name].count("tl.atomic_add") == 4


def test_embedding_gradient_adds_rows_of_repeated_ids():
    weight = torch.randn(10, 4, requires_grad=True)
    ids = T([[1, 3, 3], [9, 1, 0]])
    reports = _gradients(lambda w, i: F.embedding(i, w) * 3, weight, "cpp", ids)
    assert _scatter_kernels(reports[-1]), reports[-1]


def test_gradients_of_two_gathers_add_into_one_buffer():
    x = torch.randn(6, 3, requires_grad=True)
    a, b = T([0, 5, 5, 1]), T([2, 2, 0, 1])
    reports = _gradients(lambda x, a, b: x[a] * x[b], x, "cpp", a, b)
    backward = reports[-1]
    assert len(_scatter_kernels(backward)) == 1, backward


def test_adds_joining_an_earlier_scatter_run_after_the_values_they_read():
    def fn(x, i, j, v):
        first = torch.index_put(x, (i,), v, True)
        w = (v.exp() + 1) * (v.exp() - 1)  # (realized after the first scatter: read twice, costly)
        return torch.index_put(first, (j,), w + w.sum(), True)

    x, v = torch.zeros(5, 3), torch.randn(4, 3)
    report = check(fn, x, T([0, 1, 1, 4]), T([2, 2, 0, 3]), v)
    assert len(_scatter_kernels(report)) == 1, report.kernels
