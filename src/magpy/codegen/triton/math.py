"""The math of Triton bodies: one row per ``ops`` name, from ``tl``/``tl.math`` functions only.

A row is ``fn(handler, dtype, *operands) -> text`` (or a finished value), ``dtype`` being the
dtype the operands were converted to. Float constants that float32 cannot hold exactly go
through ``_k`` (Triton reads a Python float as float32). Functions Triton lacks are spelled out from the ones it
has, with intermediate values emitted through the handler:

* expm1 and log1p by Kahan's tricks (``(u - 1) * x / log(u)``), exact near zero;
* sinh, asinh, atanh from those, so they too keep their digits near zero; tanh by Cephes' polynomial
  near zero and one exp away from it;
* sin and cos by Cody and Waite's reduction and Cephes' polynomials (``_sin_cos``);
* atan by Cephes' rational function after range reduction; atan2, asin, acos from it;
* lgamma by Lanczos' series, in float64;
* pow through ``exp2(b * log2(|a|))`` with the sign and the special cases fixed up;
* round half to even from ``floor``.
"""
from __future__ import annotations

import torch

from .dtypes import TritonUnsupported, compute_type, tl_type

LN2 = 0.6931471805599453
LOG10_2 = 0.30102999566398120
PI = 3.141592653589793


def _float(dtype) -> bool:
    return dtype.is_floating_point


def _infix(op):
    return lambda h, d, a, b: f"({a} {op} {b})"


def _tl(fn):
    """``tl.<fn>(a)`` for floats (ints and bools unchanged for the rounding functions)."""
    def text(h, d, a):
        if not _float(d):
            if fn in ("floor", "ceil"):
                return a
            raise TritonUnsupported(f"{fn} on {d}")
        return f"tl.{fn}({h.as_tensor(a)})"

    return text


def _floats_only(name, fn):
    def text(h, d, *args):
        if not _float(d):
            raise TritonUnsupported(f"{name} on {d}")
        return fn(h, d, *[h.as_tensor(a) for a in args])

    return text


def _v(h, text, d, *like):
    """Emit ``text`` as a temporary of dtype ``d`` varying along the axes of ``like``."""
    axes = frozenset().union(*(x.axes for x in like))
    return h.emit(text, d, axes)


def expm1(h, d, a):
    u = _v(h, f"tl.exp({a})", d, a)
    um1 = _v(h, f"({u} - 1.0)", d, a)
    exact = f"{um1} * {a} / tl.log({u})"
    return _v(h, f"tl.where({u} == 1.0, {a}, tl.where({um1} == -1.0, -1.0, "
                 f"tl.where({u} == float('inf'), {u}, {exact})))", d, a)


def log1p(h, d, a):
    u = _v(h, f"({a} + 1.0)", d, a)
    exact = f"tl.log({u}) * {a} / ({u} - 1.0)"
    return _v(h, f"tl.where({u} == 1.0, {a}, tl.where({u} == float('inf'), {u}, {exact}))", d, a)


# Cephes' tanh for |x| < 0.625: x + x·z·P(z), z = x², a polynomial in float32 and a rational function in
# float64; above it 1 - 2/(exp(2|x|) + 1) has no cancellation. One exp and one division per element.
TANH_F32 = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)
TANH_P = (-9.64399179425052238628e-1, -9.92877231001918586564e1, -1.61468768441708447952e3)
TANH_Q = (1.12811678491632931402e2, 2.23548839060100448583e3, 4.84406305325125486048e3)


def tanh(h, d, a):
    z = _v(h, f"({a} * {a})", d, a)
    if d == torch.float64:
        near = f"{_polynomial(d, z, TANH_P)} / {_polynomial(d, z, TANH_Q, leading_one=True)}"
    else:
        near = _polynomial(d, z, TANH_F32)
    small = _v(h, f"tl.where({a} == 0, {a}, {a} + {a} * {z} * {near})", d, a)   # keeps -0.0
    far = _v(h, f"(1.0 - 2.0 / (tl.exp(2.0 * tl.abs({a})) + 1.0))", d, a)
    return _v(h, f"tl.where(tl.abs({a}) < 0.625, {small}, tl.where({a} < 0, -{far}, {far}))", d, a)


# sin and cos of float32: Cody and Waite's reduction by pi/2 in three parts (the first two with few
# enough bits that j * part is exact for |x| < 8192, FMA or not), then Cephes' polynomials on
# [-pi/4, pi/4]. A block holding a larger |x| (or inf) takes tl.sin/tl.cos instead, whose slow
# path for huge arguments costs every block registers (sin^2 + cos^2 of 4096^2 on an H200: 3.2 -> 3.5 TB/s).
PIO2 = (1.5703125, 4.837512969970703125e-4, 7.549789954891882e-8)
SIN_F32 = (-1.9515295891e-4, 8.3321608736e-3, -1.6666654611e-1)
COS_F32 = (2.443315711809948e-5, -1.388731625493765e-3, 4.166664568298827e-2)
REDUCED_MAX = 8192.0


