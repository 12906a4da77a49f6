"""Reduction lowerings (and the decompositions built on them) against eager."""
import pytest
import torch
import torch.nn.functional as F

from codegen_check import check

REDUCTIONS = {
    "sum_last": lambda x: x.sum(-1),
    "sum_first_keepdim": lambda x: x.sum(0, keepdim=True),
    "sum_all": lambda x: x.sum(),
    "sum_dims": lambda x: x.sum((0, 2)),
    "mean": lambda x: x.mean(-1),
    "mean_all": lambda x: x.mean(),
    "amax": lambda x: x.amax(1),
    "amin_keepdim": lambda x: x.amin(-1, keepdim=True),
    "max_all": lambda x: x.max(),
    "max_dim": lambda x: x.max(-1),
    "min_dim": lambda x: x.min(1, keepdim=True),
    "argmax": lambda x: x.argmax(-1),
    "argmin": lambda x: x.argmin(0),
    "argmax_flat": lambda x: x.argmax(),
    "prod": lambda x: x.prod(-1),
    "var": lambda x: x.var(-1),
    "var_unbiased0": lambda x: x.var(1, correction=0),
    "std": lambda x: x.std(-1, keepdim=True),
    "var_mean": lambda x: torch.var_mean(x, -1),
    "any": lambda x: (x > 1).any(-1),
    "all": lambda x: (x > -1).all(),
    "logsumexp": lambda x: torch.logsumexp(x, -1),
    "norm": lambda x: torch.linalg.vector_norm(x, dim=-1),
    "sum_int_out": lambda x: (x > 0).sum(-1),
}

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def _input(shape, dtype, nan=False):
    torch.manual_seed(3)
    x = torch.randn(shape)
    if nan:
        x[1, 2, 3] = float("nan")
    return x.to(dtype)


def _check_all(family, x, mode):
    if mode == "reference":
        for name, fn in family.items():
            def one(*a, fn=fn):
                return fn(*a)
            one.__name__ = name
            check(one, x, mode=mode)
        return

    def all_ops(x):
        return tuple(fn(x) for fn in family.values())
    all_ops.__name__ = "reductions " + ",".join(family)
    check(all_ops, x, mode=mode)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_reductions_match_eager(dtype, mode):
    _check_all(REDUCTIONS, _input((3, 5, 37), dtype), mode)


def test_reductions_propagate_nan(mode):
    family = {k: REDUCTIONS[k] for k in ("sum_last", "amax", "amin_keepdim", "max_dim", "argmax", "argmin", "max_all")}
    _check_all(family, _input((3, 5, 37), torch.float32, nan=True), mode)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool], ids=str)
def test_integer_reductions_match_eager(dtype, mode):
    torch.manual_seed(4)
    x = torch.randint(-5, 6, (4, 3, 9)).to(dtype)
    family = {"sum": lambda x: x.sum(-1), "amax": lambda x: x.amax(0), "argmax": lambda x: x.argmax(-1),
              "prod": lambda x: x.prod(1), "any": lambda x: x.any(-1), "min": lambda x: x.min()}
    if dtype == torch.bool:
        family = {k: v for k, v in family.items() if k not in ("prod", "argmax")}
    _check_all(family, x, mode)


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 1, 5), (3, 0, 4), (4, 3, 0), (1, 7, 1)], ids=str)
def test_reductions_on_edge_shapes(shape, mode):
    x = _input(shape, torch.float32)
    family = {"sum": lambda x: x.sum(-1), "sum1": lambda x: x.sum(1), "mean0": lambda x: x.mean(0),
              "sum_all": lambda x: x.sum()}
    _check_all(family, x, mode)


def test_reductions_of_strided_inputs(mode):
    base = _input((6, 8, 10), torch.float32)

    def fn(x, y):
        return x.sum(-1), x.amax(1), y.mean(-1), y.argmax(0)
    check(fn, base.permute(2, 0, 1), base[:, ::2, 1:], mode=mode)


def test_large_full_reduction(mode):
    x = torch.randn(300_000)
    check(lambda x: (x.sum(), x.amax(), (x * x).mean()), x, mode=mode)


NORMS = {
    "softmax": lambda x: torch.softmax(x, -1),
    "log_softmax": lambda x: torch.log_softmax(x, -1),
    "softmax_dim0": lambda x: torch.softmax(x, 0),
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    "layer_norm_gelu": lambda x: F.gelu(F.layer_norm(x, x.shape[-1:])),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_normalizations_match_eager(dtype, mode):
    _check_all(NORMS, _input((4, 6, 33), dtype), mode)


def test_layer_norm_with_affine_and_batch_norm(mode):
    x = _input((4, 6, 33), torch.float32)
    w, b = torch.randn(33), torch.randn(33)
    img = torch.randn(2, 3, 5, 5)
    rm, rv = torch.randn(3), torch.rand(3) + 0.5
    g, beta = torch.randn(3), torch.randn(3)

    def fn(x, w, b, img, rm, rv, g, beta):
        return (F.layer_norm(x, (33,), w, b), F.batch_norm(img, rm, rv, g, beta, training=False),
                F.group_norm(img, 3, g, beta))
    check(fn, x, w, b, img, rm, rv, g, beta, mode=mode)
