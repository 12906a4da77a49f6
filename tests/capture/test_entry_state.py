"""A graph depends on more than the values its paths lead to: torch's global state when the call enters,
and how its input tensors share memory. A later call that enters with another default dtype, grad mode or
aliasing of its inputs must get eager's answer (a miss and a new entry), never the first call's graph.
"""
import pytest
import torch

from twin import Call, differential, fresh, plain

BACKENDS = ["eager", "magpy"]


def views(spans, length=12):
    """Views of one fresh storage, one per (start, stop); the storage is the last argument so that its
    final state is compared too."""
    base = torch.arange(float(length))
    return (*(base[a:b] for a, b in spans), base)


def scale_one_read_other(a, b, base):
    a.mul_(2)
    return b + 1


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("layouts", [
    [((0, 4), (6, 10)), ((0, 4), (6, 10)), ((0, 4), (2, 6)), ((0, 4), (2, 6))],   # disjoint, then overlapping
    [((0, 4), (2, 6)), ((0, 4), (6, 10)), ((1, 5), (0, 4)), ((0, 4), (2, 6))],    # overlapping at other offsets
    [((0, 4), (4, 8)), ((0, 4), (3, 7)), ((4, 8), (0, 4)), ((0, 4), (4, 8))],      # touching, not overlapping
], ids=["disjoint-first", "overlapping-first", "touching"])
def test_inputs_that_overlap_differently_get_eagers_answer(backend, layouts):
    differential(plain(scale_one_read_other), [views(spans) for spans in layouts], backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_same_tensor_twice_after_two_distinct_ones(backend):
    def fn(a, b):
        a.add_(1)
        return a * b

    def same():
        t = torch.ones(3)
        return t, t
    differential(plain(fn), [(torch.ones(3), torch.ones(3)), same(), (torch.ones(3), torch.ones(3)), same()],
                 backend=backend)


def test_interleaved_views_written_in_place():
    def fn(a, b, base):
        a.add_(b)
        return base.sum()

    def interleaved():
        base = torch.arange(8.0)
        return base[0::2], base[1::2], base
    differential(plain(fn), [interleaved() for _ in range(3)], backend="magpy")


def _set_default_dtype(dtype):
    return lambda env: torch.set_default_dtype(dtype)


def _restore():
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    torch.use_deterministic_algorithms(False)
    torch.manual_seed(0)


@pytest.fixture(autouse=True)
def _global_state_restored():
    yield
    _restore()


@pytest.mark.parametrize("backend", BACKENDS)
def test_default_dtype_changed_between_calls(backend):
    def fn(x):
        return torch.zeros(3) + x, torch.ones(2).dtype

    x = torch.ones(3, dtype=torch.float64)
    calls = [Call((x,)), Call((x,)), Call((x,), before=_set_default_dtype(torch.float64)), Call((x,)),
             Call((x,), before=_set_default_dtype(torch.float32))]
    differential(plain(fn), calls, reset=_restore, backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_mode_changed_between_calls(backend):
    def fn(w, x):
        return (w * x).sum(), torch.is_grad_enabled()

    def grad(on):
        return lambda env: torch.set_grad_enabled(on)

    w = torch.ones(3, requires_grad=True)
    calls = [Call((w, torch.ones(3))), Call((w, torch.ones(3))), Call((w, torch.ones(3)), before=grad(False)),
             Call((w, torch.ones(3))), Call((w, torch.ones(3)), before=grad(True))]
    differential(plain(fn), calls, reset=_restore, backend=backend)


def test_deterministic_algorithms_decide_what_the_program_does():
    def fn(x):
        if torch.are_deterministic_algorithms_enabled():
            return x * 2
        return x + 1

    def deterministic(on):
        return lambda env: torch.use_deterministic_algorithms(on)

    calls = [Call((torch.ones(3),)), Call((torch.ones(3),)), Call((torch.ones(3),), before=deterministic(True)),
             Call((torch.ones(3),)), Call((torch.ones(3),), before=deterministic(False))]
    differential(plain(fn), calls, reset=_restore, backend="magpy")


@pytest.mark.parametrize("backend", BACKENDS)
def test_retain_grad_inside_the_call(backend):
    def fn(x, w):
        v = w * 2
        h = x * v
        h.retain_grad()
        v.retain_grad()
        (h * 3).sum().backward()
        return h.grad, v.grad, x.grad, w.grad

    def args():
        return torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    differential(plain(fn), fresh(args, 4), backend=backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_out_into_an_argument_of_another_shape_is_resized_as_eager_does(backend):
    # eager resizes ``out`` to the result's shape (warning once); sizes change from call to call
    def fn(x, out):
        torch.add(x, 1, out=out)
        return out * 2

    def args(*shape):
        base = torch.zeros(6)
        return torch.randn(*shape), base[0:3]

    calls = [args(3, 3), args(3, 3), args(3, 3), args(7, 3), args(3, 3)]
    differential(plain(fn), calls, backend=backend)
