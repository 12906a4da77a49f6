"""Classes: bodies, construction (__new__/__init__), properties and descriptors, attribute hooks
(__getattr__/__getattribute__/__setattr__), metaclasses, __init_subclass__, __class_getitem__, slots,
dataclasses, namedtuples, enums. Operators and other dunder protocols are in dunders.py."""
import collections
import dataclasses
import enum
import typing

from . import program


class Counted:
    instances = 0

    def __init__(self):
        Counted.instances += 1


@program
def class_with_init_and_methods():
    class Account:
        rate = 0.5

        def __init__(self, owner, balance=0):
            self.owner = owner
            self.balance = balance

        def deposit(self, amount):
            self.balance += amount
            return self

        def interest(self):
            return self.balance * self.rate
    a = Account("ann").deposit(10).deposit(5)
    return a.owner, a.balance, a.interest(), Account.rate, vars(a)


@program
def module_level_class_and_class_attribute_write():
    Counted()
    Counted()
    return Counted.instances


@program
def property_get_set_delete():
    class Temp:
        def __init__(self):
            self._c = 0

        @property
        def celsius(self):
            return self._c

        @celsius.setter
        def celsius(self, v):
            if v < -273:
                raise ValueError("too cold")
            self._c = v

        @celsius.deleter
        def celsius(self):
            self._c = None
    t = Temp()
    t.celsius = 25
    first = t.celsius
    try:
        t.celsius = -300
    except ValueError as e:
        err = str(e)
    del t.celsius
    return first, err, t.celsius


@program
def readonly_property_error():
    class P:
        @property
        def v(self):
            return 1
    p = P()
    p.v = 2


@program
def custom_data_descriptor():
    class Typed:
        def __set_name__(self, owner, name):
            self.name = "_" + name

        def __get__(self, obj, objtype=None):
            if obj is None:
                return self
            return getattr(obj, self.name, None)

        def __set__(self, obj, value):
            if not isinstance(value, int):
                raise TypeError(f"{self.name} must be int")
            setattr(obj, self.name, value)

    class Point:
        x = Typed()
        y = Typed()

        def __init__(self, x, y):
            self.x = x
            self.y = y
    p = Point(1, 2)
    try:
        p.x = "bad"
    except TypeError as e:
        err = str(e)
    return p.x, p.y, err, type(Point.x).__name__, sorted(vars(p))


@program
def non_data_descriptor_shadowed_by_instance():
    class Lazy:
        def __get__(self, obj, objtype=None):
            obj.value = "computed"
            return "from-descriptor"

    class C:
        value = Lazy()
    c = C()
    return c.value, c.value, C.__dict__["value"].__class__.__name__


@program
def staticmethod_and_classmethod():
    class K:
        count = 0

        @staticmethod
        def add(a, b):
            return a + b

        @classmethod
        def make(cls, n):
            cls.count += n
            return cls

    class L(K):
        pass
    return K.add(1, 2), K().add(3, 4), K.make(2) is K, L.make(5) is L, K.count, L.count


@program
def getattr_fallback_and_getattribute():
    class Proxy:
        def __init__(self, target):
            self._target = target
            self.log = []

        def __getattr__(self, name):
            self.log.append(name)
            return getattr(self._target, name)

    class Logged:
        def __init__(self):
            self.hits = []

        def __getattribute__(self, name):
            if name != "hits":
                object.__getattribute__(self, "hits").append(name)
            if name == "secret":
                raise AttributeError("no secret")
            return object.__getattribute__(self, name)

        def __getattr__(self, name):
            return f"fallback:{name}"
    p = Proxy([3, 1, 2])
    p.append(0)
    lg = Logged()
    return p.log, p._target, lg.secret, lg.hits, hasattr(p, "nothing_here")


