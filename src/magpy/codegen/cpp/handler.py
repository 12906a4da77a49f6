"""The ``ops`` handler that prints one C++ loop body, and the C++ spelling of dtypes, constants,
index expressions and math (tables, then the handler).

``CppHandler`` turns every op into ``T tmpN = ...;`` (repeated text shared); the kernel printer
(``cpp.KernelPrinter``) answers its loads and stores and names its variables.
"""
from __future__ import annotations

import math
from typing import Optional

import sympy
import torch

from ..ir import FloorDiv, is_nonnegative, render_index
from ..ops import result_dtype, set_handler

# (bools are stored as the bytes they are, read as ``uint8_t``: gcc leaves a loop that loads a C++
# ``bool`` and selects floats by it unvectorized — a batch norm's backward after a ReLU mask ran 5x
# slower — and vectorizes the same loop reading bytes)
STORAGE_TYPES = {
    torch.float32: "float",
    torch.float64: "double",
    torch.float16: "_Float16",
    torch.bfloat16: "uint16_t",
    torch.bool: "uint8_t",
    torch.int8: "int8_t",
    torch.uint8: "uint8_t",
    torch.int16: "int16_t",
    torch.int32: "int32_t",
    torch.int64: "int64_t",
}
COMPUTE_TYPES = {**STORAGE_TYPES, torch.float16: "float", torch.bfloat16: "float", torch.bool: "bool"}



class CppUnsupported(Exception):
    """A body uses a dtype or op the C++ printer cannot express; the graph falls back."""


def ctype(dtype: torch.dtype, storage: bool = False) -> str:
    table = STORAGE_TYPES if storage else COMPUTE_TYPES
    if dtype not in table:
        raise CppUnsupported(f"dtype {dtype}")
    return table[dtype]


# ----------------------------------------------------------------------------------------------
# Index expressions


def print_index(expr) -> str:
    """C++ int64 text of a sympy index expression."""
    def integer(value: int) -> str:
        return f"{value}LL" if abs(value) >= 2**31 else str(value)

    def division(e, a, b) -> str:
        floor = isinstance(e, FloorDiv)
        if is_nonnegative(e.args[0]) and is_nonnegative(e.args[1]):
            return f"({a} / {b})" if floor else f"({a} % {b})"
        return f"magpy_{'floordiv' if floor else 'mod'}<int64_t>({a}, {b})"

    def extremum(name, a, b) -> str:
        return f"({a} {'>' if name == 'max' else '<'} {b} ? {a} : {b})"

    return render_index(expr, integer, division, extremum, CppUnsupported)


# ----------------------------------------------------------------------------------------------
# The ops handler


class CppValue:
    """A printed value; ``index``: the sympy expression of an int64 index value (a constant or an
    ``index_expr``), which comparisons decided by the loop ranges read."""

    __slots__ = ("text", "dtype", "index")

    def __init__(self, text: str, dtype: torch.dtype, index=None):
        self.text = text
        self.dtype = dtype
        self.index = index

    def __str__(self):
        return self.text


def cpp_constant(value, dtype: torch.dtype) -> str:
    if dtype == torch.bool:
        return "true" if value else "false"
    if dtype.is_floating_point:
        value = float(value)
        t = ctype(dtype)
        if math.isnan(value):
            return f"std::numeric_limits<{t}>::quiet_NaN()"
        if math.isinf(value):
            sign = "-" if value < 0 else ""
            return f"{sign}std::numeric_limits<{t}>::infinity()"
        text = repr(value)
        if "e" not in text and "." not in text:
            text += ".0"
        return text + ("f" if t == "float" else "")
    value = int(value)
    if abs(value) >= 2**31:
        return f"static_cast<{ctype(dtype)}>({value}LL)"
    return f"static_cast<{ctype(dtype)}>({value})"


