"""What an entry relied on about symbolic sizes, checked as one simplified expression.

A capture with symbolic sizes (``cap.symbolic``) or numbers taken as they come collects conditions on
them from two places: the program's own branches and pins (``x.size(0) > 4``, from
``predicates.over_sizes``), and what a compiling backend's trace relied on (``s0 % 4 == 0`` for a
view, ``s0 == s1`` where two inputs broadcast: ``ShapeEnv.produce_guards_expression``, kept on the
backend's check as ``guard_code``). ``combine`` turns both into sympy relations over one symbol per
symbolic size and per int input, simplifies them together — a relation on one symbol becomes a bound,
the bounds of a symbol meet (given that symbolic dims are at least 2, which the tensor guards check),
an equality fixes its symbol in the others, what is then always true goes — and puts one guard in
their place: one compiled expression over the sizes, called with the sizes the entry reads inline.

Only exact integer arithmetic is taken (``+ - * // %``, comparisons, ``and``/``not``, ``min``/``max``);
a condition with anything else (true division, floats, tuples, strides) stays a guard of its own, so
the combined guard never means more or less than the ones it replaces.
"""
from __future__ import annotations

import ast
import operator
import sympy
import torch

from .guards import TruthGuard
from .sources import Const, Expr

_BINARY = {operator.add: operator.add, operator.sub: operator.sub, operator.mul: operator.mul}
_COMPARE = {operator.eq: sympy.Eq, operator.ne: sympy.Ne, operator.lt: sympy.Lt, operator.le: sympy.Le,
            operator.gt: sympy.Gt, operator.ge: sympy.Ge}
_AST_COMPARE = {ast.Eq: sympy.Eq, ast.NotEq: sympy.Ne, ast.Lt: sympy.Lt, ast.LtE: sympy.Le, ast.Gt: sympy.Gt,
                ast.GtE: sympy.Ge}
_AST_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


class _NotExact(Exception):
    """A condition that is not integer arithmetic on sizes: it stays a guard of its own."""


def _floordiv(a, b):
    from torch.utils._sympy.functions import FloorDiv

    if b == 0:
        raise _NotExact("division by zero")
    return FloorDiv(a, b)


def _mod(a, b):
    from torch.utils._sympy.functions import PythonMod

    if b == 0:
        raise _NotExact("modulo by zero")
    return PythonMod(a, b)


