"""Builtins that call back into Python code: map, filter, sorted/min/max with key, functools.reduce,
functools.partial, iter with a sentinel, zip, enumerate, and callbacks that raise or have side effects."""
import functools
import itertools
import operator

from . import program


@program
def map_and_filter_with_user_functions():
    def square(v):
        return v * v

    def odd(v):
        return v % 2 == 1
    return (list(map(square, range(5))), list(filter(odd, range(7))), list(map(operator.add, [1, 2], [10, 20])),
            list(filter(None, [0, 1, "", "a", None])), type(map(square, [])).__name__)


@program
def map_is_lazy():
    log = []

    def record(v):
        log.append(v)
        return v
    m = map(record, [1, 2, 3])
    log.append("created")
    first = next(m)
    return first, log, list(m), log


@program
def sorted_min_max_with_key():
    words = ["pear", "fig", "banana", "kiwi", "apple"]
    return (sorted(words, key=len), sorted(words, key=lambda w: (len(w), w), reverse=True),
            min(words, key=len), max(words, key=lambda w: w[-1]), max([], key=len, default="none"),
            min(3, 1, 2, key=lambda v: -v))


@program
def sort_is_stable_and_key_called_once_each():
    calls = []

    def key(pair):
        calls.append(pair[1])
        return pair[0]
    data = [(1, "a"), (0, "b"), (1, "c"), (0, "d")]
    data.sort(key=key)
    return data, calls


@program
def key_function_raises():
    def bad_key(v):
        if v == 3:
            raise ValueError("bad value 3")
        return v
    return sorted([5, 3, 1], key=bad_key)


@program
def reduce_and_accumulate():
    return (functools.reduce(lambda a, b: a * b, range(1, 6)), functools.reduce(operator.add, [], 100),
            list(itertools.accumulate([1, 2, 3, 4], lambda a, b: a + b * 10)))


@program
def reduce_of_empty_without_initial():
    return functools.reduce(operator.add, [])


@program
def map_and_filter_objects_behave_as_natively():
    # (an observed VM runs map/filter over interpreted code: they must still be map/filter objects)
    def stop_at_three(v):
        if v == 3:
            raise StopIteration  # ends a map's iteration; a generator would turn it into RuntimeError
        return v * 10
    m, f = map(stop_at_three, range(6)), filter(lambda v: v % 2, [1, 2, 3, 0, 5])
    return (type(m).__name__, isinstance(f, filter), repr(m).startswith("<map object"), list(m), list(m),
            list(f), list(map(lambda a, b, c: a + b + c, [1, 2, 3], (10, 20), "xyz" and [100, 200, 300])),
            list(filter(None, map(lambda v: v - 2, range(5)))), next(iter(map(str, [7]))))


@program
def map_filter_reduce_check_their_arguments_when_called():
    out = []
    for make in (lambda: map(len, 5), lambda: filter(None, 5), lambda: functools.reduce(max, 5),
                 lambda: functools.reduce(lambda a, b: a, [1], 2, 3), lambda: map(len),
                 lambda: filter(len, [1], [2]), lambda: map(len, [1], strict=True)):
        try:
            made = make()
            out.append(("made", type(made).__name__))
        except TypeError as e:
            out.append(("TypeError", str(e)))
    return out


@program
def map_callback_raises_midway():
    seen = []

    def check(v):
        seen.append(v)
        if v > 1:
            raise ValueError(f"too big: {v}")
        return -v
    m = map(check, [0, 1, 2, 3])
    first = [next(m), next(m)]
    try:
        next(m)
    except ValueError as e:
        return first, str(e), seen, list(m)


@program
def partial_objects_compose():
    def power(base, exp, *, mod=None):
        return pow(base, exp, mod)
    square = functools.partial(power, exp=2)
    cube_mod = functools.partial(power, exp=3, mod=7)
    nested = functools.partial(functools.partial(power, 2), mod=5)
    return square(9), cube_mod(4), nested(10), list(map(square, [1, 2]))


@program
def iter_with_sentinel():
    data = [3, 2, 1, 0, 5]
    pos = [0]

    def read():
        v = data[pos[0]]
        pos[0] += 1
        return v
    return list(iter(read, 0)), pos


@program
def zip_and_enumerate():
    a = [1, 2, 3]
    b = "xy"
    return (list(zip(a, b)), list(zip(*[(1, 2), (3, 4)])), list(enumerate(b)), list(enumerate(a, 5)),
            dict(zip(b, a)), list(zip())) + ((list(zip(a, a, strict=True)),))


@program
def zip_strict_length_mismatch():
    return list(zip([1, 2], [1], strict=True))


@program
def any_all_sum_with_generators_calling_back():
    calls = []

    def check(v):
        calls.append(v)
        return v > 2
    return any(check(v) for v in range(10)), all(check(v) for v in [5, 1, 9]), calls


@program
def functools_lru_cache_and_wraps():
    calls = []

    @functools.lru_cache(maxsize=None)
    def fib(n):
        calls.append(n)
        return n if n < 2 else fib(n - 1) + fib(n - 2)

    def deco(f):
        @functools.wraps(f)
        def wrapper(*a):
            return f(*a) + 1
        return wrapper

    @deco
    def named(x):
        """named doc"""
        return x
    return fib(15), len(calls), named(1), named.__name__, named.__doc__, fib.cache_info().hits