FLOAT_FUNCTIONS = {
    # name -> C function (float variant gets an "f" suffix)
    "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2",
    "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan",
    "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh",
    "tanh": "tanh", "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "erf": "erf",
    "erfc": "erfc", "lgamma": "lgamma", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "round": "nearbyint", "abs": "fabs",
}
FLOAT_BINARY_FUNCTIONS = {"pow": "pow", "atan2": "atan2", "copysign": "copysign", "hypot": "hypot"}
INFIX = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "eq": "==", "ne": "!=", "lt": "<",
    "le": "<=", "gt": ">", "ge": ">=", "logical_and": "&&", "logical_or": "||",
    "logical_xor": "!=", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
    "left_shift": "<<", "right_shift": ">>",
}


def _fn(name: str, dtype: torch.dtype) -> str:
    return name + ("f" if ctype(dtype) == "float" else "")


class CppHandler:
    """Prints a loop body: every op becomes ``T tmpN = ...;`` (shared when repeated).

    ``ranges`` (``segments.LoopRanges``, optional): the ranges of the loop variables in the part of
    the loops printed; comparisons of index values they decide print as ``true``/``false``, and
    ``masked``, ``where`` and the logical ops fold such constants away."""

    def __init__(self, kernel_printer, lines: list[str], indent: str, ranges=None):
        self.printer = kernel_printer
        self.lines = lines
        self.indent = indent
        self.ranges = ranges
        self.cse: dict[str, CppValue] = {}

    # -- helpers --

    def _emit(self, text: str, dtype: torch.dtype) -> CppValue:
        hit = self.cse.get(text)
        if hit is not None and hit.dtype == dtype:
            return hit
        name = self.printer.new_var("tmp")
        self.lines.append(f"{self.indent}{ctype(dtype)} {name} = {text};")
        value = CppValue(name, dtype)
        self.cse[text] = value
        return value

    # -- the ops vocabulary --

    def load(self, name: str, index) -> CppValue:
        return self.printer.load(self, name, sympy.expand(index))

    def constant(self, value, dtype) -> CppValue:
        index = sympy.Integer(int(value)) if dtype == torch.int64 and float(value).is_integer() else None
        return CppValue(cpp_constant(value, dtype), dtype, index)

    def index_expr(self, expr, dtype) -> CppValue:
        expr = sympy.expand(expr)
        value = self._emit(f"static_cast<{ctype(dtype)}>({self.printer.index(expr)})", dtype)
        return CppValue(value.text, dtype, expr) if dtype == torch.int64 else value

    def to_dtype(self, x: CppValue, dtype) -> CppValue:
        if x.dtype == dtype:
            return x
        if x.dtype == torch.float16:
            # The value is a half: round it as eager would have stored it before converting.
            x = self._emit(f"magpy_round_f16({x})", x.dtype)
        elif x.dtype == torch.bfloat16:
            x = self._emit(f"magpy_round_bf16({x})", x.dtype)
        if dtype == torch.float16:
            return self._emit(f"magpy_round_f16(static_cast<float>({x}))", dtype)
        if dtype == torch.bfloat16:
            return self._emit(f"magpy_round_bf16(static_cast<float>({x}))", dtype)
        if dtype == torch.bool:
            return self._emit(f"({x} != 0)", dtype)
        if x.dtype in (torch.float16, torch.bfloat16) and ctype(dtype) == "float":
            return CppValue(x.text, dtype)
        return self._emit(f"static_cast<{ctype(dtype)}>({x})", dtype)

    def where(self, cond, a, b) -> CppValue:
        dtype = torch.promote_types(a.dtype, b.dtype)
        known = _truth(cond)
        if known is not None:
            chosen = a if known else b
            return chosen if chosen.dtype == dtype else CppValue(self._as(chosen, dtype), dtype)
        return self._emit(f"({cond} ? {self._as(a, dtype)} : {self._as(b, dtype)})", dtype)

    def _as(self, x, dtype) -> str:
        if x.dtype == dtype or ctype(x.dtype) == ctype(dtype):
            return x.text
        return f"static_cast<{ctype(dtype)}>({x})"

    def masked(self, mask, body, other) -> CppValue:
        known = _truth(mask)
        if known:  # (a mask the loop ranges decide: the body is plain code here...)
            return body()
        # The body runs only where the mask holds, so it never loads out of bounds.
        inner_lines: list[str] = []
        child = CppHandler(self.printer, inner_lines, self.indent + "    ", self.ranges)
        child.cse = dict(self.cse)
        with set_handler(child):
            value = body()
        if known is False:  # (... or never runs: only its dtype was wanted)
            return CppValue(cpp_constant(other, value.dtype), value.dtype)
        name = self.printer.new_var("masked")
        t = ctype(value.dtype)
        self.lines.append(f"{self.indent}{t} {name} = {cpp_constant(other, value.dtype)};")
        self.lines.append(f"{self.indent}if ({mask}) {{")
        self.lines.extend(inner_lines)
        self.lines.append(f"{self.indent}    {name} = {value};")
        self.lines.append(f"{self.indent}}}")
        return CppValue(name, value.dtype)

    def check(self, ok, error):
        if ok.text == "true" or self.cse.get(f"check {ok} {error.code}") is not None:
            return
        self.cse[f"check {ok} {error.code}"] = ok  # (once per body: a gather's positions serve several loads)
        # (a plain store of a constant: every lane or thread that fails writes the same kind of
        # value, so a race between them loses nothing that matters)
        self.lines.append(f"{self.indent}if (!({ok})) magpy_error = {error.code};")
        self.printer.checks = True

    def indirect_indexing(self, x, size):
        key = f"indirect {x} {size}"
        if key in self.cse:  # (the same position again: the same variable, so loads through it are shared too)
            return sympy.Symbol(self.cse[key].text, integer=True, nonnegative=True)
        name = self.printer.new_var("idx")
        self.cse[key] = CppValue(name, torch.int64)
        n = self.printer.size(size)
        last = max(size - 1, 0) if isinstance(size, int) else f"({n} - 1)"
        self.lines.append(f"{self.indent}int64_t {name} = static_cast<int64_t>({x});")
        # Negative positions count from the end; out-of-range ones are clamped rather than read
        # out of bounds (the lowering's ``ops.check`` has reported them: the wrapper raises).
        self.lines.append(f"{self.indent}{name} = {name} < 0 ? {name} + {n} : {name};")
        self.lines.append(f"{self.indent}{name} = {name} < 0 ? 0 : ({name} >= {n} ? {last} : {name});")
        return sympy.Symbol(name, integer=True, nonnegative=True)

    def __getattr__(self, name):
        if name in FLOAT_FUNCTIONS or name in INFIX or name in _SPECIAL:
            return lambda *args: self._math(name, *args)
        raise AttributeError(name)

    def _math(self, name, *args) -> CppValue:
        if self.ranges is not None:
            folded = self._fold(name, args)
            if folded is not None:
                return folded
        dtype = result_dtype(name, [a.dtype for a in args])
        operand = result_dtype("add", [a.dtype for a in args])
        a = [self._as(x, operand) for x in args]
        if (name == "truediv" and operand.is_floating_point and self.printer.is_row_value(args[1].text)
                and not self.printer.is_row_value(args[0].text)):
            # Dividing a loop's elements by one row value: one division per row (the compiler
            # hoists the reciprocal), then products — as eager's softmax does.
            return self._emit(f"({a[0]} * ({_float_one(operand)} / {a[1]}))", dtype)
        return self._emit(self._math_text(name, operand, a), dtype)

    def _fold(self, name, args) -> Optional[CppValue]:
        """The value of a comparison of index values the loop ranges decide, or of a logical op
        over such constants; None where nothing folds."""
        if name in _COMPARISONS and all(a.index is not None for a in args):
            known = self.ranges.compare(name, args[0].index, args[1].index)
            return None if known is None else _literal(known)
        if name not in ("logical_and", "logical_or", "logical_not"):
            return None
        known = [_truth(a) for a in args]
        if name == "logical_not":
            return None if known[0] is None else _literal(not known[0])
        absorbing = name == "logical_or"  # (true absorbs an or, false an and)
        if absorbing in known:
            return _literal(absorbing)
        for k, a in zip(known, reversed(args)):
            if k is not None:  # (the other operand decides)
                return self.to_dtype(a, torch.bool)
        return None

    def _math_text(self, name, dtype, a) -> str:
        floating = dtype.is_floating_point
        if name in INFIX:
            if name in ("logical_and", "logical_or", "logical_xor"):
                a = [f"({x} != 0)" for x in a]
            return f"({a[0]} {INFIX[name]} {a[1]})"
        if name in FLOAT_FUNCTIONS:
            if not floating:
                if name in ("floor", "ceil", "trunc", "round"):
                    return a[0]
                if name == "abs":
                    return f"magpy_abs({a[0]})"
                raise CppUnsupported(f"{name} on {dtype}")
            return f"{_fn(FLOAT_FUNCTIONS[name], dtype)}({a[0]})"
        return _SPECIAL[name](dtype, floating, a)


_COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")


def _literal(value: bool) -> CppValue:
    return CppValue("true" if value else "false", torch.bool)


def _truth(value: CppValue) -> Optional[bool]:
    """True or False for a bool literal, else None."""
    if value.dtype == torch.bool and value.text in ("true", "false"):
        return value.text == "true"
    return None


def _float_one(dtype):
    return "1.0f" if ctype(dtype) == "float" else "1.0"


def _binary_float(fn):
    def text(dtype, floating, a):
        if not floating:
            raise CppUnsupported(f"{fn} on {dtype}")
        return f"{_fn(fn, dtype)}({a[0]}, {a[1]})"

    return text


_SPECIAL = {
    "neg": lambda d, f, a: f"(-{a[0]})",
    "rsqrt": lambda d, f, a: f"({_float_one(d)} / {_fn('sqrt', d)}({a[0]}))",
    "sigmoid": lambda d, f, a: f"({_float_one(d)} / ({_float_one(d)} + {_fn('exp', d)}(-{a[0]})))",
    "reciprocal": lambda d, f, a: f"({_float_one(d)} / {a[0]})",
    "sign": lambda d, f, a: f"magpy_sign({a[0]})",
    "relu": lambda d, f, a: f"magpy_max({a[0]}, static_cast<{ctype(d)}>(0))",
    "bitwise_not": lambda d, f, a: f"(!{a[0]})" if d == torch.bool else f"static_cast<{ctype(d)}>(~{a[0]})",
    "square": lambda d, f, a: f"({a[0]} * {a[0]})",
    "isnan": lambda d, f, a: f"({a[0]} != {a[0]})" if f else "false",
    "isinf": lambda d, f, a: f"(isinf({a[0]}) != 0)" if f else "false",
    "signbit": lambda d, f, a: f"(signbit({a[0]}) != 0)" if f else f"({a[0]} < 0)",
    "logical_not": lambda d, f, a: f"(!({a[0]}))",
    "maximum": lambda d, f, a: f"magpy_max({a[0]}, {a[1]})",
    "minimum": lambda d, f, a: f"magpy_min({a[0]}, {a[1]})",
    "floordiv": lambda d, f, a: (
        f"magpy_floordiv{'f' if ctype(d) == 'float' else 'd'}({a[0]}, {a[1]})" if f
        else f"magpy_floordiv({a[0]}, {a[1]})"),
    "truncdiv": lambda d, f, a: f"magpy_truncdiv({a[0]}, {a[1]})",
    "remainder": lambda d, f, a: (
        f"magpy_fmod{'f' if ctype(d) == 'float' else 'd'}({a[0]}, {a[1]})" if f
        else f"magpy_mod({a[0]}, {a[1]})"),
    "fmod": lambda d, f, a: f"{_fn('fmod', d)}({a[0]}, {a[1]})" if f else f"magpy_fmod_int({a[0]}, {a[1]})",
    "pow": lambda d, f, a: f"{_fn('pow', d)}({a[0]}, {a[1]})" if f else f"magpy_ipow({a[0]}, {a[1]})",
    "atan2": _binary_float("atan2"),
    "copysign": _binary_float("copysign"),
    "hypot": _binary_float("hypot"),
}
