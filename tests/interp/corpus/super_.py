"""super(): zero-argument and explicit forms, cooperative multiple inheritance, classmethods, properties,
nested functions and comprehensions inside methods."""
from . import program


class Base:
    def __init__(self, v):
        self.v = v
        self.trail = ["Base"]

    def describe(self):
        return f"Base({self.v})"

    @classmethod
    def create(cls, v):
        return cls(v)


class Child(Base):
    def __init__(self, v, w):
        super().__init__(v)
        self.w = w
        self.trail.append("Child")

    def describe(self):
        return "Child+" + super().describe()

    @classmethod
    def create(cls, v):
        return super().create(v * 10)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)


class GrandChild(Child):
    def __init__(self, v):
        super().__init__(v, w=0)

    def create(self, v):  # shadows the classmethod of the bases as a plain method
        return "plain"


@program
def zero_arg_super_in_init_and_method():
    c = Child(1, 2)
    return c.v, c.w, c.trail, c.describe()


@program
def super_in_classmethod():
    class Sub(Base):
        @classmethod
        def create(cls, v):
            inst = super().create(v + 1)
            inst.via = cls.__name__
            return inst
    s = Sub.create(4)
    return s.v, s.via, type(s).__name__


@program
def super_chain_three_levels():
    g = GrandChild(5)
    return g.trail, g.describe(), g.create(1)


@program
def cooperative_multiple_inheritance():
    class Root:
        def hello(self):
            return ["Root"]

    class Left(Root):
        def hello(self):
            return ["Left"] + super().hello()

    class Right(Root):
        def hello(self):
            return ["Right"] + super().hello()

    class Bottom(Left, Right):
        def hello(self):
            return ["Bottom"] + super().hello()
    return Bottom().hello(), [c.__name__ for c in Bottom.__mro__]


@program
def cooperative_init_with_kwargs():
    class A:
        def __init__(self, **kw):
            self.log = ["A"]
            self.rest = kw

    class B(A):
        def __init__(self, b=None, **kw):
            super().__init__(**kw)
            self.log.append(("B", b))

    class C(A):
        def __init__(self, c=None, **kw):
            super().__init__(**kw)
            self.log.append(("C", c))

    class D(B, C):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.log.append("D")
    d = D(b=1, c=2, extra=3)
    return d.log, d.rest


@program
def explicit_two_argument_super():
    class A:
        def f(self):
            return "A"

    class B(A):
        def f(self):
            return "B"

    class C(B):
        def f(self):
            return super(B, self).f() + super(C, self).f()
    return C().f()


@program
def super_inside_nested_function_and_lambda():
    class A:
        def val(self):
            return 1

    class B(A):
        def val(self):
            def inner():
                return super(B, self).val() + 10
            get = lambda: super(B, self).val()  # noqa: E731
            return inner(), get(), super().val()
    return B().val()


@program
def super_in_comprehension_inside_method():
    class A:
        def item(self, i):
            return i

    class B(A):
        def items(self):
            return [super(B, self).item(i) * 2 for i in range(3)]

        def items_zero_arg(self):
            return [super().item(i) for i in range(2)]
    return B().items(), B().items_zero_arg()


@program
def super_with_property():
    class A:
        @property
        def name(self):
            return "a"

    class B(A):
        @property
        def name(self):
            return super().name.upper() + "b"
    return B().name


@program
def super_of_builtin_subclass():
    class LoudDict(dict):
        def __setitem__(self, k, v):
            super().__setitem__(k, str(v).upper())

        def get(self, k, default=None):
            return "got:" + str(super().get(k, default))
    d = LoudDict()
    d["a"] = "x"
    return dict(d), d.get("a"), d.get("zz", 0)


@program
def super_attribute_error():
    class A:
        pass

    class B(A):
        def f(self):
            return super().missing
    return B().f()


@program
def super_outside_method_error():
    def f():
        return super()
    try:
        f()
    except RuntimeError as e:
        return str(e)


@program
def super_and_class_cell_after_reassignment():
    class A:
        def who(self):
            return "A"

    class B(A):
        def who(self):
            return "B>" + super().who()
    method = B.who

    class Other(B):
        pass
    return method(Other()), B.who.__code__.co_freevars


@program
def super_with_dunder_new():
    class A:
        def __new__(cls, *args):
            inst = super().__new__(cls)
            inst.created = args
            return inst

    class B(A):
        def __new__(cls, x):
            inst = super().__new__(cls, x, "extra")
            inst.x = x
            return inst
    b = B(3)
    return b.created, b.x


@program
def super_setattr_passthrough():
    class Tracked:
        def __init__(self):
            self.__dict__["changes"] = 0

        def __setattr__(self, name, value):
            self.__dict__["changes"] += 1
            super().__setattr__(name, value)
    t = Tracked()
    t.a = 1
    t.b = 2
    return t.changes, t.a, t.b


@program
def super_in_generator_method():
    class A:
        def items(self):
            return [1, 2]

    class B(A):
        def items(self):
            for v in super().items():
                yield v * 100
            yield from super().items()
    return list(B().items())


@program
def explicit_class_cell_reference():
    class A:
        def which(self):
            return __class__.__name__

    class B(A):
        def which(self):
            return (__class__.__name__, super().which())
    return B().which()


@program
def super_with_getattr_fallback_in_base():
    class Base:
        def __getattr__(self, name):
            return f"dynamic:{name}"

    class Child(Base):
        def __getattr__(self, name):
            if name == "special":
                return "special"
            return super().__getattr__(name)
    c = Child()
    return c.special, c.other
