"""The scheduler fuses what it should: kernel counts of typical patterns, results still exact."""
import torch
import torch.nn.functional as F

from codegen_check import check


def kernels(fn, *inputs, mode="reference"):
    return check(fn, *inputs, mode=mode).kernel_count


def test_softmax_is_one_kernel():
    assert kernels(lambda x: torch.softmax(x, -1), torch.randn(16, 100)) == 1


def test_log_softmax_is_one_kernel():
    assert kernels(lambda x: torch.log_softmax(x, -1), torch.randn(16, 100)) == 1


def test_layer_norm_gelu_is_one_kernel():
    w, b = torch.randn(64), torch.randn(64)
    assert kernels(lambda x, w, b: F.gelu(F.layer_norm(x, (64,), w, b)), torch.randn(8, 64), w, b) == 1


def test_two_reductions_of_one_input_are_one_kernel():
    assert kernels(lambda x: (x.sum(-1), x.amax(-1)), torch.randn(32, 50)) == 1


def test_pointwise_chain_of_ten_ops_is_one_kernel():
    def chain(x, y):
        z = x + y
        z = z * 2
        z = z.sin()
        z = z - y
        z = z.exp()
        z = z / 3
        z = z.relu()
        z = z.cos()
        z = z + 1
        return z.sigmoid()
    assert kernels(chain, torch.randn(100, 30), torch.randn(100, 30)) == 1


def test_reduction_with_epilogue_is_one_kernel():
    assert kernels(lambda x: x.sum(-1).sqrt() + 1, torch.randn(20, 30)) == 1


def test_pointwise_into_reduction_is_one_kernel():
    assert kernels(lambda x: (x.exp() * 2).sum(-1), torch.randn(20, 30)) == 1


def test_multi_use_value_feeding_reduction_and_output_is_one_kernel():
    def fn(x):
        y = (x * x + x.sin() * x.cos() + x.tanh() * x.exp()).sqrt()
        return y, y.sum(-1)
    assert kernels(fn, torch.randn(20, 30)) == 1


def test_softmax_then_relu_is_one_kernel():
    assert kernels(lambda x: torch.softmax(x, -1).relu(), torch.randn(8, 77)) == 1


def test_independent_ops_on_unrelated_inputs_are_not_fused():
    assert kernels(lambda x, y: (x.sin(), y.cos()), torch.randn(10, 10), torch.randn(10, 10)) == 2


def test_shifted_read_of_a_fused_buffer_is_not_fused_wrongly():
    # y[i] depends on z[i+1]: a different row position, so z must be complete first.
    def fn(x):
        z = (x * 3).exp()
        z2 = z.sum(-1, keepdim=True) + z
        return z2[:, 1:] + z2[:, :-1]
    check(fn, torch.randn(6, 9), mode="cpp")


def test_unfused_schedule_matches_fused_results():
    def fn(x):
        return torch.softmax(x, -1) * x.sum(-1, keepdim=True), F.layer_norm(x, (40,))
    x = torch.randn(12, 40)
    fused = check(fn, x, mode="cpp", fuse=True)
    unfused = check(fn, x, mode="cpp", fuse=False)
    assert fused.kernel_count < unfused.kernel_count


def test_kernel_names_say_what_they_fuse():
    report = check(lambda x: (x + 1).exp().sum(-1), torch.randn(4, 8), mode="reference")
    assert report.kernels == ["cpp_fused_add_exp_sum_0"]


def test_identical_reductions_are_computed_once():
    def fn(x, w, b):
        return F.layer_norm(x, (64,), w, b)
    report = check(fn, torch.randn(32, 64), torch.randn(64), torch.randn(64), mode="cpp")
    source = next(iter(report.kernel_sources.values()))
    # the mean's sum, then the variance's squares and its correction (deviations' sum) in one
    # loop — not a fourth
    assert source.count("reduction(+:") == 3


def test_reductions_of_different_bodies_are_kept_apart():
    check(lambda x: (x.sum(-1), (x * 2).sum(-1), x.sum(-1, keepdim=True) + 1), torch.randn(8, 30))


def test_softmax_divides_once_per_row():
    report = check(lambda x: torch.softmax(x, -1), torch.randn(16, 100), mode="cpp")
    source = next(iter(report.kernel_sources.values()))
    assert "(1.0f / red" in source


def test_batch_norm_elu_pad_is_one_kernel():
    """ELU uses its input three times; all three meet in one ``where``, so the batch norm before
    it is computed in the padding kernel rather than stored first (its shape differs)."""

    def fn(x, mean, var, w, b):
        y = F.batch_norm(x, mean, var, w, b, training=False)
        return F.pad(F.elu(y), (1, 1, 1, 1))

    stats = [torch.randn(3), torch.rand(3) + 0.5, torch.randn(3), torch.randn(3)]
    assert kernels(fn, torch.randn(2, 3, 8, 8), *stats) == 1
    assert kernels(fn, torch.randn(2, 3, 8, 8), *stats, mode="cpp") == 1
