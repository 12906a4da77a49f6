"""Exceptions raised by user code (or by torch on the user's behalf) surface exactly as in eager: same
type and message, on the first call and on later ones; exceptions caught inside stay invisible."""
import pytest
import torch
import torch.nn as nn

import magpy

try:
    from .twin import fresh, differential, expect, expect_one_graph, expect_recompile, plain, twins
except ImportError:  # tests/capture is not a package: pytest put this folder on sys.path
    from twin import fresh, differential, expect, expect_one_graph, expect_recompile, plain, twins


def t(*shape):
    return torch.randn(*(shape or (2, 3)))


class ShapeError(ValueError):
    pass


def check_rank(x):
    if x.dim() != 2:
        raise ShapeError(f"expected a matrix, got {x.dim()} dimensions")
    return x


def test_user_exception_on_every_call():
    def fn(x):
        raise KeyError("missing", 3)

    stats = differential(plain(fn), fresh(lambda: (t(),)), raises=True)
    assert all(type(o.error) is KeyError for o in stats.side.outcomes)


def test_exception_after_a_valid_call_depends_on_the_shape():
    def fn(x):
        return check_rank(x) * 2

    calls = [(t(),), (t(),), (t(3),), (t(),), (t(1, 2, 3),)]
    stats = differential(plain(fn), calls, raises=True)
    errors = [type(o.error) for o in stats.side.outcomes]
    assert errors == [type(None), type(None), ShapeError, type(None), ShapeError]
    expect(stats, fallbacks=0)


def test_exception_from_a_python_value_argument():
    def fn(x, mode):
        if mode not in ("sum", "mean"):
            raise ValueError(f"unknown mode {mode!r}")
        return getattr(x, mode)()

    calls = [(t(), "sum"), (t(), "bogus"), (t(), "sum"), (t(), "bogus")]
    stats = differential(plain(fn), calls, raises=True)
    expect(stats, fallbacks=0)


def test_torch_error_from_a_shape_mismatch():
    def fn(x, y):
        return x @ y

    calls = [(t(2, 3), t(3, 2)), (t(2, 3), t(2, 3)), (t(2, 3), t(3, 2)), (t(2, 3), t(2, 3))]
    stats = differential(plain(fn), calls, raises=True)
    expect(stats, fallbacks=0)


def test_exception_raised_in_a_module_forward():
    class Strict(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 3)

        def forward(self, x):
            if x.shape[0] > 4:
                raise RuntimeError("batch too large")
            return self.fc(x)

    torch.manual_seed(0)
    calls = [(t(2, 3),), (t(5, 3),), (t(2, 3),), (t(5, 3),)]
    stats = differential(twins(Strict()), calls, raises=True)
    expect(stats, fallbacks=0)


def test_exception_caught_inside_is_invisible():
    def fn(x, d):
        try:
            scale = d["scale"]
        except KeyError:
            scale = 0.5
        return x * scale

    stats = differential(plain(fn), [(t(), {}), (t(), {}), (t(), {"scale": 2.0})])
    expect_recompile(stats)


def test_exception_caught_inside_with_a_tensor_op_in_the_try():
    def fn(x):
        try:
            y = x.relu()
            raise IndexError("stop")
        except IndexError as err:
            y = y + len(str(err))
        finally:
            y = y * 2
        return y

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_index_error_of_an_argument_list_caught_inside():
    def fn(x, xs):
        try:
            extra = xs[2]
        except IndexError:
            extra = 1.0
        return x * extra

    stats = differential(plain(fn), [(t(), [1.0]), (t(), [3.0]), (t(), [1.0, 2.0, 5.0])])
    expect_recompile(stats)


def test_a_pure_call_raising_on_an_argument_is_guarded_on_it():
    def fn(x, text):
        try:
            k = int(text)
        except ValueError:
            k = -1
        return x * k

    stats = differential(plain(fn), [(t(), "a"), (t(), "a"), (t(), "3")])
    expect_recompile(stats)


