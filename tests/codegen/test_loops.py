"""The loops of C++ kernels: merged dims, reductions vectorised on their innermost loop, results exact.

Batch norm's per-channel sums (over dims 0, 2, 3 of NCHW, or of a channels-last tensor) and the
pointwise passes around them are what training a conv net runs most in our kernels; each test
compares with eager and looks at the loops the kernel source opens.
"""
import re

import pytest
import torch
import torch.nn.functional as F

import magpy
from codegen_check import assert_close, check, trace
from magpy.codegen import compile_aten_graph
from magpy.codegen.loop_merge import merge_groups


def sources(report) -> str:
    return "\n".join(report.kernel_sources.values())


def loop_bounds(source) -> list[str]:
    return re.findall(r"for \(int64_t \w+ = 0; \w+ < (\w+);", source)


# ----------------------------------------------------------------------------------------------
# Which dims merge


def test_dims_walked_as_one_merge():
    import sympy

    x = sympy.symbols("x0:4", integer=True, nonnegative=True)
    sizes = (2, 8, 5, 7)
    contiguous = 280 * x[0] + 35 * x[1] + 7 * x[2] + x[3]
    per_channel = x[1]
    assert merge_groups(x, sizes, [contiguous]) == [[0, 1, 2, 3]]
    assert merge_groups(x, sizes, [contiguous, per_channel]) == [[0], [1], [2, 3]]


def test_a_dim_read_by_itself_keeps_apart():
    import sympy

    x = sympy.symbols("x0:2", integer=True, nonnegative=True)
    assert merge_groups(x, (4, 6), [6 * x[0] + x[1], x[1]]) == [[0], [1]]      # a mask on x1
    assert merge_groups(x, (4, 6), [6 * x[0] + x[1], x[0] * x[1]]) == [[0], [1]]  # not linear


# ----------------------------------------------------------------------------------------------
# Per-channel reductions (batch norm's sums)


def channel_sums(x, g):
    return (g.sum((0, 2, 3)), (g * (x - x.mean((0, 2, 3), keepdim=True))).sum((0, 2, 3)))


