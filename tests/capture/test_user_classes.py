"""User classes inside and around a captured call: methods, properties, class and static methods,
inheritance with super(), dunder methods, classes defined inside, objects created inside."""
import torch

try:
    from .twin import expect_not_one_graph, fresh, differential, expect, expect_one_graph, expect_recompile, plain, \
        unsupported, Call, FromEnv
except ImportError:  # tests/capture is not a package: pytest put this folder on sys.path
    from twin import expect_not_one_graph, fresh, differential, expect, expect_one_graph, expect_recompile, plain, \
        unsupported, Call, FromEnv


def t(*shape):
    return torch.randn(*(shape or (2, 3)))


class Scaler:
    factor = 2.0

    def __init__(self, bias):
        self.bias = bias

    def __call__(self, x):
        return x * self.factor + self.bias

    @property
    def negated(self):
        return Scaler(-self.bias)

    @classmethod
    def unit(cls):
        return cls(0.0)

    @staticmethod
    def clamp(x):
        return x.clamp(-1, 1)


class Shifted(Scaler):
    factor = 3.0

    def __call__(self, x):
        return super().__call__(x) - 1


def test_method_call_on_an_argument():
    def fn(s, x):
        return s(x)

    stats = differential(plain(fn), [(Scaler(1.0), t()), (Scaler(1.0), t()), (Scaler(2.0), t())])
    expect_recompile(stats)


def test_class_attribute_read_through_the_instance():
    def fn(s, x):
        return x * s.factor

    stats = differential(plain(fn), [(Scaler(1.0), t()), (Scaler(1.0), t()), (Shifted(1.0), t())])
    expect_recompile(stats)


def test_property_classmethod_staticmethod():
    def fn(s, x):
        return Scaler.clamp(s.negated(x)) + Scaler.unit()(x)

    stats = differential(plain(fn), fresh(lambda: (Scaler(0.5), t())))
    expect_one_graph(stats)


def test_subclass_with_super():
    def fn(s, x):
        return s(x)

    stats = differential(plain(fn), fresh(lambda: (Shifted(1.0), t())))
    expect_one_graph(stats)


def test_object_type_change_recompiles():
    def fn(s, x):
        return s(x)

    stats = differential(plain(fn), [(Scaler(1.0), t()), (Scaler(1.0), t()), (Shifted(1.0), t())])
    expect_recompile(stats)


class Vec:
    def __init__(self, data):
        self.data = data

    def __add__(self, other):
        return Vec(self.data + other.data)

    def __mul__(self, k):
        return Vec(self.data * k)

    def __len__(self):
        return self.data.shape[0]

    def __getitem__(self, k):
        return self.data[k]

    def __iter__(self):
        return iter([self.data[0], self.data[-1]])


def test_operator_dunders_on_user_objects():
    def fn(a, b):
        c = a + b * 2
        return c.data, len(c), c[0]

    stats = differential(plain(fn), fresh(lambda: (Vec(t()), Vec(t()))))
    expect_one_graph(stats)


def test_user_iter_protocol():
    def fn(v):
        first, last = v
        return first - last

    stats = differential(plain(fn), fresh(lambda: (Vec(t()),)))
    expect_one_graph(stats)


def test_class_defined_inside_the_call():
    def fn(x):
        class Local:
            def __init__(self, v):
                self.v = v

            def twice(self):
                return self.v * 2
        return Local(x).twice()

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_instance_of_a_class_defined_inside_is_returned_eagerly():
    # every call makes a new class; a replay cannot hand out the first call's: it falls back
    def fn(x):
        class Local:
            pass
        obj = Local()
        obj.v = x * 2
        return obj

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect(stats, fallbacks=1)


def test_object_created_inside_and_mutated():
    def fn(x):
        acc = Vec(x)
        for k in range(3):
            acc = acc + Vec(x * k)
        acc.note = "done"
        return acc.data

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_new_object_result_holds_this_calls_tensors():
    def fn(x):
        return Vec(x.relu())

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class Accumulator:
    def __init__(self):
        self.total = None
        self.steps = 0

    def update(self, x):
        self.total = x if self.total is None else self.total + x
        self.steps += 1
        return self


