"""Calls and argument binding: positional-only, keyword-only, defaults, *args/**kwargs, and binding errors
(whose messages must be CPython's own)."""
import functools

from . import call, program


def full_signature(a, b=2, /, c=3, *args, d, e=5, **kwargs):
    return a, b, c, args, d, e, kwargs


def simple(x, y):
    return x - y


def keyword_only(*, key, other=1):
    return key, other


def positional_only(a, b, /):
    return a, b


def returns_nothing():
    pass


def type_errors(*thunks):
    """The message of the TypeError each thunk raises (interpreted too: it is part of the program)."""
    errors = []
    for thunk in thunks:
        try:
            thunk()
        except TypeError as e:
            errors.append(str(e))
    return errors


@program
def positional_and_keyword():
    return [simple(5, 3), simple(x=5, y=3), simple(5, y=3), simple(y=3, x=5)]


@program(cases=[call(1, d=4), call(1, 2, 3, 4, 5, d=6, e=7, f=8), call(a=1, d=2)])
def full_signature_binding(*args, **kwargs):
    return full_signature(*args, **kwargs)


@program
def defaults_are_evaluated_once():
    def append_to(x, acc=[]):
        acc.append(x)
        return acc
    append_to(1)
    append_to(2)
    return append_to(3), append_to.__defaults__


@program
def defaults_evaluated_at_definition_time():
    n = 1

    def f(x=n):
        return x
    n = 2
    return f(), n


@program
def kwdefaults_and_annotations():
    def f(a: int, *, b: str = "b", c=None) -> tuple:
        return a, b, c
    return f(1), f(2, c=3), f.__kwdefaults__, sorted(f.__annotations__)


@program
def star_args_unpacking_in_call():
    args = [1, 2]
    more = (3,)
    kw = {"d": 4}
    return full_signature(*args, *more, **kw, e=9)


@program
def double_star_merging():
    a = {"d": 1}
    b = {"e": 2, "z": 3}
    return full_signature(0, **a, **b)


@program
def kwargs_collects_in_order():
    def f(**kw):
        return list(kw.items())
    return f(z=1, a=2, m=3), f(**{"b": 1}, c=2)


@program
def varargs_is_tuple():
    def f(*args):
        return type(args).__name__, args
    return f(), f(1), f(*[1, 2], *"ab")


@program
def missing_positional_argument():
    return simple(1)


@program
def missing_two_positional_arguments():
    return simple()


@program
def too_many_positional_arguments():
    return simple(1, 2, 3)


@program
def unexpected_keyword_argument():
    return simple(1, 2, z=3)


@program
def multiple_values_for_argument():
    return simple(1, x=2)


@program
def missing_keyword_only_argument():
    return keyword_only()


@program
def keyword_only_given_positionally():
    return keyword_only(1)


@program
def positional_only_given_by_keyword():
    return positional_only(1, b=2)


@program
def positional_only_name_in_kwargs_is_allowed():
    def f(a, /, **kw):
        return a, kw
    return f(1, a=2)


@program
def full_signature_missing_keyword_only():
    return full_signature(1)


@program
def duplicate_keyword_from_double_star():
    return simple(1, **{"x": 2})


@program
def double_star_with_non_string_key():
    return simple(**{1: 2})


@program
def double_star_with_non_mapping():
    return simple(**[1, 2])


@program
def star_with_non_iterable():
    return simple(*5)


@program
def calling_non_callable():
    x = 5
    return x()


@program
def method_binding_errors():
    class C:
        def m(self, a):
            return a
    return type_errors(lambda: C().m(), lambda: C().m(1, 2), lambda: C.m(1), lambda: C().m(b=1))


@program
def lambda_binding_error():
    f = lambda a, b=1: a + b  # noqa: E731
    return f(1), f(1, 2), f()


@program
def recursion():
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)
    return fact(20), fib(12)


@program
def mutual_recursion():
    def is_even(n):
        return True if n == 0 else is_odd(n - 1)

    def is_odd(n):
        return False if n == 0 else is_even(n - 1)
    return is_even(10), is_odd(7), is_even(3)


@program
def recursion_limit_is_a_recursion_error():
    def down(n):
        return down(n + 1)
    try:
        down(0)
    except RecursionError:
        return "caught"


@program
def function_attributes():
    def f(a, b=1):
        """doc"""
        return a
    f.custom = 42
    return (f.__name__, f.__qualname__, f.__doc__, f.__defaults__, f.custom, f.__code__.co_argcount,
            f.__code__.co_varnames, f.__module__.split(".")[-1])