@program
def setattr_and_delattr_hooks():
    class Recorder:
        def __init__(self):
            object.__setattr__(self, "events", [])

        def __setattr__(self, name, value):
            self.events.append(("set", name, value))
            object.__setattr__(self, name, value * 2)

        def __delattr__(self, name):
            self.events.append(("del", name))
            object.__delattr__(self, name)
    r = Recorder()
    r.a = 1
    r.a += 1
    del r.a
    setattr(r, "b", 5)
    return r.events, r.b


@program
def attribute_error_messages():
    class C:
        pass
    c = C()
    errors = []
    for thunk in (lambda: c.missing, lambda: C.missing, lambda: (5).nope, lambda: delattr(c, "gone")):
        try:
            thunk()
        except AttributeError as e:
            errors.append(str(e))
    return errors


@program
def dunder_new_and_init():
    class Singleton:
        _instance = None
        inits = 0

        def __new__(cls, *args):
            if cls._instance is None:
                cls._instance = super().__new__(cls)
            return cls._instance

        def __init__(self, v):
            Singleton.inits += 1
            self.v = v
    a = Singleton(1)
    b = Singleton(2)
    return a is b, a.v, Singleton.inits


@program
def new_returning_other_type_skips_init():
    class Weird:
        def __new__(cls, v):
            return v * 2

        def __init__(self, v):
            raise RuntimeError("not called")
    return Weird(21)


@program
def init_returning_value_is_error():
    class Bad:
        def __init__(self):
            return 5
    return Bad()


@program
def immutable_subclass_with_new():
    class Celsius(float):
        def __new__(cls, value):
            return super().__new__(cls, round(value, 1))

        def kelvin(self):
            return self + 273.15
    c = Celsius(21.456)
    return c, c.kelvin(), isinstance(c, float), type(c).__name__


@program
def subclass_builtin_list_and_dict():
    class Stack(list):
        def push(self, v):
            self.append(v)
            return self

    class Default(dict):
        def __missing__(self, key):
            return key * 2
    s = Stack([1]).push(2).push(3)
    d = Default(a=1)
    return s, len(s), s.pop(), d["a"], d["zz"], "zz" in d


@program
def metaclass_controls_creation():
    class Registry(type):
        classes = []

        def __new__(mcls, name, bases, ns, **kw):
            ns["tag"] = name.lower()
            cls = super().__new__(mcls, name, bases, ns)
            mcls.classes.append(name)
            return cls

        def __call__(cls, *args):
            inst = super().__call__(*args)
            inst.made_by_meta = True
            return inst

    class Base(metaclass=Registry):
        def __init__(self, v=0):
            self.v = v

    class Child(Base):
        pass
    c = Child(3)
    return Registry.classes, Child.tag, c.v, c.made_by_meta, type(Child).__name__


@program
def metaclass_prepare_and_keywords():
    class Ordered(type):
        @classmethod
        def __prepare__(mcls, name, bases, **kw):
            return {"prepared": kw.get("flag")}

        def __new__(mcls, name, bases, ns, **kw):
            return super().__new__(mcls, name, bases, dict(ns))

        def __init__(cls, name, bases, ns, **kw):
            super().__init__(name, bases, ns)

    class C(metaclass=Ordered, flag="on"):
        a = 1
    return C.prepared, C.a


@program
def init_subclass_hook():
    class Plugin:
        plugins = []

        def __init_subclass__(cls, /, name=None, **kw):
            super().__init_subclass__(**kw)
            Plugin.plugins.append(name or cls.__name__)

    class A(Plugin):
        pass

    class B(Plugin, name="bee"):
        pass
    return Plugin.plugins


@program
def class_getitem_hook():
    class Box:
        def __class_getitem__(cls, item):
            return f"Box[{item.__name__}]"
    return Box[int], Box[str], list[int] == list[int], str(dict[str, int])


@program
def slots_restrict_attributes():
    class P:
        __slots__ = ("x", "y")

        def __init__(self, x):
            self.x = x
    p = P(1)
    p.y = 2
    try:
        p.z = 3
    except AttributeError as e:
        err = str(e)
    try:
        P(0).y
    except AttributeError as e:
        err2 = str(e)
    return p.x, p.y, err, err2, hasattr(p, "__dict__")