def test_method_mutating_self_across_calls():
    def fn(acc, x):
        return acc.update(x * 2).total

    stats = differential(lambda: (fn, Accumulator()), fresh(lambda: (FromEnv(), t())))
    expect(stats, fallbacks=0)


class Slotted:
    __slots__ = ("w", "b")

    def __init__(self, w, b):
        self.w = w
        self.b = b


def test_slots_object_argument():
    def fn(p, x):
        return x * p.w + p.b

    stats = differential(plain(fn), fresh(lambda: (Slotted(t(), 1.0), t())))
    expect_one_graph(stats)


def test_user_object_attribute_value_change_recompiles():
    def fn(s, x):
        return x + s.bias

    def bump(env):
        env.bias = 7.0

    calls = [(FromEnv(), t()), (FromEnv(), t()), Call((FromEnv(), t()), before=bump)]
    stats = differential(lambda: (fn, Scaler(1.0)), calls)
    expect_recompile(stats)


class CountingReads:
    def __init__(self):
        self.reads = 0

    @property
    def scale(self):
        self.reads += 1
        return 2

    def __len__(self):
        self.reads += 1
        return 3


def test_property_with_a_side_effect_runs_once_per_call():
    # a guard must not run the getter again: the read counter must match eager's
    def fn(c, x):
        return x * c.scale

    stats = differential(lambda: (fn, CountingReads()), fresh(lambda: (FromEnv(), t())))
    expect_one_graph(stats)


def test_dunder_len_with_a_side_effect_runs_once_per_call():
    def fn(c, x):
        return x * len(c)

    stats = differential(lambda: (fn, CountingReads()), fresh(lambda: (FromEnv(), t())))
    expect_one_graph(stats)


class Dynamic:
    lookups = 0

    def __getattr__(self, name):
        type(self).lookups += 1
        return len(name)

    def __deepcopy__(self, memo):
        return Dynamic()


def test_getattr_hook_runs_once_per_call():
    def fn(d, x):
        return x * d.width

    def reset():
        Dynamic.lookups = 0

    stats = differential(plain(fn), fresh(lambda: (Dynamic(), t())), reset=reset,
                         observe=lambda env: Dynamic.lookups)
    expect_one_graph(stats)


class Doubler:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        return x * self.k


def test_method_replaced_on_the_class_is_called():
    def fn(o, x):
        return o.apply(x)

    original = Doubler.apply

    def replace(env):
        Doubler.apply = lambda self, x: x - self.k

    def restore():
        Doubler.apply = original
        torch.manual_seed(0)

    calls = [(FromEnv(), t()), (FromEnv(), t()), Call((FromEnv(), t()), before=replace)]
    try:
        stats = differential(lambda: (fn, Doubler(2)), calls, reset=restore)
    finally:
        Doubler.apply = original
    expect_recompile(stats)


def test_method_shadowed_on_the_instance_is_called():
    def fn(o, x):
        return o.apply(x)

    def shadow(env):
        env.apply = lambda x: x * 100

    calls = [(FromEnv(), t()), (FromEnv(), t()), Call((FromEnv(), t()), before=shadow)]
    stats = differential(lambda: (fn, Doubler(2)), calls, observe=lambda env: env.k)
    expect_recompile(stats)


class _Pair:
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __iter__(self):
        return iter((self.a, self.b))


def test_unpacking_a_user_iterable_of_python_values_never_goes_stale():
    # ``a, b = obj`` runs obj.__iter__ natively inside the unpacking: values that came from the
    # arguments must not be taken for constants (a replay returned the first call's numbers before)
    def fn(x, n):
        a, b = _Pair(n, n + 1)
        return x * a + b

    stats = differential(plain(fn), [(t(), 1), (t(), 1), (t(), 2)])
    expect_not_one_graph(stats)