@program
def returns_none_implicitly():
    return returns_nothing(), (lambda: None)()


@program
def keyword_arguments_to_builtins():
    return [sorted([3, 1, 2], reverse=True), int("ff", base=16), "a,b".split(sep=","),
            dict(a=1, b=2), print("x", "y", sep="-", end="!\n"), max([1, 5, 3], default=0)]


@program
def builtin_binding_errors():
    return type_errors(lambda: len(), lambda: len([], []), lambda: int("1", bas=2), lambda: sorted([], 1),
                       lambda: "x".join())


@program
def callable_objects():
    class Adder:
        def __init__(self, n):
            self.n = n

        def __call__(self, x, *, times=1):
            return (x + self.n) * times
    add = Adder(3)
    return add(1), add(1, times=3), callable(add), callable(5)


@program
def partial_application():
    p = functools.partial(full_signature, 1, d=10)
    return p(2, 3, 4), p(e=0), p.args, p.keywords


@program
def many_arguments():
    def f(a, b, c, d, e, f, g, h, i, j, k=11, *rest, l=12, **kw):
        return a + b + c + d + e + f + g + h + i + j + k + l + sum(rest) + sum(kw.values())
    return f(*range(1, 15), l=100, m=1000)


@program
def call_function_with_keyword_splat_only():
    def f(**kw):
        return kw
    return f(**{}), f(**{"a": 1}, **{"b": 2})


@program
def star_call_of_builtin_and_method():
    args = ([3, 1, 2],)
    kw = {"reverse": True}
    s = "a-b-c"
    return sorted(*args, **kw), s.split(*["-"]), max(*[4, 9, 2])


@program
def nested_function_calls_in_arguments():
    def f(*a):
        return sum(a)
    return f(f(1, 2), f(f(3), 4), *[f(5, 6)])


@program
def keyword_only_after_varargs_and_defaults_mix():
    def f(a, b=2, *rest, c, d=4, **extra):
        return a, b, rest, c, d, extra
    return f(1, c=3), f(1, 2, 3, 4, c=5, z=6), f(a=1, c=0, b=9)


@program
def argument_names_that_look_like_builtins_or_self():
    class K:
        def m(this, self=1, cls=2):
            return type(this).__name__, self, cls
    return K().m(), K().m(self="s", cls="c"), K.m(K(), 5)


@program
def unexpected_keyword_to_kwonly_function_lists_correct_name():
    def f(*, alpha, beta=1):
        return alpha
    errors = []
    for kwargs in ({"alpha": 1, "gamma": 2}, {"beta": 1}, {}):
        try:
            f(**kwargs)
        except TypeError as e:
            errors.append(str(e))
    return errors


@program
def too_many_positional_with_defaults_and_kwonly():
    def f(a, b=1, *, c=2):
        return a
    errors = []
    for args in ((1, 2, 3), (1, 2, 3, 4)):
        try:
            f(*args)
        except TypeError as e:
            errors.append(str(e))
    try:
        f(1, 2, 3, c=4)
    except TypeError as e:
        errors.append(str(e))
    return errors


@program
def missing_many_arguments_message():
    def f(a, b, c, d, *, e, f):
        return a
    errors = []
    for args in ((), (1,), (1, 2, 3, 4)):
        try:
            f(*args)
        except TypeError as e:
            errors.append(str(e))
    return errors


@program
def generator_and_coroutine_functions_bind_errors_at_call_time():
    def gen(a):
        yield a

    async def coro(a):
        return a
    return type_errors(lambda: gen(), lambda: coro(1, 2))


@program
def namedtuple_new_binding_error_names_its_qualname():
    import collections
    Point = collections.namedtuple("Point", "x y")
    return type_errors(lambda: Point(1), lambda: Point(1, 2, 3), lambda: Point(1, z=2), lambda: Point(1, x=2))


@program
def binding_errors_read_names_and_defaults_changed_after_creation():
    def f(a, b=1, /, c=2, *, d, e=3):
        return a, b, c, d, e
    f.__name__ = "renamed"
    f.__qualname__ = "Owner.renamed"
    f.__defaults__ = (10,)
    f.__kwdefaults__ = {"d": 20}
    return [f(1, 2), *type_errors(lambda: f(), lambda: f(1, 2, 3, 4), lambda: f(1, b=2), lambda: f(1, x=2),
                                   lambda: f(1, c=2, **{"c": 3}))]