@program
def dataclass_features():
    @dataclasses.dataclass(order=True)
    class Item:
        priority: int
        name: str = dataclasses.field(compare=False, default="x")
        tags: list = dataclasses.field(default_factory=list)

        def __post_init__(self):
            self.tags.append("new")
    a = Item(2, "b")
    b = Item(1)
    return (sorted([a, b])[0].priority, a == Item(2, "other"), repr(b), dataclasses.asdict(a),
            dataclasses.replace(a, priority=5).priority)


@program
def frozen_dataclass_assignment_error():
    @dataclasses.dataclass(frozen=True)
    class F:
        v: int
    f = F(1)
    f.v = 2


@program
def namedtuple_usage():
    Point = collections.namedtuple("Point", ["x", "y"], defaults=[0])
    p = Point(1)
    q = p._replace(y=5)
    x, y = q
    return p, q, x + y, q._asdict(), Point._fields, p[0], isinstance(p, tuple)


@program
def typing_namedtuple_class():
    class Pair(typing.NamedTuple):
        left: int
        right: str = "r"

        def swap(self):
            return (self.right, self.left)
    p = Pair(1)
    return p, p.swap(), Pair._field_defaults


@program
def enum_usage():
    class Color(enum.Enum):
        RED = 1
        GREEN = 2

        def describe(self):
            return f"{self.name}={self.value}"

    class Flag(enum.IntFlag):
        R = 4
        W = 2
    return (Color.RED, Color(2), Color["GREEN"].describe(), list(Color), Color.RED is Color(1),
            int(Flag.R | Flag.W), Flag.R in (Flag.R | Flag.W), len(Color))


@program
def enum_auto_and_lookup_error():
    class Dir(enum.Enum):
        UP = enum.auto()
        DOWN = enum.auto()
    values = [d.value for d in Dir]
    try:
        Dir(99)
    except ValueError as e:
        return values, str(e)


@program
def class_attribute_vs_instance_attribute():
    class C:
        shared = []
        n = 0

        def add(self, v):
            self.shared.append(v)
            self.n += 1
    a, b = C(), C()
    a.add(1)
    b.add(2)
    a.add(3)
    return C.shared, a.n, b.n, C.n, "n" in vars(a)


@program
def dynamic_class_with_type():
    def hello(self):
        return "hi " + self.name
    K = type("K", (object,), {"name": "k", "hello": hello})
    Sub = type("Sub", (K,), {})
    return K().hello(), Sub().hello(), Sub.__mro__[1].__name__, K.__name__


@program
def bound_method_objects():
    class C:
        def m(self):
            return self.v

    c = C()
    c.v = 7
    bm = c.m
    return bm(), bm.__self__ is c, bm.__func__ is C.m, C.m(c), getattr(c, "m")()


@program
def class_decorator_and_class_attributes():
    def add_greeting(cls):
        cls.greet = lambda self: f"hello from {type(self).__name__}"
        return cls

    @add_greeting
    class A:
        """Doc of A."""
    return A().greet(), A.__doc__, A.__name__, A.__qualname__.split(".")[-1], A.__module__.split(".")[-1]


@program
def class_body_runs_code():
    class Table:
        rows = []
        for i in range(3):
            rows.append(i * i)
        total = sum(rows)
        del i
        if total > 3:
            big = True
        label: str = "t"
        count: int
    return Table.rows, Table.total, Table.big, hasattr(Table, "i"), Table.__annotations__


@program
def class_body_delete_and_name_error():
    class C:
        a = 1
        del a
    return hasattr(C, "a")


@program
def isinstance_and_issubclass_hooks():
    class Meta(type):
        def __instancecheck__(cls, inst):
            return inst == "magic"

        def __subclasscheck__(cls, sub):
            return sub is int

    class Anything(metaclass=Meta):
        pass
    return isinstance("magic", Anything), isinstance(1, Anything), issubclass(int, Anything), \
        issubclass(str, Anything)


