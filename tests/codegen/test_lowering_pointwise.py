"""Pointwise lowerings against eager, through the reference evaluator and through compiled C++.

In "cpp" mode a whole family of ops is compiled as one graph (one gcc run); in "reference" mode
each op is its own graph, so a failure names the op.
"""
import pytest
import torch

from codegen_check import check

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]

UNARY = {
    "abs": torch.abs, "neg": torch.neg, "exp": torch.exp, "exp2": torch.exp2,
    "expm1": torch.expm1, "log": torch.log, "log2": torch.log2, "log10": torch.log10,
    "log1p": torch.log1p, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "sin": torch.sin,
    "cos": torch.cos, "tan": torch.tan, "asin": torch.asin, "acos": torch.acos, "atan": torch.atan,
    "sinh": torch.sinh, "cosh": torch.cosh, "tanh": torch.tanh, "asinh": torch.asinh,
    "acosh": torch.acosh, "atanh": torch.atanh, "erf": torch.erf, "erfc": torch.erfc,
    "sigmoid": torch.sigmoid, "reciprocal": torch.reciprocal, "floor": torch.floor,
    "ceil": torch.ceil, "round": torch.round, "trunc": torch.trunc, "sign": torch.sign,
    "relu": torch.relu, "square": torch.square, "isnan": torch.isnan, "isinf": torch.isinf,
    "signbit": torch.signbit, "isfinite": torch.isfinite, "logical_not": torch.logical_not,
    "gelu": torch.nn.functional.gelu, "gelu_tanh": lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
    "silu": torch.nn.functional.silu, "softplus": torch.nn.functional.softplus,
    "hardtanh": torch.nn.functional.hardtanh, "leaky_relu": torch.nn.functional.leaky_relu,
    "elu": torch.nn.functional.elu, "hardswish": torch.nn.functional.hardswish,
    "hardsigmoid": torch.nn.functional.hardsigmoid, "mish": torch.nn.functional.mish,
    "frac": torch.frac, "clamp": lambda x: torch.clamp(x, -0.5, 0.7),
    "clamp_min": lambda x: torch.clamp(x, min=0.1), "nan_to_num": torch.nan_to_num,
    "pow2": lambda x: x ** 2, "pow3": lambda x: x ** 3, "pow_half": lambda x: x.abs() ** 0.5,
    "pow_float": lambda x: x.abs() ** 1.7, "add_scalar": lambda x: x + 2.5,
    "rsub": lambda x: 1 - x, "div_scalar": lambda x: x / 3, "mul_int": lambda x: x * 3,
    "to_f64": lambda x: x.double(), "to_i32": lambda x: (x.nan_to_num() * 10).to(torch.int32),
    "to_bool": lambda x: x.bool(), "masked_fill": lambda x: x.masked_fill(x > 0.3, -1.0),
    "lgamma": torch.lgamma, "logit": lambda x: torch.logit(x.abs().clamp(0.05, 0.95)),
}

INT_UNARY = {
    "abs": torch.abs, "neg": torch.neg, "sign": torch.sign, "bitwise_not": torch.bitwise_not,
    "square": torch.square, "exp": torch.exp, "sqrt_abs": lambda x: torch.sqrt(x.abs()),
    "to_float": lambda x: x.float(), "add": lambda x: x + 3, "mul_float": lambda x: x * 0.5,
    "floordiv": lambda x: x // 3, "remainder": lambda x: x % 4, "relu": torch.relu,
    "clamp": lambda x: x.clamp(-3, 4), "eq": lambda x: x == 2, "div": lambda x: x / 4,
}

BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "add_alpha": lambda a, b: torch.add(a, b, alpha=2), "sub_alpha": lambda a, b: torch.sub(a, b, alpha=3),
    "maximum": torch.maximum, "minimum": torch.minimum, "atan2": torch.atan2,
    "pow": lambda a, b: a.abs() ** b, "remainder": torch.remainder, "fmod": torch.fmod,
    "floor_divide": torch.floor_divide, "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "copysign": torch.copysign, "hypot": torch.hypot, "eq": torch.eq, "ne": torch.ne,
    "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor,
    "where": lambda a, b: torch.where(a > b, a, b), "lerp": lambda a, b: torch.lerp(a, b, 0.3),
    "addcmul": lambda a, b: torch.addcmul(a, a, b, value=0.5), "xlogy": lambda a, b: torch.xlogy(a, b.abs()),
    "clamp_tensor": lambda a, b: torch.clamp(a, min=b), "sigmoid_mul": lambda a, b: a.sigmoid() * b,
}

