"""Triton kernels from the same IR and schedule as the C++ ones, run in Triton's interpreter on CPU
tensors and checked against eager. Sizes stay small: each program instance costs the interpreter
a millisecond or two.
"""
import os
import re

if os.environ.get("MAGPY_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported (tests/conftest.py does too)

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from codegen_check import DEVICE, check, compile_aten_graph, on_device, trace  # noqa: E402
from test_lowering_pointwise import BINARY, INT_BINARY, INT_UNARY, UNARY, _run_family, float_input, int_input  # noqa: E402
from test_lowering_reduction import REDUCTIONS, _input  # noqa: E402

triton = pytest.importorskip("triton")

if DEVICE.type == "cpu":
    from magpy.codegen.triton.runtime import interpreting  # noqa: E402

    pytestmark = pytest.mark.skipif(not interpreting(), reason="triton was imported before TRITON_INTERPRET=1")
else:  # MAGPY_TEST_DEVICE=cuda TRITON_INTERPRET=0: the same tests, compiled for a GPU
    pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")

SOURCES = []  # every kernel source generated here, for the libdevice check


def run(fn, *inputs):
    report = check(fn, *inputs, mode="triton")
    SOURCES.extend(report.kernel_sources.values())
    return report


def test_pointwise_sin2_cos2_is_one_kernel_named_for_its_ops():
    report = run(lambda x, y: torch.sin(x) ** 2 + torch.cos(y) ** 2, torch.randn(64, 100), torch.randn(64, 100))
    assert report.kernels == ["triton_fused_sin_mul_cos_add_0"]
    assert "tl.load" in report.kernel_sources[report.kernels[0]]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16], ids=str)
def test_unary_float_ops_match_eager(dtype):
    _run_family(UNARY, [float_input((5, 37), dtype)], "triton")


def _magnitudes(*extra):
    return torch.cat([torch.logspace(-30, 1.5, 300, dtype=torch.float64), torch.tensor(extra, dtype=torch.float64)])


# (op, magnitudes to try, absolute error allowed in eps): tanh near zero, at its switch to exp and where
# it saturates; sin and cos past every quadrant, near multiples of pi/2, at the end of the short
# reduction (8192) and past it, where the block takes tl.sin/tl.cos.
NEAR_QUADRANTS = _magnitudes(0.0, 8191.9, *(torch.arange(1, 400) * torch.pi / 2).tolist(), *torch.linspace(0, 8000, 999))
PAST_REDUCTION = _magnitudes(8192.0, 1e5, 3e38, float("inf"))
DIGITS = {
    "tanh": (torch.tanh, _magnitudes(0.0, 0.625, 9.0, 20.0, 400.0, float("inf"), *torch.linspace(0.6, 0.65, 41)), 0),
    "sin": (torch.sin, NEAR_QUADRANTS, 4),
    "cos": (torch.cos, NEAR_QUADRANTS, 4),
    "sin past 8192": (torch.sin, PAST_REDUCTION, 4),
    "cos past 8192": (torch.cos, PAST_REDUCTION, 4),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("name", sorted(DIGITS))
def test_spelled_out_functions_keep_their_digits(name, dtype):
    fn, magnitudes, ulps = DIGITS[name]
    x = torch.cat([magnitudes, -magnitudes, torch.tensor([float("nan"), -0.0], dtype=torch.float64)]).to(dtype)
    x = on_device(x)
    compiled = compile_aten_graph(trace(fn, x), (x,), mode="triton")
    SOURCES.extend(compiled.magpy_report.kernel_sources.values())
    got = compiled(x)
    got = got[0] if isinstance(got, (list, tuple)) else got
    eps = torch.finfo(dtype).eps   # (a few ulp: real GPUs' exp is itself approximate by a couple of ulp)
    torch.testing.assert_close(got, fn(x), rtol=8 * eps, atol=ulps * eps, equal_nan=True)
    assert torch.equal(got.signbit(), fn(x).signbit())


def test_binary_float_ops_match_eager():
    a = float_input((6, 19), torch.float32)
    b = float_input((19,), torch.float32).flip(0) + 0.25
    _run_family(BINARY, [a, b], "triton")


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=str)
def test_integer_ops_match_eager(dtype):
    _run_family(INT_UNARY, [int_input((5, 37), dtype)], "triton")
    _run_family(INT_BINARY, [int_input((6, 19), dtype), int_input((6, 1), dtype, -4, 5)], "triton")


