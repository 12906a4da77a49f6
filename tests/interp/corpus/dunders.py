"""Dunder protocols: operators through dunders (reflected operands, NotImplemented, in-place fallbacks,
rich comparisons), containers, iteration, conversions, and the errors builtins raise for broken dunders."""
from . import program


class Vec:
    """A small value type used by several programs."""

    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __add__(self, other):
        if isinstance(other, Vec):
            return Vec(self.x + other.x, self.y + other.y)
        if isinstance(other, (int, float)):
            return Vec(self.x + other, self.y + other)
        return NotImplemented

    def __radd__(self, other):
        return self.__add__(other)

    def __mul__(self, k):
        return Vec(self.x * k, self.y * k)

    def __eq__(self, other):
        return isinstance(other, Vec) and (self.x, self.y) == (other.x, other.y)

    def __hash__(self):
        return hash((self.x, self.y))

    def __repr__(self):
        return f"Vec({self.x}, {self.y})"


@program
def operators_through_dunders():
    a = Vec(1, 2)
    b = Vec(3, 4)
    return [a + b, a + 1, 1 + a, a * 3, a == Vec(1, 2), a != b, sum([a, b], Vec(0, 0)), {a, Vec(1, 2)}]


@program
def reflected_operand_returns_not_implemented():
    return Vec(1, 2) + "s"


@program
def reflected_ops_of_subclass_win():
    class Base:
        def __add__(self, other):
            return "Base.add"

        def __radd__(self, other):
            return "Base.radd"

    class Derived(Base):
        def __radd__(self, other):
            return "Derived.radd"
    return Base() + Derived(), Derived() + Base(), Base() + Base()


@program
def all_reflected_operators():
    class R:
        def __getattr__(self, name):
            raise AttributeError(name)
    names = ["radd", "rsub", "rmul", "rtruediv", "rfloordiv", "rmod", "rpow", "rlshift", "rrshift",
             "rand", "ror", "rxor", "rmatmul"]
    for n in names:
        setattr(R, f"__{n}__", (lambda n: lambda self, other: (n, other))(n))
    r = R()
    return [1 + r, 1 - r, 1 * r, 1 / r, 1 // r, 1 % r, 1 ** r, 1 << r, 1 >> r, 1 & r, 1 | r, 1 ^ r,
            1 @ r]


@program
def inplace_falls_back_to_binary():
    class N:
        def __init__(self, v):
            self.v = v

        def __add__(self, other):
            return N(self.v + other)

    class M(N):
        def __iadd__(self, other):
            self.v -= other
            return self
    n = N(1)
    keep = n
    n += 5
    m = M(1)
    keep_m = m
    m += 5
    return n.v, keep.v, n is keep, m.v, m is keep_m


@program
def rich_comparison_fallbacks():
    class Lt:
        def __init__(self, v):
            self.v = v

        def __lt__(self, other):
            return self.v < other.v

        def __eq__(self, other):
            return NotImplemented
    a, b = Lt(1), Lt(2)
    return [a < b, b > a, a == a, a == b, a != b, sorted([Lt(3), a, b], key=lambda o: o.v)[0].v]


@program
def ordering_not_supported_error():
    class Opaque:
        pass
    return Opaque() < Opaque()


@program
def container_dunders():
    class Bag:
        def __init__(self):
            self.data = {}

        def __getitem__(self, k):
            return self.data.get(k, 0)

        def __setitem__(self, k, v):
            self.data[k] = v

        def __delitem__(self, k):
            del self.data[k]

        def __contains__(self, k):
            return k in self.data

        def __len__(self):
            return len(self.data)

        def __iter__(self):
            return iter(sorted(self.data))
    b = Bag()
    b["x"] = 1
    b["y"] += 5
    del b["x"]
    return b["y"], "x" in b, "y" in b, len(b), list(b), b["missing"]


@program
def str_repr_format_hooks():
    class Money:
        def __init__(self, v):
            self.v = v

        def __str__(self):
            return f"${self.v:.2f}"

        def __repr__(self):
            return f"Money({self.v!r})"

        def __format__(self, spec):
            return "M" + format(self.v, spec)
    m = Money(3.5)
    return str(m), repr(m), f"{m}", f"{m!r}", f"{m!s}", f"{m:>8.1f}", [m]


@program
def hash_and_eq_contract():
    class NoHash:
        def __eq__(self, other):
            return True
    try:
        {NoHash()}
    except TypeError as e:
        return str(e), NoHash.__hash__ is None


@program
def iteration_dunders():
    class Range2:
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            i = 0
            while i < self.n:
                yield i
                i += 1

        def __reversed__(self):
            return iter(range(self.n - 1, -1, -1))

        def __len__(self):
            return self.n
    r = Range2(3)
    return list(r), list(reversed(r)), len(r), sum(r), 2 in r


@program
def object_with_index_and_bool_and_len():
    class Idx:
        def __index__(self):
            return 2

    class Num:
        def __int__(self):
            return 7

        def __float__(self):
            return 1.5

        def __complex__(self):
            return 1j
    return [10, 20, 30][Idx()], "abc"[Idx()], range(10)[Idx()], int(Num()), float(Num()), \
        complex(Num()), bin(Idx())


@program
def arguments_mutated_by_methods(items=None):
    if items is None:
        items = []
    items.append(Vec(1, 1))
    return len(items)


