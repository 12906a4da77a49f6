"""Guard kinds: what must hold of a later call's entry state for a cache entry to be reused.

Each guard checks one expression (a Source or an Expr over sources) against what the first call
saw. ``cost`` orders them cheapest first in the emitted check; ``key`` dedupes identical guards.
"""
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
        return f"{self.expr.render()} is <{_qualname(self.obj)} at {id(self.obj):#x}>"


def _qualname(obj):
    """A function's or class's own qualname, else its type's: read without running ``obj``'s code (a
    module's ``__getattr__`` may raise anything, or answer anything, for a name it does not have)."""
    try:
        name = object.__getattribute__(obj, "__qualname__")
    except AttributeError:
        name = None
    return name if type(name) is str else type(obj).__qualname__


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
        return f"bool({self.expr.render()}) is {self.value}"


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
    """A tensor of the same class, dtype, device, shape, strides and requires_grad."""
    __slots__ = ("cls", "dtype", "device", "shape", "stride", "requires_grad", "example")
    cost = 3

    def __init__(self, expr, tensor):
        self.expr = expr
        self.cls = type(tensor)
        self.dtype = tensor.dtype
        self.device = tensor.device
        self.shape = tuple(tensor.shape)
        self.stride = tuple(tensor.stride()) if tensor.layout.__repr__() == "torch.strided" else None
        self.requires_grad = tensor.requires_grad
        self.example = tensor

    def key(self):
        return ("tensor", self.expr)

    def describe(self):
        return (f"{self.expr.render()}: {self.cls.__name__}({str(self.dtype)[6:]}, {self.device}, "
                f"shape={list(self.shape)}, stride={list(self.stride) if self.stride else None}, "
                f"requires_grad={self.requires_grad})")


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