def _sin_cos(h, d, a, fn: str) -> str:
    if d != torch.float32:
        return f"tl.{fn}({a})"
    j = _v(h, f"tl.floor({a} * 0.6366197723675814 + 0.5)", d, a)
    r = _v(h, f"((({a} - {j} * {PIO2[0]!r}) - {j} * {PIO2[1]!r}) - {j} * {PIO2[2]!r})", d, a)
    z = _v(h, f"({r} * {r})", d, a)
    s = _v(h, f"({r} + {r} * {z} * {_polynomial(d, z, SIN_F32)})", d, a)
    c = _v(h, f"(1.0 - 0.5 * {z} + {z} * {z} * {_polynomial(d, z, COS_F32)})", d, a)
    q = _v(h, f"{j}.to(tl.int32)", torch.int32, a)
    if fn == "sin":
        v = _v(h, f"tl.where(({q} & 1) == 0, {s}, {c})", d, a)
        fast = f"tl.where({a} == 0, {a}, tl.where(({q} & 2) == 0, {v}, -{v}))"   # (keeps -0.0)
    else:
        v = _v(h, f"tl.where(({q} & 1) == 0, {c}, {s})", d, a)
        fast = f"tl.where((({q} + 1) & 2) == 0, {v}, -{v})"
    huge = h.emit(f"(tl.max(tl.abs({a})) >= {REDUCED_MAX!r})", torch.bool)
    result = h.printer.new_var(fn)
    h.lines += [f"{h.indent}{result} = {fast}", f"{h.indent}if {huge}:", f"{h.indent}    {result} = tl.{fn}({a})"]
    return _v(h, result, d, a)


def sinh(h, d, a):
    em = expm1(h, d, a)
    e = _v(h, f"tl.exp({a})", d, a)
    near = f"(0.5 * {em} * ({em} + 2.0) / ({em} + 1.0))"
    return f"tl.where(tl.abs({a}) < 20.0, {near}, 0.5 * ({e} - 1.0 / {e}))"


def cosh(h, d, a):
    e = _v(h, f"tl.exp({a})", d, a)
    return f"(0.5 * ({e} + 1.0 / {e}))"


def asinh(h, d, a):
    x = _v(h, f"tl.abs({a})", d, a)
    near = log1p(h, d, _v(h, f"({x} + {x} * {x} / (1.0 + {_sqrt_fn(d)}(1.0 + {x} * {x})))", d, a))
    magnitude = _v(h, f"tl.where({x} > 1e10, tl.log({x}) + {_k(d, LN2)}, {near})", d, a)
    return f"tl.where({a} < 0, -{magnitude}, {magnitude})"


def acosh(h, d, a):
    near = f"tl.log({a} + {_sqrt_fn(d)}(({a} - 1.0) * ({a} + 1.0)))"
    return f"tl.where({a} > 1e10, tl.log({a}) + {_k(d, LN2)}, {near})"


def atanh(h, d, a):
    return f"(0.5 * {log1p(h, d, _v(h, f'(2.0 * {a} / (1.0 - {a}))', d, a))})"


def _k(d, value: float) -> str:
    """A float constant in the precision of ``d``: Triton reads a Python float as float32."""
    if d == torch.float64:
        return f"tl.full([1], {value!r}, tl.float64)"
    return repr(value)


# Cephes' atan: a rational function after reducing |x| to [0, 0.66].
ATAN_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1,
          -1.228866684490136173410e2, -6.485021904942025371773e1)
ATAN_Q = (2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2,
          4.853903996359136964868e2, 1.945506571482613964425e2)


def _polynomial(d, z, coefficients, leading_one=False) -> str:
    text = "1.0" if leading_one else _k(d, coefficients[0])
    for c in coefficients[(0 if leading_one else 1):]:
        text = f"({text} * {z} + {_k(d, c)})"
    return text


