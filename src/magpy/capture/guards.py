"""Guard kinds: what must hold of a later call's entry state for a cache entry to be reused.

Each guard checks one expression (a Source or an Expr over sources) against what the first call
saw. ``cost`` orders them cheapest first in the emitted check; ``key`` dedupes identical guards.
"""
from .names import object_label
from .sources import Source


class Guard:
    __slots__ = ("expr",)
    cost = 1

    def key(self):
        raise NotImplementedError

    def describe(self):
        raise NotImplementedError

    def __repr__(self):
        return self.describe()


class TypeGuard(Guard):
    __slots__ = ("type",)
    cost = 1

    def __init__(self, expr, tp):
        self.expr = expr
        self.type = tp

    def key(self):
        return ("type", self.expr)

    def describe(self):
        return f"type({self.expr.render()}) is {self.type.__qualname__}"


class IdGuard(Guard):
    """The very same object (functions, classes, modules, module instances)."""
    __slots__ = ("obj",)
    cost = 1

    def __init__(self, expr, obj):
        self.expr = expr
        self.obj = obj

    def key(self):
        return ("id", self.expr)

    def describe(self):
        return f"{self.expr.render()} is <{object_label(self.obj)} at {id(self.obj):#x}>"


class ValueGuard(Guard):
    """Same type and equal value (scalars, strings, tuples of them; floats compare bit-exactly)."""
    __slots__ = ("value",)
    cost = 2

    def __init__(self, expr, value):
        self.expr = expr
        self.value = value

    def key(self):
        return ("value", self.expr)

    def describe(self):
        return f"{self.expr.render()} == {self.value!r}"


class TruthGuard(Guard):
    __slots__ = ("value",)
    cost = 2

    def __init__(self, expr, value):
        self.expr = expr
        self.value = bool(value)

    def key(self):
        return ("truth", self.expr)

    def describe(self):
        return f"bool({_unwrapped(self.expr.render())}) is {self.value}"


class NoneGuard(Guard):
    __slots__ = ("is_none",)
    cost = 1

    def __init__(self, expr, is_none):
        self.expr = expr
        self.is_none = is_none

    def key(self):
        return ("none", self.expr)

    def describe(self):
        return f"{self.expr.render()} is {'' if self.is_none else 'not '}None"


class TensorGuard(Guard):
    """A tensor of the same class, dtype, device, shape, strides and requires_grad. Its ``symbolic`` dims
    take any size of at least 2 (sizes 0 and 1 specialise: broadcasting and emptiness change with them);
    their sizes, and the strides they span, are None in ``shape``/``stride``, and the tensor must then be
    dense in the first call's order of strides (``dense_with_sizes``)."""
    __slots__ = ("cls", "dtype", "device", "shape", "stride", "requires_grad", "example", "symbolic", "order")
    cost = 3

    def __init__(self, expr, tensor, symbolic=frozenset()):
        self.expr = expr
        self.cls = type(tensor)
        self.dtype = tensor.dtype
        self.device = tensor.device
        self.symbolic = frozenset(symbolic)
        self.shape = tuple(None if k in self.symbolic else n for k, n in enumerate(tensor.shape))
        strided = tensor.layout.__repr__() == "torch.strided"
        self.stride = tuple(tensor.stride()) if strided else None
        self.order = None
        if self.symbolic:
            # innermost first; a stride spans the sizes of the dims inside it
            self.order = tuple(sorted(range(tensor.dim()), key=lambda k: (tensor.stride(k), -k)))
            inner = set()
            stride = list(self.stride)
            for k in self.order:
                if inner & self.symbolic:
                    stride[k] = None
                inner.add(k)
            self.stride = tuple(stride)
        self.requires_grad = tensor.requires_grad
        self.example = tensor

    def key(self):
        return ("tensor", self.expr)

    def holds(self, value) -> bool:
        """Does ``value`` pass this guard? (what the emitted program checks, for explanations)"""
        if not (type(value) is self.cls and value.dtype is self.dtype and value.device == self.device
                and value.requires_grad is self.requires_grad and value.dim() == len(self.shape)):
            return False
        if any(n is not None and n != m for n, m in zip(self.shape, value.shape)):
            return False
        if self.stride is not None and any(s is not None and s != t for s, t in zip(self.stride, value.stride())):
            return False
        return not self.symbolic or dense_with_sizes(value, self.symbolic, self.order)

    def describe(self):
        shape = ", ".join("symbolic" if n is None else str(n) for n in self.shape)
        stride = ", ".join("symbolic" if n is None else str(n) for n in self.stride) if self.stride else None
        extra = f", dims {sorted(self.symbolic)} of any size >= 2" if self.symbolic else ""
        return (f"{self.expr.render()}: {self.cls.__name__}({str(self.dtype)[6:]}, {self.device}, "
                f"shape=[{shape}], stride={f'[{stride}]' if stride else None}, "
                f"requires_grad={self.requires_grad}{extra})")


def dense_with_sizes(t, symbolic, order) -> bool:
    """Is each ``symbolic`` size of ``t`` at least 2, and ``t`` dense with its strides in ``order``
    (innermost first)? Then its strides follow from its sizes, as the first call's did."""
    shape = t.shape
    for k in symbolic:
        if shape[k] < 2:
            return False
    strides = t.stride()
    expected = 1
    for k in order:
        if shape[k] != 1 and strides[k] != expected:
            return False
        expected *= shape[k]
    return True


def _unwrapped(text):
    """``text`` without the parentheses around the whole of it (``(a == b)`` inside ``bool(…)``)."""
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for k, ch in enumerate(text):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0 and k < len(text) - 1:
            return text  # (``(a) + (b)``: the first parenthesis closes early)
    return text[1:-1]


def order(guards):
    """Cheapest and most selective first: types and identities, then values, then tensors; a guard
    on a path comes after the guards on the path's prefixes (so the access itself cannot fail)."""
    def depth(expr):
        n = 0
        while isinstance(expr, Source) and hasattr(expr, "base"):
            expr = expr.base
            n += 1
        return n
    return sorted(guards, key=lambda g: (depth(g.expr), g.cost))