@program
def mro_and_multiple_inheritance():
    class A:
        def who(self):
            return "A"

    class B(A):
        pass

    class C(A):
        def who(self):
            return "C"

    class D(B, C):
        pass
    return [k.__name__ for k in D.__mro__], D().who()


@program
def inconsistent_mro_error():
    class A:
        pass

    class B(A):
        pass

    class C(A, B):
        pass


@program
def abstract_base_class():
    import abc

    class Shape(abc.ABC):
        @abc.abstractmethod
        def area(self):
            ...

    class Sq(Shape):
        def __init__(self, s):
            self.s = s

        def area(self):
            return self.s ** 2
    try:
        Shape()
    except TypeError as e:
        err = str(e)
    return Sq(3).area(), err, isinstance(Sq(1), Shape)


@program
def mro_entries_in_bases():
    class Marker:
        def __mro_entries__(self, bases):
            return (dict,)

    class Mapping(Marker()):
        pass
    m = Mapping(a=1)
    return [c.__name__ for c in Mapping.__mro__], Mapping.__orig_bases__[0].__class__.__name__, m["a"]


@program
def generic_alias_bases():
    T = typing.TypeVar("T")

    class Box(typing.Generic[T]):
        def __init__(self, item):
            self.item = item

    class IntBox(Box[int]):
        pass
    return IntBox(3).item, [c.__name__ for c in IntBox.__mro__], len(IntBox.__orig_bases__)


@program
def metaclass_is_a_plain_function():
    def meta(name, bases, ns):
        ns["made_by"] = "function"
        return type(name, bases, ns)

    class C(metaclass=meta):
        x = 1
    return C.made_by, C.x, type(C).__name__


@program
def class_body_locals_and_exec_write_namespace():
    class C:
        locals()["injected"] = "via locals"
        exec("executed = 42")
        names = sorted(k for k in vars() if not k.startswith("__"))
    return C.injected, C.executed, C.names


@program
def global_statement_in_class_body():
    class C:
        global created_in_class_body
        created_in_class_body = "global"
        attr = created_in_class_body
    return C.attr, "created_in_class_body" in globals(), hasattr(C, "created_in_class_body")


@program
def slots_conflicting_with_class_variable():
    class Bad:
        __slots__ = ("x",)
        x = 1


@program
def assign_instance_class_and_function_code():
    class A:
        def who(self):
            return "A"

    class B:
        def who(self):
            return "B"

    def f():
        return "f"

    def g():
        return "g"
    a = A()
    a.__class__ = B
    f.__code__ = g.__code__
    f.__defaults__ = None
    return a.who(), type(a).__name__, f()


@program
def dunder_methods_that_are_not_functions():
    import operator

    class Weird:
        __len__ = staticmethod(lambda: 3).__func__.__get__(object())  # a bound method object
        __getitem__ = dict.__getitem__

    class Adder(dict):
        __add__ = lambda self, other: ("added", other)  # noqa: E731
        __eq__ = object.__eq__
        __hash__ = object.__hash__
        __call__ = operator.itemgetter("k")
    a = Adder(k="v")
    return a + 1, a == a, a(a), callable(a), Weird.__getitem__({1: "one"}, 1)


@program
def property_getter_sees_its_caller_frame():
    import sys

    class C:
        @property
        def caller(self):
            return sys._getframe(1).f_code.co_name

        def __getattr__(self, name):
            return sys._getframe(1).f_code.co_name
    c = C()
    return c.caller, c.anything


@program
def super_in_function_assigned_to_class_after_definition():
    def method(self):
        return super().method()

    class A:
        def method(self):
            return "A"

    class B(A):
        pass
    B.method = method
    return B().method()


@program
def init_subclass_rejects_unknown_keywords():
    class Base:
        pass

    class Child(Base, flavour="x"):
        pass


@program
def object_new_extra_arguments_error():
    class NoInit:
        pass
    return NoInit(1, 2)