def atan(h, d, a):
    x = _v(h, f"tl.abs({a})", d, a)
    big = _v(h, f"({x} > 2.414213562373095)", torch.bool, a)
    mid = _v(h, f"({x} > 0.66)", torch.bool, a)
    base = _v(h, f"tl.where({big}, {_k(d, PI / 2)}, tl.where({mid}, {_k(d, PI / 4)}, 0.0))", d, a)
    t = _v(h, f"tl.where({big}, -1.0 / {x}, tl.where({mid}, ({x} - 1.0) / ({x} + 1.0), {x}))", d, a)
    z = _v(h, f"({t} * {t})", d, a)
    ratio = f"{z} * {_polynomial(d, z, ATAN_P)} / {_polynomial(d, z, ATAN_Q, leading_one=True)}"
    magnitude = _v(h, f"({base} + ({t} * {ratio} + {t}))", d, a)
    return _v(h, f"tl.where({a} < 0, -{magnitude}, {magnitude})", d, a)


def atan2(h, d, y, x):
    a = atan(h, d, _v(h, f"({y} / {x})", d, y, x))
    pi, half = _k(d, PI), _k(d, PI / 2)
    quadrant = _v(h, f"tl.where({x} > 0, {a}, tl.where({x} < 0, tl.where({y} >= 0, {a} + {pi}, {a} - {pi}), "
                     f"tl.where({y} > 0, {half}, tl.where({y} < 0, -{half}, 0.0))))", d, y, x)
    return f"tl.where(({x} != {x}) | ({y} != {y}), {x} + {y}, {quadrant})"


def asin(h, d, a):
    return atan2(h, d, a, _v(h, f"{_sqrt_fn(d)}((1.0 - {a}) * (1.0 + {a}))", d, a))


def acos(h, d, a):
    return atan2(h, d, _v(h, f"{_sqrt_fn(d)}((1.0 - {a}) * (1.0 + {a}))", d, a), a)


# Lanczos' approximation (g = 7, nine terms), evaluated in float64 whatever the input.
LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
           -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
           1.5056327351493116e-7)


def lgamma(h, d, a):
    f64 = torch.float64
    x = _v(h, f"{a}.to(tl.float64)", f64, a)
    reflect = _v(h, f"({x} < 0.5)", torch.bool, a)
    y = _v(h, f"tl.where({reflect}, 1.0 - {x}, {x}) - 1.0", f64, a)
    terms = " + ".join(f"{_k(f64, c)} / ({y} + {float(i)})" for i, c in enumerate(LANCZOS[1:], 1))
    series = _v(h, f"({_k(f64, LANCZOS[0])} + {terms})", f64, a)
    t = _v(h, f"({y} + 7.5)", f64, a)
    log_gamma = _v(h, f"({_k(f64, 0.9189385332046727)} + ({y} + 0.5) * tl.log({t}) - {t} + tl.log({series}))",
                   f64, a)
    sine = f"tl.abs(tl.sin({_k(f64, PI)} * {x}))"
    value = _v(h, f"tl.where({reflect}, tl.log({_k(f64, PI)} / {sine}) - {log_gamma}, {log_gamma})", f64, a)
    pole = f"({x} <= 0) & ({x} == tl.floor({x}))"
    return _v(h, f"tl.where({pole}, float('inf'), tl.where(tl.abs({x}) == float('inf'), float('inf'), {value}))"
                 f".to({compute_type(d)})", d, a)


def int_pow(h, d, a, b):
    """Integer powers by squaring, one exponent bit per step (negative exponents give 0, or ±1 for
    |a| = 1, as eager's; a number exponent is checked before reaching here)."""
    a, b = h.as_tensor(a), h.as_tensor(b)
    base, exponent, result = (h.printer.new_var(p) for p in ("base", "exponent", "power"))
    indent = h.indent
    h.lines += [f"{indent}{base} = {a} + 0 * {b}", f"{indent}{exponent} = {b} + 0 * {a}",
                f"{indent}{result} = {base} * 0 + 1",
                f"{indent}for _ in range({8 * d.itemsize - 1}):",
                f"{indent}    {result} = tl.where(({exponent} & 1) != 0, {result} * {base}, {result})",
                f"{indent}    {base} = {base} * {base}",
                f"{indent}    {exponent} = {exponent} >> 1"]
    # a negative exponent (from a tensor): 1 for a base of 1, ±1 for -1, else 0 — eager's
    negative = f"tl.where({a} == -1, tl.where(({b} & 1) != 0, -1, 1), tl.where({a} == 1, 1, 0))"
    return _v(h, f"tl.where({b} < 0, {negative}, {result}).to({tl_type(d)})", d, a, b)


