"""Products of every slice of one tensor by one matrix become one product (a recurrent model's input
projections); anything else is left as it was. Each compiled graph must match eager."""
import pytest
import torch
import torch.nn.functional as F

from codegen_check import check


def _products(report):
    return sum(op in ("aten.mm.default", "aten.addmm.default") for op, _ in report.extern_calls)


def rnn(x, w, u, b):
    h = torch.zeros(x.shape[1], u.shape[0], device=x.device)
    outs = []
    for t in range(x.shape[0]):
        h = torch.tanh(x[t] @ w.t() + h @ u.t() + b)
        outs.append(h)
    return torch.stack(outs)


def rnn_linear(x, w, u, b):       # F.linear with a bias: addmm on the CPU
    h = torch.zeros(x.shape[1], u.shape[0], device=x.device)
    for t in range(x.shape[0]):
        h = torch.tanh(F.linear(x[t], w, b) + h @ u.t())
    return h


def _inputs(steps=6, batch=3, width=5, hidden=7):
    return torch.randn(steps, batch, width), torch.randn(hidden, width), torch.randn(hidden, hidden), \
        torch.randn(hidden)


@pytest.mark.parametrize("mode", ["cpp", "triton"])
@pytest.mark.parametrize("fn", [rnn, rnn_linear])
def test_the_input_products_of_every_step_become_one(fn, mode):
    x, w, u, b = _inputs()
    report = check(fn, x, w, u, b, mode=mode)
    assert _products(report) == 1 + x.shape[0]           # one for the inputs, one per recurrent step


def test_steps_taken_by_iterating_or_along_the_second_dim_are_batched_too():
    x, w, u, b = _inputs()

    def iterated(x, w, u, b):
        h = torch.zeros(x.shape[1], u.shape[0], device=x.device)
        for x_t in x:
            h = torch.tanh(x_t @ w.t() + h @ u.t())
        return h

    def batch_first(x, w, u, b):
        return rnn(x.transpose(0, 1).contiguous().transpose(0, 1), w, u, b), \
            [x[:, k] @ w.t() for k in range(x.shape[1])]

    assert _products(check(iterated, x, w, u, b)) == 1 + x.shape[0]
    assert _products(check(batch_first, x, w, u, b)) == 2 * x.shape[0] + 1


def test_a_second_layer_over_the_first_ones_outputs_is_batched_too():
    x, w, u, b = _inputs(hidden=5)

    def two_layers(x, w, u, b):
        return rnn(rnn(x, w, u, b), w, u, b)

    report = check(two_layers, x, w, u, b)
    assert _products(report) == 2 * (1 + x.shape[0])


def test_products_of_some_steps_or_other_matrices_or_a_strided_tensor_stay_as_they_were():
    x, w, u, b = _inputs()

    def some_steps(x, w, u, b):
        return [x[t] @ w.t() for t in range(x.shape[0] - 1)]

    def a_matrix_per_step(x, w, u, b):
        return [x[t] @ (w * t).t() for t in range(x.shape[0])]

    for fn in (some_steps, a_matrix_per_step):
        assert _products(check(fn, x, w, u, b)) == x.shape[0] - (fn is some_steps)
    strided = torch.randn(3, 6, 5).transpose(0, 1)        # x[t] rows are not contiguous in x
    assert _products(check(rnn, strided, w, u, b)) == 2 * strided.shape[0]