class SizeSymbols:
    """One sympy symbol per symbolic size of a graph input and per int input, and how the entry reads it."""

    def __init__(self, cap):
        self.examples = {source: example for source, example in cap.inputs}
        self.symbols: dict = {}  # (source, dim or None) -> Symbol
        self.reads: dict = {}  # Symbol -> the Expr reading it at call time
        self.tensor_dims: set = set()  # symbols of tensor dims (at least 2: the tensor guards check it)
        for source, dims in cap.symbolic:
            for d in sorted(dims):
                symbol = self._add((source, d), Expr(operator.getitem, (Expr(getattr, (source, Const("shape"))),
                                                                         Const(d))))
                self.tensor_dims.add(symbol)
        for source, example in cap.inputs:
            if type(example) is int:
                self._add((source, None), source)

    def _add(self, key, read):
        symbol = sympy.Symbol(f"s{len(self.symbols)}", integer=True)
        self.symbols[key] = symbol
        self.reads[symbol] = read
        return symbol

    def size(self, source, dim):
        """Input ``source``'s size ``dim``: its symbol, or the number the tensor guard fixes."""
        example = self.examples.get(source)
        if not isinstance(example, torch.Tensor) or type(dim) is not int or not -example.dim() <= dim < example.dim():
            raise _NotExact(f"size {dim} of {source!r}")
        dim %= example.dim()
        symbol = self.symbols.get((source, dim))
        return symbol if symbol is not None else sympy.Integer(example.shape[dim])

    # -- the program's conditions (capture ``Expr`` trees) ------------------------------------------
    def from_expr(self, e):
        if type(e) is Const:
            if type(e.value) is bool:
                return sympy.true if e.value else sympy.false
            if type(e.value) is int:
                return sympy.Integer(e.value)
            raise _NotExact(repr(e.value))
        if type(e) is not Expr:
            symbol = self.symbols.get((e, None))
            if symbol is None:
                raise _NotExact(repr(e))
            return symbol
        fn, args = e.fn, e.args
        if fn is operator.getitem and type(args[0]) is Expr and args[0].fn is getattr and \
                args[0].args[1:] == (Const("shape"),) and type(args[1]) is Const:
            return self.size(args[0].args[0], args[1].value)
        if fn is torch.Tensor.size and len(args) == 2 and type(args[1]) is Const:
            return self.size(args[0], args[1].value)
        if fn is torch.Tensor.dim and len(args) == 1 and isinstance(self.examples.get(args[0]), torch.Tensor):
            return sympy.Integer(self.examples[args[0]].dim())
        if fn is torch.Tensor.numel and len(args) == 1 and isinstance(self.examples.get(args[0]), torch.Tensor):
            return sympy.Mul(*(self.size(args[0], d) for d in range(self.examples[args[0]].dim())))
        values = [self.from_expr(a) for a in args]
        if fn in _BINARY and len(values) == 2 and all(not isinstance(v, sympy.logic.boolalg.Boolean) for v in values):
            return _BINARY[fn](*values)
        if fn is operator.floordiv and len(values) == 2:
            return _floordiv(*values)
        if fn is operator.mod and len(values) == 2:
            return _mod(*values)
        if fn is operator.neg and len(values) == 1:
            return -values[0]
        if fn in _COMPARE and len(values) == 2 and all(isinstance(v, sympy.Expr) for v in values):
            return _COMPARE[fn](*values)
        if fn is operator.not_ and len(values) == 1:
            return sympy.Not(_truth(values[0]))
        if fn is bool and len(values) == 1:
            return _truth(values[0])
        if fn in (min, max) and len(values) >= 2 and all(isinstance(v, sympy.Expr) for v in values):
            return (sympy.Min if fn is min else sympy.Max)(*values)
        raise _NotExact(getattr(fn, "__name__", repr(fn)))

    # -- a backend's relations (``produce_guards_expression``'s text over ``L['t0']`` …) --------------
    def from_guard_code(self, code: str, sources):
        def walk(n):
            if isinstance(n, ast.BoolOp) and isinstance(n.op, ast.And):
                return sympy.And(*(walk(v) for v in n.values))
            if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
                return sympy.Not(walk(n.operand))
            if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
                return -walk(n.operand)
            if isinstance(n, ast.Compare):
                terms = [walk(n.left)] + [walk(c) for c in n.comparators]
                return sympy.And(*(_AST_COMPARE[type(op)](a, b) for op, a, b in zip(n.ops, terms, terms[1:])
                                   if type(op) in _AST_COMPARE or _raise(op)))
            if isinstance(n, ast.BinOp):
                a, b = walk(n.left), walk(n.right)
                if type(n.op) in _AST_BINARY:
                    return _AST_BINARY[type(n.op)](a, b)
                if isinstance(n.op, ast.FloorDiv):
                    return _floordiv(a, b)
                if isinstance(n.op, ast.Mod):
                    return _mod(a, b)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("max", "min") and \
                    len(n.args) >= 2 and not n.keywords:
                return (sympy.Max if n.func.id == "max" else sympy.Min)(*(walk(a) for a in n.args))
            if isinstance(n, ast.Constant) and type(n.value) in (int, bool):
                return sympy.Integer(n.value) if type(n.value) is int else (sympy.true if n.value else sympy.false)
            # L['t3'] (an int input) and L['t3'].size()[1]
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == "L":
                return self.from_expr(_input(n, sources))
            if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Call) and not n.value.args and \
                    isinstance(n.value.func, ast.Attribute) and n.value.func.attr == "size" and \
                    isinstance(n.value.func.value, ast.Subscript) and isinstance(n.slice, ast.Constant):
                return self.size(_input(n.value.func.value, sources), n.slice.value)
            raise _NotExact(ast.dump(n)[:80])

        return walk(ast.parse(code, mode="eval").body)


def _input(node, sources):
    key = node.slice.value if isinstance(node.slice, ast.Constant) else None
    if not (isinstance(key, str) and key[:1] == "t" and key[1:].isdigit() and int(key[1:]) < len(sources)):
        raise _NotExact(f"input {key!r}")
    return sources[int(key[1:])]


def _raise(op):
    raise _NotExact(type(op).__name__)


def _truth(value):
    if isinstance(value, sympy.logic.boolalg.Boolean):
        return value
    return sympy.Ne(value, 0)


def combine(cap) -> None:
    """Replace ``cap``'s guards over symbolic sizes and int inputs by one (see the module's text)."""
    symbols = SizeSymbols(cap)
    relations, replaced = [], []
    for key, g in cap.guards.items():
        if type(g) is not TruthGuard:
            continue
        code = getattr(g.expr.fn, "guard_code", None) if type(g.expr) is Expr else None
        try:
            if code is not None:
                relation = symbols.from_guard_code(code, g.expr.args)
            else:
                relation = _truth(symbols.from_expr(g.expr))
                relation = relation if g.value else sympy.Not(relation)
        except (_NotExact, TypeError, ValueError, SyntaxError):
            continue
        if relation.free_symbols:
            relations.append(relation)
            replaced.append(key)
    if not relations:
        return
    condition = simplify(relations, symbols.tensor_dims)
    combined = None
    if condition is not sympy.true:
        combined = TruthGuard(Expr(_checker(condition), tuple(symbols.reads[s] for s in _order(condition))), True)
    for key in replaced:
        del cap.guards[key]
    if combined is not None:
        cap.guards[combined.key()] = combined