def pow_(h, d, a, b):
    if not _float(d):
        if d == torch.bool:
            raise TritonUnsupported("pow on bool")
        return int_pow(h, d, a, b)
    a, b = h.as_tensor(a), h.as_tensor(b)
    r = _v(h, f"tl.exp2({b} * tl.log2(tl.abs({a})))", d, a, b)
    whole = _v(h, f"({b} == tl.floor({b}))", torch.bool, b)
    odd = _v(h, f"({whole} & (tl.abs({b} % 2.0) == 1.0))", torch.bool, b)
    negative = _v(h, f"(({a} < 0) | (1.0 / {a} < 0))", torch.bool, a)  # (-0.0 too: odd powers keep its sign)
    signed = _v(h, f"tl.where({negative} & {odd}, -{r}, {r})", d, a, b)
    # (a negative base to a fraction is NaN, but -inf's powers are infinities or zeros, as C's pow says)
    nan = f"tl.where(({a} < 0) & ({a} != float('-inf')) & ~{whole}, float('nan'), {signed})"
    return f"tl.where(({b} == 0) | ({a} == 1.0), 1.0, {nan})"


def round_(h, d, a):
    if not _float(d):
        return a
    a = h.as_tensor(a)
    r = _v(h, f"tl.floor({a} + 0.5)", d, a)
    tie_to_odd = f"(({r} - {a}) == 0.5) & (({r} % 2.0) != 0.0)"
    exact = 2.0 ** (52 if d == torch.float64 else 23)
    return f"tl.where(tl.abs({a}) >= {exact}, {a}, tl.where({tie_to_odd}, {r} - 1.0, {r}))"


def trunc(h, d, a):
    if not _float(d):
        return a
    return f"tl.where({a} >= 0, tl.floor({a}), tl.ceil({a}))"


def sign(h, d, a):
    if d == torch.bool:
        return a
    if _float(d):  # NaN has sign 0, as in eager
        return f"(tl.where({a} > 0, 1.0, 0.0) - tl.where({a} < 0, 1.0, 0.0))"
    return f"(({a} > 0).to({tl_type(d)}) - ({a} < 0).to({tl_type(d)}))"


def signbit(h, d, a):
    if not _float(d):
        return f"({a} < 0)"
    bits = "tl.int64" if d == torch.float64 else "tl.int32"
    return f"({h.as_tensor(a)}.to({bits}, bitcast=True) < 0)"


def floordiv(h, d, a, b):
    if _float(d):
        return _float_floordiv(h, d, a, b)
    q = _v(h, f"({a} // {b})", d, a, b)
    return f"tl.where((({a} % {b}) != 0) & (({a} < 0) != ({b} < 0)), {q} - 1, {q})"


def _float_floordiv(h, d, a, b):
    """Eager's (ATen's ``div_floor_floating``, Python's): from fmod, exact, then rounded —
    ``floor(a / b)`` rounds the quotient first (3.0 / 0.3 is 10.000001)."""
    a, b = h.as_tensor(a), h.as_tensor(b)
    mod = _v(h, f"({a} % {b})", d, a, b)  # (Triton's float % is C's fmod)
    div = _v(h, f"(({a} - {mod}) / {b})", d, a, b)
    div = _v(h, f"tl.where(({mod} != 0) & (({b} < 0) != ({mod} < 0)), {div} - 1, {div})", d, div)
    low = _v(h, f"tl.floor({div})", d, div)
    rounded = _v(h, f"tl.where({div} - {low} > 0.5, {low} + 1, {low})", d, div)
    quotient = _v(h, f"({a} / {b})", d, a, b)
    exact = _v(h, f"tl.where({div} == 0, {quotient} * 0.0, {rounded})", d, div, quotient)
    return f"tl.where({b} == 0, {quotient}, {exact})"


def truncdiv(h, d, a, b):
    if _float(d):
        return trunc(h, d, _v(h, f"({a} / {b})", d, a, b))
    return f"({a} // {b})"


def remainder(h, d, a, b):
    r = _v(h, f"({a} % {b})", d, a, b)
    return f"tl.where(({r} != 0) & (({r} < 0) != ({b} < 0)), {r} + {b}, {r})"


def _extreme(fn):
    def text(h, d, a, b):
        a, b = h.as_tensor(a), h.as_tensor(b)
        if _float(d):
            return f"tl.{fn}({a}, {b}, propagate_nan=tl.PropagateNan.ALL)"
        return f"tl.{fn}({a}, {b})"

    return text


def _logical(op):
    return lambda h, d, a, b: f"(({a} != 0) {op} ({b} != 0))"


def _not(h, d, a):
    return f"({a} == 0)"


def _bitwise_not(h, d, a):
    return f"({a} == 0)" if d == torch.bool else f"(~{a})"


def _relu(h, d, a):
    zero = "0.0" if _float(d) else "0"
    return f"tl.where({a} < {zero}, {zero}, {a})"


def _isinf(h, d, a):
    if not _float(d):
        return "tl.full([1], 0, tl.int1)"
    return f"(tl.abs({a}) == float('inf'))"


