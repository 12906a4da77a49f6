"""Symbolic sizes: the graph's SymInts as IR expressions, where each symbol is read, what is known.

torch traces a graph with symbolic sizes (``make_fx(..., tracing_mode="symbolic")``, AOTAutograd
under Dynamo's dynamic shapes) into fake tensors whose sizes are SymInts; each one's
``node.expr`` is a sympy expression over the symbols of a ``ShapeEnv`` (``s0``, ``s1``, ...).
``GraphSizes`` turns them into the IR's expressions (torch's division functions become
``ir.FloorDiv``/``ir.ModIndex``, the ShapeEnv's replacements applied), remembers where each
symbol can be read from the graph's inputs at call time (``SizeSource``: the first input size
that is exactly that symbol), and answers relations about sizes from what the ShapeEnv knows
(``known``) — without ever adding a guard to it.

Heuristics (tiles, parallel thresholds, fusion scores, loop order) never look at the sizes of
the call that traced the graph: ``estimate`` gives every symbol the same stand-in value, so a
kernel's source depends on the graph alone and one kernel serves every size.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import sympy
import torch

from .ir import FloorDiv, Layout, ModIndex, as_size

# What a symbolic size counts as in heuristics (the same for every graph and every call).
ESTIMATE = 4096


class UnsupportedSize(Exception):
    """A size the compiler cannot express or read at call time; the graph runs eagerly."""


def estimate(size) -> int:
    """A number standing for ``size`` in heuristics: ``size`` itself when static, else its value
    with every symbol at ``ESTIMATE``."""
    if isinstance(size, int):
        return size
    return int(size.xreplace({s: sympy.Integer(ESTIMATE) for s in size.free_symbols}))


def at_least(size, bound: int):
    """True or False when ``size >= bound`` is decided statically, else None."""
    if isinstance(size, int):
        return size >= bound
    decided = sympy.sympify(size >= bound)
    return bool(decided) if decided in (sympy.true, sympy.false) else None


@dataclasses.dataclass(frozen=True)
class SizeAsFloat:
    """A Python float the graph takes at run time: a symbolic int used as a float (torch's
    ``sym_float(s0)``, as in ``x.sum() / n``), or a float input itself (``zf0``: a number from
    outside the call, as in ``x * scale``), which kernels take as a ``double`` argument."""

    size: sympy.Expr


def is_size_symbol(symbol) -> bool:
    """True for a size symbol of torch's ShapeEnv (``s0``, ``s1``, ...; never a loop variable)."""
    return symbol.name[:1] == "s" and symbol.name[1:].isdigit()


def is_float_symbol(symbol) -> bool:
    """True for a float input's symbol of torch's ShapeEnv (``zf0``, ``zf1``, ...)."""
    return symbol.name[:2] == "zf" and symbol.name[2:].isdigit()


@dataclasses.dataclass(frozen=True)
class SizeSource:
    """Where a symbol's value is read at call time: input ``position``'s ``size(dim)`` or
    ``stride(dim)``, or the input itself (``kind`` "value": an int input)."""

    position: int
    kind: str  # "size" | "stride" | "value"
    dim: Optional[int] = None

    def read(self, name: str) -> str:
        """Python text reading the value from the input named ``name``."""
        return name if self.kind == "value" else f"{name}.{self.kind}({self.dim})"


# ----------------------------------------------------------------------------------------------
# torch's sympy vocabulary <-> the IR's


def _torch_functions():
    from torch.utils._sympy import functions as F

    return F


def from_torch(expr) -> sympy.Expr:
    """A torch size expression in the IR's vocabulary. Raises UnsupportedSize for what the
    printers cannot spell (float functions, unbacked symbols)."""
    F = _torch_functions()

    def convert(e):
        if e.is_Integer:
            return e
        if e.is_Symbol:
            if not is_size_symbol(e):
                raise UnsupportedSize(f"data-dependent size {e}")
            return e
        args = [convert(a) for a in e.args]
        if isinstance(e, (sympy.Add, sympy.Mul)):
            return e.func(*args)
        if isinstance(e, (sympy.Pow, F.PowByNatural)) and args[1].is_Integer and int(args[1]) >= 0:
            return args[0] ** args[1]
        if isinstance(e, (F.FloorDiv, F.CleanDiv)):
            return FloorDiv(*args)
        if isinstance(e, F.CeilDiv):
            return -FloorDiv(-args[0], args[1])
        if isinstance(e, F.ModularIndexing):
            return ModIndex(FloorDiv(args[0], args[1]), args[2])
        if isinstance(e, (F.PythonMod, F.Mod)):
            return ModIndex(*args)
        if isinstance(e, (F.Max, sympy.Max)):
            return sympy.Max(*args)
        if isinstance(e, (F.Min, sympy.Min)):
            return sympy.Min(*args)
        raise UnsupportedSize(f"size expression {e}")

    return convert(sympy.sympify(expr))


