"""Access paths and derived expressions: where a value came from.

A ``Source`` is a small immutable path from the call's entry state (an argument, a global, a closure
cell) through attribute and item accesses, rendered as the expression a user would write
(``self.layers[0].weight``). An ``Expr`` is a pure computation over sources (``len(xs) > 2``), used
to guard on values the program computed from its inputs. Both are hashable, so equal paths dedupe.

Rendering speaks the user's language: a module's parameters, buffers and submodules read as attributes
(``self.l.weight``, not ``self.__dict__['_modules']['l'].__dict__['_parameters']['weight']``), a closure
cell as its variable, a global as the user's module would spell it (see ``names``).
"""
import operator
import types

from .names import callable_name, global_name, is_home, is_identifier, module_name

from ..interp.identity import IdentityDict


class Source:
    __slots__ = ()

    def render(self):
        raise NotImplementedError

    def __repr__(self):
        return self.render()


class ArgSource(Source):
    """A parameter of the compiled function (``index`` into the entry program's parameters)."""
    __slots__ = ("name", "index")

    def __init__(self, name, index):
        self.name = name
        self.index = index

    def render(self):
        return self.name

    def __eq__(self, other):
        return type(other) is ArgSource and other.index == self.index

    def __hash__(self):
        return hash(("arg", self.index))


class GlobalSource(Source):
    """A global of a given module dict (identified by its ``__name__``; held by ``namespace``)."""
    __slots__ = ("namespace", "name")

    def __init__(self, namespace, name):
        self.namespace = namespace
        self.name = name

    def render(self):
        value = self.namespace.get(self.name)
        if isinstance(value, types.ModuleType) and not is_home(self.namespace):
            return module_name(value.__name__)  # (``F.linear`` in torch's code is ``torch.nn.functional.linear``)
        return global_name(self.namespace, self.name)

    def __eq__(self, other):
        return type(other) is GlobalSource and other.namespace is self.namespace and other.name == self.name

    def __hash__(self):
        return hash(("global", id(self.namespace), self.name))


class ConstSource(Source):
    """An object held by the entry program itself (a function's closure cell, a module)."""
    __slots__ = ("value", "label")

    def __init__(self, value, label):
        self.value = value
        self.label = label

    def render(self):
        return self.label

    def __eq__(self, other):
        return type(other) is ConstSource and other.value is self.value

    def __hash__(self):
        return hash(("const", id(self.value)))


class DrawSource(Source):
    """The ``index``-th Python random number the call drew (``random.random()``, ``getrandbits(k)``): the
    entry program draws them again, in order, before its guards; a guard that then fails puts the
    random state back."""
    __slots__ = ("index",)

    def __init__(self, index):
        self.index = index

    def render(self):
        return f"draw[{self.index}]"

    def __eq__(self, other):
        return type(other) is DrawSource and other.index == self.index

    def __hash__(self):
        return hash(("draw", self.index))


def mentions_draw(e):
    """Does this path or expression depend on a random draw?"""
    while isinstance(e, Source):
        if type(e) is DrawSource:
            return True
        e = getattr(e, "base", None)
    if type(e) is Expr:
        return any(mentions_draw(a) for a in e.args)
    return False


class AttrSource(Source):
    __slots__ = ("base", "name")

    def __init__(self, base, name):
        self.base = base
        self.name = name

    def render(self):
        return f"{self.base.render()}.{self.name}"

    def __eq__(self, other):
        return type(other) is AttrSource and other.name == self.name and other.base == self.base

    def __hash__(self):
        return hash(("attr", self.base, self.name))


class ItemSource(Source):
    """``base[key]`` for a constant (hashable, guarded) key."""
    __slots__ = ("base", "key")

    def __init__(self, base, key):
        self.base = base
        self.key = key

    def render(self):
        owner = _attribute_owner(self.base)
        if owner is not None:
            base, container = owner
            if container in _READ_AS_ATTRIBUTE and is_identifier(self.key):
                return f"{base.render()}.{self.key}"  # (``nn.Module.__getattr__`` finds it there)
            if container == "_modules" and type(self.key) is str and self.key.isdigit():
                return f"{base.render()}[{self.key}]"  # ``Sequential``/``ModuleList`` items
        return f"{self.base.render()}[{self.key!r}]"

    def __eq__(self, other):
        return type(other) is ItemSource and _same(other.key, self.key) and other.base == self.base

    def __hash__(self):
        return hash(("item", self.base, _hash(self.key)))


#: attributes holding dicts whose items a user reads as attributes of the owner: its ``__dict__``, and a
#: module's parameters, buffers and submodules
_READ_AS_ATTRIBUTE = frozenset({"__dict__", "_parameters", "_buffers", "_modules"})


def _attribute_owner(source):
    """``(owner, name)`` when ``source`` reads attribute ``name`` of ``owner`` (``owner.name`` or
    ``owner.__dict__['name']``), else None."""
    if type(source) is AttrSource:
        return source.base, source.name
    if type(source) is ItemSource and type(source.base) is AttrSource and source.base.name == "__dict__" \
            and is_identifier(source.key):
        return source.base.base, source.key
    return None


class CellSource(Source):
    """The contents of a closure cell (the cell object itself is held as a constant)."""
    __slots__ = ("cell", "name")

    def __init__(self, cell, name):
        self.cell = cell
        self.name = name

    def render(self):
        return self.name  # (the closure's variable, as the function's source names it)

    def __eq__(self, other):
        return type(other) is CellSource and other.cell is self.cell

    def __hash__(self):
        return hash(("cell", id(self.cell)))