def _isnan(h, d, a):
    if not _float(d):
        return "tl.full([1], 0, tl.int1)"
    return f"({a} != {a})"


def _abs(h, d, a):
    return a if d == torch.bool else f"tl.abs({h.as_tensor(a)})"


def _sqrt_fn(d) -> str:
    """IEEE square root: ``tl.sqrt`` is approximate in float32."""
    return "tl.sqrt_rn" if compute_type(d) == "tl.float32" else "tl.sqrt"


def _sqrt(h, d, a):
    return f"{_sqrt_fn(d)}({a})"


MATH = {
    "add": _infix("+"), "sub": _infix("-"), "mul": _infix("*"), "truediv": _infix("/"),
    "eq": _infix("=="), "ne": _infix("!="), "lt": _infix("<"), "le": _infix("<="),
    "gt": _infix(">"), "ge": _infix(">="),
    "bitwise_and": _infix("&"), "bitwise_or": _infix("|"), "bitwise_xor": _infix("^"),
    "left_shift": _infix("<<"), "right_shift": _infix(">>"),
    "logical_and": _logical("&"), "logical_or": _logical("|"), "logical_xor": _logical("^"),
    "logical_not": _not, "bitwise_not": _bitwise_not,
    # (Triton's unary minus is 0 - x: +0.0 for 0.0, where eager gives -0.0)
    "neg": lambda h, d, a: f"({a} * -1.0)" if _float(d) else f"(-{a})",
    "abs": _abs,
    "square": lambda h, d, a: f"({a} * {a})",
    "relu": _relu,
    "sign": sign,
    "signbit": signbit,
    "isnan": _isnan,
    "isinf": _isinf,
    "floor": _tl("floor"),
    "ceil": _tl("ceil"),
    "trunc": trunc,
    "round": round_,
    "exp": _floats_only("exp", lambda h, d, a: f"tl.exp({a})"),
    "exp2": _floats_only("exp2", lambda h, d, a: f"tl.exp2({a})"),
    "log": _floats_only("log", lambda h, d, a: f"tl.log({a})"),
    "log2": _floats_only("log2", lambda h, d, a: f"tl.log2({a})"),
    "log10": _floats_only("log10", lambda h, d, a: f"(tl.log2({a}) * {_k(d, LOG10_2)})"),
    "sqrt": _floats_only("sqrt", _sqrt),
    "rsqrt": _floats_only("rsqrt", lambda h, d, a: f"tl.rsqrt({a})"),
    "sin": _floats_only("sin", lambda h, d, a: _sin_cos(h, d, a, "sin")),
    "cos": _floats_only("cos", lambda h, d, a: _sin_cos(h, d, a, "cos")),
    "tan": _floats_only("tan", lambda h, d, a: f"({_sin_cos(h, d, a, 'sin')} / {_sin_cos(h, d, a, 'cos')})"),
    "erf": _floats_only("erf", lambda h, d, a: f"tl.erf({a})"),
    "erfc": _floats_only("erfc", lambda h, d, a: f"(1.0 - tl.erf({a}))"),
    "sigmoid": _floats_only("sigmoid", lambda h, d, a: f"tl.sigmoid({a})"),
    "reciprocal": _floats_only("reciprocal", lambda h, d, a: f"(1.0 / {a})"),
    "expm1": _floats_only("expm1", expm1),
    "log1p": _floats_only("log1p", log1p),
    "tanh": _floats_only("tanh", tanh),
    "sinh": _floats_only("sinh", sinh),
    "cosh": _floats_only("cosh", cosh),
    "asinh": _floats_only("asinh", asinh),
    "acosh": _floats_only("acosh", acosh),
    "atanh": _floats_only("atanh", atanh),
    "atan": _floats_only("atan", atan),
    "atan2": _floats_only("atan2", atan2),
    "asin": _floats_only("asin", asin),
    "acos": _floats_only("acos", acos),
    "lgamma": _floats_only("lgamma", lgamma),
    "pow": pow_,
    "hypot": _floats_only("hypot", lambda h, d, a, b: f"{_sqrt_fn(d)}({a} * {a} + {b} * {b})"),
    "copysign": _floats_only("copysign", lambda h, d, a, b:
                             f"tl.where({signbit(h, d, b)}, -tl.abs({a}), tl.abs({a}))"),
    "maximum": _extreme("maximum"),
    "minimum": _extreme("minimum"),
    "floordiv": floordiv,
    "truncdiv": truncdiv,
    "remainder": remainder,
    "fmod": lambda h, d, a, b: f"({a} % {b})",
}