def test_stop_iteration_of_an_exhausted_generator_caught_inside():
    def first_two(x):
        yield x
        yield x * 2

    def fn(x):
        gen = first_two(x)
        out = next(gen)
        while True:
            try:
                out = out + next(gen)
            except StopIteration:
                return out

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_an_exception_of_an_operation_on_inputs_caught_inside_falls_back():
    # (which way ``1 / n`` goes depends on n: the operator's raise is not guarded, so no replay)
    def fn(x, n):
        try:
            scale = 1 / n
        except ZeroDivisionError:
            scale = 0.0
        return x * scale

    stats = differential(plain(fn), [(t(), 0), (t(), 2), (t(), 0)])
    assert (stats.fallbacks or stats.graph_breaks) and "caught inside" in stats.reasons[0][0], stats.reasons


def test_tensors_that_do_not_broadcast_caught_inside():
    # (vformer's PVTPosEmbedding: ``try: x + pos except: x + resized(pos)``; the shapes decide the
    # raise, and they are guarded: each shape is an entry of its own)
    pos = torch.randn(1, 4, 3)

    def fn(x):
        try:
            return x + pos
        except RuntimeError:
            return x + pos.mean(1, keepdim=True)

    calls = [(t(2, 4, 3),), (t(2, 4, 3),), (t(2, 6, 3),), (t(2, 6, 3),), (t(2, 4, 3),)]
    stats = differential(plain(fn), calls)
    expect(stats, compiles=2, cache_hits=3, fallbacks=0)


def test_a_data_dependent_error_caught_inside_still_falls_back():
    # (integer division by zero raises depending on the data: not a shape error)
    def fn(x, d):
        try:
            return x // d
        except RuntimeError:
            return x

    stats = differential(plain(fn), [(torch.tensor([4, 6]), torch.tensor([0, 2]))] * 2)
    assert (stats.fallbacks or stats.graph_breaks) and "caught inside" in stats.reasons[0][0], stats.reasons


def test_assert_statement():
    def fn(x, n):
        assert n > 0, "n must be positive"
        return x * n

    calls = [(t(), 2), (t(), 2), (t(), -1), (t(), 2)]
    stats = differential(plain(fn), calls, raises=True)
    expect(stats, fallbacks=0)


def test_exception_with_a_cause_and_traceback_frame():
    def inner(x):
        return {}["absent"]

    def fn(x):
        try:
            return inner(x)
        except KeyError as err:
            raise LookupError("wrapped") from err

    compiled = magpy.compile(fn, backend="eager")
    for _ in range(3):
        with pytest.raises(LookupError, match="wrapped") as info:
            compiled(t())
        assert isinstance(info.value.__cause__, KeyError)
        assert str(info.value.__cause__) == "'absent'"


def test_traceback_of_a_user_exception_names_the_user_function():
    def fn(x):
        return {}["absent"]

    compiled = magpy.compile(fn, backend="eager")
    with pytest.raises(KeyError) as info:
        compiled(t())
    frames = [entry.name for entry in info.traceback]
    assert frames[-1] == "fn", frames


def test_stop_iteration_from_next_on_an_empty_iterator():
    def fn(xs):
        it = iter(xs)
        first = next(it)
        return first + next(it, first)

    calls = [([t()],), ([t()],), ([],)]
    stats = differential(plain(fn), calls, raises=True)
    expect(stats, fallbacks=0)


def test_attribute_error_on_a_missing_module_attribute():
    class M(nn.Module):
        def forward(self, x):
            return x * self.missing

    calls = fresh(lambda: (t(),))
    stats = differential(twins(M()), calls, raises=True)
    assert all(type(o.error) is AttributeError for o in stats.side.outcomes)


def test_a_failure_inside_capture_becomes_a_fallback_not_the_users_error(monkeypatch):
    from magpy.capture.observer import CaptureObserver

    def broken(self, *args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(CaptureObserver, "record", broken)  # (as a bug of ours in recording an op would)

    def fn(x):
        return x.relu() + len([1, 2])

    compiled = magpy.compile(fn, backend="eager")
    x = t()
    assert torch.equal(compiled(x), fn(x))
    assert compiled.stats.fallbacks == 1
    assert "internal capture error" in compiled.stats.reasons[0][0] and "boom" in compiled.stats.reasons[0][0]
