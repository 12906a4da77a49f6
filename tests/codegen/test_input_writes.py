"""``copy_`` into a graph input (AOTAutograd's writes of buffers): stored by our kernels into the input's
memory, fused with the kernel computing the value where the graph's order allows, else one copy kernel.

Each test runs a function eagerly on copies of its inputs and compiled on others, and compares what both
return and what both left in every input (the reference evaluator, C++ and Triton — on CPU tensors in
Triton's interpreter)."""
import os

if os.environ.get("MAGPY_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

from codegen_check import assert_close, on_device, trace  # noqa: E402
from magpy.codegen import compile_aten_graph  # noqa: E402
from magpy.codegen.decompositions import decomposition_table  # noqa: E402
from magpy.codegen.input_writes import non_overlapping, written_placeholders  # noqa: E402
from magpy.codegen.ir import Layout  # noqa: E402
from test_symbolic import _triton_runs, trace_symbolic  # noqa: E402


@pytest.fixture(params=["reference", "cpp", "triton"])
def mode(request):
    if request.param == "triton" and not _triton_runs():
        pytest.skip("Triton cannot run here")
    return request.param


def refuse_eager(compiled):
    """Make the wrapper's eager fallback fail: a call must run the compiled kernels."""
    def ran_eagerly(*args):
        raise AssertionError("the compiled graph ran eagerly")

    getattr(compiled, "run", compiled).__globals__["_eager"] = ran_eagerly


def functional(fn, *inputs):
    """``fn`` traced as AOTAutograd traces it: no in-place op but the copies into the inputs it writes."""
    return make_fx(torch.func.functionalize(fn, remove="mutations_and_views"),
                   decomposition_table=decomposition_table(), tracing_mode="fake")(*inputs)


def clones(inputs):
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def run_both(fn, inputs, mode, graph=None, calls=2):
    """Run ``fn`` eagerly and compiled (``graph``: its aten graph, by default ``trace``'s) ``calls`` times
    on inputs of their own, checking results and inputs after each call; returns the report."""
    if mode == "triton":
        inputs = [on_device(x) for x in inputs]
    gm = graph(fn, *clones(inputs)) if graph is not None else trace(fn, *clones(inputs))
    compiled = compile_aten_graph(gm, clones(inputs), mode=mode)
    report = compiled.magpy_report
    assert report.graph_fallback is None, report.graph_fallback
    refuse_eager(compiled)
    eager_inputs, our_inputs = clones(inputs), clones(inputs)
    for call in range(calls):
        expected = fn(*eager_inputs)
        actual = compiled(*our_inputs)
        if isinstance(expected, torch.Tensor):
            actual = actual[0] if isinstance(actual, (list, tuple)) and len(actual) == 1 else actual
        assert_close(actual, expected, f"result of call {call}")
        for i, (ours, theirs) in enumerate(zip(our_inputs, eager_inputs)):
            assert_close(ours, theirs, f"input {i} after call {call}")
    return report, compiled, our_inputs


def launch(report, kernel: str) -> str:
    """The wrapper's line launching ``kernel`` (its arguments)."""
    return next(line for line in report.wrapper.splitlines() if f"{kernel}(" in line)


# ----------------------------------------------------------------------------------------------
# Stored by the kernel computing the value


def blend(x, buf):
    buf.mul_(0.9).add_(x.sum(0) * 0.1)
    return x * 2


def test_a_running_average_is_stored_by_the_kernel_summing_its_update(mode):
    report, _, _ = run_both(blend, [torch.randn(64, 16), torch.randn(16)], mode, graph=functional)
    assert report.fallbacks == [] and report.extern_calls == []
    assert report.written_inputs == [1]
    if mode != "reference":
        (summing,) = [name for name in report.kernel_sources if "sum" in name]
        assert "buf_1" in launch(report, summing)  # (its pointer is the input's)
        assert "empty_strided((16,)" not in report.wrapper  # (no buffer for the new values)


def batch_norm(x, weight, bias, running_mean, running_var):
    return F.batch_norm(x, running_mean, running_var, weight, bias, training=True, momentum=0.1)


def bn_inputs(*shape, channels_last=False):
    x = torch.randn(*shape)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    c = shape[1]
    return [x, torch.randn(c), torch.randn(c), torch.randn(c), torch.rand(c) + 0.5]


@pytest.mark.parametrize("channels_last", [False, True], ids=["nchw", "channels_last"])
def test_batch_norm_in_training_writes_its_running_statistics_in_its_statistics_kernel(mode, channels_last):
    report, _, _ = run_both(batch_norm, bn_inputs(4, 24, 5, 5, channels_last=channels_last), mode,
                            graph=functional, calls=3)
    assert report.written_inputs == [3, 4] and report.fallbacks == []
    if mode != "reference":
        writers = [name for name in report.kernel_sources
                   if any(f"running_{s}_1" in launch(report, name) for s in ("mean", "var"))]
        assert len(writers) == 1 and "sum" in writers[0]  # (both statistics, from the sums' kernel)


def test_batch_norm_1d_writes_its_running_statistics(mode):
    run_both(batch_norm, bn_inputs(8, 12), mode, graph=functional, calls=3)


def test_a_count_is_written_by_a_kernel_of_its_own(mode):
    def count(x, n):
        n.add_(1)
        return x + 1

    report, _, ours = run_both(count, [torch.randn(5), torch.zeros((), dtype=torch.int64)], mode,
                               graph=functional, calls=3)
    assert ours[1].item() == 3 and report.extern_calls == []


# ----------------------------------------------------------------------------------------------
# copy_'s own rules: broadcasting, dtype, layouts of the destination


def test_the_value_is_broadcast_and_converted_to_the_inputs_dtype(mode):
    def f(dst, src):
        dst.copy_(src * 2)
        return src + 1

    report, _, _ = run_both(f, [torch.zeros(4, 6, dtype=torch.float64), torch.randn(6)], mode)
    assert report.fallbacks == []


def test_an_int_destination_truncates_as_copy_does(mode):
    def f(dst, src):
        dst.copy_(src * 3)
        return src

    run_both(f, [torch.zeros(9, dtype=torch.int32), torch.randn(9) * 4], mode)


@pytest.mark.parametrize("layout", ["transposed", "channels_last", "offset_slice", "gaps"])
def test_the_destination_is_written_through_its_own_strides(mode, layout):
    def f(dst, src):
        dst.copy_(src.exp())
        return src * 2

    if layout == "transposed":
        dst, src = torch.randn(7, 5).t(), torch.randn(5, 7)
    elif layout == "channels_last":
        dst = torch.randn(2, 6, 3, 4).contiguous(memory_format=torch.channels_last)
        src = torch.randn(2, 6, 3, 4)
    elif layout == "offset_slice":
        dst, src = torch.randn(10, 6)[3:], torch.randn(7, 6)
    else:
        dst, src = torch.randn(6, 10)[:, ::2], torch.randn(6, 5)
    report, _, _ = run_both(f, [dst, src], mode)
    assert report.fallbacks == []


def test_a_strided_input_keeps_the_elements_between_its_own(mode):
    """Written through a view with gaps: the elements the view skips keep their values."""
    base = torch.randn(6, 10)

    def f(dst, src):
        dst.copy_(src + 1)
        return src

    gm = trace(f, base[:, ::2].clone(), torch.randn(6, 5))
    src = torch.randn(6, 5)
    if mode == "triton":
        base, src = on_device(base), on_device(src)
    ours, theirs = base.clone(), base.clone()
    compiled = compile_aten_graph(gm, [ours[:, ::2], src], mode=mode)
    refuse_eager(compiled)
    compiled(ours[:, ::2], src)
    f(theirs[:, ::2], src)
    assert_close(ours, theirs, "the whole base")


def test_an_overlapping_destination_stays_a_library_call_which_raises_as_eager():
    def f(dst, src):
        dst.copy_(src)
        return src

    dst = torch.zeros(3).expand(4, 3)
    gm = trace(f, dst, torch.randn(4, 3))
    compiled = compile_aten_graph(gm, [dst, torch.randn(4, 3)], mode="cpp")
    assert [op for op, _ in compiled.magpy_report.fallbacks] == ["copy_.default"]
    assert not non_overlapping(Layout((4, 3), (0, 1), torch.float32))
    with pytest.raises(RuntimeError, match="single memory location"):
        compiled(dst, torch.randn(4, 3))


# ----------------------------------------------------------------------------------------------
# Order: old values read before the write, new values after it


def test_a_read_after_the_write_sees_the_new_values(mode):
    def f(x, y):
        x.copy_(y * 2)
        return x + 1

    run_both(f, [torch.randn(33), torch.randn(33)], mode)


@pytest.mark.parametrize("write", [
    lambda x, y: x.__setitem__(0, y[0]),
    lambda x, y: x.__setitem__(slice(2, 5), y[:3]),
    lambda x, y: x[1:-1].add_(y[1:-1]),
    lambda x, y: x[::3].mul_(2),
], ids=["one element", "a slice", "all but the ends", "every third"])
def test_a_write_of_some_elements_keeps_the_others(mode, write):
    # (the value is a select of the new and the old elements by index: the C++ loops split where the
    # answer changes, and each part reads the input's old elements itself)
    def f(x, y):
        write(x, y)
        return y + 1

    run_both(f, [torch.randn(9), torch.randn(9)], mode, graph=functional, calls=3)


def test_a_value_computed_from_the_old_values_and_used_after_the_write_keeps_them(mode):
    def f(x, y):
        old = x + 1   # (lazy until its use after the write)
        x.copy_(y)
        return old * x

    run_both(f, [torch.randn(17), torch.randn(17)], mode)


def test_a_view_taken_before_the_write_and_read_after_it_sees_the_new_values(mode):
    def f(x, y):
        view = x.t()
        x.copy_(y)
        return view * 2

    run_both(f, [torch.randn(5, 7), torch.randn(5, 7)], mode)


def test_a_value_reading_other_elements_of_the_input_is_computed_before_the_write(mode):
    def f(x):
        x.copy_(x.flip(0) + x.roll(1, 0))
        return x.sum()

    report, _, _ = run_both(f, [torch.randn(41)], mode, calls=3)
    assert report.fallbacks == []


def test_a_reduction_of_the_old_values_runs_before_the_write(mode):
    def f(x):
        total = x.sum(1, keepdim=True)
        x.copy_(x - total)
        return total * 2

    run_both(f, [torch.randn(6, 9)], mode, graph=functional, calls=3)


def test_a_later_reader_of_the_old_values_keeps_the_write_out_of_earlier_kernels(mode):
    def f(x, buf):
        new = buf * 0.5 + x.sum(0)
        y = torch.mm(x, buf.unsqueeze(1))  # (a library call after the sums' kernel reads the old values)
        buf.copy_(new)
        return y

    report, _, _ = run_both(f, [torch.randn(8, 8), torch.randn(8)], mode, calls=3)
    assert report.fallbacks == []


def test_a_kernel_reading_other_elements_of_the_input_does_not_take_the_write(mode):
    def f(x, buf):
        total = (x + buf.flip(0)).sum(0)   # (row c reads buf[C - 1 - c], which row C - 1 - c writes)
        buf.copy_(buf * 0.9 + total * 0.1)
        return total

    run_both(f, [torch.randn(16, 24), torch.randn(24)], mode, graph=functional, calls=3)


def test_a_read_of_the_new_values_runs_after_the_kernel_writing_them(mode):
    def f(x, y):
        old = x * 3
        x.copy_(x + y)
        return old + x   # (in the write's kernel, a load of x as the old values' would read those)

    run_both(f, [torch.randn(40), torch.randn(40)], mode, calls=3)


def test_the_written_input_returned_is_the_input_itself(mode):
    def f(x, y):
        x.copy_(y + 1)
        return x, y * 2

    report, compiled, ours = run_both(f, [torch.randn(6), torch.randn(6)], mode)
    out = compiled(*ours)
    assert out[0] is ours[0]


def test_an_input_written_twice_takes_the_library_call_the_second_time(mode):
    def f(x, y):
        x.copy_(y)
        x.copy_(x * 3 + y)
        return y + 1

    report, _, _ = run_both(f, [torch.randn(10), torch.randn(10)], mode)
    assert report.written_inputs == [0]
    assert [op for op, _ in report.fallbacks] == ["copy_.default"]


# ----------------------------------------------------------------------------------------------
# Symbolic sizes


def test_a_write_with_symbolic_sizes_serves_every_size(mode):
    if mode == "triton":
        x, buf = on_device(torch.randn(37, 5)), on_device(torch.randn(5))
    else:
        x, buf = torch.randn(37, 5), torch.randn(5)
    gm, _ = trace_symbolic(torch.func.functionalize(blend, remove="mutations_and_views"), x, buf)
    compiled = compile_aten_graph(gm, [x, buf], mode=mode)
    assert compiled.magpy_report.graph_fallback is None and compiled.magpy_report.symbolic
    refuse_eager(compiled)
    for rows in (3, 37, 50):
        x, buf = torch.randn(rows, 5), torch.randn(5)
        if mode == "triton":
            x, buf = on_device(x), on_device(buf)
        theirs = buf.clone()
        expected = blend(x, theirs)
        actual = compiled(x, buf)
        actual = actual[0] if isinstance(actual, (list, tuple)) else actual
        assert_close(actual, expected, f"result at {rows} rows")
        assert_close(buf, theirs, f"buffer at {rows} rows")


def test_written_placeholders_follow_views():
    def f(x, y, z):
        x[0].add_(1)
        torch.ops.aten.copy_(z, y)
        return y

    gm = trace(f, torch.randn(3, 3), torch.randn(3), torch.randn(3))
    assert written_placeholders(gm) == [0, 2]