@program
def cmp_to_key_and_total_ordering():
    def compare(a, b):
        return (a % 3) - (b % 3) or a - b

    @functools.total_ordering
    class Version:
        def __init__(self, v):
            self.v = v

        def __eq__(self, o):
            return self.v == o.v

        def __lt__(self, o):
            return self.v < o.v
    return sorted(range(7), key=functools.cmp_to_key(compare)), Version(2) >= Version(1), Version(1) > Version(2)


@program
def itertools_with_callbacks():
    return (list(itertools.takewhile(lambda v: v < 3, range(10))),
            list(itertools.dropwhile(lambda v: v < 8, range(10))),
            [(k, list(g)) for k, g in itertools.groupby("aabccc")],
            list(itertools.starmap(pow, [(2, 3), (3, 2)])), list(itertools.filterfalse(str.isdigit, "a1b2")),
            [(k, len(list(g))) for k, g in itertools.groupby(range(6), key=lambda v: v // 4)])


@program
def builtin_functions_mixed():
    return (list(reversed(range(4))), sum([0.1] * 10), round(sum([0.1] * 10), 5), abs(-3), divmod(17, 5),
            isinstance(3, (str, int)), hash("abc") == hash("abc"), len({1: 2}), list(range(10, 0, -3)),
            chr(65) + str(ord("a")), format(255, "x"), pow(3, 4), sorted({3: 1, 1: 2}), any([]), all([]))


@program
def callback_raising_stops_map():
    def f(v):
        if v == 2:
            raise KeyError(v)
        return v
    out = []
    try:
        for v in map(f, [1, 2, 3]):
            out.append(v)
    except KeyError as e:
        out.append(("error", e.args))
    return out


@program
def dict_and_list_methods_with_callbacks():
    class Key:
        def __init__(self, k):
            self.k = k

        def __hash__(self):
            return hash(self.k)

        def __eq__(self, other):
            return self.k == other.k
    d = {Key(1): "a"}
    d.setdefault(Key(2), "b")
    lst = [Key(3), Key(1)]
    return d[Key(1)], len(d), Key(1) in lst, lst.index(Key(1)), lst.count(Key(3)), d.get(Key(9), "missing")


@program
def getattr_setattr_hasattr_builtins():
    class O:
        pass
    o = O()
    setattr(o, "x", 1)
    return getattr(o, "x"), getattr(o, "y", "default"), hasattr(o, "x"), vars(o), delattr(o, "x"), vars(o)


@program
def getattr_missing_without_default():
    return getattr(object(), "nope")


@program
def min_max_empty_errors():
    out = []
    for thunk in (lambda: min([]), lambda: max((), key=len)):
        try:
            thunk()
        except ValueError as e:
            out.append(str(e))
    return out


@program
def sum_with_start_and_user_objects():
    class Acc:
        def __init__(self, v):
            self.v = v

        def __add__(self, other):
            return Acc(self.v + (other.v if isinstance(other, Acc) else other))

        def __radd__(self, other):
            return Acc(other + self.v)
    return sum([Acc(1), Acc(2)]).v, sum([[1], [2]], []), sum(range(5), start=10)


def _caller():
    import sys
    return sys._getframe(2).f_code.co_name


@program
def callbacks_see_the_calling_function_as_their_caller():
    # Natively the builtins below have no Python frame, so a callback's caller is this function.
    def probe(v):
        seen.append(_caller())
        return v
    seen = []
    sorted([2, 1], key=probe)
    list(map(probe, [1]))
    list(filter(probe, [1]))
    min([3], key=probe)
    max([3], key=probe)
    functools.reduce(lambda a, b: probe(b), [1, 2])
    functools.partial(probe, 5)()
    [7, 8].sort(key=probe)
    return sorted(set(seen))


@program
def native_callbacks_from_list_sort_and_dict_methods():
    order = []

    def key(v):
        order.append(v)
        return -v
    data = [3, 1, 2]
    data.sort(key=key)
    d = {}
    d.setdefault("k", []).append(1)
    return data, order, d


@program
def enumerate_and_zip_over_generator_that_raises():
    def gen():
        yield 1
        yield 2
        raise KeyError("midway")
    out = []
    try:
        for i, v in enumerate(gen()):
            out.append((i, v))
    except KeyError as e:
        out.append(repr(e))
    try:
        list(zip(gen(), "abcdef"))
    except KeyError as e:
        out.append(("zip", repr(e)))
    return out


@program
def print_keyword_variants():
    print("a", "b", sep=None, end=None)
    print("c", file=None)
    print(*[1, 2, 3], sep=", ")
    print()
    return None


@program
def list_extend_by_a_generator_that_reads_the_list():
    perm = [2, 0]
    perm.extend(i for i in range(5) if i not in perm)
    seen = []
    xs = [1]
    list.extend(xs, (seen.append(len(xs)) or len(xs) * 10 for _ in range(3)))

    def gen():
        yield 1
        raise ValueError("midway")
    ys = [0]
    try:
        ys.extend(gen())
    except ValueError as e:
        ys.append(repr(e))
    ys.extend(iter([7, 8]))
    return perm, xs, seen, ys



@program
def warnings_warn_every_way_of_calling_it():
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.warn("plain")
        warnings.warn("with category", DeprecationWarning)
        warnings.warn(message="by keyword", category=RuntimeWarning, stacklevel=1)
        warnings.warn(UserWarning("an instance"))
    return [(w.category.__name__, str(w.message)) for w in caught]
