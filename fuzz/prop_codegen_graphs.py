"""Random graphs of pointwise, reduction and view ops: compiled C++, and Triton in its interpreter,
must match eager."""
import os
import sys

import pytest

if os.environ.get("MAGPY_TEST_DEVICE", "cpu") == "cpu":  # (chosen once, when triton is imported)
    os.environ.setdefault("TRITON_INTERPRET", "1")

torch = pytest.importorskip("torch")
from hypothesis import HealthCheck, given, settings, strategies as st

os.environ.setdefault("MAGPY_STRICT", "1")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "codegen"))

from codegen_check import check  # noqa: E402

UNARY = {
    # (periodic functions of a bounded argument: of a large sum they would magnify its rounding)
    "sin": lambda x: torch.sin(x.clamp(-4, 4)), "cos": lambda x: torch.cos(x.clamp(-4, 4)),
    "exp": lambda x: torch.exp(x.clamp(max=10)), "relu": torch.relu,
    "neg": torch.neg, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "abs": torch.abs,
    "square": lambda x: x * x, "flip": lambda x: x.flip(-1), "roll": lambda x: x.roll(1, 0),
    "reshape": lambda x: x.reshape(-1).reshape(x.shape), "softmax": lambda x: torch.softmax(x, -1),
    "sum_row": lambda x: x.sum(-1, keepdim=True), "amax_row": lambda x: x.amax(-1, keepdim=True),
    "mean_col": lambda x: x.mean(0, keepdim=True), "pad_crop": lambda x: torch.nn.functional.pad(x, (1, -1)),
}
BINARY = {
    "add": torch.add, "mul": torch.mul, "sub": torch.sub, "maximum": torch.maximum,
    "where": lambda a, b: torch.where(a > 0, a, b),
}

def programs(unary, max_size):
    """Lists of steps, each applying one of ``unary`` or ``BINARY`` to earlier values."""
    return st.lists(
        st.one_of(
            st.tuples(st.just("unary"), st.sampled_from(sorted(unary)), st.integers(0, 7)),
            st.tuples(st.just("binary"), st.sampled_from(sorted(BINARY)), st.integers(0, 7), st.integers(0, 7)),
        ),
        min_size=1, max_size=max_size,
    )


steps = programs(UNARY, 8)


