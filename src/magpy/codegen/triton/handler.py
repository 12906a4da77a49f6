"""Triton text for IR bodies: ``TritonHandler`` is the ``ops`` handler that prints one kernel body.

Values are Triton block tensors (or Python scalars for plain float32 constants). Half and
bfloat16 values are carried in float32, as the C++ printer carries them in ``float``: loads
widen, stores narrow, and a conversion to a half type rounds. Only ``tl`` and ``tl.math``
functions are used — never libdevice — so every kernel also runs in Triton's interpreter on
CPU tensors. Functions Triton lacks (tanh, atan, expm1, pow, ...) are spelled out from those,
in ``math.py``. The kernel's loops, masks and reductions are laid out by ``kernel.py``.
"""
from __future__ import annotations

import math

import sympy
import torch

from ..checks import ERROR_FLAG
from ..ir import FloorDiv, is_nonnegative, render_index
from ..ops import BINARY_OPS, UNARY_OPS, result_dtype, set_handler
from ..sizes import is_float_symbol
from .dtypes import HALF_TYPES, TritonUnsupported, compute_type, tl_type
from .math import MATH


def round_to_half(text: str, dtype: torch.dtype, interpret: bool) -> str:
    """The float32 value ``text`` rounded to ``dtype`` (a half type), still in float32.

    Under Triton's interpreter bfloat16 rounds through ``magpy_round_bf16`` (ties to even on its
    bits): the interpreter truncates when it converts to bfloat16, where a GPU rounds.
    """
    if dtype == torch.bfloat16 and interpret:
        return f"magpy_round_bf16({text})"
    return f"{text}.to({tl_type(dtype)}).to(tl.float32)"


def stored(value: "TritonValue", dtype: torch.dtype, interpret: bool) -> str:
    """``value`` (computed as ``dtype`` is) converted for a store into a ``dtype`` buffer."""
    if dtype in HALF_TYPES:
        text = value.text if value.exact or not interpret else round_to_half(value.text, dtype, interpret)
        return f"{text}.to({tl_type(dtype)})"
    return value.text


# ----------------------------------------------------------------------------------------------
# Index expressions


def print_index(expr) -> str:
    """Triton text of a sympy index expression (Triton's ``//`` and ``%`` truncate, as C's do)."""
    def division(e, a, b) -> str:
        floor = isinstance(e, FloorDiv)
        divisor = e.args[1]
        # (a size from data may be 0: then no lane that is not masked off divides by it — a size
        # divides only indexes of a space it is a factor of, which is then empty)
        if not (divisor.is_Integer and int(divisor) > 0 or not divisor.is_Integer and divisor.is_nonnegative):
            raise TritonUnsupported(f"index expression {e}")
        if is_nonnegative(e.args[0]):
            return f"({a} // {b})" if floor else f"({a} % {b})"
        # Python's rounding toward -inf from C's toward zero, for a positive divisor.
        mod = f"((({a} % {b}) + {b}) % {b})"
        return f"(({a} - {mod}) // {b})" if floor else mod

    def extremum(name, a, b) -> str:
        return f"tl.{name}imum({a}, {b})"

    return render_index(expr, str, division, extremum, TritonUnsupported)


# ----------------------------------------------------------------------------------------------
# Values and constants


class TritonValue:
    """A value of the body: its text, its dtype (what the IR says), the block axes it varies
    along ("x", "r"), whether it is a Triton tensor (else a Python scalar), and for a half
    dtype whether it holds exactly a value of that dtype (loaded or rounded: no rounding due)."""

    __slots__ = ("text", "dtype", "axes", "tensor", "exact")

    def __init__(self, text: str, dtype: torch.dtype, axes=frozenset(), tensor: bool = True,
                 exact: bool = False):
        self.text = text
        self.dtype = dtype
        self.axes = frozenset(axes)
        self.tensor = tensor
        self.exact = exact

    def __str__(self):
        return self.text


