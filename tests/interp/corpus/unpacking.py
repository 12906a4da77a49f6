"""Unpacking: tuple/list targets, starred targets, nested targets, unpacking in literals and calls, errors."""
from . import program


@program
def basic_tuple_unpacking_and_swap():
    a, b = 1, 2
    a, b = b, a
    (c, d), e = (3, 4), 5
    [f, g] = "xy"
    h, = [9]
    return a, b, c, d, e, f, g, h


@program
def starred_targets():
    first, *rest = range(5)
    *init, last = [1, 2, 3]
    head, *middle, tail = "abcdef"
    a, *empty, b = (1, 2)
    return first, rest, init, last, head, middle, tail, a, empty, b


@program
def nested_starred_targets():
    (a, *b), [c, *d], e = [1, 2, 3], (4, 5), 6
    for x, (y, *z) in [(1, (2, 3, 4)), (5, (6,))]:
        last = (x, y, z)
    return a, b, c, d, e, last


@program
def unpacking_from_generators_and_dicts():
    def gen():
        yield "g1"
        yield "g2"
    a, b = gen()
    k1, k2 = {"one": 1, "two": 2}
    (i1, v1), (i2, v2) = {"p": 1, "q": 2}.items()
    return a, b, k1, k2, i1, v1, i2, v2


@program
def too_many_values_to_unpack():
    a, b = [1, 2, 3]


@program
def not_enough_values_to_unpack():
    a, b, c = (1, 2)


@program
def not_enough_values_for_starred():
    a, b, *c = [1]


@program
def unpack_non_iterable():
    a, b = 5


@program
def star_in_literals():
    a = [1, 2]
    b = (3,)
    s = {"x"}
    d1 = {"k": 1}
    d2 = {"k": 2, "z": 3}
    return [*a, *b, 0], (*a, *"cd"), {*a, *s}, {**d1, **d2, "w": 4}, {**d2, "k": 0}, [*range(3)], (*a,)


@program
def star_in_literal_with_non_iterable():
    return [*5]


@program
def double_star_in_dict_literal_with_non_mapping():
    return {**[1, 2]}


@program
def unpacking_in_for_and_comprehension_and_with_star():
    pairs = [(1, "a"), (2, "b")]
    out = []
    for num, letter in pairs:
        out.append(letter * num)
    return out, [n for n, _ in pairs], {l: n for n, l in pairs}, [*map(str, range(3))]


@program
def unpacking_assignment_targets_attributes_and_items():
    class O:
        pass
    o = O()
    d = {}
    lst = [0, 0]
    o.a, d["k"], lst[1], *rest = 1, 2, 3, 4, 5
    return o.a, d, lst, rest


@program
def chained_assignment_with_unpacking():
    a = b = c, d = (1, 2)
    x = y = []
    x.append(1)
    return a, b, c, d, y, x is y


@program
def unpacking_evaluation_order():
    log = []

    class Logger:
        def __setitem__(self, key, value):
            log.append((key, value))
    lg = Logger()
    lg["a"], lg["b"] = lg["c"], lg["d"] = "xy"
    return log


@program
def unpack_large_sequence_with_star_in_middle():
    a, b, *mid, y, z = range(20)
    return a, b, len(mid), mid[:3], y, z


@program
def unpacking_custom_iterable():
    class Three:
        def __iter__(self):
            yield from (1, 2, 3)
    a, b, c = Three()
    x, *rest = Three()
    return a + b + c, x, rest, [*Three()], max(*Three())


@program
def mapping_unpacking_reads_as_cpython_merges():
    import collections

    class OwnItem(dict):  # iterates as dict: a merge reads its storage, never this __getitem__
        def __getitem__(self, key):
            return "computed"

    class OrderedOwnItem(collections.OrderedDict):  # any other mapping: keys(), then __getitem__
        def __getitem__(self, key):
            return "computed " + key

    def kw(**kwargs):
        return kwargs
    d, o = OwnItem(a=1), OrderedOwnItem(b=2)
    merged = {"z": 0}
    merged.update(o)
    return kw(**d), kw(**o), {**d, **o}, dict(d), dict(o), merged, kw(x=1, **d)
