"""``magpy.testing.check_equivalent``: silent on a correct function or module, and on a planted
difference (a backend that returns a subtly wrong value, leaves other state, raises, or copies where
eager aliases) it names the call and the path of the first difference."""
import random

import pytest
import torch
import torch.nn as nn
from hypothesis import given, settings, strategies as st

import magpy
from magpy.testing import NotEquivalent, check_equivalent


def step(x, history):
    history.append(x.sum())
    return x.relu() * 2, {"h": x.tanh(), "n": len(history)}


def one_graph_output(x, history):
    history.append(len(history))
    return x.shape[0], {"h": x.tanh(), "n": len(history)}


class Normalize(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.register_buffer("running_mean", torch.zeros(3))
        self.steps = 0

    def forward(self, x):
        self.steps += 1
        self.running_mean.mul_(0.9).add_(x.mean(0) * 0.1)
        return self.fc(x - self.running_mean)


def graph_backend(after):
    """A backend running the graph as captured, then ``after(inputs, outputs)`` (which may return
    other outputs): a compiler with a planted bug."""
    def backend(gm, example_inputs):
        def run(*inputs):
            outputs = gm.forward(*inputs)
            changed = after(inputs, outputs)
            return outputs if changed is None else changed
        return run
    return backend


def on_outputs(change):
    return graph_backend(lambda inputs, outputs: tuple(change(k, o) for k, o in enumerate(outputs)))


def test_a_correct_function_passes_and_its_compiled_form_is_returned():
    compiled = check_equivalent(step, torch.randn(4, 3), [], calls=4, backend="eager")
    assert compiled.stats.calls == 4 and compiled.stats.fallbacks == 0


def test_a_correct_module_passes_and_is_left_untouched():
    module = Normalize()
    before = {k: v.clone() for k, v in module.state_dict().items()}
    check_equivalent(module, torch.randn(5, 3), calls=4, backend="eager")
    assert module.steps == 0
    for k, v in module.state_dict().items():
        assert torch.equal(v, before[k])


def test_the_default_backend_is_checked_by_default():
    check_equivalent(lambda x: (x * 2).sin() + 1, torch.randn(6, 5), calls=2)


def test_a_subtly_wrong_value_is_reported_with_its_call_and_path():
    nudged = on_outputs(lambda k, o: o + 1e-3)
    with pytest.raises(NotEquivalent) as failure:
        check_equivalent(one_graph_output, torch.randn(4, 3), [], calls=3, backend=nudged)
    message = str(failure.value)
    # the first call's result is eager's own (it is captured running eagerly): the second differs
    assert message.startswith("call 2 of 3 (new values): result[1]['h']: values differ")
    assert "Mismatched elements: 12 / 12" in message and "\n  eager:    tensor(shape=[4, 3]" in message
    assert failure.value.call == 2 and failure.value.path == "result[1]['h']"
    assert isinstance(failure.value, AssertionError)


def test_an_argument_changed_in_place_is_reported_by_its_path():
    def total(xs):
        return xs[0] + xs[1] * xs[2]

    def bump_last_input(inputs, outputs):
        inputs[-1].add_(1)
    with pytest.raises(NotEquivalent) as failure:
        check_equivalent(total, [torch.randn(3) for _ in range(3)], calls=2,
                         backend=graph_backend(bump_last_input))
    assert str(failure.value).startswith("call 2 of 2 (new values): args[0][2]: values differ")


def test_module_state_left_otherwise_is_reported_by_its_path():
    def skew_running_mean(inputs, outputs):
        for t in inputs:
            if t.shape == (3,) and not t.requires_grad:
                t.add_(0.5)
    with pytest.raises(NotEquivalent) as failure:
        check_equivalent(Normalize(), torch.randn(4, 3), calls=2, backend=graph_backend(skew_running_mean))
    assert str(failure.value).startswith("call 2 of 2 (new values): module.running_mean: values differ")


def test_an_exception_only_one_side_raises_is_reported():
    def broken(inputs, outputs):
        raise RuntimeError("kernel failed")
    with pytest.raises(NotEquivalent) as failure:
        check_equivalent(lambda x: x.exp(), torch.randn(3), calls=2, backend=graph_backend(broken))
    assert str(failure.value).startswith("call 2 of 2 (new values): result: eager returned tensor(shape=[3]")
    assert str(failure.value).endswith("compiled raised RuntimeError('kernel failed')")


def test_exceptions_both_sides_raise_alike_are_equivalent():
    def picky(x):
        if x.shape[0] != 4:
            raise ValueError(f"batch of {x.shape[0]}, not 4")
        return x + 1
    check_equivalent(picky, torch.randn(4, 2), calls=3, backend="eager")   # call 3: another batch size


def test_a_copy_where_eager_returns_a_view_of_an_argument_is_an_aliasing_difference():
    copying = on_outputs(lambda k, o: o.clone())
    with pytest.raises(NotEquivalent) as failure:
        check_equivalent(lambda x: x.view(-1), torch.randn(2, 3), calls=2, backend=copying)
    assert str(failure.value) == ("call 2 of 2 (new values): args[0]: aliasing: eager's args[0] shares "
                                  "memory with its result, compiled's does not")


def test_later_calls_vary_values_batch_size_and_float_width():
    shapes = []

    def record(x):
        shapes.append((tuple(x.shape), x.dtype))
        return x * 2
    check_equivalent(record, torch.randn(4, 3), calls=4, backend="eager")   # (eager runs every call)
    assert ((4, 3), torch.float32) in shapes
    assert any(s[0] != 4 and s[1] == 3 for s, _ in shapes) and torch.float64 in [d for _, d in shapes]


def test_mutate_changes_each_sides_inputs_between_calls():
    def count(x, seen):
        return x * len(seen)
    check_equivalent(count, torch.ones(2), [], calls=4, backend="eager", mutate=lambda inputs: inputs[1].append(0))


def test_mutate_may_replace_the_inputs():
    check_equivalent(lambda x, k: x * k, torch.ones(2), 1, calls=3, backend="eager",
                     mutate=lambda inputs: (inputs[0] + 1, inputs[1] + 1))


def test_global_random_generators_are_left_as_they_were():
    x = torch.randn(8)
    state = random.getstate(), torch.get_rng_state()
    check_equivalent(lambda x: nn.functional.dropout(x, 0.5) + random.random(), x, calls=2, backend="eager")
    assert random.getstate() == state[0] and torch.equal(torch.get_rng_state(), state[1])


def test_is_reachable_as_magpy_testing():
    assert magpy.testing.check_equivalent is check_equivalent


@settings(max_examples=4, deadline=None)
@given(rows=st.integers(1, 5), cols=st.integers(1, 4))
def test_works_inside_hypothesis_tests(rows, cols):
    check_equivalent(lambda x: (x - x.mean()).abs().sum(1), torch.randn(rows, cols), calls=2, backend="eager")
