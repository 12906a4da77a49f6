"""Compiled programs keep eager's semantics where data makes an op invalid or inexact: each test runs
a program through ``magpy.compile`` (C++ kernels, and Triton's interpreter on CPU tensors) call after
call next to eager — values exactly equal, or eager's exception type raised.

What they cover: an index past its dimension (``x[idx]``, ``gather``, ``embedding``, ``index_select``,
``take``), float floor division and remainder, integer division by zero (a tensor divisor, or a
number that automatic dynamic makes a kernel argument), integers to a negative number power, a Python
int past int64 (as an operand, or made by arithmetic over ints the graph takes), a tensor made from a
Python int past int32.
"""
import os

if os.environ.get("MAGPY_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import magpy  # noqa: E402
import magpy.codegen  # noqa: E402


def _triton_ready():
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    from magpy.codegen.triton.runtime import interpreting

    return interpreting()


CODEGENS = ["cpp", pytest.param("triton", marks=pytest.mark.skipif(
    not _triton_ready(), reason="needs triton in its interpreter (kernels report errors only there)"))]


@pytest.fixture(params=CODEGENS)
def codegen(request):
    return request.param


def differential(fn, calls, codegen):
    """Run ``fn`` compiled and eagerly on each argument tuple of ``calls``: equal results (dtype,
    shape, values, -0.0 too) or the same exception type. Returns the compile reports."""
    magpy.reset()
    since = magpy.codegen.mark()
    compiled = magpy.compile(fn, options={"codegen": codegen})
    for args in calls:
        try:
            expected = fn(*args)
        except Exception as e:  # noqa: BLE001 (eager's exception is what the compiled call must raise)
            with pytest.raises(type(e)):
                compiled(*args)
            continue
        got = compiled(*args)
        for e, g in zip(_flat(expected), _flat(got)):
            assert g.dtype == e.dtype and g.shape == e.shape, (args, g, e)
            torch.testing.assert_close(g, e, rtol=0, atol=0, equal_nan=True, msg=lambda m: f"{args}: {m}")
            if e.dtype.is_floating_point:  # (-0.0 too; a NaN's sign is anyone's)
                assert torch.equal(g.signbit() | g.isnan(), e.signbit() | e.isnan()), (args, g, e)
    reports = magpy.codegen.reports(since=since)
    assert reports and all(r.graph_fallback is None and r.kernels for r in reports), [str(r) for r in reports]
    return reports


def _flat(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


T = torch.tensor
ROWS = torch.arange(10.0).reshape(5, 2)
LONG = dict(dtype=torch.long)


def test_an_index_past_its_dimension_raises_index_error(codegen):
    calls = [(ROWS, T([1, 2])), (ROWS, T([-1, 0])), (ROWS, T([1, 7])), (ROWS, T([-6])), (ROWS, T([4, -5]))]
    differential(lambda x, i: x[i] * 2, calls, codegen)


def test_embedding_and_index_select_raise_for_ids_past_the_table_and_negative_ones(codegen):
    calls = [(ROWS, T([1, 2])), (ROWS, T([4, 0])), (ROWS, T([1, 5])), (ROWS, T([-1])), (ROWS, T([3, 3]))]
    differential(lambda x, i: F.embedding(i, x) + 1, calls, codegen)
    differential(lambda x, i: torch.index_select(x, 0, i) + 1, calls, codegen)


def test_gather_raises_runtime_error_for_a_negative_or_too_large_index(codegen):
    column = lambda v: torch.full((5, 1), v, **LONG)  # noqa: E731
    calls = [(ROWS, column(0)), (ROWS, column(1)), (ROWS, column(-1)), (ROWS, column(2)), (ROWS, column(1))]
    differential(lambda x, i: torch.gather(x, 1, i) + 1, calls, codegen)


def test_take_counts_negative_positions_from_the_end_and_raises_past_them(codegen):
    calls = [(ROWS, T([1, 2])), (ROWS, T([9, -10])), (ROWS, T([10])), (ROWS, T([-11])), (ROWS, T([3, -1]))]
    differential(lambda x, i: torch.take(x, i) + 1, calls, codegen)


def test_float_floor_division_and_remainder_are_eager_s(codegen):
    def fn(x):
        return (x // 0.3, torch.div(x, 0.3, rounding_mode="floor"), torch.floor_divide(x, -0.7),
                x % 0.3, x % -0.3, torch.remainder(-x, 0.7), x // 0.0)

    values = T([1.5, 3.0, 0.6, -1.5, 0.0, -0.0, 1e-30, 7.0, -2.1, 0.9])
    differential(fn, [(values,), (values * 3,), (-values,)], codegen)
    differential(lambda x, y: (x // y, x % y), [(values, values.flip(0) + 0.1), (values, -values - 0.2),
                                                 (values * 1.1, T([0.3] * 10))], codegen)


def test_integer_division_by_a_zero_number_raises_runtime_error(codegen):
    # (the changing divisor becomes a kernel argument: the wrapper checks it before any kernel runs)
    x = torch.arange(-3, 4)
    for fn in (lambda x, d: x // d, lambda x, d: x % d, lambda x, d: torch.fmod(x, d)):
        differential(fn, [(x, 2), (x, 3), (x, -4), (x, 0), (x, 5), (x, 0)], codegen)


def test_integer_division_by_a_tensor_holding_zero_raises_runtime_error(codegen):
    def fn(x, d):
        return x // d, x % d, torch.fmod(x, d), torch.div(x, d, rounding_mode="trunc")

    x = torch.arange(-3, 4)
    calls = [(x, torch.full((7,), 2)), (x, torch.full((7,), -3)), (x, T([1, 2, 3, 0, 1, 2, 3])),
             (x, torch.zeros(7, **LONG)), (x, torch.full((7,), 5))]
    differential(fn, calls, codegen)


def test_an_integer_to_a_negative_number_power_raises_runtime_error(codegen):
    x = torch.arange(-2, 4)
    differential(lambda x, p: x ** p, [(x, 2), (x, 3), (x, 4), (x, -1), (x, 5), (x, -2)], codegen)
    # a tensor exponent is no error in eager: 0, 1 or -1
    differential(lambda x, p: x ** p, [(x, T(2)), (x, T(-1)), (x, T(-2)), (x, T(3))], codegen)


def test_a_python_int_past_int64_raises_overflow_error(codegen):
    x = torch.arange(4)
    calls = [(x, 1), (x, 2), (x, 3), (x, 1 << 70), (x, -(2**63) - 1), (x, 2**63 - 1), (x, 5)]
    differential(lambda x, k: x + k, calls, codegen)


class _State:
    def __init__(self, n):
        self.n = n


def test_a_tensor_made_from_an_int_past_int32_keeps_its_value(codegen):
    # (automatic dynamic makes both numbers graph inputs; torch's trace of ``torch.tensor`` of one
    # stored it through 32 bits: 2**42 became the constant 0)
    def fn(x, st):
        acc = x * 1
        acc = acc + torch.tensor(1 << (21 * st.n)).float()
        return acc * (1 << (30 * st.n))

    x = torch.linspace(-2, 2, 5)
    differential(fn, [(x, _State(n)) for n in (1, 1, 2, 2, 1)], codegen)
    calls = [(x, k, m) for k, m in ((3, 2), (5, 3), (2**40 + 5, 7), (2**31, 9), (-(2**31) - 1, 11), (7, 13))]
    differential(lambda x, k, m: x * m + torch.tensor([[k, 3], [-k, m]]).sum(0).repeat(3)[:5], calls, codegen)
    differential(lambda x, k, m: x.double() * m + x.new_tensor(k), calls, codegen)


def test_int_arithmetic_past_int64_raises_overflow_error(codegen):
    # (``x.shape[0] * k * m`` is computed in the kernel: one past int64 runs eagerly, which raises)
    calls = [(torch.ones(3 + i % 3), k, m) for i, (k, m) in enumerate(
        ((3, 5), (7, 11), (2**40 + 1, 2**30 + 3), (2**61, 3), (2**31, 2**31), (13, 17)))]
    differential(lambda x, k, m: x * (x.shape[0] * k * m), calls, codegen)
    differential(lambda x, k, m: x.long() + x.shape[0] * k // m, calls, codegen)


def _relative_error(got, exact):
    return ((got.double() - exact).abs() / exact.abs()).max().item()


def test_variance_of_data_far_from_zero_is_as_accurate_as_eager_s(codegen):
    # (a one-pass formula, or a mean rounded in float32 left uncorrected, is ~1e-3 off here)
    generator = torch.Generator().manual_seed(0)
    rows = 1000 if codegen == "cpp" else 200
    magpy.reset()
    compiled = magpy.compile(lambda x: (x.var(0), x.std(0), torch.var_mean(x, 0)[0]), options={"codegen": codegen})
    for offset in (1e6, 1e4, -3e5):
        x = torch.randn(rows, 4, generator=generator) + offset
        exact = x.double().var(0)
        assert _relative_error(x.var(0), exact) < 1e-6  # (eager's own)
        var, std, var_of_var_mean = compiled(x)
        assert _relative_error(var, exact) < 1e-6 and _relative_error(var_of_var_mean, exact) < 1e-6
        assert _relative_error(std, exact.sqrt()) < 1e-6


def test_a_long_float32_sum_is_as_accurate_as_eager_s():
    # (C++: each SIMD lane summing a sixteenth of 2M floats one after another strays ~3e-5)
    generator = torch.Generator().manual_seed(0)
    magpy.reset()
    compiled = magpy.compile(lambda x: x.sum() + 0)
    for scale in (1.0, 100.0, 1e-3):
        x = torch.rand(2_000_000, generator=generator) * scale
        exact = x.double().sum()
        assert _relative_error(x.sum(), exact) < 1e-6  # (eager's own: cascade summation)
        assert _relative_error(compiled(x), exact) < 1e-6


def test_kernels_check_only_what_data_decides():
    # (no flag, no return code where neither a position nor a divisor comes from data)
    plain = lambda x, y: (x * 2 + 1, x // 3, x % -2, y.sum(0))  # noqa: E731
    x, y = torch.arange(-4, 4), torch.arange(30.0).reshape(6, 5)  # (sums exact in any order)
    reports = differential(plain, [(x, y), (x + 1, y), (x - 2, y)], "cpp")
    sources = [s for r in reports for s in r.kernel_sources.values()]
    assert sources and not any("magpy_error" in s for s in sources)
    assert not any("_kernel_error" in r.wrapper for r in reports)
    checked = differential(lambda x, i: x[i], [(y, T([1, 2])), (y, T([0])), (y, T([5, -6]))], "cpp")
    assert any("magpy_error" in s for r in checked for s in r.kernel_sources.values())