class Expr:
    """A pure call ``fn(*args)`` over sources, expressions and constants (``Const``)."""
    __slots__ = ("fn", "args", "_hash")

    def __init__(self, fn, args):
        self.fn = fn
        self.args = tuple(args)
        self._hash = hash((id(fn), self.args))

    def render(self):
        args = [_render(a) for a in self.args]
        spelling = _SPELLING.get(self.fn, {}).get(len(args))
        if spelling is None and type(self.fn) is types.FunctionType:  # (one of ours may say how it reads)
            spelling = getattr(self.fn, "spelling", None)
        if spelling is not None:
            return spelling.format(*args)
        if self.fn is getattr and len(args) == 2 and type(self.args[1]) is Const and \
                is_identifier(self.args[1].value):
            return f"{args[0]}.{self.args[1].value}"
        return f"{callable_name(self.fn)}({', '.join(args)})"

    def __repr__(self):
        return self.render()

    def __eq__(self, other):
        return type(other) is Expr and other.fn is self.fn and other.args == self.args

    def __hash__(self):
        return self._hash


#: function -> {number of arguments: how the user wrote that call} (operators, item access, ``in``); keyed
#: by identity: an expression's function may be any callable, whose ``__hash__`` must not run
_SPELLING = IdentityDict((fn, forms) for fn, forms in {
    **{fn: {2: f"({{0}} {symbol} {{1}})"} for fn, symbol in (
        (operator.add, "+"), (operator.sub, "-"), (operator.mul, "*"), (operator.truediv, "/"),
        (operator.floordiv, "//"), (operator.mod, "%"), (operator.pow, "**"), (operator.matmul, "@"),
        (operator.is_, "is"), (operator.is_not, "is not"), (operator.eq, "=="), (operator.ne, "!="),
        (operator.lt, "<"), (operator.le, "<="), (operator.gt, ">"), (operator.ge, ">="),
        (operator.and_, "&"), (operator.or_, "|"), (operator.xor, "^"), (operator.lshift, "<<"),
        (operator.rshift, ">>"))},
    operator.contains: {2: "({1} in {0})"},
    operator.getitem: {2: "{0}[{1}]"},
    operator.not_: {1: "(not {0})"},
    operator.neg: {1: "(-{0})"},
    operator.pos: {1: "(+{0})"},
    operator.invert: {1: "(~{0})"},
    operator.truth: {1: "bool({0})"},
    operator.call: {n: "{0}(" + ", ".join(f"{{{k}}}" for k in range(1, n)) + ")" for n in range(1, 16)},
}.items())


_BY_VALUE = (int, float, complex, bool, str, bytes, type(None), range, slice)


# Plain values (ints, strings, tuples of them) are told apart by type and exact value (1, 1.0 and
# True are three constants, and so are 0.0 and -0.0); anything else — a tensor compares elementwise,
# a user object's __eq__ / __hash__ may raise or answer anything — by identity, running none of its code.

def _value_key(value):
    tp = type(value)
    if tp is tuple or tp is frozenset:
        return tp, tp(map(_value_key, value))
    if tp is float or tp is complex:
        return tp, repr(value)
    if tp is slice:  # (slices hash only from 3.12 on)
        return tp, tuple(map(_value_key, (value.start, value.stop, value.step)))
    if tp in _BY_VALUE:
        return tp, value
    return "id", id(value)   # (the value is held by whoever asks: its id stays its own)


def _same(a, b):
    return a is b or _value_key(a) == _value_key(b)


def _hash(value):
    return hash(_value_key(value))


class Const:
    """A constant operand of an ``Expr`` (compared by identity and value)."""
    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def render(self):
        if callable(self.value) and hasattr(self.value, "__name__"):
            return callable_name(self.value)  # (a function or class, as the user names it)
        return repr(self.value)

    def __eq__(self, other):
        return type(other) is Const and _same(other.value, self.value)

    def __hash__(self):
        return _hash(self.value)


def _render(x):
    return x.render() if hasattr(x, "render") else repr(x)


def roots(expr):
    """The Sources an expression reads."""
    if isinstance(expr, Source):
        yield expr
    elif isinstance(expr, Expr):
        for a in expr.args:
            yield from roots(a)


def through_attribute(path) -> bool:
    """Is ``path`` read through an object's attribute (``self.eps``, ``cfg.sizes[0]``)?"""
    while isinstance(path, (AttrSource, ItemSource)):
        if isinstance(path, AttrSource):
            return True
        path = path.base
    return False


class ChangingNumbers(frozenset):
    """The paths of Python numbers a capture takes as graph inputs, as they come (``dynamic_numbers``):
    those a miss showed to change (the automatic rule) and, with ``arguments`` (``dynamic=True``), every
    number the call is given — not one read through an attribute (a module's ``eps``, a dropout's
    ``p``: settings the graph specialises on, as torch.compile does, until one changes)."""

    def __new__(cls, paths=(), arguments=False):
        self = super().__new__(cls, paths)
        self.arguments = arguments
        return self

    def __contains__(self, path):
        return frozenset.__contains__(self, path) or self.arguments and not through_attribute(path)

    def __bool__(self):
        return self.arguments or len(self) > 0

    def with_paths(self, paths):
        return ChangingNumbers(self | frozenset(paths), self.arguments)


def paths_in(e):
    """The access paths an expression is computed from (a path alone: itself)."""
    if isinstance(e, Source):
        return [e]
    if type(e) is Expr:
        return [p for a in e.args for p in paths_in(a)]
    return []