@pytest.mark.parametrize("shape", [(4, 8, 16, 16), (3, 5, 7, 9), (2, 1, 6, 6), (5, 3, 1, 1)],
                         ids=["vector-multiple", "odd", "one-channel", "one-pixel"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_channel_sums_of_nchw(shape, dtype):
    x, g = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    report = check(channel_sums, x, g, mode="cpp")
    n, c, h, w = shape
    source = sources(report)
    assert "collapse" not in "".join(line for line in source.splitlines() if "omp simd" in line)
    if c > 1 and h * w > 1:
        assert str(h * w) in loop_bounds(source), source  # one loop over each image's pixels
    if c == 1:
        assert str(n * h * w) in loop_bounds(source), source  # one loop over everything


@pytest.mark.parametrize("shape", [(4, 8, 16, 16), (3, 5, 7, 9), (2, 1, 6, 6)])
def test_channel_sums_of_channels_last(shape):
    x = torch.randn(shape).contiguous(memory_format=torch.channels_last)
    g = torch.randn(shape).contiguous(memory_format=torch.channels_last)
    check(channel_sums, x, g, mode="cpp")


def test_reduction_over_dims_that_do_not_merge():
    x = torch.randn(6, 5, 4).transpose(0, 2)  # (4, 5, 6), strides (1, 4, 20)
    check(lambda x: x.sum((0, 2)), x, mode="cpp")


def test_argmax_over_merged_dims_counts_the_flat_position():
    x = torch.randn(3, 4, 5, 6)
    check(lambda x: torch.argmax(x.reshape(3, 4, 30), -1), x, mode="cpp")


# ----------------------------------------------------------------------------------------------
# Pointwise passes


def test_per_channel_pointwise_keeps_pixels_innermost():
    x, scale = torch.randn(2, 64, 4, 4), torch.randn(64, 1, 1)
    report = check(lambda x, s: torch.relu(x * s), x, scale, mode="cpp")
    source = sources(report)
    innermost = re.search(r"#pragma omp simd\n\s*for \(int64_t \w+ = 0; \w+ < (\w+);", source)
    assert innermost and innermost.group(1) == "16", source


def test_masked_loads_in_merged_loops():
    # padding the channels masks every load by the channel: H and W still merge
    x, y = torch.randn(2, 3, 5, 7), torch.randn(2, 5, 5, 7)
    report = check(lambda x, y: F.pad(x, (0, 0, 0, 0, 1, 1)) * y + 1, x, y, mode="cpp")
    assert "35" in loop_bounds(sources(report))


def test_pad_along_a_merged_candidate_keeps_it_apart():
    x = torch.randn(2, 3, 5, 7)
    check(lambda x: F.pad(x, (1, 2)).sum((0, 2, 3)), x, mode="cpp")


def test_gather_in_merged_loops():
    table, idx = torch.randn(10, 6), torch.randint(0, 10, (4, 5))
    check(lambda t, i: (t[i] * 2).sum(0), table, idx, mode="cpp")


# ----------------------------------------------------------------------------------------------
# Batch norm trained through magpy.compile


@pytest.mark.parametrize("shape", [(4, 8, 6, 6), (3, 5, 7, 9), (2, 1, 3, 3), (8, 16, 1, 1)])
@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_norm_relu_trains_as_eager(shape, channels_last):
    torch.manual_seed(0)
    c = shape[1]
    eager = torch.nn.Sequential(torch.nn.BatchNorm2d(c), torch.nn.ReLU())
    mine = torch.nn.Sequential(torch.nn.BatchNorm2d(c), torch.nn.ReLU())
    mine.load_state_dict(eager.state_dict())
    compiled = magpy.compile(mine)
    x = torch.randn(shape)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    target = torch.randn(shape)
    results = []
    for model in (eager, compiled):
        xi = x.clone().requires_grad_()
        out = model(xi)
        F.mse_loss(out, target).backward()
        norm = eager[0] if model is eager else mine[0]
        results.append([out, xi.grad, norm.weight.grad, norm.bias.grad, norm.running_mean, norm.running_var])
    assert_close(results[1], results[0], "batch norm + relu")


def test_batch_norm_backward_graph_in_float64():
    x, w = torch.randn(3, 5, 7, 9, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    mean, rstd = x.mean((0, 2, 3)), x.var((0, 2, 3), unbiased=False).add(1e-5).rsqrt()
    grad = torch.randn_like(x)

    def backward(g, x, w, mean, rstd):
        return torch.ops.aten.native_batch_norm_backward(g, x, w, None, None, mean, rstd, True, 1e-5,
                                                         [True, True, True])

    expected = backward(grad, x, w, mean, rstd)
    gm = trace(backward, grad, x, w, mean, rstd)
    compiled = compile_aten_graph(gm, [grad, x, w, mean, rstd], mode="cpp")
    assert compiled.magpy_report.graph_fallback is None
    assert_close(list(compiled(grad, x, w, mean, rstd)), list(expected), "native_batch_norm_backward")


# ----------------------------------------------------------------------------------------------
# A pass over interleaved dims fused after the per-channel sums


def batch_norm_backward(g, x, w, mean, rstd):
    return torch.ops.aten.native_batch_norm_backward(g, x, w, None, None, mean, rstd, True, 1e-5,
                                                     [True, True, True])


def batch_norm_backward_inputs(shape, dtype=torch.float32, channels_last=False):
    x, g = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    if channels_last:
        x, g = (t.contiguous(memory_format=torch.channels_last) for t in (x, g))
    w = torch.randn(shape[1], dtype=dtype)
    mean, rstd = x.mean((0, 2, 3)), x.var((0, 2, 3), unbiased=False).add(1e-5).rsqrt()
    return g, x, w, mean, rstd


@pytest.mark.parametrize("shape", [(3, 5, 7, 9), (2, 16, 4, 4), (4, 3, 2, 1)])
def test_batch_norm_backward_of_nchw_is_one_kernel(shape):
    report = check(batch_norm_backward, *batch_norm_backward_inputs(shape), mode="cpp")
    assert report.kernel_count == 1, report


def test_batch_norm_relu_of_nchw_is_one_kernel():
    x = torch.randn(3, 5, 7, 9)
    report = check(lambda x: torch.relu(F.batch_norm(x, None, None, training=True)), x, mode="cpp")
    assert report.kernel_count == 1, report


def test_channels_last_pass_runs_apart_in_memory_order():
    report = check(batch_norm_backward, *batch_norm_backward_inputs((3, 16, 5, 6), channels_last=True), mode="cpp")
    assert report.kernel_count == 2, report


def test_equal_sizes_take_the_dims_their_values_say():
    # N == C == H == W: only the read of the per-channel sums says which dim is the channel
    x = torch.randn(4, 4, 4, 4)
    check(lambda x: x - x.sum((0, 2, 3), keepdim=True) * torch.arange(4.0).view(1, 1, 1, 4), x, mode="cpp")
    check(batch_norm_backward, *batch_norm_backward_inputs((4, 4, 4, 4)), mode="cpp")


def test_interleaved_dims_in_triton_too():
    pytest.importorskip("triton")
    from magpy.codegen.triton.runtime import interpreting

    if not interpreting():
        pytest.skip("triton was imported before TRITON_INTERPRET=1")
    check(batch_norm_backward, *batch_norm_backward_inputs((2, 3, 4, 5)), mode="triton")


# ----------------------------------------------------------------------------------------------
# Rows side by side in memory: reduced a tile of rows at a time (cpp/columns.py)


@pytest.mark.parametrize("shape", [(100, 37), (7, 16), (4096, 16), (3, 5)], ids=["odd", "one-tile", "parallel", "narrow"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_reductions_over_the_first_dim(shape, dtype):
    x = torch.randn(shape, dtype=dtype)
    x[1, 2] = float("nan")
    report = check(lambda x: (x.sum(0), x.amax(0), x.amin(0), (x > 0).any(0), (x > -3).all(0), x.mean(0)), x, mode="cpp")
    source = sources(report)
    assert ("x0_tile" in source) == (shape[1] >= 8), source


def test_reduction_over_the_first_dim_with_epilogue_and_second_pass():
    x = torch.randn(50, 20)
    check(lambda x: (x - x.mean(0)).square().mean(0).add(1e-5).rsqrt(), x, mode="cpp")


def test_channels_last_batch_norm_statistics_go_by_tiles_of_channels():
    x = torch.randn(2, 24, 5, 7).contiguous(memory_format=torch.channels_last)
    report = check(lambda x: torch.relu(F.batch_norm(x, None, None, training=True)), x, mode="cpp")
    assert "x0_tile" in sources(report)


def test_channels_last_batch_norm_backward_by_tiles_of_channels():
    inputs = batch_norm_backward_inputs((3, 20, 5, 6), channels_last=True)
    report = check(batch_norm_backward, *inputs, mode="cpp")
    assert "x0_tile" in sources(report)
    inputs = batch_norm_backward_inputs((3, 20, 5, 6), dtype=torch.float64, channels_last=True)
    check(batch_norm_backward, *inputs, mode="cpp")


# ----------------------------------------------------------------------------------------------
# Which dim is walked innermost (``cpp/loops.py``: ``loop_order``)


def innermost_variables(source) -> set[str]:
    return set(re.findall(r"#pragma omp[\w ()]*simd[^\n]*\n\s*for \(int64_t (x\d+) =", source))


def test_a_pool_stored_channels_last_from_nchw_walks_its_rows_not_its_channels():
    # (channels innermost read the 9 window elements a whole channel apart, 1024 floats)
    x = torch.randn(2, 16, 32, 32)
    report = check(lambda x: F.max_pool2d(x, 3, 2, 1).contiguous(memory_format=torch.channels_last), x)
    (source,) = report.kernel_sources.values()
    (inner,) = innermost_variables(source)
    assert f"(2*{inner})" in source, source


def test_a_padded_elu_of_a_channels_last_input_stored_in_both_layouts_walks_channels():
    # (a batch norm's ELU before a convolution: NCHW for the backward, channels-last for the
    # convolution; rows innermost read and wrote 16 floats apart, channels innermost writes one
    # of the two apart)
    x = torch.randn(1, 16, 32, 64).contiguous(memory_format=torch.channels_last)

    def fn(x):
        y = F.pad(F.elu(x * 1.5), (2, 2, 2, 2)).contiguous()
        return y, y.contiguous(memory_format=torch.channels_last)

    report = check(fn, x)
    (source,) = report.kernel_sources.values()
    for inner in innermost_variables(source):
        assert re.search(rf"in_ptr\d+\[\(-?\d* ?\+? ?{inner} \+", source), source


def test_a_read_of_row_positions_does_not_put_rows_innermost():
    # (8 channels, channels-last: the bilinear gradient's pointwise part once walked its 64 rows
    # innermost because it reads each row's position from a tensor of 64)
    x = torch.randn(1, 8, 64, 128).contiguous(memory_format=torch.channels_last)
    rows = torch.rand(64, 1)
    report = check(lambda x, r: (x * r).contiguous(memory_format=torch.channels_last), x, rows)
    (source,) = report.kernel_sources.values()
    (inner,) = innermost_variables(source)
    assert f"out_ptr0[({inner} + " in source, source


@pytest.mark.parametrize("shape", [(2, 8, 4, 4), (3, 5, 7)])
def test_a_relu_mask_reads_and_writes_bytes_as_eager(shape):
    # (gcc leaves a loop loading a C++ bool unvectorized; the same loop over uint8_t vectorizes)
    x, g = torch.randn(shape), torch.randn(shape)
    report = check(lambda x, g: (torch.where(x <= 0, 0.0, g).sum(0), x > 0), x, g)
    source = sources(report)
    assert "bool*" not in source and "uint8_t* __restrict__ out_ptr" in source, source
    m = torch.rand(shape) > 0.5
    report = check(lambda m, g: torch.where(m, 0.0, g * 2).sum(-1), m, g)
    assert "const uint8_t* __restrict__" in sources(report), sources(report)
