"""A ``TorchFunctionMode`` entered inside compiled code (``with SomeMode():``): torch functions, Tensor methods
and operators called in its region go through its ``__torch_function__`` as in eager, and the graph holds the
ops the mode actually ran. Leaving the region (an exception too) pops it; modes do not leak into later calls.
"""
import pytest
import torch
from torch.overrides import TorchFunctionMode

import magpy
from twin import differential, expect_one_graph, fresh, plain


def t(*shape):
    return torch.randn(shape)


class AddOne(TorchFunctionMode):
    """Changes results: every ``add`` comes out one larger (a test fails if the mode is ignored)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func in (torch.add, torch.Tensor.add, torch.Tensor.__add__):
            out = out + 1
        return out


def adds_in_a_mode(x, y):
    with AddOne():
        a = torch.add(x, y)
        b = x + y
        c = x.add(y)
        d = torch.nn.functional.relu(x)   # (a Python function of torch: through handle_torch_function)
    return a, b, c, d, x + y


def test_a_mode_that_changes_results_is_honoured():
    stats = differential(plain(adds_in_a_mode), fresh(lambda: (t(3), t(3))))
    expect_one_graph(stats)


class Scaled(TorchFunctionMode):
    """A mode holding state of its own, read in ``__torch_function__``."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.Tensor.__mul__:
            out = out * self.scale
        return out


def nested_modes(x, scale):
    with Scaled(scale):
        with AddOne():
            a = x * 2 + x
        b = x * 3
    return a, b


def test_nested_modes_dispatch_innermost_first():
    stats = differential(plain(nested_modes), fresh(lambda: (t(4), 2.0)))
    expect_one_graph(stats)


def raises_in_a_mode(x):
    try:
        with AddOne():
            y = x + 1
            raise ValueError("inside")
    except ValueError:
        pass
    return x + y   # (the mode is gone: a plain add)


def test_an_exception_leaves_the_region_and_pops_the_mode():
    stats = differential(plain(raises_in_a_mode), fresh(lambda: (t(3),)))
    expect_one_graph(stats)
    assert torch._C._len_torch_function_stack() == 0


def indexes_in_mode(x, i):
    from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex
    with TransformGetItemToIndex():
        return x[i] * 2


def test_torchs_transform_getitem_to_index():
    stats = differential(plain(indexes_in_mode), fresh(lambda: (t(4, 3), torch.tensor(2))))
    expect_one_graph(stats)


def test_the_mode_is_not_on_torchs_stack_after_the_call():
    compiled = magpy.compile(adds_in_a_mode)
    for _ in range(2):
        compiled(t(3), t(3))
        assert torch._C._len_torch_function_stack() == 0
        assert torch.equal(torch.add(torch.ones(1), torch.ones(1)), torch.full((1,), 2.0))


class Counting(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return func(*args, **(kwargs or {}))


def test_a_mode_entered_by_the_caller_sees_capture_make_no_calls_of_its_own():
    mode = Counting()

    def fn(x):
        with mode:
            return x.sin() + 1

    compiled = magpy.compile(fn, backend="eager")
    x = t(3)
    want = fn(x)
    eager_calls, mode.calls = mode.calls, 0
    assert torch.equal(compiled(x), want)
    assert mode.calls == eager_calls   # (the first call: the program's own calls only, as in eager)


@pytest.mark.parametrize("backend", ["magpy"])
def test_a_mode_region_through_a_compiling_backend(backend):
    stats = differential(plain(adds_in_a_mode), fresh(lambda: (t(3), t(3))), backend=backend)
    expect_one_graph(stats)


def breaks_in_a_mode(x):
    with AddOne():
        y = torch.add(x, 1)
        magpy.graph_break()
        z = torch.add(y, 1)
    return z + x


def test_a_graph_break_inside_a_region_keeps_the_mode():
    stats = differential(plain(breaks_in_a_mode), fresh(lambda: (t(3),)))
    assert stats.fallbacks <= 1
    assert torch._C._len_torch_function_stack() == 0


class _PlusOne(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.add(x, 1)

    @staticmethod
    def backward(ctx, grad):
        return grad


def applies_in_a_mode(x):
    with AddOne():
        return _PlusOne.apply(x) * 2


def test_torch_code_run_natively_in_a_region_still_meets_the_mode():
    differential(plain(applies_in_a_mode), fresh(lambda: (t(3),)))