def test_bool_and_mixed_dtypes_match_eager():
    torch.manual_seed(2)
    a, b = torch.rand(4, 9) > 0.5, float_input((4, 9), torch.float16)
    c, d = int_input((4, 9), torch.int64), float_input((9,), torch.float64)

    def fn(a, b, c, d):
        return (a & (b > 0), torch.where(a, b, 2.0), b + c, b * d, c / 3, (c > 0) | a, a.float().sum(-1))
    run(fn, a, b, c, d)


def test_broadcasting_and_transposes_match_eager():
    x, y = torch.randn(24, 1, 40), torch.randn(7, 1)
    z = torch.randn(40, 24)

    def fn(x, y, z):
        return x * y + 1, (x[:, 0, :] + z.t()).relu(), z.t().contiguous() * 2
    run(fn, x, y, z)


def test_where_and_masked_reads_match_eager():
    x = torch.randn(9, 30)

    def fn(x):
        padded = F.pad(x, (2, 3, 1, 0), value=-1.0)
        joined = torch.cat([x, x.exp()], 1)
        return padded * 2, joined + 1, torch.where(x > 0, x, x.sin()), x.masked_fill(x < -1, 0.0)
    run(fn, x)


def test_indirect_reads_match_eager():
    table, ids = torch.randn(50, 16), torch.randint(0, 50, (7, 5))
    x, picks = torch.randn(6, 20), torch.randint(0, 20, (6, 4))

    def fn(table, ids, x, picks):
        return F.embedding(ids, table) * 2, torch.gather(x, 1, picks) + 1, x[:, [3, 1, 4]]
    run(fn, table, ids, x, picks)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=str)
def test_reductions_of_short_rows_match_eager(dtype):
    x = _input((4, 6, 33), dtype, nan=dtype == torch.float32)
    family = {name: fn for name, fn in REDUCTIONS.items()}

    def all_reductions(x):
        return tuple(fn(x) for fn in family.values())
    report = run(all_reductions, x)
    assert report.kernel_count < len(family)


def test_reductions_of_long_rows_loop_and_match_eager():
    x = torch.randn(3, 10000)
    x[1, 7777] = float("nan")
    i = torch.randint(-100, 100, (3, 10000))

    def fn(x, i):
        y = x[0:1].nan_to_num()
        return (x.sum(-1), x.amax(-1), x.argmax(-1), y.argmin(-1), x.mean(-1), (x > 2).any(-1),
                i.sum(-1), i.amin(-1), torch.softmax(y, -1), y.var(-1))
    report = run(fn, x, i)
    assert any("for roffset in range" in s for s in report.kernel_sources.values())


def test_a_row_reduction_marks_loads_read_once_to_leave_l2_first_and_shared_or_reread_ones_to_stay():
    def one_pass(x, w):
        return (x * w).sum(-1)

    def two_passes(x):
        return x - x.mean(-1, keepdim=True)

    (text,) = run(one_pass, torch.randn(8, 300), torch.randn(300)).kernel_sources.values()
    assert re.search(r"tl.load\(in_ptr\d \+ \(\(r0 \+ \(300\*x0\)\)\).*'evict_first'\)", text)
    assert re.search(r"tl.load\(in_ptr\d \+ \(r0\).*'evict_last'\)", text)
    (text,) = run(lambda x: x.var(-1), torch.randn(2, 10000)).kernel_sources.values()
    assert text.count("for roffset") >= 2 and "evict_first" not in text and "'evict_last'" in text
    # a kernel that writes whole rows leaves its loads unmarked
    (text,) = run(two_passes, torch.randn(2, 10000)).kernel_sources.values()
    assert "eviction_policy" not in text and "@evict" not in text


