"""The swappable ``ops`` handler that IR bodies call, and the analysis handlers.

A body is written once against ``ops`` (``ops.load(name, index)``, ``ops.add(a, b)``, ...). What
the calls *mean* depends on the handler installed with ``set_handler``:

* ``DependencyHandler`` — records which buffers are read at which index, and the op names;
* ``OpCountHandler``    — counts ops and loads (inlining heuristics);
* ``cpp.handler.CppHandler`` — prints C++;
* ``reference.ReferenceHandler`` — evaluates with torch tensors (the test oracle).

The op vocabulary and its dtype rules live here (``OPS``), as a table.
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any

import sympy
import torch

# name -> dtype rule. "same": promote the operand dtypes; "bool": result is bool.
UNARY_OPS = {
    name: "same"
    for name in (
        "abs neg exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan "
        "sinh cosh tanh asinh acosh atanh erf erfc sigmoid reciprocal floor ceil round trunc "
        "sign lgamma relu bitwise_not square"
    ).split()
}
UNARY_OPS.update({name: "bool" for name in "isnan isinf signbit logical_not".split()})

BINARY_OPS = {
    name: "same"
    for name in (
        "add sub mul truediv floordiv truncdiv remainder fmod pow maximum minimum atan2 "
        "copysign bitwise_and bitwise_or bitwise_xor left_shift right_shift hypot"
    ).split()
}
BINARY_OPS.update(
    {name: "bool" for name in "eq ne lt le gt ge logical_and logical_or logical_xor".split()}
)

# Ops that are not plain math (signatures differ): load, constant, index_expr, to_dtype, where,
# masked, indirect_indexing, and check(ok, error) — a statement, no value: where the
# bool ``ok`` is false the kernel reports ``error`` (``checks.KernelError``) and the wrapper raises it.
SPECIAL_OPS = ("load", "constant", "index_expr", "to_dtype", "where", "masked", "indirect_indexing", "check")

ALL_OPS = frozenset(UNARY_OPS) | frozenset(BINARY_OPS) | frozenset(SPECIAL_OPS)


def result_dtype(name: str, dtypes) -> torch.dtype:
    """The dtype of ``ops.<name>`` applied to operands of ``dtypes``."""
    rule = UNARY_OPS.get(name) or BINARY_OPS.get(name)
    if rule == "bool":
        return torch.bool
    out = dtypes[0]
    for d in dtypes[1:]:
        out = torch.promote_types(out, d)
    return out


# ----------------------------------------------------------------------------------------------
# The virtualized handler


_state = threading.local()


def current_handler():
    stack = getattr(_state, "stack", None)
    if not stack:
        raise RuntimeError("no ops handler is installed: use `with set_handler(handler):`")
    return stack[-1]


@contextlib.contextmanager
def set_handler(handler):
    """Install ``handler`` as the meaning of ``ops.*`` for the duration of the block."""
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    stack.append(handler)
    try:
        yield handler
    finally:
        stack.pop()


class _OpsProxy:
    """``ops.add(a, b)`` calls ``add`` on the handler installed when the call happens."""

    def __init__(self):
        self._bound = {}

    def __getattr__(self, name):
        if name.startswith("_") or name not in ALL_OPS:
            raise AttributeError(f"ops has no operation {name!r}")
        fn = self._bound.get(name)
        if fn is None:
            def fn(*args, _name=name):
                return getattr(current_handler(), _name)(*args)

            fn.__name__ = name
            self._bound[name] = fn
        return fn

    def __dir__(self):
        return sorted(ALL_OPS)


ops = _OpsProxy()


class IndexMap:
    """A handler that passes every index (of ``load``, ``index_expr``) through ``mapping`` on its
    way to ``handler``, which does the rest."""

    def __init__(self, handler, mapping):
        self.handler = handler
        self.mapping = mapping

    def load(self, name, index):
        return self.handler.load(name, self.mapping(index))

    def index_expr(self, expr, dtype):
        return self.handler.index_expr(self.mapping(expr), dtype)

    def masked(self, mask, body, other):
        def mapped():  # (the handler may run the body under a handler of its own)
            if current_handler() is self:
                return body()
            with set_handler(IndexMap(current_handler(), self.mapping)):
                return body()

        return self.handler.masked(mask, mapped, other)

    def __getattr__(self, name):
        return getattr(self.handler, name)


# ----------------------------------------------------------------------------------------------
# Analysis handlers


class Opaque:
    """A value of an analysis handler: only its dtype is known."""

    __slots__ = ("dtype",)

    def __init__(self, dtype):
        self.dtype = dtype


class AnalysisHandler:
    """Base of handlers that only look at the structure of a body."""

    def __init__(self, buffer_dtypes=None):
        self.buffer_dtypes = buffer_dtypes or {}
        self.op_names: list[str] = []
        self._indirect = 0
        self._masked = 0  # depth of ``masked`` bodies being evaluated

    def _op(self, name, *args):
        self.op_names.append(name)
        return Opaque(result_dtype(name, [a.dtype for a in args]))

    def __getattr__(self, name):
        if name in UNARY_OPS or name in BINARY_OPS:
            return lambda *args: self._op(name, *args)
        raise AttributeError(name)

    def load(self, name, index):
        return Opaque(self.buffer_dtypes.get(name, torch.float32))

    def constant(self, value, dtype):
        return Opaque(dtype)

    def index_expr(self, expr, dtype):
        return Opaque(dtype)

    def to_dtype(self, x, dtype):
        return Opaque(dtype)

    def where(self, cond, a, b):
        self.op_names.append("where")
        return Opaque(torch.promote_types(a.dtype, b.dtype))

    def masked(self, mask, body, other):
        self._masked += 1
        try:
            return body()
        finally:
            self._masked -= 1

    def indirect_indexing(self, x, size):
        self._indirect += 1
        return sympy.Symbol(f"indirect{self._indirect}", integer=True, nonnegative=True)

    def check(self, ok, error):
        self.op_names.append("check")


class DependencyHandler(AnalysisHandler):
    """Records ``reads``: (buffer, index, indirect) for every load; ``op_names`` in call order.

    ``unmasked`` holds the (buffer, index) pairs loaded at least once outside any ``masked``
    body: those addresses are valid to read wherever the body runs.
    """

    def __init__(self, buffer_dtypes=None):
        super().__init__(buffer_dtypes)
        self.reads: list[tuple[str, Any, bool]] = []
        self.unmasked: set[tuple[str, Any]] = set()

    def load(self, name, index):
        index = sympy.sympify(index)
        indirect = any(s.name.startswith("indirect") for s in index.free_symbols)
        entry = (name, index, indirect)
        if entry not in self.reads:
            self.reads.append(entry)
        if not self._masked:
            self.unmasked.add((name, index))
        return super().load(name, index)


class OpCountHandler(AnalysisHandler):
    """Counts math ops (``ops``) and loads (``loads``) of a body."""

    def __init__(self):
        super().__init__()
        self.loads = 0

    @property
    def ops(self) -> int:
        return len(self.op_names)

    def load(self, name, index):
        self.loads += 1
        return super().load(name, index)


def count_ops(fn, *index) -> OpCountHandler:
    """Run ``fn(*index)`` on an ``OpCountHandler`` and return the handler."""
    handler = OpCountHandler()
    with set_handler(handler):
        fn(*index)
    return handler


class KeyHandler:
    """Spells a body out as text (``Keyed.text``): two bodies with the same text compute the
    same values. Bodies with data-dependent positions or masks get no key (``Unkeyable``)."""

    def load(self, name, index):
        return Keyed(f"load({name}, {sympy.expand(index)})", None)

    def constant(self, value, dtype):
        return Keyed(f"{value!r}:{dtype}", dtype)

    def index_expr(self, expr, dtype):
        return Keyed(f"index({sympy.expand(expr)}):{dtype}", dtype)

    def to_dtype(self, x, dtype):
        return Keyed(f"to({x.text}, {dtype})", dtype)

    def where(self, cond, a, b):
        return Keyed(f"where({cond.text}, {a.text}, {b.text})", None)

    def masked(self, mask, body, other):
        raise Unkeyable("masked")

    def indirect_indexing(self, x, size):
        raise Unkeyable("indirect")

    def check(self, ok, error):
        raise Unkeyable("check")  # (a body with a check is never merged into one without)

    def __getattr__(self, name):
        if name in UNARY_OPS or name in BINARY_OPS:
            return lambda *args: Keyed(f"{name}({', '.join(a.text for a in args)})", None)
        raise AttributeError(name)


class Keyed:
    __slots__ = ("text", "dtype")

    def __init__(self, text: str, dtype):
        self.text = text
        self.dtype = dtype


class Unkeyable(Exception):
    """The body has no ``KeyHandler`` key."""


def body_key(fn, *index):
    """The text of ``fn(*index)`` under ``KeyHandler``, or None when it has none."""
    try:
        with set_handler(KeyHandler()):
            return fn(*index).text
    except Unkeyable:
        return None