def literal(value, dtype: torch.dtype) -> TritonValue:
    """A constant: a Python literal where Triton types it as ``dtype`` would be computed (float32),
    else a one-element tensor of the exact type (float64 keeps its digits, int64 its width; 0-d
    tensors trip Triton's interpreter)."""
    if dtype == torch.bool:
        return TritonValue(f"tl.full([1], {int(bool(value))}, tl.int1)", dtype)
    if dtype.is_floating_point:
        value = float(value)
        if math.isnan(value):
            text = 'float("nan")'
        elif math.isinf(value):
            text = 'float("inf")' if value > 0 else 'float("-inf")'
        else:
            text = repr(value)
        if compute_type(dtype) == "tl.float32":
            return TritonValue(text, dtype, tensor=False)
        return TritonValue(f"tl.full([1], {text}, {tl_type(dtype)})", dtype)
    return TritonValue(f"tl.full([1], {int(value)}, {tl_type(dtype)})", dtype)


# ----------------------------------------------------------------------------------------------
# The ops handler


class TritonHandler:
    """Prints a body: every op becomes ``tmpN = ...`` (shared when repeated) in ``lines``.

    ``printer`` (a ``kernel.KernelPrinter``) answers loads, names variables and knows
    the masks of the block axes; ``mask`` is the extra condition of an ``ops.masked`` body.
    """

    def __init__(self, printer, lines: list[str], indent: str, cse: dict = None, mask=None):
        self.printer = printer
        self.lines = lines
        self.indent = indent
        self.cse: dict[str, TritonValue] = {} if cse is None else cse
        self.mask = mask

    def emit(self, text: str, dtype: torch.dtype, axes=frozenset(), tensor: bool = True,
             exact: bool = False) -> TritonValue:
        key = f"{text}::{dtype}"
        hit = self.cse.get(key)
        if hit is not None:
            return hit
        name = self.printer.new_var("tmp")
        self.lines.append(f"{self.indent}{name} = {text}")
        value = TritonValue(name, dtype, axes, tensor, exact)
        self.cse[key] = value
        return value

    def as_tensor(self, x: TritonValue) -> TritonValue:
        """``x`` as a Triton tensor (Triton's functions take no Python scalars)."""
        if x.tensor:
            return x
        return self.emit(f"tl.full([1], {x.text}, {compute_type(x.dtype)})", x.dtype)

    # -- the ops vocabulary --

    def load(self, name: str, index) -> TritonValue:
        return self.printer.load(self, name, sympy.expand(sympy.sympify(index)))

    def constant(self, value, dtype) -> TritonValue:
        value = literal(value, dtype)
        if value.tensor:
            return self.emit(value.text, dtype)
        return value

    def index_expr(self, expr, dtype) -> TritonValue:
        expr = self.printer.rename(sympy.expand(sympy.sympify(expr)))
        axes = self.printer.axes_of(expr)
        if not axes and expr.is_Integer:
            return self.constant(int(expr), dtype)
        text = self.printer.index(expr)
        if not axes:
            floating = any(is_float_symbol(s) for s in expr.free_symbols)  # (a float input's argument)
            text = f"tl.full([1], {text}, {'tl.float64' if floating else 'tl.int64'})"
        return self.emit(f"({text}).to({compute_type(dtype)})", dtype, axes)

    def to_dtype(self, x: TritonValue, dtype) -> TritonValue:
        if x.dtype == dtype:
            return x
        x = self.as_tensor(x)
        interpret = self.printer.interpret
        if x.dtype in HALF_TYPES and not x.exact:
            # A half value computed in float32: round it as eager would have stored it.
            x = self.emit(round_to_half(x.text, x.dtype, interpret), x.dtype, x.axes, exact=True)
        if dtype == torch.bool:
            return self.emit(f"({x} != 0)", dtype, x.axes)
        if dtype in HALF_TYPES:
            source = x.text if x.dtype.is_floating_point else f"{x}.to(tl.float32)"
            return self.emit(round_to_half(source, dtype, interpret), dtype, x.axes, exact=True)
        if compute_type(x.dtype) == compute_type(dtype):
            return TritonValue(x.text, dtype, x.axes)
        return self.emit(f"{x}.to({tl_type(dtype)})", dtype, x.axes)

    def where(self, cond, a, b) -> TritonValue:
        dtype = torch.promote_types(a.dtype, b.dtype)
        a, b = self.operand(a, dtype), self.operand(b, dtype)
        cond = self.as_tensor(cond)
        return self.emit(f"tl.where({cond}, {a}, {b})", dtype, cond.axes | a.axes | b.axes)

    def masked(self, mask, body, other) -> TritonValue:
        # Loads under the mask leave its false lanes alone; those lanes then take ``other``.
        mask = self.as_tensor(mask)
        combined = mask if self.mask is None else self.emit(
            f"({self.mask} & {mask})", torch.bool, self.mask.axes | mask.axes)
        child = TritonHandler(self.printer, self.lines, self.indent, self.cse, combined)
        with set_handler(child):
            value = body()
        fallback = literal(other, value.dtype)
        return self.where(mask, value, fallback)

    def check(self, ok, error):
        if not self.printer.interpret:
            # On a GPU eager does not raise for these either (an index past its dimension is a
            # device-side assert there, an integer divided by zero is -1): no flag to read back.
            return
        ok = self.as_tensor(ok)
        # (one lane or many store the same code: any of them tells the wrapper which check failed)
        axes = ok.axes | (self.mask.axes if self.mask is not None else frozenset()) or frozenset("x")
        offset = self.printer.spread("0", axes)
        mask = self.printer.mask_text(axes, self.mask)
        bad = f"({ok} == 0)" + (f" & {mask}" if mask else "")
        flag = self.printer.param(ERROR_FLAG)
        self.lines.append(f"{self.indent}tl.store({flag} + ({offset}), {error.code}, {bad})")

    def indirect_indexing(self, x, size):
        n = self.printer.size(size)
        last = max(size - 1, 0) if isinstance(size, int) else f"{n} - 1"
        x = self.as_tensor(x)
        position = self.emit(f"{x}.to(tl.int64)", torch.int64, x.axes)
        # Negative positions count from the end; out-of-range ones are clamped rather than read
        # out of bounds (the lowering's ``ops.check`` has reported them: the wrapper raises).
        wrapped = self.emit(f"tl.where({position} < 0, {position} + {n}, {position})", torch.int64, x.axes)
        clamped = self.emit(f"tl.minimum(tl.maximum({wrapped}, 0), {last})", torch.int64, x.axes)
        symbol = sympy.Symbol(clamped.text, integer=True, nonnegative=True)
        self.printer.indirect_axes[symbol] = clamped.axes
        return symbol

    def operand(self, x: TritonValue, dtype: torch.dtype) -> TritonValue:
        """``x`` as an operand of an op computed in ``dtype``."""
        if x.dtype == dtype or compute_type(x.dtype) == compute_type(dtype) and x.dtype != torch.bool:
            return x
        if not x.tensor:
            if dtype.is_floating_point and compute_type(dtype) == "tl.float32":
                return TritonValue(x.text, dtype, tensor=False)
            return self.emit(f"tl.full([1], {x.text}, {compute_type(dtype)})", dtype)
        if dtype == torch.bool:
            return self.emit(f"({x} != 0)", dtype, x.axes)
        return self.emit(f"{x}.to({compute_type(dtype)})", dtype, x.axes)

    def __getattr__(self, name):
        if name in MATH:
            return lambda *args: self._math(name, *args)
        if name in UNARY_OPS or name in BINARY_OPS:
            raise TritonUnsupported(f"op {name}")
        raise AttributeError(name)

    def _math(self, name, *args) -> TritonValue:
        dtype = result_dtype(name, [a.dtype for a in args])
        operand = result_dtype("add", [a.dtype for a in args])
        values = [self.operand(a, operand) for a in args]
        axes = frozenset().union(*(a.axes for a in values))
        text = MATH[name](self, operand, *values)
        if isinstance(text, TritonValue):
            return text
        tensor = any(v.tensor for v in values) or "tl." in text
        return self.emit(text, dtype, axes, tensor)
