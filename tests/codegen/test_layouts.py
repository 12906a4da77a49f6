"""Loop order, transposed tiles, channels-last convolutions and max-pooling: still exact."""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from codegen_check import check

aten = torch.ops.aten


def kernel_text(report) -> str:
    return "\n".join(report.kernel_sources.values())


@pytest.mark.parametrize("shape", [(64, 48), (37, 50), (16, 16), (33, 17), (100, 300)])
def test_add_of_a_transpose(shape):
    report = check(lambda x, y: x + y.t(), torch.randn(*shape), torch.randn(*shape[::-1]))
    if min(shape) >= 16:
        assert "magpy_transpose16_b32" in kernel_text(report)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.int32, torch.int64])
def test_transposed_copy_of_other_element_sizes(dtype):
    x = (torch.randn(40, 70) * 100).to(dtype)
    check(lambda x: x.t().contiguous() * 2, x)


@pytest.mark.parametrize("dims", [(0, 2, 1), (2, 0, 1), (2, 1, 0), (1, 0, 2)])
def test_permuted_copies(dims):
    check(lambda x: x.permute(*dims).contiguous() + 1, torch.randn(5, 40, 36))


def test_transposed_read_under_a_mask_is_not_staged():
    # The padded positions must never be read, even a tile at a time.
    check(lambda x: F.pad(x.t(), (1, 2, 3, 0)) * 2, torch.randn(40, 50))


def test_transposed_read_shared_by_two_outputs():
    def fn(x, y):
        t = y.t()
        return x + t, x * t
    check(fn, torch.randn(48, 32), torch.randn(32, 48))


def test_channels_last_store_loops_in_memory_order():
    report = check(lambda x: x.contiguous(memory_format=torch.channels_last) * 3,
                   torch.randn(2, 24, 20, 18))
    assert "magpy_transpose16_b32" in kernel_text(report)


# ----------------------------------------------------------------------------------------------
# max_pool2d


POOLS = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), dilation=(2, 1)),
]


@pytest.mark.parametrize("pool", POOLS, ids=str)
def test_max_pool2d_values_and_indices(pool, mode):
    x = torch.randn(2, 3, 10, 11)
    x[0, 0, 1, 1] = float("nan")
    x[1, 2, :4, :4] = float("-inf")
    report = check(lambda x: F.max_pool2d_with_indices(x, **pool), x, mode=mode)
    assert report.fallbacks == []


def test_chained_maxima_propagate_nan_from_either_side(mode):
    x, y, z = torch.randn(3, 64)
    x[0], y[1], z[2] = float("nan"), float("nan"), float("nan")
    check(lambda x, y, z: torch.maximum(torch.minimum(torch.maximum(x, y), z), x).clamp(-1, 1),
          x, y, z, mode=mode)


def test_max_pool2d_of_a_3d_input():
    check(lambda x: F.max_pool2d(x, 2), torch.randn(3, 8, 8))


def test_max_pool2d_fuses_with_its_producer():
    report = check(lambda x: F.max_pool2d(torch.relu(x * 2 - 1), 2), torch.randn(2, 4, 8, 8))
    assert report.kernel_count == 1


# ----------------------------------------------------------------------------------------------
# convolutions get channels-last operands


class SmallCNN(nn.Module):
    def __init__(self, channels=32):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
            nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
            nn.MaxPool2d(2), nn.Flatten(), nn.Linear(channels * 16 * 16, 10))
        for bn in (self.body[1], self.body[4]):
            bn.running_mean.normal_()
            bn.running_var.uniform_(0.5, 2)

    def forward(self, x):
        return self.body(x)


def test_cnn_inference_with_channels_last_convolutions():
    from torch.func import functional_call

    torch.manual_seed(0)
    model = SmallCNN().eval()
    state = dict(model.named_parameters())
    state.update(model.named_buffers())
    names = list(state)

    def fn(x, *tensors):
        return functional_call(model, dict(zip(names, tensors)), (x,))

    with torch.no_grad():
        report = check(fn, torch.randn(2, 3, 32, 32), *state.values())
    assert report.fallbacks == []
    assert "(32768, 1, 1024, 32)" in report.wrapper  # the convolutions' results are channels-last


def test_convolution_result_leaves_the_graph_in_eager_layout():
    def fn(x, w):
        y = F.conv2d(x, w, padding=1)
        return y, y.flatten(1) @ torch.ones(y[0].numel(), 3), F.relu(y)
    check(fn, torch.randn(2, 3, 16, 16), torch.randn(8, 3, 3, 3))


def test_convolution_of_a_convolution():
    check(lambda x, w1, w2: F.conv2d(F.conv2d(x, w1), w2, stride=2),
          torch.randn(2, 4, 20, 20), torch.randn(8, 4, 3, 3), torch.randn(6, 8, 3, 3))


def test_vector_math_kernels_get_wide_vectors(tmp_path, monkeypatch):
    from magpy.codegen import compile_cache

    seen = []
    original = compile_cache._start
    monkeypatch.setattr(compile_cache, "_start",
                        lambda path, source, extra: seen.append(tuple(extra)) or original(path, source, extra))
    monkeypatch.setenv("MAGPY_CACHE_DIR", str(tmp_path))
    check(lambda x, y: (x.exp() * 2, y + 1), torch.randn(8, 8), torch.randn(9, 9))
    assert sorted(seen) == [(), compile_cache.WIDE_VECTORS]