def to_torch(expr):
    """An IR expression (or relation) in torch's vocabulary, for asking the ShapeEnv."""
    F = _torch_functions()

    def convert(e):
        if not e.args:
            return e
        args = [convert(a) for a in e.args]
        if isinstance(e, FloorDiv):
            return F.FloorDiv(*args)
        if isinstance(e, ModIndex):
            return F.PythonMod(*args)
        if isinstance(e, sympy.Max):
            return F.Max(*args)
        if isinstance(e, sympy.Min):
            return F.Min(*args)
        return e.func(*args)

    return convert(sympy.sympify(expr))


# ----------------------------------------------------------------------------------------------


def shape_env_of(values):
    """The ShapeEnv of the first symbolic size among ``values`` (fake tensors, SymInts), or None."""
    for v in values:
        if isinstance(v, torch.SymInt):
            return v.node.shape_env
        if isinstance(v, torch.Tensor):
            for s in tuple(v.shape) + (tuple(v.stride()) if v.layout == torch.strided else ()):
                if isinstance(s, torch.SymInt):
                    return s.node.shape_env
    return None


class GraphSizes:
    """The sizes of one graph. ``sources`` maps each symbol to where the wrapper reads it;
    ``symbolic`` lists the inputs' symbolic sizes and numbers for the report (``in0.size(0)=s0``,
    ``in1=zf0``); ``int_inputs`` the symbolic int inputs (position -> expression)."""

    def __init__(self, shape_env=None):
        self.shape_env = shape_env
        self.sources: dict[sympy.Symbol, SizeSource] = {}
        self.symbolic: list[str] = []
        self.int_inputs: dict[int, sympy.Expr] = {}
        self._strides: list[tuple[sympy.Symbol, SizeSource]] = []

    def scalar(self, value):
        """A SymInt (as ``expr``) or SymFloat (a ``SizeAsFloat``) result of the graph."""
        if isinstance(value, torch.SymFloat):
            constant = value.node.maybe_as_float()
            if constant is not None:
                return constant
            expr = value.node.expr
            if isinstance(expr, _torch_functions().ToFloat):
                return SizeAsFloat(self.expr(expr.args[0]))
            if isinstance(expr, sympy.Symbol) and is_float_symbol(expr):
                return SizeAsFloat(expr)
            raise UnsupportedSize(f"symbolic float {expr}")
        return self.expr(value)

    def expr(self, value):
        """An int or SymInt of the graph as the IR keeps it (``ir.as_size``)."""
        if isinstance(value, (bool, float, torch.SymFloat, torch.SymBool)):
            raise UnsupportedSize(f"{type(value).__name__} {value} where a size was expected")
        if isinstance(value, torch.SymInt):
            constant = value.node.maybe_as_int()
            if constant is not None:
                return constant
            value = value.node.expr
        if isinstance(value, int):
            return value
        if self.shape_env is not None:
            value = self.shape_env.replace(value)
        return as_size(from_torch(value))

    def shape(self, t: torch.Tensor) -> tuple:
        return tuple(self.expr(s) for s in t.shape)

    def strides(self, t: torch.Tensor) -> tuple:
        return tuple(self.expr(s) for s in t.stride())

    # ------------------------------------------------------------------------------------------
    # Inputs

    def add_tensor_input(self, position: int, size, stride) -> None:
        """Note the (IR) sizes and strides of the tensor input at ``position``."""
        for dim, s in enumerate(size):
            if not isinstance(s, int):
                self.symbolic.append(f"in{position}.size({dim})={s}")
                self._source(s, SizeSource(position, "size", dim))
        for dim, s in enumerate(stride):
            if isinstance(s, sympy.Symbol):
                self._strides.append((s, SizeSource(position, "stride", dim)))

    def add_int_input(self, position: int, value) -> None:
        if not isinstance(value, int):
            self.int_inputs[position] = value
            self.symbolic.append(f"in{position}={value}")
            self._source(value, SizeSource(position, "value"))

    def add_float_input(self, position: int, value) -> None:
        """Note the float input at ``position``: a ``SizeAsFloat`` of its symbol, or a number
        (the trace fixed it)."""
        if isinstance(value, SizeAsFloat):
            self.symbolic.append(f"in{position}={value.size}")
            self._source(value.size, SizeSource(position, "value"))

    def _source(self, expr, source: SizeSource) -> None:
        if isinstance(expr, sympy.Symbol) and expr not in self.sources:
            self.sources[expr] = source

    def finish_inputs(self) -> None:
        """Symbols seen in no input size are read from a stride, where one is exactly them."""
        for symbol, source in self._strides:
            self._source(symbol, source)

    def check_readable(self, expr) -> None:
        """Raise UnsupportedSize unless every symbol of ``expr`` can be read from the inputs."""
        if isinstance(expr, sympy.Basic):
            missing = sorted(str(s) for s in expr.free_symbols if s not in self.sources)
            if missing:
                raise UnsupportedSize(f"size symbols {', '.join(missing)} are in no input's sizes")

    # ------------------------------------------------------------------------------------------
    # Relations

    def known(self, relation) -> bool:
        """True when ``relation`` (a bool or a sympy relation over sizes) holds for every size the
        ShapeEnv allows. Adds no guard: False means "not known", not "false"."""
        if isinstance(relation, bool):
            return relation
        relation = sympy.sympify(relation)
        if relation in (sympy.true, sympy.false):
            return bool(relation)
        if self.shape_env is None:
            return False
        from torch.fx.experimental.symbolic_shapes import statically_known_true

        return statically_known_true(self.shape_env.create_symboolnode(to_torch(relation)))

    def equal(self, a, b) -> bool:
        """True when sizes ``a`` and ``b`` are known to be equal."""
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        return sympy.expand(a - b) == 0 or self.known(sympy.Eq(a, b))

    def positive(self, size) -> bool:
        """True when ``size`` is known to be > 0."""
        return size > 0 if isinstance(size, int) else self.known(sympy.Ge(size, 1))

    def simplify(self, size):
        """``size`` with each ``Max(1, e)`` the ShapeEnv knows to be ``e`` replaced by ``e``."""
        if isinstance(size, int) or not size.has(sympy.Max):
            return size

        def drop(e):
            others = [a for a in e.args if a != 1]
            if len(others) == 1 and len(e.args) == 2 and self.positive(others[0]):
                return others[0]
            return e

        return as_size(size.replace(lambda e: isinstance(e, sympy.Max), drop))

    def contiguous(self, size, dtype: torch.dtype) -> Layout:
        """The contiguous layout of ``size``, its strides simplified."""
        layout = Layout.contiguous(size, dtype)
        if layout.is_static:
            return layout
        return Layout(layout.size, tuple(self.simplify(st) for st in layout.stride), dtype)

    def guards(self) -> list:
        """The ShapeEnv's guards and symbol ranges over this graph's symbols, as torch sympy
        relations (what the traced graph assumed of its sizes)."""
        if self.shape_env is None or not self.sources:
            return []
        ours = set(self.sources)
        found = []
        for symbol in sorted(ours, key=str):
            bounds = self.shape_env.var_to_range.get(symbol)
            if bounds is None:
                continue
            if bounds.lower.is_finite and bounds.lower > -(2**63):
                found.append(sympy.Ge(symbol, bounds.lower))
            if bounds.upper.is_finite and bounds.upper < 2**63:
                found.append(sympy.Le(symbol, bounds.upper))
        for guard in self.shape_env.guards:
            expr = guard.expr
            if expr.free_symbols and expr.free_symbols <= ours:
                found.append(expr)
        return found

    def guard_checks(self) -> list[str]:
        """Python text of each of ``guards()``, over the symbols' names, for the wrapper to check
        at call time (in ``GUARD_NAMESPACE``). Raises UnsupportedSize for a guard that text
        cannot check: it does not evaluate at the sizes the graph was traced with."""
        from torch.utils._sympy.printers import PythonPrinter

        printer = PythonPrinter()
        hints = getattr(self.shape_env, "backed_var_to_val", None) or getattr(self.shape_env, "var_to_val", {})
        values = {str(s): (float if is_float_symbol(s) else int)(hints[s]) for s in self.sources if s in hints}
        texts = []
        for guard in self.guards():
            text = printer.doprint(guard)
            try:
                holds = eval(text, guard_namespace(), dict(values))  # noqa: S307 - torch's printer's text
            except Exception as e:  # noqa: BLE001 - any failure means the text cannot check it
                raise UnsupportedSize(f"guard {guard} cannot be checked at call time: {e}") from None
            if not holds:
                raise UnsupportedSize(f"guard {guard} does not hold for the traced sizes")
            texts.append(text)
        return texts


def guard_namespace() -> dict:
    """The names torch's printed guards use (``math``, ``IsNonOverlappingAndDenseIndicator``)."""
    from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP

    return dict(SYMPY_INTERP)