@program(args=([Vec(0, 0), Vec(1, 2)], {"k": Vec(5, 5)}))
def mutate_argument_objects(vectors, mapping):
    vectors[0].x = 99
    vectors.append(vectors[1] * 2)
    mapping["k"].y = -1
    mapping["new"] = Vec(7, 7)
    return vectors[0]


@program
def ne_defaults_to_inverted_eq():
    class E:
        def __init__(self, v):
            self.v = v

        def __eq__(self, other):
            return isinstance(other, E) and self.v == other.v
    return E(1) != E(1), E(1) != E(2), E(1) == 1, E(1) != 1


@program
def eq_not_implemented_on_both_sides_falls_back_to_identity():
    class N:
        def __eq__(self, other):
            return NotImplemented
    a = N()
    return a == a, a == N(), a != N(), [a].count(a), a in [N()]


@program
def iadd_returning_not_implemented_falls_back_to_add():
    class A:
        def __init__(self, v):
            self.v = v

        def __iadd__(self, other):
            return NotImplemented

        def __add__(self, other):
            return A(self.v + other)
    a = A(1)
    original = a
    a += 2
    return a.v, a is original


@program
def builtins_dispatching_to_numeric_dunders():
    class Num:
        def __abs__(self):
            return "abs"

        def __round__(self, n=None):
            return ("round", n)

        def __divmod__(self, other):
            return ("divmod", other)

        def __rdivmod__(self, other):
            return ("rdivmod", other)

        def __pow__(self, exp, mod=None):
            return ("pow", exp, mod)

        def __trunc__(self):
            return 7

        def __floor__(self):
            return 6

        def __ceil__(self):
            return 8
    import math
    n = Num()
    return [abs(n), round(n), round(n, 2), divmod(n, 3), divmod(3, n), pow(n, 2), pow(n, 2, 5), n ** 3,
            math.trunc(n), math.floor(n), math.ceil(n)]


@program
def broken_dunder_return_types():
    class BadLen:
        def __len__(self):
            return -1

    class BadHash:
        def __hash__(self):
            return "h"

    class BadStr:
        def __str__(self):
            return 5

    class BadIndex:
        def __index__(self):
            return 1.5

    class BadIter:
        def __iter__(self):
            return 5
    errors = []
    for thunk in (lambda: len(BadLen()), lambda: hash(BadHash()), lambda: str(BadStr()), lambda: [1][BadIndex()],
                  lambda: iter(BadIter()), lambda: list(BadIter())):
        try:
            thunk()
        except (TypeError, ValueError) as e:
            errors.append((type(e).__name__, str(e)))
    return errors


@program
def contains_falls_back_to_iter_then_getitem():
    class ByIter:
        def __iter__(self):
            return iter([1, 2, 3])

    class ByGetitem:
        def __getitem__(self, i):
            if i > 2:
                raise IndexError
            return i * 10

    class NotContainer:
        pass
    out = [2 in ByIter(), 5 in ByIter(), 20 in ByGetitem(), 15 in ByGetitem()]
    try:
        1 in NotContainer()
    except TypeError as e:
        out.append(str(e))
    return out


@program
def iter_set_to_none_blocks_iteration():
    class Blocked(list):
        __iter__ = None
    try:
        iter(Blocked([1]))
    except TypeError as e:
        return str(e)


@program
def dunder_lookup_bypasses_instance_attributes():
    class C:
        def __len__(self):
            return 1
    c = C()
    c.__len__ = lambda: 99
    return len(c), c.__len__()


@program
def getitem_with_negative_index_and_len():
    class Seq:
        def __len__(self):
            return 3

        def __getitem__(self, i):
            if isinstance(i, slice):
                return ("slice", i.indices(3))
            if i < 0:
                i += len(self)
            if not 0 <= i < 3:
                raise IndexError("out of range")
            return "abc"[i]
    s = Seq()
    return s[-1], s[0:2], s[::-1], list(s), list(reversed(s))


@program
def bool_of_object_with_len_and_bool_precedence():
    class Both:
        def __bool__(self):
            return True

        def __len__(self):
            return 0

    class LenOnly:
        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n
    return bool(Both()), bool(LenOnly(0)), bool(LenOnly(2)), [x for x in (LenOnly(0), LenOnly(1)) if x][0].n


@program
def comparison_chain_with_user_objects_returning_non_bool():
    class Weird:
        def __lt__(self, other):
            return "truthy-string"

        def __gt__(self, other):
            return 0
    w = Weird()
    return w < 1, (w < 1) and "next", 1 < w < 2, w > 1, 1 < w


@program
def unary_and_binary_dunders_missing_errors():
    class Empty:
        pass
    errors = []
    e = Empty()
    for thunk in (lambda: -e, lambda: +e, lambda: ~e, lambda: e + 1, lambda: 1 - e, lambda: e @ e, lambda: e[0],
                  lambda: len(e), lambda: e(), lambda: abs(e)):
        try:
            thunk()
        except TypeError as e2:
            errors.append(str(e2))
    return errors


@program
def missing_and_setitem_on_dict_subclass():
    class Tally(dict):
        def __missing__(self, key):
            self[key] = 0
            return 0

        def __setitem__(self, key, value):
            super().__setitem__(key, value * 1)
    t = Tally()
    for w in "abca":
        t[w] += 1
    return dict(t), t.get("z"), "z" in t