def simplify(relations, at_least_two=frozenset()):
    """One condition equivalent to all of ``relations`` (given that the symbols of ``at_least_two`` are
    at least 2): linear relations on one symbol become its bounds (an equality: its value, put into the
    others; a value it may not take at a bound moves the bound), relations the bounds decide go, the
    rest are kept once each."""
    pending, conjuncts = list(relations), []
    while pending:
        r = pending.pop()
        if isinstance(r, sympy.And):
            pending.extend(r.args)
        elif r is sympy.false:
            return sympy.false
        elif r is not sympy.true:
            conjuncts.append(r)
    fixed, lower, upper, excluded, rest = {}, {}, {}, {}, []
    for s in at_least_two:
        lower[s] = 2
    for r in conjuncts:
        bound = _bound(r)
        if bound is None:
            rest.append(r)
            continue
        symbol, kind, value = bound
        if kind == "eq":
            if fixed.setdefault(symbol, value) != value:
                return sympy.false
        elif kind == "ne":
            excluded.setdefault(symbol, set()).add(value)
        elif kind == "ge":
            lower[symbol] = max(lower.get(symbol, value), value)
        else:
            upper[symbol] = min(upper.get(symbol, value), value)
    for symbol, values in excluded.items():
        while lower.get(symbol) in values:
            lower[symbol] += 1
        while upper.get(symbol) in values:
            upper[symbol] -= 1
    out = [sympy.Eq(symbol, value) for symbol, value in fixed.items()]
    for symbol, value in fixed.items():
        if not lower.get(symbol, value) <= value <= upper.get(symbol, value) or value in excluded.get(symbol, ()):
            return sympy.false
    for symbol in sorted((set(lower) | set(upper) | set(excluded)) - set(fixed), key=str):
        if symbol in lower and not (symbol in at_least_two and lower[symbol] == 2):
            out.append(sympy.Ge(symbol, lower[symbol]))
        if symbol in upper:
            out.append(sympy.Le(symbol, upper[symbol]))
        out.extend(sympy.Ne(symbol, v) for v in sorted(excluded.get(symbol, ()))
                   if lower.get(symbol, v) <= v <= upper.get(symbol, v))  # (never at a bound: moved past)
    # each symbol as its bound plus (or minus) a number >= 0: sympy then decides what the bounds imply
    known = {s: sympy.Integer(v) for s, v in fixed.items()}
    for symbol in (set(lower) | set(upper)) - set(fixed):
        offset = sympy.Symbol(f"{symbol.name}_off", integer=True, nonnegative=True)
        known[symbol] = lower[symbol] + offset if symbol in lower else upper[symbol] - offset
    seen = set()
    for r in rest:
        try:
            decided = r.xreplace(known) if known else r
        except (ArithmeticError, TypeError, ValueError):  # (sympy evaluating it at the bounds)
            decided = r
        if decided is sympy.false:
            return sympy.false
        if decided is sympy.true or r in seen:
            continue
        seen.add(r)
        out.append(r.xreplace({s: v for s, v in known.items() if s in fixed}))
    return sympy.And(*out) if out else sympy.true


def _bound(r):
    """(symbol, "eq" | "ne" | "ge" | "le", integer) for a linear relation on one symbol, else None."""
    if not isinstance(r, (sympy.Eq, sympy.Ne, sympy.Ge, sympy.Gt, sympy.Le, sympy.Lt)) or len(r.free_symbols) != 1:
        return None
    symbol = next(iter(r.free_symbols))
    diff = sympy.expand(r.lhs - r.rhs)
    if not diff.is_polynomial(symbol):
        return None
    coefficients = sympy.Poly(diff, symbol).all_coeffs()
    if len(coefficients) != 2 or not all(c.is_Integer for c in coefficients):
        return None
    a, b = (int(c) for c in coefficients)
    if isinstance(r, (sympy.Eq, sympy.Ne)):
        return (symbol, "eq" if isinstance(r, sympy.Eq) else "ne", -b // a) if b % a == 0 else None
    if isinstance(r, sympy.Gt):
        b -= 1  # a*s + b > 0  <=>  a*s + b - 1 >= 0
    elif isinstance(r, sympy.Le):
        a, b = -a, -b  # a*s + b <= 0  <=>  -a*s - b >= 0
    elif isinstance(r, sympy.Lt):
        a, b = -a, -b - 1
    # a*s + b >= 0: s >= ceil(-b / a) where a > 0, s <= floor(-b / a) where a < 0
    return (symbol, "ge", -(b // a)) if a > 0 else (symbol, "le", (-b) // a)


def _order(condition):
    return sorted(condition.free_symbols, key=lambda s: int(s.name[1:]))


def _checker(condition):
    """``condition`` as a Python function of its symbols (in ``_order``), named after what it checks."""
    from torch.fx.experimental.symbolic_shapes import SYMPY_INTERP
    from torch.utils._sympy.printers import PythonPrinter

    symbols = _order(condition)
    text = PythonPrinter().doprint(condition)
    check = eval(f"lambda {', '.join(map(str, symbols))}: bool({text})", dict(SYMPY_INTERP))  # noqa: S307 - our text
    placeholders = {s: sympy.Symbol(f"{{{k}}}") for k, s in enumerate(symbols)}
    check.spelling = PythonPrinter().doprint(condition.xreplace(placeholders))  # (the sizes' reads fill it in)
    check.__name__ = check.__qualname__ = "sizes_hold"
    return check