def build(program, unary=UNARY):
    def fn(x, y):
        pool = [x, y]
        for step in program:
            if step[0] == "unary":
                pool.append(unary[step[1]](pool[step[2] % len(pool)]))
            else:
                pool.append(BINARY[step[1]](pool[step[2] % len(pool)], pool[step[3] % len(pool)]))
        return tuple(pool[2:])
    return fn


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(program=steps, rows=st.sampled_from([1, 3, 8, 20]), cols=st.sampled_from([1, 5, 17, 33]),
       transposed=st.booleans(), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_random_graphs_match_eager(program, rows, cols, transposed, dtype):
    torch.manual_seed(0)
    x = torch.randn(rows, cols, dtype=dtype)
    y = torch.randn(cols, rows, dtype=dtype).t() if transposed else torch.randn(rows, cols, dtype=dtype)
    check(build(program), x, y, mode="cpp")


# Images (N, C, H, W), NCHW or channels-last: batch norm's per-channel reductions over dims 0, 2, 3, reductions
# over other sets of dims, and padding that masks a dim, so that the C++ loops merge some dims and keep others
# apart (``loop_merge.py``), over sizes that are and are not multiples of the vector width, one channel, one pixel.
IMAGE_UNARY = {
    "relu": torch.relu, "exp": lambda x: torch.exp(x.clamp(max=10)), "square": lambda x: x * x,
    "sum_channels": lambda x: x.sum((0, 2, 3), keepdim=True),
    "norm_channels": lambda x: (x - x.mean((0, 2, 3), keepdim=True)) * (x.var((0, 2, 3), keepdim=True) + 1e-5).rsqrt(),
    "amax_pixels": lambda x: x.amax((2, 3), keepdim=True), "mean_batch": lambda x: x.mean(0, keepdim=True),
    "sum_rows": lambda x: x.sum((1, 3), keepdim=True),
    "pad_width": lambda x: torch.nn.functional.pad(x, (1, -1)),
    "pad_channels": lambda x: torch.nn.functional.pad(x, (0, 0, 0, 0, 1, -1)),
    "flip_height": lambda x: x.flip(2),
    # (loops split where a mask changes, positions hoisted out of loops: same-shape forms of a pooling
    # window over padding, a concatenation, a bilinear upsample)
    "max_pool_padded": lambda x: torch.nn.functional.max_pool2d(x, 3, 1, 1),
    "rotate_channels": lambda x: torch.cat((x[:, 1:], x[:, :1]), 1),
    "upsample_crop": lambda x: torch.nn.functional.interpolate(x, scale_factor=2, mode="bilinear")[..., 1::2, ::2],
}

image_steps = programs(IMAGE_UNARY, 6)


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(program=image_steps, batch=st.sampled_from([1, 2, 3]), channels=st.sampled_from([1, 3, 8, 17]),
       pixels=st.sampled_from([(1, 1), (4, 4), (5, 7), (8, 9)]), channels_last=st.booleans(),
       dtype=st.sampled_from([torch.float32, torch.float64]))
def test_random_image_graphs_match_eager(program, batch, channels, pixels, channels_last, dtype):
    torch.manual_seed(0)
    shape = (batch, channels) + pixels
    x, y = torch.randn(shape, dtype=dtype), torch.randn(shape, dtype=dtype)
    if channels_last:
        x = x.contiguous(memory_format=torch.channels_last)
    check(build(program, IMAGE_UNARY), x, y, mode="cpp")


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(program=steps, rows=st.sampled_from([1, 3, 8]), cols=st.sampled_from([1, 5, 17, 33]),
       transposed=st.booleans(), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_random_graphs_match_eager_in_triton(program, rows, cols, transposed, dtype):
    pytest.importorskip("triton")
    from magpy.codegen.triton.runtime import interpreting

    if not interpreting():
        pytest.skip("triton was imported before TRITON_INTERPRET=1")
    torch.manual_seed(0)
    x = torch.randn(rows, cols, dtype=dtype)
    y = torch.randn(cols, rows, dtype=dtype).t() if transposed else torch.randn(rows, cols, dtype=dtype)
    check(build(program), x, y, mode="triton")


# In-place writes into an input of some of its elements, after a random program, compiled as a user's
# function is (AOTAutograd keeps the write in the graph as a ``copy_`` of a select of new and old elements by
# index: ``input_writes.py``; the C++ loops split where that answer changes). Each call's inputs are fresh.
def _write_one_element(x, v):
    x[0, 0] = v[0, 0]


def _write_first_column(x, v):
    x[:, 0] = v[:, 0]


WRITES = {
    "one element": _write_one_element,
    "first row": lambda x, v: x[:1].copy_(v[:1]),
    "first column": _write_first_column,
    "inner block": lambda x, v: x[1:-1, 1:-1].add_(v[1:-1, 1:-1]),
    "every other row": lambda x, v: x[::2].mul_(v[::2]),
    "last column": lambda x, v: x[:, -1:].sub_(v[:, -1:]),
    "whole": lambda x, v: x.copy_(v),
    "rows added at repeated indices": lambda x, v: x.index_add_(0, torch.zeros(3, dtype=torch.long), v[:1].expand(3, -1)),
}


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(program=steps, write=st.sampled_from(sorted(WRITES)), reads_x=st.booleans(), rows=st.sampled_from([1, 3, 8]),
       cols=st.sampled_from([1, 5, 17]), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_random_writes_into_an_input_match_eager(program, write, reads_x, rows, cols, dtype):
    # (reads_x: the value is computed from the written input's old elements too, else only from the other
    # input, so that the write's kernel is the one computing it)
    check_writes(program, write, reads_x, rows, cols, dtype, "cpp")


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(program=programs(UNARY, 3), write=st.sampled_from(sorted(WRITES)), reads_x=st.booleans(),
       rows=st.sampled_from([1, 3]), cols=st.sampled_from([1, 5]))
def test_random_writes_into_an_input_match_eager_in_triton_with_tuning_trials(program, write, reads_x, rows, cols):
    # (each kernel launched with two block configs, a few times each, before the call's own launch, as tuning
    # does on a GPU: a kernel adding into its input must find it as it was, ``runtime._kept``)
    pytest.importorskip("triton")
    from magpy.codegen.triton.runtime import interpreting

    if not interpreting():
        pytest.skip("triton was imported before TRITON_INTERPRET=1")
    previous = os.environ.get("MAGPY_TRITON_TRIALS")
    os.environ["MAGPY_TRITON_TRIALS"] = "1"
    try:
        check_writes(program, write, reads_x, rows, cols, torch.float32, "triton")
    finally:
        if previous is None:
            del os.environ["MAGPY_TRITON_TRIALS"]
        else:
            os.environ["MAGPY_TRITON_TRIALS"] = previous


def check_writes(program, write, reads_x, rows, cols, dtype, codegen):
    import magpy

    def fn(x, y):
        values = build(program)(x.clone() if reads_x else y.flip(0), y)
        WRITES[write](x, torch.broadcast_to(values[-1], x.shape))
        return values

    magpy.reset()
    compiled = magpy.compile(fn, backend="magpy", options={"codegen": codegen})
    for call in range(3):
        torch.manual_seed(call)
        x, y = torch.randn(rows, cols, dtype=dtype), torch.randn(rows, cols, dtype=dtype)
        ours, theirs = x.clone(), x.clone()
        expected, actual = fn(theirs, y), compiled(ours, y)
        torch.testing.assert_close(actual, expected, equal_nan=True, msg=lambda m: f"call {call}: {m}")
        torch.testing.assert_close(ours, theirs, equal_nan=True, msg=lambda m: f"the input after call {call}: {m}")
    assert compiled.stats.graphs >= 1 and compiled.stats.eager_calls == 0, compiled.stats
