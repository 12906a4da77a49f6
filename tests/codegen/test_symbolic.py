"""Graphs traced with symbolic sizes: compiled once, right for every size the trace allows.

Each test traces its function once with ``make_fx(..., tracing_mode="symbolic")`` at unusual
sizes (37, 43, ...), compiles the graph once, then calls the same compiled callable at other
sizes and compares with eager — with the eager fallback of the wrapper disabled, so every call
really runs the kernels. The kernels must not name a size of the tracing call.
"""
import os
import re

if os.environ.get("MAGPY_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import pytest  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from codegen_check import DEVICE, assert_close, on_device  # noqa: E402
from magpy.codegen import compile_aten_graph  # noqa: E402
from magpy.codegen.decompositions import decomposition_table  # noqa: E402


def _triton_runs() -> bool:
    from magpy.codegen.devices import triton_installed

    if not triton_installed():
        return False
    if DEVICE.type == "cuda":
        return torch.cuda.is_available()
    from magpy.codegen.triton.runtime import interpreting

    return interpreting()


@pytest.fixture(params=["cpp", "triton"])
def generator(request):
    """The C++ generator, and Triton (in its interpreter on CPU tensors, or on MAGPY_TEST_DEVICE)."""
    if request.param == "triton" and not _triton_runs():
        pytest.skip("Triton cannot run here")
    return request.param


@pytest.fixture(params=["reference", "cpp", "triton"])
def mode(request):
    """Both generators and the reference evaluator running the same schedule."""
    if request.param == "triton" and not _triton_runs():
        pytest.skip("Triton cannot run here")
    return request.param


def inputs_for(mode, make):
    """``make`` with its tensors where ``mode``'s kernels run."""
    if mode != "triton":
        return make
    return lambda *shape: tuple(on_device(x) for x in make(*shape))


def trace_symbolic(fn, *inputs):
    from torch.fx.experimental.proxy_tensor import make_fx

    gm = make_fx(fn, decomposition_table=decomposition_table(), tracing_mode="symbolic")(*inputs)
    placeholders = [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]
    assert any(isinstance(s, torch.SymInt) for p in placeholders for s in p.shape)
    return gm, placeholders[0].fake_mode.shape_env


def refuse_eager(compiled):
    """Make the wrapper's eager fallback fail: a call must run the compiled kernels."""
    def ran_eagerly(*args):
        raise AssertionError("the compiled graph ran eagerly")

    compiled.__globals__["_eager"] = ran_eagerly


def compile_once(fn, inputs, mode="cpp"):
    """(compiled callable, report) of ``fn`` traced with symbolic sizes at ``inputs``."""
    if mode == "triton":
        inputs = [on_device(x) for x in inputs]
    gm, shape_env = trace_symbolic(fn, *inputs)
    guards = len(shape_env.guards)
    compiled = compile_aten_graph(gm, list(inputs), mode=mode)
    report = compiled.magpy_report
    assert report.graph_fallback is None, report.graph_fallback
    assert report.symbolic
    assert len(shape_env.guards) == guards, "compiling added guards to the ShapeEnv"
    refuse_eager(compiled)
    return compiled, report


def assert_no_size(report, *sizes):
    """No kernel source names any of ``sizes`` (the symbolic sizes of the tracing call)."""
    for name, source in report.kernel_sources.items():
        for size in sizes:
            assert not re.search(rf"(?<![\w.]){size}(?![\w.])", source), f"{name} names size {size}:\n{source}"


def check_sizes(compiled, fn, make_inputs, shapes, mode="cpp"):
    """Compare ``compiled`` with ``fn`` at each of ``shapes``, twice (a second call of the same
    sizes launches the kernels Triton compiled for them directly)."""
    make_inputs = inputs_for(mode, make_inputs)
    for shape in shapes:
        inputs = make_inputs(*shape)
        expected = fn(*inputs)
        for _ in range(2):
            actual = compiled(*inputs)
            if isinstance(expected, torch.Tensor) and isinstance(actual, (tuple, list)):
                actual = actual[0]
            assert_close(actual, expected, f"{fn.__name__} at {shape}")


def test_kernels_take_sizes_as_arguments_and_serve_every_size(mode):
    def fn(x, y, z):
        return torch.sin(x) * y + z

    make = lambda b, n: (torch.randn(b, n), torch.randn(n), torch.randn(b, 1))  # noqa: E731
    compiled, report = compile_once(fn, make(37, 43), mode)
    assert "in0.size(0)=" in str(report)
    kernels = report.kernel_count
    check_sizes(compiled, fn, make, [(2, 5), (3, 9), (7, 33), (16, 43), (37, 2)], mode)
    assert report.kernel_count == kernels
    if mode != "reference":
        assert_no_size(report, 37, 43)
        assert "ks0" in next(iter(report.kernel_sources.values()))


def test_symbolic_kernel_source_is_the_same_whatever_sizes_traced_it():
    def fn(x):
        return torch.relu(x) + 1.0

    first = compile_once(fn, [torch.randn(37, 43)])[1]
    second = compile_once(fn, [torch.randn(5, 9)])[1]
    strip = lambda report: [re.sub(r"_\d+\b", "", s) for s in report.kernel_sources.values()]  # noqa: E731
    assert strip(first) == strip(second)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_transpose_add(generator, dtype):
    def fn(x, y):
        return x + y.t()

    make = lambda n, m: (torch.randn(n, m, dtype=dtype), torch.randn(m, n, dtype=dtype))  # noqa: E731
    compiled, report = compile_once(fn, make(37, 43), generator)
    check_sizes(compiled, fn, make, [(2, 3), (17, 33), (40, 19), (64, 64)], generator)
    assert_no_size(report, 37, 43)


@pytest.mark.parametrize("tiles", [True, False], ids=["tiled", "rows past the grid"])
def test_a_symbolic_transpose_is_tiled_on_triton_with_an_untiled_form_for_too_many_rows(tiles, monkeypatch):
    if not _triton_runs():
        pytest.skip("Triton cannot run here")
    import magpy.codegen.triton.runtime as runtime

    def fn(x, y):
        return x + y.t()

    make = lambda n, m: (torch.randn(n, m), torch.randn(m, n))  # noqa: E731
    compiled, report = compile_once(fn, make(37, 43), "triton")
    assert any("tl.program_id(1)" in source for source in report.kernel_sources.values())
    if not tiles:  # (as if every launch had more rows of tiles than grid axis 1 takes)
        monkeypatch.setattr(runtime, "TILE_ROWS_MIN", 0)
    check_sizes(compiled, fn, make, [(2, 3), (17, 33), (40, 19), (64, 130)], "triton")


@pytest.mark.parametrize("reduce", ["sum", "amax", "softmax", "layer_norm", "mean"])
def test_row_reductions_over_symbolic_rows_and_row_length(reduce, mode):
    def fn(x, w, b):
        if reduce == "sum":
            return x.sum(-1)
        if reduce == "amax":
            return x.amax(-1)
        if reduce == "softmax":
            return torch.softmax(x, -1)
        if reduce == "mean":
            return x.mean(-1, keepdim=True) * x
        return F.layer_norm(x, x.shape[-1:], w, b)

    fn.__name__ = reduce
    make = lambda rows, n: (torch.randn(rows, n), torch.randn(n), torch.randn(n))  # noqa: E731
    compiled, report = compile_once(fn, make(37, 43), mode)
    check_sizes(compiled, fn, make, [(2, 5), (3, 9), (7, 33), (16, 2), (5, 300), (2, 9000)], mode)
    if mode != "reference":
        assert_no_size(report, 37, 43)


def test_mean_over_a_symbolic_leading_dim(generator):
    def fn(x):
        return x.mean(0)

    make = lambda b, n: (torch.randn(b, n),)  # noqa: E731
    compiled, report = compile_once(fn, make(37, 43), generator)
    check_sizes(compiled, fn, make, [(2, 5), (3, 9), (16, 33)], generator)
    assert_no_size(report, 37, 43)


def test_view_by_symbolic_sizes(generator):
    def fn(x):
        y = x.view(x.size(0), -1)
        return torch.softmax(y, -1).reshape(x.shape) * 2

    make = lambda b, t, d: (torch.randn(b, t, d),)  # noqa: E731
    compiled, report = compile_once(fn, make(37, 5, 43), generator)
    check_sizes(compiled, fn, make, [(2, 3, 4), (7, 9, 2), (3, 2, 33)], generator)
    assert_no_size(report, 37, 43)


def test_cat_along_a_symbolic_dim(generator):
    def fn(x, y):
        return torch.cat([torch.relu(x), y * 2], dim=1)

    make = lambda b, n, m: (torch.randn(b, n), torch.randn(b, m))  # noqa: E731
    compiled, report = compile_once(fn, make(37, 43, 53), generator)
    check_sizes(compiled, fn, make, [(2, 3, 5), (7, 9, 2), (3, 33, 16)], generator)
    assert_no_size(report, 37, 43, 53)


def test_slice_by_a_symbolic_bound(generator):
    def fn(x):
        return x[:, : x.size(1) // 2] * 3 + x[:, -1:]

    make = lambda b, n: (torch.randn(b, n),)  # noqa: E731
    compiled, report = compile_once(fn, make(37, 43), generator)
    # (The trace assumed x.size(1) // 2 != 1: a row of 2 or 3 would run eagerly.)
    check_sizes(compiled, fn, make, [(2, 5), (3, 9), (7, 33), (16, 4)], generator)
    assert_no_size(report, 37, 43)


def test_linear_gelu_runs_mm_as_an_extern_call_with_symbolic_batch(generator):
    weight, bias = torch.randn(24, 16), torch.randn(24)

    def fn(x, w, b):
        return F.gelu(F.linear(x, w, b))

    make = lambda b, t: (torch.randn(b, t, 16), weight, bias)  # noqa: E731
    compiled, report = compile_once(fn, make(37, 43), generator)
    assert report.extern_calls and not report.fallbacks
    check_sizes(compiled, fn, make, [(2, 5), (3, 9), (16, 33)], generator)
    assert_no_size(report, 37, 43)


def test_a_call_outside_the_traced_relations_runs_eagerly():
    def fn(x, y):
        return x + y

    gm, _ = trace_symbolic(fn, torch.randn(4, 5), torch.randn(4, 5))
    compiled = compile_aten_graph(gm, [torch.randn(4, 5), torch.randn(4, 5)])
    assert compiled.magpy_report.graph_fallback is None
    # Both inputs were traced with the same symbolic sizes: different ones break that relation.
    x, y = torch.randn(3, 5), torch.randn(1, 5)
    assert_close(compiled(x, y), fn(x, y))


def test_convolution_and_pooling_over_symbolic_batch_and_image_size():
    from torch.fx.experimental.proxy_tensor import make_fx

    conv = torch.nn.Conv2d(3, 8, 3, padding=1).eval()

    def fn(x):
        return F.max_pool2d(torch.relu(conv(x)) * 2, 2)

    make = lambda b, h, w: (torch.randn(b, 3, h, w),)  # noqa: E731
    with torch.no_grad():
        gm = make_fx(fn, decomposition_table=decomposition_table(), tracing_mode="symbolic",
                     _allow_non_fake_inputs=True)(*make(5, 12, 10))
        compiled = compile_aten_graph(gm, list(make(5, 12, 10)))
        report = compiled.magpy_report
        assert report.graph_fallback is None and not report.fallbacks, report
        refuse_eager(compiled)
        # (Some torch versions guard on the parity of the traced sizes: they stay even here.)
        check_sizes(compiled, fn, make, [(2, 6, 8), (3, 16, 16), (4, 10, 4)])


def test_torch_compile_dynamic_compiles_one_symbolic_graph_for_every_batch():
    import magpy.backends  # noqa: F401  (registers "magpy" with torch.compile)
    from magpy.codegen import mark, reports

    linear = torch.nn.Linear(16, 32)

    def fn(x):
        return F.layer_norm(F.gelu(linear(x)), (32,)).softmax(-1)

    torch._dynamo.reset()
    since = mark()
    compiled = torch.compile(fn, backend="magpy", dynamic=True)
    with torch.no_grad():
        for batch in (3, 5, 9, 17):
            x = torch.randn(batch, 7, 16)
            assert_close(compiled(x), fn(x), f"batch {batch}")
    graphs = reports(since=since)
    assert len(graphs) == 1 and graphs[0].symbolic and graphs[0].graph_fallback is None, graphs


def test_fake_example_inputs_keep_their_symbolic_sizes():
    # What AOTAutograd hands a compiler: fake inputs with symbolic sizes (here on a graph whose
    # nodes lost their metadata, so that the compiler propagates its own).
    def fn(x):
        return torch.softmax(x * 2, -1)

    gm, shape_env = trace_symbolic(fn, torch.randn(37, 43))
    fakes = [n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder"]
    for node in gm.graph.nodes:
        if node.op == "call_function":
            node.meta.pop("val", None)
    guards = len(shape_env.guards)
    compiled = compile_aten_graph(gm, fakes)
    report = compiled.magpy_report
    assert report.graph_fallback is None and report.symbolic, report
    assert len(shape_env.guards) == guards
    refuse_eager(compiled)
    check_sizes(compiled, fn, lambda b, n: (torch.randn(b, n),), [(2, 5), (16, 33)])


# ----------------------------------------------------------------------------------------------
# Sizes made from data (torch's unbacked symbols ``u0``): the op making one is a library call, the
# wrapper reads the size from its result, kernels take it at run time like any other size.


def with_positives(n, k, *rest):
    """A tensor of ``n`` (times ``rest``) elements of which exactly ``k`` are > 0."""
    x = -torch.rand(n, *rest) - 0.5
    flat = x.view(-1)
    chosen = torch.randperm(flat.numel())[:k]
    flat[chosen] = torch.rand(k) + 0.5
    return x


def compile_unbacked(fn, inputs, mode):
    """(compiled, report) of ``fn`` traced with symbolic sizes, which its data makes some of."""
    compiled, report = compile_once(fn, inputs, mode)
    assert any(re.search(r"=u\d+$", s) for s in report.symbolic), report.symbolic
    assert report.sizes_from_data, report
    return compiled, report


def one_input(n, k, *rest):
    return (with_positives(n, k, *rest),)


def test_a_mask_count_is_read_from_the_call_making_it_and_serves_every_count(mode):
    def fn(x):
        y = x[x > 0]
        return (y * 2).softmax(0) + y.mean()

    compiled, report = compile_unbacked(fn, [with_positives(37, 11)], mode)
    assert report.extern_calls and not report.fallbacks  # (the mask's pick is a library call, not a fallback)
    check_sizes(compiled, fn, one_input, [(12, 0), (12, 1), (12, 2), (5, 5), (40, 17)], mode)


def test_nonzero_then_index_by_its_columns(mode):
    def fn(x):
        idx = torch.nonzero(x > 0)
        return x[idx[:, 0], idx[:, 1]] * 2 + idx.sum(1)

    compiled, _ = compile_unbacked(fn, [with_positives(7, 9, 5)], mode)
    check_sizes(compiled, fn, one_input, [(4, 0, 3), (4, 1, 3), (6, 13, 5), (3, 9, 3)], mode)


def test_masked_select_then_a_reduction(mode):
    def fn(x, m):
        picked = torch.masked_select(x, m > 0)
        return picked.sum() + picked.abs().amax(0, keepdim=True) * picked.numel()

    def make(n, k):
        return torch.randn(n, 3) * 0 + with_positives(n, k, 3), with_positives(n, k, 3)

    compiled, _ = compile_unbacked(fn, list(make(9, 10)), mode)
    check_sizes(compiled, fn, make, [(4, 1), (6, 7), (5, 15), (3, 2)], mode)


def test_a_tensor_of_a_size_from_data_made_from_nothing_of_it(mode):
    # (``new_zeros(n)`` reads no element of the mask's pick: it must still come after the size is read)
    def fn(x):
        y = x[x > 0]
        return y.new_zeros(y.shape[0]) + 1, x.sum() * 2

    compiled, _ = compile_unbacked(fn, [with_positives(17, 5)], mode)
    check_sizes(compiled, fn, one_input, [(8, 0), (8, 1), (9, 4)], mode)


def test_a_relation_between_counts_is_returned_as_its_value():
    def fn(x):
        y = x[x > 0]
        return y * 2, y.shape[0] > 3, y.shape[0] * 2

    compiled, _ = compile_unbacked(fn, [with_positives(37, 11)], "cpp")
    for k in (0, 3, 4, 9):
        x = with_positives(12, k)
        result = compiled(x)
        assert result[1] is (k > 3) and result[2] == 2 * k
        assert_close(result[0], x[x > 0] * 2)


@pytest.mark.parametrize("reduce", [lambda y: y.max(0).values, lambda y: y.argmin(0), lambda y: y.amax(0)],
                         ids=["max", "argmin", "amax"])
def test_a_reduction_with_no_identity_over_no_element_runs_eagerly_and_raises(mode, reduce):
    # (torch's trace takes a count from data as large: only the wrapper's check stands between a
    # count of 0 and a kernel returning its start value where eager raises)
    def fn(x):
        return reduce(x[x > 0]) * 2

    compiled, _ = compile_unbacked(fn, [with_positives(37, 11)], mode)
    check_sizes(compiled, fn, one_input, [(6, 1), (6, 4)], mode)
    with pytest.raises(AssertionError, match="ran eagerly"):
        compiled(*inputs_for(mode, one_input)(6, 0))


@pytest.mark.parametrize("fn", [
    lambda x: torch.cat([x[x > 0].view(-1, 1).expand(-1, 3).t().reshape(-1), x]) * 2,
    lambda x: x[x > 0].repeat(3).view(3, -1).t().sum(1),
], ids=["transposed-piece-of-cat", "repeat"])
def test_indexes_divided_by_a_count_from_data_serve_a_count_of_0(mode, fn):
    # (``i % u0`` in the index of a piece masked off, or of an empty space: never reached when u0 is 0)
    compiled, _ = compile_unbacked(fn, [with_positives(37, 11)], mode)
    check_sizes(compiled, fn, one_input, [(8, 0), (8, 1), (8, 5)], mode)


def test_positions_into_a_pick_of_no_element_run_eagerly(mode):
    # (the kernel clamps a position into the dim it picks from: into an empty one, it read out of bounds)
    def fn(x, i):
        return x[x > 0][i] * 2

    def make(n, k):
        return with_positives(n, k), torch.tensor([0, 1])

    compiled, _ = compile_unbacked(fn, list(make(37, 11)), mode)
    check_sizes(compiled, fn, make, [(6, 2), (6, 5)], mode)
    with pytest.raises(AssertionError, match="ran eagerly"):
        compiled(*inputs_for(mode, make)(6, 0))


def test_unique_reads_the_size_of_an_item_of_its_result():
    def fn(x):
        return torch.unique(x) * 2 + 1

    compiled, report = compile_unbacked(fn, [torch.randint(0, 9, (23,))], "cpp")
    assert any("[0].size(0)=u" in s for s in report.symbolic), report.symbolic
    make = lambda n, top: (torch.randint(0, top, (n,)),)  # noqa: E731
    check_sizes(compiled, fn, make, [(6, 1), (6, 3), (30, 20)])


def at_least_two_positives_doubled(x):
    y = x[x > 0]
    torch._check(y.shape[0] >= 2)
    return y * 2


def test_a_count_the_trace_assumed_is_checked_at_call_time():
    # (``torch._check`` leaves ``u0 >= 2`` with the ShapeEnv, not in the graph: kernels may rely on it,
    # so a call where it does not hold runs eagerly)
    gm, _ = trace_symbolic(at_least_two_positives_doubled, with_positives(37, 11))
    compiled = compile_aten_graph(gm, [with_positives(37, 11)])
    assert compiled.magpy_report.graph_fallback is None
    ran_eagerly = []
    compiled.__globals__["_eager"] = lambda *args: ran_eagerly.append(1) or gm(*args)
    for n, k in [(6, 2), (6, 5), (6, 1), (6, 0)]:
        x = with_positives(n, k)
        assert_close(compiled(x), gm(x))
    assert len(ran_eagerly) == 2


def test_the_graphs_own_size_assertions_are_checked_where_the_size_is_read():
    # (Dynamo's graphs carry torch's run-time asserts as ``_assert_scalar`` nodes; a call failing one
    # runs eagerly, where it raises as eager does)
    from torch.fx.passes.runtime_assert import insert_deferred_runtime_asserts

    fn = at_least_two_positives_doubled
    gm, shape_env = trace_symbolic(fn, with_positives(37, 11))
    insert_deferred_runtime_asserts(gm, shape_env, "test")
    gm.recompile()
    assert any(n.target is torch.ops.aten._assert_scalar.default for n in gm.graph.nodes), gm.graph
    compiled = compile_aten_graph(gm, [with_positives(37, 11)])
    assert compiled.magpy_report.graph_fallback is None, compiled.magpy_report.graph_fallback
    x = with_positives(6, 3)
    assert_close(compiled(x), fn(x))
    with pytest.raises(RuntimeError):
        gm(with_positives(6, 1))
    with pytest.raises(RuntimeError):
        compiled(with_positives(6, 1))


def test_a_size_from_a_tensors_value_runs_the_graph_eagerly_saying_why():
    def fn(x):
        return x[:(x > 0).sum().item()] * 2

    gm, _ = trace_symbolic(fn, torch.randn(6, 7))
    with pytest.warns(UserWarning, match="from tensor data, not as a size"):
        compiled = compile_aten_graph(gm, [torch.randn(6, 7)])
    x = torch.randn(5, 9)
    assert_close(compiled(x), fn(x))
