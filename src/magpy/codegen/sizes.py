"""Symbolic sizes: the graph's SymInts as IR expressions, where each symbol is read, what is known.

torch traces a graph with symbolic sizes (``make_fx(..., tracing_mode="symbolic")``, AOTAutograd
under Dynamo's dynamic shapes) into fake tensors whose sizes are SymInts; each one's
``node.expr`` is a sympy expression over the symbols of a ``ShapeEnv`` (``s0``, ``s1``, ...).
``GraphSizes`` turns them into the IR's expressions (torch's division functions become
``ir.FloorDiv``/``ir.ModIndex``, the ShapeEnv's replacements applied), remembers where each
symbol can be read at call time (``SizeSource``: the first input size that is exactly that
symbol) and answers relations about sizes from what the ShapeEnv knows (``known``) — without
ever adding a guard to it.

Sizes made from data (``nonzero``, a boolean mask's count, ``unique``: torch's unbacked
symbols ``u0``, ``u1``, ...) are in no input: the op making one runs as a library call and the
wrapper reads the symbol from its result right after it (``buf3.size(0)``), then checks what
the trace recorded about it (``run_time_relations``: its range, the ShapeEnv's deferred run-time
asserts, the graph's own ``_assert_scalar`` nodes). Nothing torch assumes of such a size
without recording it (that it is at least 2, in its size-oblivious reasoning) is assumed here:
``known`` answers from the recorded ranges only.

Heuristics (tiles, parallel thresholds, fusion scores, loop order) never look at the sizes of
the call that traced the graph: ``estimate`` gives every symbol the same stand-in value, so a
kernel's source depends on the graph alone and one kernel serves every size.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Optional

import sympy
import torch
import torch.fx

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
    """True for a size symbol of torch's ShapeEnv (``s0``, ``s1``, ...; ``u0``, ``u1``, ... for
    sizes made from data; never a loop variable)."""
    return symbol.name[:1] in ("s", "u") and symbol.name[1:].isdigit()


def is_unbacked(symbol) -> bool:
    """True for a size made from data (``u0``: in no input, read from an op's result)."""
    return symbol.name[:1] == "u" and symbol.name[1:].isdigit()


def render_float(tree, size) -> str:
    """Python text of a ``GraphSizes._float_tree`` (``size``: the text of an int size expression)."""
    kind = tree[0]
    if kind == "int":
        return f"float({size(tree[1])})"
    if kind == "name":
        return str(tree[1])
    if kind == "const":
        return repr(tree[1])
    return "(" + f" {kind} ".join(render_float(t, size) for t in tree[1:]) + ")"


def is_float_symbol(symbol) -> bool:
    """True for a float input's symbol of torch's ShapeEnv (``zf0``, ``zf1``, ...), a float input that is
    an expression of them (``zi0``) or a quotient of sizes the wrapper computes (``zq0``): a kernel's
    ``double`` argument."""
    return symbol.name[:2] in ("zf", "zi", "zq") and symbol.name[2:].isdigit()


@dataclasses.dataclass(frozen=True)
class SizeSource:
    """Where a symbol's value is read at call time: input ``position``'s ``size(dim)`` or
    ``stride(dim)``, the input itself (``kind`` "value": an int input), or ``path`` into the
    result of the library call that makes it, named ``buffer`` (``kind`` "output": a size made
    from data, read right after that call)."""

    position: Optional[int]
    kind: str  # "size" | "stride" | "value" | "output" | "quotient"
    dim: Optional[int] = None
    buffer: Optional[str] = None
    path: str = ""
    quotient: tuple = ()  # (numerator, denominator): a float the wrapper computes from sizes

    def read(self, name: Optional[str] = None) -> str:
        """Python text reading the value from the input named ``name`` (or from ``buffer``)."""
        if self.kind == "output":
            return f"{self.buffer}{self.path}"
        return name if self.kind == "value" else f"{name}.{self.kind}({self.dim})"


# ----------------------------------------------------------------------------------------------
# torch's sympy vocabulary <-> the IR's


def _torch_functions():
    from torch.utils._sympy import functions as F

    return F


def from_torch(expr) -> sympy.Expr:
    """A torch size expression in the IR's vocabulary. Raises UnsupportedSize for what the
    printers cannot spell (float functions, symbols of no size)."""
    F = _torch_functions()

    def convert(e):
        if e.is_Integer:
            return e
        if e.is_Symbol:
            if not is_size_symbol(e):
                raise UnsupportedSize(f"size symbol {e}")
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


def made_sizes(node, shape_env) -> dict:
    """{symbol: Python text reading it from the op's result} for each size from data that fx
    ``node`` makes (torch's ``unbacked_bindings``: ``nonzero``'s count as ``.size(0)``, the
    first result's of ``unique`` as ``[0].size(0)``). Raises UnsupportedSize for a number made
    from data that is no size (``.item()``)."""
    bindings = node.meta.get("unbacked_bindings")
    if not bindings:
        return {}
    from torch.fx.experimental import symbolic_shapes

    resolve = getattr(symbolic_shapes, "resolve_unbacked_bindings", None)
    if resolve is not None and shape_env is not None:
        bindings = resolve(shape_env, bindings)
    return {symbol: _size_path(node, symbol, path) for symbol, path in bindings.items()}


def _size_path(node, symbol, path) -> str:
    """``.size(d)`` after any items (``[0]``) of a result: a size read from it."""
    from torch.fx.experimental.symbolic_shapes import CallMethodKey
    from torch.utils._pytree import SequenceKey

    *items, method, dim = path if len(path) >= 2 else (None, None)
    if not (all(isinstance(k, SequenceKey) for k in items) and isinstance(method, CallMethodKey)
            and method.name == "size" and isinstance(dim, SequenceKey)):
        raise UnsupportedSize(f"{node.name} makes {symbol} from tensor data, not as a size")
    return "".join(f"[{k.idx}]" for k in items) + f".size({dim.idx})"


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
        self.assertions: list = []  # torch relations the graph asserts of sizes made from data
        self.numbers: list[sympy.Expr] = []  # int arithmetic the graph computes as numbers (``n * m``)
        self._strides: list[tuple[sympy.Symbol, SizeSource]] = []
        # float inputs that are expressions of floats from outside (``127*zf4``: a backward graph is given
        # what the forward computed from them, not the floats) -> the symbol standing for each
        self._float_inputs: dict[sympy.Expr, sympy.Symbol] = {}

    def scalar(self, value):
        """A SymInt (as ``expr``) or SymFloat (a ``SizeAsFloat``) result of the graph."""
        if isinstance(value, torch.SymFloat):
            constant = value.node.maybe_as_float()
            if constant is not None:
                return constant
            expr = self._over_float_inputs(value.node.expr)
            if isinstance(expr, _torch_functions().ToFloat):
                return SizeAsFloat(self._number(self.expr(expr.args[0])))
            arithmetic = self._float_arithmetic(expr)
            if arithmetic is not None:
                return SizeAsFloat(self._number(arithmetic))
            tree = self._float_tree(expr)
            if tree is not None:
                # (a mean's count ``numel / 8``, a correction ``n / (n - 1)``: computed by the wrapper once
                # per call in Python's double arithmetic, as eager computes it; a double argument of the
                # kernels)
                symbol = sympy.Symbol(f"zq{sum(src.kind == 'quotient' for src in self.sources.values())}")
                self.sources[symbol] = SizeSource(None, "quotient", quotient=tree)
                return SizeAsFloat(symbol)
            raise UnsupportedSize(f"symbolic float {expr}")
        return self._number(self.expr(value))

    def _number(self, expr):
        """``expr``, noted among the ``numbers`` where it is arithmetic (not one symbol or constant)."""
        if isinstance(expr, sympy.Basic) and not expr.is_Atom:
            self.numbers.append(expr)
        return expr

    def int64_checks(self, readable) -> list:
        """The parts of the graph's ``numbers`` that kernels compute in int64 from int inputs (``n * m``,
        ``s0 * n``), where Python, and so eager, computes exactly: the wrapper runs eagerly unless each
        fits int64 (eager raises OverflowError for a number past it that reaches an op, and computes one
        that overflows only on the way exactly). Parts over ``readable`` symbols only; none where no
        number involves an int input (sizes alone stay far from int64)."""
        ints = {symbol for symbol, source in self.sources.items()
                if source.kind == "value" and not is_float_symbol(symbol)}
        parts = {}
        for number in self.numbers:
            for part in sympy.preorder_traversal(number):
                symbols = getattr(part, "free_symbols", set())
                if part.is_Atom or not symbols & ints or not symbols <= readable or \
                        any(is_float_symbol(symbol) for symbol in symbols):
                    continue  # (a part over a float input is computed in double)
                parts[part] = None
        return list(parts)

    def _float_arithmetic(self, expr):
        """A float the graph computes from float inputs, integers and sizes with +, * and whole powers
        (``scale * temperature``, ``2 * scale + n``), as kernels compute it in double; None for
        anything else (a division, a fractional constant, which Triton would read as float32)."""
        if isinstance(expr, sympy.Symbol):
            return expr if is_float_symbol(expr) else None
        if isinstance(expr, sympy.Integer):
            return expr
        if isinstance(expr, sympy.Float) and float(expr).is_integer() and abs(float(expr)) < 2**53:
            return sympy.Integer(int(expr))  # (``3 * scale``: the 3 became 3.0)
        if isinstance(expr, _torch_functions().ToFloat):
            return self.expr(expr.args[0])
        if isinstance(expr, (sympy.Add, sympy.Mul)) or \
                isinstance(expr, sympy.Pow) and expr.exp.is_Integer and int(expr.exp) > 0:
            args = [self._float_arithmetic(a) for a in expr.args]
            return None if any(a is None for a in args) else expr.func(*args)
        return None

    def _float_tree(self, expr):
        """``expr``, a float of sizes with divisions, as a tree ``render_float`` writes as Python: ``(op,
        *operands)`` over int sizes (IR expressions), float inputs and constants; None where it holds
        anything else."""
        F = _torch_functions()
        if expr.is_integer and not expr.is_Float:
            return ("int", self.expr(expr))
        if isinstance(expr, sympy.Symbol):
            return ("name", expr) if is_float_symbol(expr) else None
        if expr.is_Number:
            return ("const", float(expr))
        if isinstance(expr, F.ToFloat):
            return ("int", self.expr(expr.args[0]))
        kind = "/" if isinstance(expr, (F.IntTrueDiv, F.FloatTrueDiv)) else "+" if isinstance(expr, sympy.Add) \
            else "*" if isinstance(expr, sympy.Mul) else None
        if kind is None:
            return None
        operands = [self._float_tree(a) for a in expr.args]
        return None if any(o is None for o in operands) else (kind, *operands)

    def torch_expr(self, value):
        """The sympy expression of a SymInt or SymBool, in torch's vocabulary, replacements applied."""
        expr = value.node.expr
        return self.shape_env.replace(expr) if self.shape_env is not None else expr

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

    def add_float_input(self, position: int, value):
        """Note the float input at ``position`` (a float or SymFloat) and return the value the graph
        reads: a number (the trace fixed it) or a ``SizeAsFloat`` of its symbol. A float input that is an
        expression of floats from outside (``127*zf4``: a backward graph is given what the forward
        computed from them) gets a symbol of its own (``zi0``), which later floats are written over."""
        if not isinstance(value, torch.SymFloat):
            return value
        constant = value.node.maybe_as_float()
        if constant is not None:
            return constant
        expr = value.node.expr
        self.symbolic.append(f"in{position}={expr}")
        if not isinstance(expr, sympy.Symbol):
            expr = self._float_inputs.setdefault(expr, sympy.Symbol(f"zi{len(self._float_inputs)}"))
        self._source(expr, SizeSource(position, "value"))
        return SizeAsFloat(expr)

    def _over_float_inputs(self, expr):
        """``expr`` with the float inputs that are expressions replaced by their symbols (exactly where
        one occurs as it is; ``-127*zf4`` over an input ``127*zf4`` is ``-zi0``, a negation)."""
        for given, symbol in self._float_inputs.items():
            if expr == given:
                return symbol
            if not given.free_symbols <= expr.free_symbols:
                continue
            expr = expr.subs(given, symbol)
        return expr

    def _source(self, expr, source: SizeSource) -> None:
        if isinstance(expr, sympy.Symbol) and expr not in self.sources:
            self.sources[expr] = source

    def add_output_size(self, symbol, buffer: str, path: str) -> None:
        """``symbol``, a size made from data, is read as ``path`` of the result of the library call
        named ``buffer`` (``.size(0)``, ``[0].size(0)``)."""
        if symbol in self.sources:
            raise UnsupportedSize(f"size {symbol} is made twice")
        self.sources[symbol] = SizeSource(None, "output", buffer=buffer, path=path)
        self.symbolic.append(f"{buffer}{path}={symbol}")
        replaced = self.shape_env.replace(symbol) if self.shape_env is not None else symbol
        if replaced != symbol:  # (later sizes say ``replaced``: the read must be it)
            self.assertions.append(sympy.Eq(symbol, replaced))

    def add_assertions_of(self, node) -> None:
        """Assert what fx ``node``, a size assertion (``SIZE_ASSERTIONS``), checks."""
        def convert(a):
            if not isinstance(a, torch.fx.Node):
                return a
            meta = a.meta.get("val")
            if isinstance(meta, (torch.SymInt, torch.SymBool)):
                return self.torch_expr(meta)
            if isinstance(meta, (bool, int)):
                return meta
            raise UnsupportedSize(f"{a.name} in a size assertion")

        args = [convert(a) for a in node.args]
        kwargs = {k: convert(v) for k, v in node.kwargs.items()}
        for relation in SIZE_ASSERTIONS[node.target](*args, **kwargs):
            self.add_assertion(relation)

    def made(self) -> list:
        """The symbols of sizes made from data (``u0``), in the order they are made."""
        return [symbol for symbol, source in self.sources.items() if source.kind == "output"]

    def add_assertion(self, relation) -> None:
        """The graph asserts ``relation`` (torch's vocabulary) of its sizes (``_assert_scalar``)."""
        relation = sympy.sympify(relation)
        if relation != sympy.true:
            self.assertions.append(relation)

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
        ours = {symbol for symbol, source in self.sources.items() if source.kind not in ("output", "quotient")}
        if self.shape_env is None or not ours:
            return []
        found = [relation for symbol in sorted(ours, key=str) for relation in self._range(symbol)]
        for guard in self.shape_env.guards:
            expr = guard.expr
            if expr.free_symbols and expr.free_symbols <= ours:
                found.append(expr)
        return found

    def _range(self, symbol) -> list:
        """The ShapeEnv's range of ``symbol`` as relations, less what every size of its kind
        satisfies (one from data: 0 to sys.maxsize - 1, torch's default range for it)."""
        bounds = self.shape_env.var_to_range.get(symbol)
        if bounds is None:
            return []
        least, most = (0, sys.maxsize - 1) if is_unbacked(symbol) else (-(2**63), 2**63)
        found = []
        if bounds.lower.is_finite and bounds.lower > least:
            found.append(sympy.Ge(symbol, bounds.lower))
        if bounds.upper.is_finite and bounds.upper < most:
            found.append(sympy.Le(symbol, bounds.upper))
        return found

    def guard_checks(self) -> list[str]:
        """Python text of each of ``guards()``, over the symbols' names, for the wrapper to check
        at call time (in ``GUARD_NAMESPACE``). Raises UnsupportedSize for a guard that text
        cannot check: it does not evaluate at the sizes the graph was traced with."""
        from torch.utils._sympy.printers import PythonPrinter

        printer = PythonPrinter()
        hints = getattr(self.shape_env, "backed_var_to_val", None)
        if hints is None:
            hints = getattr(self.shape_env, "var_to_val", {})
        values = {str(s): (float if is_float_symbol(s) else int)(hints[s]) for s in self.sources
                  if s in hints and not is_unbacked(s)}
        texts = []
        for guard in self.guards():
            text = printer.doprint(guard)
            if not {str(s) for s in guard.free_symbols} <= set(values):
                # (a size from data, an input of this graph — a backward's — has no traced value)
                texts.append(self.check_text(guard))
                continue
            try:
                holds = eval(text, guard_namespace(), dict(values))  # noqa: S307 - torch's printer's text
            except Exception as e:  # noqa: BLE001 - any failure means the text cannot check it
                raise UnsupportedSize(f"guard {guard} cannot be checked at call time: {e}") from None
            if not holds:
                raise UnsupportedSize(f"guard {guard} does not hold for the traced sizes")
            texts.append(text)
        return texts

    def run_time_relations(self) -> list:
        """What the trace recorded about the sizes made from data, as torch relations, and the
        graph's own assertions: each such size's range where it says more than that a size is
        >= 0, the ShapeEnv's deferred run-time asserts over them, ``assertions`` (the wrapper
        checks each one once the sizes in it are read)."""
        made = set(self.made())
        if self.shape_env is None or not made:
            return list(self.assertions)
        found = [relation for symbol in sorted(made, key=str) for relation in self._range(symbol)]
        for asserts in self.shape_env.deferred_runtime_asserts.values():
            found.extend(ra.expr for ra in asserts)
        # (an assert over a symbol this graph never reads is about another graph of the ShapeEnv)
        found = [r for r in found if r.free_symbols & made and r.free_symbols <= set(self.sources)]
        # (``2 <= u0`` from an assert and ``u0 >= 2`` from its range: one check)
        return list(dict.fromkeys(r.canonical if isinstance(r, sympy.Rel) else r for r in found + self.assertions))

    def check_text(self, relation) -> str:
        """Python text of a torch relation over the symbols' names (in ``guard_namespace()``)."""
        from torch.utils._sympy.printers import PythonPrinter

        text = PythonPrinter().doprint(relation)
        try:
            compile(text, "<size check>", "eval")
        except SyntaxError as e:
            raise UnsupportedSize(f"relation {relation} cannot be checked at call time: {e}") from None
        return text


def guard_namespace() -> dict:
    """The names torch's printed guards use (``math``, ``IsNonOverlappingAndDenseIndicator``)."""
    from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP

    return dict(SYMPY_INTERP)


class SizeRelation:
    """A relation between sizes computed in the graph (a SymBool), in torch's vocabulary: what a
    size assertion checks."""

    def __init__(self, expr):
        self.expr = expr


def _asserted(condition, message=None) -> list:
    return [condition]


def _in_range(size, min=None, max=None) -> list:  # noqa: A002 - the schema's names
    return ([sympy.Ge(size, min)] if min is not None else []) + ([sympy.Le(size, max)] if max is not None else [])


def _in_size_range(size, min=None, max=None) -> list:  # noqa: A002 - the schema's names
    return _in_range(size, 0 if min is None else min, max)


# Ops that only check sizes (torch's run-time asserts, mostly on sizes from data) -> the relations
# they check: the wrapper checks each once the sizes in it are read (a call they fail runs eagerly,
# where the op raises as it would have).
SIZE_ASSERTIONS = {
    torch.ops.aten._assert_scalar.default: _asserted,
    torch.ops.aten.sym_constrain_range.default: _in_range,
    torch.ops.aten.sym_constrain_range_for_size.default: _in_size_range,
}
