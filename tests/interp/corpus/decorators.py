"""Decorators: function and class decorators, stacked decorators, decorators with arguments, decorator
factories keeping state, method decorators, and arbitrary decorator expressions."""
import functools

from . import program

call_log = []


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        call_log.append(fn.__name__)
        return fn(*args, **kwargs)
    return wrapper


@program
def simple_decorator_with_module_state():
    @logged
    def add(a, b):
        return a + b
    return add(1, 2), add(3, 4), add.__name__, call_log


@program
def stacked_decorators_apply_bottom_up():
    order = []

    def tag(name):
        def deco(fn):
            order.append(name)

            def wrapper():
                return f"<{name}>{fn()}</{name}>"
            return wrapper
        return deco

    @tag("outer")
    @tag("inner")
    def body():
        return "text"
    return body(), order


@program
def decorator_with_arguments_and_state():
    def retry(times):
        def deco(fn):
            def wrapper(*a):
                last = None
                for attempt in range(times):
                    try:
                        return fn(attempt, *a)
                    except ValueError as e:
                        last = e
                raise RuntimeError(f"gave up after {times}") from last
            return wrapper
        return deco

    @retry(3)
    def flaky(attempt, target):
        if attempt < target:
            raise ValueError(attempt)
        return attempt

    result = flaky(2)
    try:
        flaky(5)
    except RuntimeError as e:
        return result, str(e), str(e.__cause__)


@program
def class_based_decorator():
    class CountCalls:
        def __init__(self, fn):
            functools.update_wrapper(self, fn)
            self.fn = fn
            self.calls = 0

        def __call__(self, *a, **k):
            self.calls += 1
            return self.fn(*a, **k)

    @CountCalls
    def hello(name="x"):
        return "hello " + name
    hello()
    hello("y")
    return hello("z"), hello.calls, hello.__name__


@program
def method_decorators_and_descriptors():
    def twice(fn):
        def wrapper(self, *a):
            return [fn(self, *a), fn(self, *a)]
        return wrapper

    class C:
        def __init__(self):
            self.n = 0

        @twice
        def bump(self):
            self.n += 1
            return self.n

        @property
        @logged
        def doubled(self):
            return self.n * 2
    c = C()
    return c.bump(), c.doubled, call_log


@program
def class_decorator_modifies_and_replaces():
    def register(cls):
        cls.registered = True
        return cls

    def replace(cls):
        return {"replaced": cls.__name__}

    @register
    class A:
        pass

    @replace
    class B:
        pass
    return A.registered, B


@program
def arbitrary_decorator_expressions():
    decorators = {"upper": lambda f: lambda: f().upper()}
    pick = [None, lambda f: lambda: f() + "!"]

    @decorators["upper"]
    def a():
        return "a"

    @pick[1]
    def b():
        return "b"

    @(lambda f: f)
    def c():
        return "c"
    return a(), b(), c()


@program
def decorator_evaluation_order():
    order = []

    def make(name):
        order.append(("make", name))

        def deco(fn):
            order.append(("apply", name))
            return fn
        return deco

    @make("first")
    @make("second")
    def f(x=order.append("defaults")):
        return "f"
    return f(), order


@program
def cache_decorator_on_method():
    class Calc:
        def __init__(self):
            self.calls = 0

        @functools.cached_property
        def heavy(self):
            self.calls += 1
            return 42
    c = Calc()
    return c.heavy, c.heavy, c.calls, "heavy" in vars(c)


@program
def decorator_raising_at_definition():
    def broken(fn):
        raise TypeError(f"cannot decorate {fn.__name__}")

    @broken
    def victim():
        pass


@program
def singledispatch_decorator():
    @functools.singledispatch
    def describe(v):
        return "object"

    @describe.register
    def _(v: int):
        return "int"

    @describe.register(list)
    def _(v):
        return f"list of {len(v)}"
    return describe(1), describe([1, 2]), describe("s"), describe(True)