INT_BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "floor_divide": lambda a, b: torch.floor_divide(a, b.abs() + 1),
    "remainder": lambda a, b: torch.remainder(a, b.abs() + 1), "fmod": lambda a, b: torch.fmod(a, b.abs() + 1),
    "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    "maximum": torch.maximum, "minimum": torch.minimum, "lt": torch.lt, "eq": torch.eq,
    "pow": lambda a, b: a ** b.abs().clamp(max=3),
}


def float_input(shape, dtype):
    torch.manual_seed(0)
    x = torch.randn(shape, dtype=torch.float32) * 1.5
    if x.numel() > 2:
        x.view(-1)[0] = float("nan")
        x.view(-1)[1] = 0.0
    return x.to(dtype)


def int_input(shape, dtype, low=-9, high=10):
    torch.manual_seed(1)
    return torch.randint(low, high, shape, dtype=dtype)


def _run_family(family, inputs, mode):
    eager_ok = {}
    for name, fn in family.items():
        try:
            fn(*inputs)
        except (RuntimeError, NotImplementedError):
            continue  # eager itself does not support this op for this dtype
        eager_ok[name] = fn
    if mode == "reference":
        for name, fn in eager_ok.items():
            def one(*args, fn=fn):
                return fn(*args)
            one.__name__ = name
            check(one, *inputs, mode=mode)
        return
    names = list(eager_ok)

    def all_ops(*args):
        return tuple(eager_ok[n](*args) for n in names)

    all_ops.__name__ = "ops " + ",".join(names)
    check(all_ops, *inputs, mode=mode)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_unary_float_ops_match_eager(dtype, mode):
    _run_family(UNARY, [float_input((5, 37), dtype)], mode)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=str)
def test_unary_int_ops_match_eager(dtype, mode):
    _run_family(INT_UNARY, [int_input((5, 37), dtype)], mode)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_binary_float_ops_match_eager(dtype, mode):
    a = float_input((6, 19), dtype)
    b = float_input((19,), dtype).flip(0) + 0.25
    _run_family(BINARY, [a, b], mode)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64], ids=str)
def test_binary_int_ops_match_eager(dtype, mode):
    a = int_input((6, 19), dtype)
    b = int_input((6, 1), dtype, -4, 5)
    _run_family(INT_BINARY, [a, b], mode)


def test_bool_ops_match_eager(mode):
    torch.manual_seed(2)
    a = torch.rand(4, 9) > 0.5
    b = torch.rand(4, 9) > 0.3
    family = {
        "and": torch.logical_and, "or": torch.logical_or, "xor": torch.logical_xor,
        "not": lambda a, b: ~a, "bitand": lambda a, b: a & b, "to_float": lambda a, b: a.float() + b.float(),
        "where": lambda a, b: torch.where(a, 1.0, 2.0) * b, "eq": torch.eq, "add": lambda a, b: a + b,
    }
    _run_family(family, [a, b], mode)


def test_mixed_dtype_promotion_matches_eager(mode):
    a = float_input((3, 8), torch.float16)
    b = int_input((3, 8), torch.int64)
    c = float_input((8,), torch.float64)

    def fn(a, b, c):
        return a + b, a * c, b / 3, (b > 0) & (a > 0), torch.where(b > 0, a, c), b * 2.5
    check(fn, a, b, c, mode=mode)


LAYOUTS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.t().contiguous().t(),
    "sliced": lambda t: torch.cat([t, t], 1)[:, ::2],
    "offset": lambda t: torch.cat([t, t], 0)[t.shape[0]:],
    "expanded": lambda t: t[:1].expand(t.shape),
}


@pytest.mark.parametrize("layout", LAYOUTS, ids=str)
def test_strided_inputs_match_eager(layout, mode):
    x = LAYOUTS[layout](float_input((7, 12), torch.float32))
    y = float_input((7, 12), torch.float32).t().contiguous().t()

    def fn(x, y):
        return (x * 2 + y).exp(), x.t() + 1
    check(fn, x, y, mode=mode)


@pytest.mark.parametrize("shape", [(), (1,), (1, 1), (0,), (0, 5), (3, 0, 2), (1, 7), (13,)], ids=str)
def test_edge_shapes_match_eager(shape, mode):
    x = float_input(shape, torch.float32)

    def fn(x):
        return x.sin() + 1, (x * x).relu()
    check(fn, x, mode=mode)


def test_factories_match_eager(mode):
    x = float_input((4, 6), torch.float32)

    def fn(x):
        return (x + torch.ones(4, 6), torch.zeros(3, dtype=torch.int64), torch.full((2, 2), 7.5),
                torch.arange(10), torch.arange(2, 11, 3), torch.arange(0.0, 1.0, 0.25) + x[0, :4],
                torch.zeros_like(x) + 1, torch.full_like(x, 2.0) * x, torch.tensor(3.0) * x)
    check(fn, x, mode=mode)
