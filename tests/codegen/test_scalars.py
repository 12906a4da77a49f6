"""Float inputs: graphs over a Python float that changes between calls, compiled once for every value.

Each test traces its function over fake inputs whose float is a SymFloat (as ``magpy.compile`` hands a
changing float to the backend), compiles the graph once, then calls it with many values of the float —
with the wrapper's eager fallback refused, so every call runs the kernels — and compares with eager.
The kernels take the float as a ``double`` argument: their source names no value of it.
"""
import os

if os.environ.get("MAGPY_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import math  # noqa: E402

import pytest  # noqa: E402
import torch  # noqa: E402

from codegen_check import assert_close, on_device  # noqa: E402
from magpy.backends.symbolic import fake_inputs, floats_kept  # noqa: E402
from magpy.codegen import compile_aten_graph  # noqa: E402
from magpy.codegen.decompositions import decomposition_table  # noqa: E402
import test_symbolic  # noqa: E402

mode = test_symbolic.mode  # the fixture: the reference evaluator, C++ and Triton (where it runs)

# (0.5 and -0.5 are pow's special exponents, 0 and 1 those of sizes; 1e30 overflows a float32)
VALUES = (2.5, 0.1, -1.7, 0.5, -0.5, 2.0, 0.0, 1.0, 1e-3, 1e30, -math.inf)


def trace(fn, inputs):
    """(aten graph, its example inputs, ShapeEnv) of ``fn`` over ``inputs``, its floats SymFloats: as
    the "magpy" backend's AOTAutograd gives it to the code generator."""
    from torch._dynamo.backends.common import aot_autograd

    fakes, shape_env = fake_inputs(inputs, [frozenset()] * len(inputs))
    traced = []

    def keep(gm, example_inputs):
        traced.append((gm, example_inputs))
        return gm.forward

    gm = torch.fx.symbolic_trace(fn)
    output = next(n for n in gm.graph.nodes if n.op == "output")
    if not isinstance(output.args[0], tuple):  # (AOTAutograd wants tuple outputs)
        output.args = ((output.args[0],),)
        gm.recompile()
    with floats_kept(fakes):
        aot_autograd(fw_compiler=keep, decompositions=decomposition_table())(gm, fakes)
    return (*traced[0], shape_env)


def compile_once(fn, inputs, mode="cpp"):
    """(compiled callable, report) of ``fn`` traced with its floats symbolic at ``inputs``."""
    if mode == "triton":
        inputs = [on_device(x) for x in inputs]
    gm, examples, shape_env = trace(fn, inputs)
    assert not shape_env.replacements, f"the trace fixed {shape_env.replacements}"
    compiled = compile_aten_graph(gm, examples, mode=mode)
    report = compiled.magpy_report
    assert report.graph_fallback is None, report.graph_fallback
    assert not shape_env.replacements, "compiling fixed a float"

    def ran_eagerly(*args):
        raise AssertionError("the compiled graph ran eagerly")

    compiled.__globals__["_eager"] = ran_eagerly
    return compiled, report


def check_values(compiled, fn, tensors, values=VALUES, mode="cpp", exact=False):
    """Compare ``compiled(*tensors, v)`` with ``fn(*tensors, v)`` for each ``v`` (bit for bit when
    ``exact``)."""
    if mode == "triton":
        tensors = [on_device(x) for x in tensors]
    for v in values:
        expected = fn(*tensors, v)
        actual = compiled(*tensors, v)
        expected = expected if isinstance(expected, tuple) else (expected,)
        actual = actual if isinstance(actual, (tuple, list)) else (actual,)
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_close(a, e, f"{fn.__name__} at {v}")
            if exact:
                assert torch.equal(a.isnan(), e.isnan()) and torch.equal(a.nan_to_num(), e.nan_to_num()), \
                    f"{fn.__name__} at {v}: {a} != eager {e}"


def kernels_take_a_double(report, *values):
    for name, source in report.kernel_sources.items():
        assert "kf0" in source, f"{name} takes no float argument:\n{source}"
        for v in values:
            assert repr(v) not in source, f"{name} names the traced value {v}:\n{source}"


def test_a_float_input_is_a_kernel_argument_and_serves_every_value(mode):
    def scaled_softmax(x, scale):
        return (x * scale).softmax(-1)

    compiled, report = compile_once(scaled_softmax, [torch.randn(8, 33), 2.75], mode)
    assert "in1=zf" in str(report)
    assert report.kernel_count == 1
    check_values(compiled, scaled_softmax, [torch.randn(8, 33)], [v for v in VALUES if abs(v) < 1e3], mode)
    if mode == "cpp":
        kernels_take_a_double(report, 2.75)
        assert "double kf0" in next(iter(report.kernel_sources.values()))


def test_the_kernel_source_is_the_same_whatever_value_traced_it():
    def fn(x, s):
        return torch.relu(x) * s + s

    first = compile_once(fn, [torch.randn(4, 8), 2.75])[1]
    second = compile_once(fn, [torch.randn(4, 8), -0.125])[1]
    assert list(first.kernel_sources.values()) == list(second.kernel_sources.values())


def test_sums_and_products_of_floats_and_sizes_are_computed_in_double(mode):
    def fn(x, s):
        t = s * s + 3 * s                     # a float the graph computes from its float input
        return x * t - x.shape[0] * s

    compiled, report = compile_once(fn, [torch.randn(5, 8), 2.75], mode)
    assert report.graph_fallback is None
    check_values(compiled, fn, [torch.randn(5, 8)], [v for v in VALUES if abs(v) < 1e3], mode)


def arithmetic(x, s):
    return x * s, x.div(s), s - x, x + s, x - s


def bounds(x, s):
    return torch.clamp(x, max=s), torch.clamp_min(x, s), torch.where(x > 0, x, s), torch.maximum(x, x * s)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("fn", [arithmetic, bounds])
def test_ops_with_a_float_operand_match_eager(fn, dtype, mode):
    x = torch.randn(6, 7).to(dtype)
    compiled, _ = compile_once(fn, [x, 2.75], mode)
    check_values(compiled, fn, [torch.randn(6, 7).to(dtype)], mode=mode)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("fn", [arithmetic, bounds])
def test_float32_and_float64_results_are_eager_s_bit_for_bit(fn, dtype):
    # (the number is rounded to the tensor's type once, as eager does, and computed in it)
    compiled, _ = compile_once(fn, [torch.randn(6, 7).to(dtype), 2.75])
    check_values(compiled, fn, [torch.randn(6, 7).to(dtype)], exact=True)


def test_multiplying_and_dividing_bfloat16_compute_in_float_as_eager_does():
    def fn(x, s):
        return x * s, x / s

    compiled, _ = compile_once(fn, [torch.randn(64).bfloat16(), 2.75])
    check_values(compiled, fn, [torch.randn(64).bfloat16()], exact=True)


def test_an_integer_tensor_and_a_float_give_the_default_float_dtype(mode):
    def fn(n, s):
        return n * s, n.div(s), torch.where(n > 3, n, s), n + s

    n = torch.arange(-6, 6)
    compiled, _ = compile_once(fn, [n, 2.75], mode)
    check_values(compiled, fn, [n], mode=mode, exact=mode == "cpp")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_a_float_exponent_keeps_eager_s_sqrt_and_rsqrt(dtype, mode):
    def fn(x, s):
        return x ** s

    x = torch.tensor([-math.inf, -2.0, -0.0, 0.0, 0.25, 1.0, 3.0, math.inf, math.nan], dtype=dtype)
    compiled, _ = compile_once(fn, [x, 2.75], mode)
    check_values(compiled, fn, [x], [2.75, 0.5, -0.5, 2.0, 3.0, -1.0, 0.0, 1.0, -2.5], mode=mode)


@pytest.mark.parametrize("dtype", [None, torch.float64, torch.bfloat16, torch.int64])
def test_full_of_a_float_input(dtype, mode):
    def fn(x, s):
        return torch.full((3, 5), s, dtype=dtype, device=x.device) + x

    compiled, _ = compile_once(fn, [torch.zeros(5, dtype=dtype or torch.float32), 2.75], mode)
    check_values(compiled, fn, [torch.zeros(5, dtype=dtype or torch.float32)], [v for v in VALUES if abs(v) < 1e3],
                 mode=mode, exact=mode == "cpp")


def test_an_extern_call_takes_the_float_as_it_comes():
    def fn(x, w, s):
        return torch.addmm(x, x, w, alpha=s).relu()

    compiled, report = compile_once(fn, [torch.randn(4, 4), torch.randn(4, 4), 2.75])
    x, w = torch.randn(4, 4), torch.randn(4, 4)
    check_values(compiled, fn, [x, w], (2.75, 0.5, -1.25))
    assert report.extern_calls
