"""The loop IR: buffers with layouts, lazy pointwise values, reductions and extern calls.

Every index is a sympy expression; every size is a Python int where it is static and a sympy
expression over the graph's size symbols (``s0``, ``s1``, ... of torch's ShapeEnv) where it is not
(``as_size`` keeps that form). Comparisons of sizes in the compiler are structural (``size != 1``)
or go through ``sizes.py``: a symbolic size is never compared with ``<`` as if it had a value. A node's body is a plain Python function over index
symbols that calls the swappable ``ops`` handler (see ``ops.py``); the same body is read by the
dependency analysis, the op counter, the C++ printer and the torch reference evaluator.

Values seen by lowerings (``TensorValue``):

* ``Pointwise``   — lazy: ``size``, ``dtype`` and ``inner_fn(index) -> ops value``; never stored
                    until the graph decides to realize it. Views are Pointwise values whose body
                    loads from the viewed value at a remapped index.
* ``BufferValue`` — a realized buffer (graph input, computed buffer, extern result) read through
                    its layout.

Schedulable nodes (what the scheduler orders and fuses):

* ``ComputedBuffer`` — a named buffer computed by a ``Pointwise`` or ``Reduction`` body.
* ``ScatterBuffer``  — a buffer updated in place at positions taken from data (a kernel of its own).
* ``ExternCall``     — an aten op run eagerly from the wrapper (matmul, conv, anything unlowered).
* ``WrapperView``    — a real torch view of a realized buffer, made in the wrapper (no kernel).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, Callable, Optional, Sequence

import sympy
import torch

Expr = sympy.Expr


# ----------------------------------------------------------------------------------------------
# Index symbols and integer index functions


@functools.lru_cache(maxsize=None)
def index_symbol(prefix: str, i: int) -> sympy.Symbol:
    """The loop variable ``{prefix}{i}``: a nonnegative integer symbol."""
    return sympy.Symbol(f"{prefix}{i}", integer=True, nonnegative=True)


def index_vars(prefix: str, n: int) -> list[sympy.Symbol]:
    return [index_symbol(prefix, i) for i in range(n)]


def _split_multiples(base: Expr, divisor: sympy.Integer):
    """Split ``base`` into (terms whose integer coefficient divides ``divisor``, the rest)."""
    multiple, rest = [], []
    for term in sympy.Add.make_args(base):
        coeff, _ = term.as_coeff_Mul()
        if coeff.is_Integer and coeff % divisor == 0:
            multiple.append(term)
        else:
            rest.append(term)
    return sympy.Add(*multiple), sympy.Add(*rest)


class FloorDiv(sympy.Function):
    """Python floor division of integers, kept symbolic so printers choose the cheapest form."""

    nargs = (2,)
    is_integer = True

    @classmethod
    def eval(cls, base, divisor):
        if divisor == 1:
            return base
        if base == 0:
            return sympy.Integer(0)
        if base.is_Integer and divisor.is_Integer:
            return sympy.Integer(int(base) // int(divisor))
        if divisor.is_Integer:
            if isinstance(base, FloorDiv) and base.args[1].is_Integer:
                return FloorDiv(base.args[0], base.args[1] * divisor)
            multiple, rest = _split_multiples(base, divisor)
            if multiple != 0:
                # floor((a*d + b) / d) == a + floor(b / d) for all integers.
                return sympy.expand(multiple / divisor) + FloorDiv(rest, divisor)
        return None


class ModIndex(sympy.Function):
    """Python modulo (sign of the divisor) of integers."""

    nargs = (2,)
    is_integer = True

    @classmethod
    def eval(cls, base, divisor):
        if divisor == 1 or base == 0:
            return sympy.Integer(0)
        if base.is_Integer and divisor.is_Integer:
            return sympy.Integer(int(base) % int(divisor))
        if divisor.is_Integer:
            multiple, rest = _split_multiples(base, divisor)
            if multiple != 0:
                return ModIndex(rest, divisor)
        return None


def is_nonnegative(expr: Expr) -> bool:
    """True when every term of ``expr`` is provably >= 0 (sum of nonnegative terms)."""
    if expr.is_Integer:
        return int(expr) >= 0
    if expr.is_Symbol:
        return bool(expr.is_nonnegative)
    if isinstance(expr, (sympy.Add, sympy.Mul)):
        return all(is_nonnegative(a) for a in expr.args)
    if isinstance(expr, (FloorDiv, ModIndex)):
        return is_nonnegative(expr.args[0]) and is_nonnegative(expr.args[1])
    return False


def render_index(expr, integer: Callable[[int], str], division: Callable[[Expr, str, str], str],
                 extremum: Optional[Callable[[str, str, str], str]] = None, error: type = ValueError) -> str:
    """Text of a sympy index expression in a printer's language.

    ``integer(value)`` spells a constant; ``division(expr, a, b)`` spells ``FloorDiv(a, b)`` or
    ``ModIndex(a, b)`` from its operands' text; ``extremum("max" | "min", a, b)`` spells the
    larger or smaller of two (sizes may hold ``Max(1, s0)``). Raises ``error`` for other
    functions.
    """
    def text(e) -> str:
        if e.is_Integer:
            return integer(int(e))
        if e.is_Symbol:
            return e.name
        if isinstance(e, sympy.Add):
            return "(" + " + ".join(text(a) for a in e.args) + ")"
        if isinstance(e, sympy.Mul):
            return "(" + "*".join(text(a) for a in e.args) + ")"
        if isinstance(e, sympy.Pow) and e.exp.is_Integer and int(e.exp) > 0:
            return "(" + "*".join([text(e.base)] * int(e.exp)) + ")"
        if isinstance(e, (FloorDiv, ModIndex)):
            return division(e, text(e.args[0]), text(e.args[1]))
        if isinstance(e, (sympy.Max, sympy.Min)) and extremum is not None:
            name = "max" if isinstance(e, sympy.Max) else "min"
            out = text(e.args[0])
            for a in e.args[1:]:
                out = extremum(name, out, text(a))
            return out
        raise error(f"index expression {e}")

    return text(sympy.sympify(expr))


Size = Any  # int, or a sympy expression over size symbols


def as_size(value) -> Size:
    """``value`` as the IR keeps a size: an int when it is a number, else a sympy expression."""
    if isinstance(value, sympy.Basic):
        return int(value) if value.is_Integer else value
    return int(value)


def python_size(expr) -> str:
    """Python text of a size expression (``//`` and ``%`` are FloorDiv's and ModIndex's)."""
    if isinstance(expr, int):
        return repr(expr)

    def division(e, a, b):
        return f"({a} // {b})" if isinstance(e, FloorDiv) else f"({a} % {b})"

    return render_index(expr, str, division, lambda name, a, b: f"{name}({a}, {b})")


def is_static(sizes: Sequence) -> bool:
    return all(isinstance(s, int) for s in sizes)


def prod(sizes: Sequence) -> Size:
    return as_size(math.prod(as_size(s) for s in sizes)) if sizes else 1


def contiguous_strides(size: Sequence) -> tuple:
    strides, acc = [], 1
    for s in reversed(size):
        strides.append(acc)
        s = as_size(s)
        acc = acc * (max(s, 1) if isinstance(s, int) else sympy.Max(s, 1))
    return tuple(as_size(st) for st in reversed(strides))


# ----------------------------------------------------------------------------------------------
# Layouts and buffers


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where the elements of a buffer live: ``offset + sum(index[d] * stride[d])``."""

    size: tuple  # of sizes (``as_size``)
    stride: tuple
    dtype: torch.dtype
    offset: Size = 0

    def __post_init__(self):
        if len(self.size) != len(self.stride):
            raise ValueError(f"size {self.size} and stride {self.stride} differ in rank")
        if any(isinstance(s, int) and s < 0 for s in self.size):
            raise ValueError(f"negative size {self.size}")

    @staticmethod
    def contiguous(size: Sequence, dtype: torch.dtype) -> "Layout":
        size = tuple(as_size(s) for s in size)
        return Layout(size, contiguous_strides(size), dtype)

    @property
    def is_static(self) -> bool:
        return is_static(self.size) and is_static(self.stride) and isinstance(self.offset, int)

    @staticmethod
    def of_tensor(t: torch.Tensor) -> "Layout":
        return Layout(tuple(t.shape), tuple(t.stride()), t.dtype)

    @property
    def numel(self) -> int:
        return prod(self.size)

    def index(self, idx: Sequence[Expr]) -> Expr:
        if len(idx) != len(self.size):
            raise ValueError(f"index of rank {len(idx)} into layout of rank {len(self.size)}")
        expr = sympy.Integer(self.offset)
        for i, sz, st in zip(idx, self.size, self.stride):
            if sz != 1:
                expr = expr + i * st
        return expr

    def is_dense(self) -> bool:
        """No overlap and no gaps: some permutation of the dims is contiguous."""
        if not self.is_static:
            return self._is_dense_symbolic()
        dims = sorted((st, sz) for sz, st in zip(self.size, self.stride) if sz != 1)
        expected = 1
        for st, sz in dims:
            if st != expected:
                return False
            expected *= sz
        return True

    def _is_dense_symbolic(self) -> bool:
        # Strides cannot be sorted without values: follow the chain 1, size, size*size', ...
        # through the dims whose stride is (structurally) the product so far.
        dims = [(st, sz) for sz, st in zip(self.size, self.stride) if sz != 1]
        expected = 1
        while dims:
            step = next((d for d in dims if sympy.expand(d[0] - expected) == 0), None)
            if step is None:
                return False
            dims.remove(step)
            expected = sympy.expand(expected * step[1])
        return True


def known_positive(size) -> bool:
    """True when ``size`` is > 0 for every value of its symbols (which are positive)."""
    return size > 0 if isinstance(size, int) else bool(size.is_positive)


def dense_layout_like(size, stride, dtype, positive: Callable = known_positive) -> Layout:
    """``stride`` when it is dense for ``size``, else contiguous strides. ``positive(size)`` says
    whether a size is known to be > 0."""
    size = tuple(as_size(s) for s in size)
    layout = Layout(size, tuple(as_size(s) for s in stride), dtype)
    if layout.is_dense() and all(positive(s) for s in size):
        return layout
    return Layout.contiguous(size, dtype)


# ----------------------------------------------------------------------------------------------
# Values seen by lowerings


class TensorValue:
    size: tuple
    dtype: torch.dtype

    def make_loader(self) -> Callable[[Sequence[Expr]], Any]:
        raise NotImplementedError

    @property
    def ndim(self) -> int:
        return len(self.size)

    @property
    def numel(self) -> int:
        return prod(self.size)


class Pointwise(TensorValue):
    """A lazy elementwise value: ``inner_fn(index)`` computes the element at ``index``."""

    def __init__(self, size, dtype: torch.dtype, inner_fn: Callable[[Sequence[Expr]], Any]):
        self.size = tuple(as_size(s) for s in size)
        self.dtype = dtype
        self.inner_fn = inner_fn

    def make_loader(self):
        return self.inner_fn

    def __repr__(self):
        return f"Pointwise(size={list(self.size)}, dtype={self.dtype})"


class BufferValue(TensorValue):
    """A realized buffer, read through its layout."""

    def __init__(self, name: str, layout: Layout):
        self.name = name
        self.layout = layout
        self.size = layout.size
        self.dtype = layout.dtype

    def make_loader(self):
        from .ops import ops

        name, layout = self.name, self.layout

        def load(index):
            return ops.load(name, layout.index(index))

        return load

    def __repr__(self):
        return f"BufferValue({self.name}, size={list(self.size)}, stride={list(self.layout.stride)})"


@dataclasses.dataclass
class Reduction:
    """``reduction_type`` over ``reduction_size`` of ``inner_fn(index, rindex)`` for each ``index``.

    ``size`` is the output shape (kept dims of size 1 included); ``dtype`` the output dtype.
    """

    size: tuple[int, ...]
    reduction_size: tuple[int, ...]
    reduction_type: str
    dtype: torch.dtype
    src_dtype: torch.dtype
    inner_fn: Callable[[Sequence[Expr], Sequence[Expr]], Any]

    REDUCTION_TYPES = ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all")

    def __post_init__(self):
        if self.reduction_type not in self.REDUCTION_TYPES:
            raise ValueError(f"unknown reduction type {self.reduction_type!r}")


@dataclasses.dataclass
class Scatter:
    """Updates of a buffer at positions taken from data (``index_put``, ``scatter_add``).

    For each ``index`` over ``size``, each update ``(indexer, inner_fn)`` of ``updates`` in turn
    sets (``mode`` "store") or adds to (``mode`` "add") the buffer's element at ``indexer(index)``
    (a position per dim of the buffer, through ``ops.indirect_indexing``) the value
    ``inner_fn(index)``. ``disjoint``: per dim of ``size``, True where two indices that differ
    along it never update the same element (a dim the positions take as it is, as ``x[:, idx]``'s
    first): those dims may run in parallel without atomic updates.
    """

    size: tuple
    dtype: torch.dtype
    mode: str
    updates: list  # of (indexer, inner_fn)
    disjoint: tuple

    MODES = ("store", "add")

    def __post_init__(self):
        self.size = tuple(as_size(s) for s in self.size)
        if self.mode not in self.MODES:
            raise ValueError(f"unknown scatter mode {self.mode!r}")
        if len(self.disjoint) != len(self.size):
            raise ValueError(f"disjoint {self.disjoint} and size {self.size} differ in rank")


# ----------------------------------------------------------------------------------------------
# Schedulable nodes


class ScheduledNode:
    name: str

    def buffer_reads(self) -> set[str]:
        raise NotImplementedError


class BodyNode(ScheduledNode):
    """A node whose body (``evaluate`` over ``body_vars()``) reads buffers: what it reads, found once."""

    _reads = None
    _ops = None

    def reads(self):
        """[(buffer name, index expr over ``body_vars()``, indirect)] read by the body."""
        if self._reads is None:
            from .ops import DependencyHandler, set_handler

            handler = DependencyHandler()
            with set_handler(handler):
                self.evaluate(*self.body_vars())
            self._reads = handler.reads
            self._ops = handler.op_names
        return self._reads

    def buffer_reads(self) -> set[str]:
        return {name for name, _, _ in self.reads()}


class ComputedBuffer(BodyNode):
    """A named buffer whose elements a ``Pointwise`` or ``Reduction`` body computes."""

    def __init__(self, name: str, layout: Layout, data):
        if not isinstance(data, (Pointwise, Reduction)):
            raise TypeError(f"ComputedBuffer data must be Pointwise or Reduction, not {type(data)}")
        if tuple(layout.size) != tuple(data.size):
            raise ValueError(f"layout size {layout.size} != data size {data.size}")
        self.name = name
        self.layout = layout
        self.data = data

    @property
    def is_reduction(self) -> bool:
        return isinstance(self.data, Reduction)

    def body_vars(self):
        """(outer vars over ``size``, reduction vars over ``reduction_size``) of this node."""
        outer = index_vars("x", len(self.data.size))
        inner = index_vars("r", len(self.data.reduction_size)) if self.is_reduction else []
        return outer, inner

    def evaluate(self, outer, inner=()):
        """Run the body on the installed ``ops`` handler at the given index."""
        if self.is_reduction:
            return self.data.inner_fn(list(outer), list(inner))
        return self.data.inner_fn(list(outer))

    def op_names(self) -> list[str]:
        self.reads()
        names = list(self._ops)
        if self.is_reduction:
            names.append(self.data.reduction_type)
        return names

    def store_index(self) -> Expr:
        outer, _ = self.body_vars()
        return self.layout.index(outer)

    def __repr__(self):
        kind = self.data.reduction_type if self.is_reduction else "pointwise"
        return f"ComputedBuffer({self.name}, {kind}, size={list(self.layout.size)})"


class ScatterBuffer(BodyNode):
    """Buffer ``name``: buffer ``base`` updated in place by a ``Scatter`` (``name`` takes over
    ``base``'s storage, which nothing reads after: the lowering made ``base`` for it alone)."""

    is_reduction = False

    def __init__(self, name: str, base: str, layout: Layout, data: Scatter):
        if not isinstance(data, Scatter):
            raise TypeError(f"ScatterBuffer data must be a Scatter, not {type(data)}")
        self.name = name
        self.base = base
        self.layout = layout
        self.data = data

    def body_vars(self):
        return index_vars("x", len(self.data.size)), []

    def evaluate(self, outer, inner=()):
        """[(position, value)] of every update at ``outer``, on the installed ``ops`` handler."""
        return [(indexer(list(outer)), inner_fn(list(outer))) for indexer, inner_fn in self.data.updates]

    def add_update(self, indexer, inner_fn, disjoint) -> None:
        """One more update over the same indices, after the others (``disjoint``: its own dims')."""
        self.data.updates.append((indexer, inner_fn))
        self.data.disjoint = tuple(a and b for a, b in zip(self.data.disjoint, disjoint))
        self._reads = self._ops = None

    def op_names(self) -> list[str]:
        self.reads()
        return list(self._ops)

    def buffer_reads(self) -> set[str]:
        return super().buffer_reads() | {self.base}

    def value_op_names(self) -> list[str]:
        """The ops computing the values put (not the positions), in call order."""
        from .ops import DependencyHandler, set_handler

        handler = DependencyHandler()
        outer, _ = self.body_vars()
        with set_handler(handler):
            for _, inner_fn in self.data.updates:
                inner_fn(list(outer))
        return handler.op_names

    def __repr__(self):
        return f"ScatterBuffer({self.name} = {self.base} {self.data.mode} {len(self.data.updates)} updates)"


class ExternCall(ScheduledNode):
    """An aten op run eagerly by the wrapper.

    ``args``/``kwargs`` hold ``BufferRef`` where tensors go. ``layouts`` is the layout of the
    result (one per tensor output; ``None`` for a non-tensor result). ``reason`` says why this op
    is not compiled (shown in the debug report). ``makes_sizes``: the size symbols from data
    (``u0``) its result has, which the wrapper reads from it.
    """

    def __init__(self, name, target, args, kwargs, result_meta, reason: str, counted: bool = True):
        self.name = name
        self.target = target
        self.args = args
        self.kwargs = kwargs
        self.result_meta = result_meta
        self.reason = reason
        self.counted = counted
        self.makes_sizes: tuple = ()

    @property
    def is_mutating(self) -> bool:
        schema = getattr(self.target, "_schema", None)
        return bool(schema is not None and schema.is_mutable)

    def buffer_reads(self) -> set[str]:
        found = set()

        def visit(a):
            if isinstance(a, BufferRef):
                found.add(a.name)
            elif isinstance(a, (list, tuple)):
                for x in a:
                    visit(x)
            elif isinstance(a, dict):
                for x in a.values():
                    visit(x)

        visit(self.args)
        visit(self.kwargs)
        return found

    def __repr__(self):
        return f"ExternCall({self.name} = {self.target}, reason={self.reason!r})"


def returns_alias(target) -> bool:
    """True unless ``target`` is an aten op whose results are fresh tensors."""
    schema = getattr(target, "_schema", None)
    return schema is None or any(r.alias_info is not None for r in schema.returns)


@dataclasses.dataclass(frozen=True)
class BufferRef:
    """A tensor argument of an ``ExternCall``: the buffer named ``name``."""

    name: str


class WrapperView(ScheduledNode):
    """``name = target(base, *args)``: a torch view op run in the wrapper (no data moves).

    ``offset``: the view's storage offset from the base's when ``layout`` describes the view
    whole (the wrapper then makes it from the layout, without the op); None when it does not."""

    def __init__(self, name: str, target, base: str, args, layout: Optional[Layout],
                 offset: Optional[int] = None):
        self.name = name
        self.target = target
        self.base = base
        self.args = args
        self.layout = layout
        self.offset = offset if layout is not None else None

    def buffer_reads(self) -> set[str]:
        return {self.base}

    def __repr__(self):
        return f"WrapperView({self.name} = {self.target}({self.base}, ...))"


class GetItem(ScheduledNode):
    """``name = base[index]`` for an element of a multi-output extern result."""

    def __init__(self, name: str, base: str, index: int, layout: Optional[Layout]):
        self.name = name
        self.base = base
        self.index = index
        self.layout = layout

    def buffer_reads(self) -> set[str]:
        return {self.base}