def test_column_and_full_reductions_match_eager():
    x = torch.randn(300, 37)
    run(lambda x: (x.sum(0), x.amax(0, keepdim=True), x.sum(), x.argmax()), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_layer_norm_gelu_is_one_kernel(dtype):
    x, w, b = torch.randn(32, 256).to(dtype), torch.randn(256).to(dtype), torch.randn(256).to(dtype)
    report = run(lambda x, w, b: F.gelu(F.layer_norm(x, (256,), w, b)), x, w, b)
    assert report.kernel_count == 1


def test_softmax_is_one_kernel():
    report = run(lambda x: torch.softmax(x, -1), torch.randn(64, 1000))
    assert report.kernel_count == 1


def test_contiguous_kernels_index_with_one_variable():
    report = run(lambda x: (x * 2).exp() + x, torch.randn(4, 8, 16))
    source = report.kernel_sources[report.kernels[0]]
    assert "//" not in source and "%" not in source


def test_wrapper_matmul_stays_a_library_call():
    report = run(lambda a, b: torch.relu(a @ b + 1), torch.randn(16, 32), torch.randn(32, 8))
    assert any("mm" in op for op, _ in report.extern_calls) and report.kernel_count == 1


def test_convolution_bias_is_added_in_the_kernel_that_follows():
    import magpy
    from magpy.codegen import last_report

    def fn(x, w, b):
        return F.elu(F.conv2d(x, w, b))

    x, w, b = (torch.randn(*s, device=DEVICE) for s in [(2, 3, 10, 10), (4, 3, 3, 3), (4,)])
    torch.testing.assert_close(magpy.compile(fn, options={"codegen": "triton"})(x, w, b), fn(x, w, b),
                               rtol=1e-3, atol=1e-3)  # cuDNN may use TF32
    report = last_report()
    (conv,) = [line for line in report.wrapper.splitlines() if "convolution(" in line]
    assert conv.split("(", 1)[1].split(", ")[2] == "None"
    assert any("add" in k and "expm1" in k for k in report.kernels)


def test_magpy_compile_with_the_triton_option_matches_eager():
    import magpy

    def fn(x, w):
        return F.layer_norm(x.relu(), (48,), w) * 2

    x, w = torch.randn(10, 48, device=DEVICE), torch.randn(48, device=DEVICE)
    compiled = magpy.compile(fn, options={"codegen": "triton"})
    torch.testing.assert_close(compiled(x, w), fn(x, w))
    torch.testing.assert_close(compiled(x, w), fn(x, w))
    from magpy.codegen import reports

    assert any(r.mode == "triton" and r.kernels for r in reports())


def test_debug_dir_holds_the_triton_kernels(tmp_path, monkeypatch):
    monkeypatch.setenv("MAGPY_DEBUG_DIR", str(tmp_path))
    report = run(lambda x: torch.softmax(x, -1) + 1, torch.randn(4, 20))
    dumped = (tmp_path / f"graph_{report.graph_id}" / "kernels.py").read_text()
    assert f"def {report.kernels[0]}(" in dumped and "@triton.jit" in dumped


# Calls a kernel may make: Triton's own functions and the prelude's helpers; nothing else.
ALLOWED_CALL = re.compile(r"^(tl(\.math)?\.\w+|magpy_\w+|float|range|triton\.jit)$")


def test_kernels_call_only_tl_functions_never_libdevice():
    from magpy.codegen.triton.kernel import PRELUDE

    assert SOURCES, "run the other tests of this file first"
    for source in SOURCES + [PRELUDE]:
        assert "libdevice" not in source
        for called in re.findall(r"([A-Za-z_][\w.]*)\(", source):
            if called.startswith("triton_fused") or re.fullmatch(r"\w+\.to|to", called):
                continue
            assert ALLOWED_CALL.match(called), f"kernel calls {called}"


def test_transposed_pointwise_kernels_use_2d_tiles():
    x, y = torch.randn(96, 80), torch.randn(80, 96)
    report = run(lambda x, y: (x + y.t()).sin(), x, y)
    source = report.kernel_sources[report.kernels[0]]
    assert "tl.program_id(1)" in source


def test_a_kernel_with_no_element_to_write_is_never_launched(monkeypatch):
    # (a static size 0: the plan's grid is one block over xnumel 1, and the kernel masks by that xnumel —
    # launched, it stored one element past the empty buffer: a crash under the interpreter, an illegal
    # address on a GPU)
    from magpy.codegen.triton import runtime

    launched = []
    launch = runtime.TritonLauncher._launch
    monkeypatch.setattr(runtime.TritonLauncher, "_launch",
                        lambda self, config, tensors, numbers=(): launched.append(self.__name__) or
                        launch(self, config, tensors, numbers))

    def f(x, y):
        return (x[:, 1:-1] + y[:, 1:-1]).exp(), x * 2

    report = run(f, on_device(torch.randn(3, 1)), on_device(torch.randn(3, 1)))
    assert len(report.kernels) == 2 and len(launched) == 1, (report.kernels, launched)


def test_an_empty_block_of_an_input_written_in_place_writes_nothing():
    import magpy

    def f(x, y):
        v = torch.relu(y)
        x[1:-1, 1:-1].add_(v[1:-1, 1:-1])
        return v

    compiled = magpy.compile(f, options={"codegen": "triton"})
    for _ in range(3):
        x, y = on_device(torch.randn(3, 1)), on_device(torch.randn(3, 1))
        ours, theirs = x.clone(), x.clone()
        torch.testing.assert_close(compiled(ours, y), f(theirs, y))
        torch.testing.assert_close(ours, theirs)
