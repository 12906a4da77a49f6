"""Everything else: assert, walrus, del of names/items/attributes/slices, chained comparisons, slicing
(read, write, delete, with steps and slice objects), augmented assignment on attributes and items (each
operand evaluated once), global writes, containers and their methods, identity, truthiness of containers."""
import collections
import copy

from . import program

TOTALS = {"calls": 0}
history = []
SETTING = 1


@program(cases=[(5,), (-1,)])
def assert_with_message(n):
    assert n >= 0, f"negative: {n}"
    return n


@program
def assert_without_message():
    assert []
    return "unreachable"


@program
def assert_with_custom_assertion_error_shadow():
    # The assert statement uses the real AssertionError even when the name is shadowed.
    AssertionError = KeyError  # noqa: N806, F841
    assert 1 == 2


@program
def walrus_in_conditions_and_loops():
    data = [1, 4, 2, 8, 3]
    found = []
    it = iter(data)
    while (v := next(it, None)) is not None:
        if (double := v * 2) > 5:
            found.append(double)
    return found, v, double


@program
def del_statements():
    d = {"a": 1, "b": 2, "c": 3}
    lst = list(range(10))

    class O:
        pass
    o = O()
    o.x, o.y = 1, 2
    del d["a"], lst[0], o.x
    del lst[2:5]
    del lst[::2]
    name = "temp"
    del name
    return d, lst, vars(o), "name" in locals()


@program
def del_missing_item_and_attribute():
    errors = []
    try:
        del {}["missing"]
    except KeyError as e:
        errors.append(repr(e))
    try:
        del [][3]
    except IndexError as e:
        errors.append(str(e))

    class O:
        pass
    try:
        del O().nothing
    except AttributeError as e:
        errors.append(str(e))
    return errors


@program(cases=[(1, 2, 3), (3, 2, 1), (1, 1, 1), (1, 5, 2)])
def chained_comparisons(a, b, c):
    return [a < b < c, a <= b <= c, a == b == c, a < b > c, a != b != c, 0 < a < b < c < 10, a is b is c]


@program
def chained_comparison_evaluates_middle_once():
    log = []

    def val(v):
        log.append(v)
        return v
    r = val(1) < val(2) < val(0) < val(3)
    return r, log


@program
def membership_and_identity():
    a = [1, 2]
    b = a
    c = [1, 2]
    return [a is b, a is c, a == c, a is not c, 2 in a, 3 not in a, None is None, "k" in {"k": 0},
            (1, 2) in {(1, 2)}, [] in [[]]]


@program
def slicing_reads():
    s = list(range(10))
    t = tuple(s)
    return [s[2:7], s[:3], s[7:], s[::2], s[::-1], s[-3:-1], s[8:2:-2], t[1:4], s[slice(1, 9, 3)],
            s[100:], "hello"[1:-1], range(10)[2:8:2], s[-100:2]]


@program
def slice_assignment_and_deletion():
    s = list(range(8))
    s[1:3] = ["a", "b", "c"]
    s[::3] = [None] * len(s[::3])
    s[-2:] = []
    t = list(range(6))
    del t[1::2]
    u = [0, 1, 2]
    u[len(u):] = [3, 4]
    u[:0] = [-1]
    return s, t, u


@program
def extended_slice_assignment_size_mismatch():
    s = list(range(6))
    s[::2] = [1, 2]


@program
def slicing_user_object_receives_slice():
    class Recorder:
        def __getitem__(self, key):
            return key

        def __setitem__(self, key, value):
            self.last = (key, value)

        def __delitem__(self, key):
            self.deleted = key
    r = Recorder()
    got = (r[1:2], r[::3], r[1:2, 3], r[...], r[:, None])
    r[5:] = "v"
    del r[:-1]
    return got, r.last, r.deleted


@program
def augmented_assignment_on_attributes_and_items():
    class Obj:
        def __init__(self):
            self.count = 0
            self.items = [1]
    o = Obj()
    o.count += 5
    o.count *= 2
    o.items += [2]
    d = {"k": 1, "lst": []}
    d["k"] -= 10
    d["lst"] += ["x"]
    grid = [[0, 0], [0, 0]]
    grid[1][0] += 7
    s = [1, 2, 3, 4]
    s[1:3] += ["new"]
    return o.count, o.items, d, grid, s


@program
def augmented_assignment_evaluates_target_once():
    log = []

    class Box:
        def __init__(self):
            self.data = {"k": 1}

    box = Box()

    def get_box():
        log.append("box")
        return box

    def get_key():
        log.append("key")
        return "k"
    get_box().data[get_key()] += 10
    return box.data, log


@program
def augmented_assignment_on_tuple_item_error_but_list_mutated():
    t = ([1],)
    try:
        t[0] += [2]
    except TypeError as e:
        return str(e), t


@program
def global_writes_and_reads():
    global SETTING
    TOTALS["calls"] += 1
    history.append(SETTING)
    SETTING = SETTING * 10 + 1
    history.append(SETTING)
    return SETTING, TOTALS


@program
def container_methods():
    lst = [3, 1, 2]
    lst.extend([5, 4])
    lst.insert(0, 9)
    popped = lst.pop()
    lst.remove(1)
    lst.sort()
    d = {"b": 2}
    d.update(a=1)
    d |= {"c": 3}
    s = {1, 2, 3}
    s &= {2, 3, 4}
    s |= {9}
    s -= {3}
    dq = collections.deque([1, 2, 3], maxlen=3)
    dq.append(4)
    counter = collections.Counter("abracadabra")
    return lst, popped, sorted(d.items()), sorted(s), list(dq), counter.most_common(2), d.pop("b"), d.popitem()


@program
def container_equality_and_ordering():
    return [[1, 2] < [1, 3], (1, 2) < (1, 2, 0), {1: 2} == {1: 2}, {1, 2} <= {1, 2, 3}, [1] == (1,),
            [[1]] == [[1]], {1: [1]} != {1: [2]}, (1, "a") < (1, "b")]


@program
def copy_and_deepcopy():
    original = {"list": [1, [2, 3]], "tuple": (4,)}
    shallow = copy.copy(original)
    deep = copy.deepcopy(original)
    original["list"][1].append("mutated")
    return shallow["list"][1], deep["list"][1], shallow["list"] is original["list"]


@program
def empty_statements_and_pass():
    if True:
        pass
    for _ in range(2):
        pass
    while False:
        pass

    class Empty:
        pass

    def nothing():
        ...
    return nothing(), Empty.__name__, ...


@program
def ternary_and_boolean_ops_return_operands():
    return [[] or "empty", 0 and "never", "a" and "b", None or 0 or "", (1 if [] else 2)]


@program(args=([1, 2, 3], {"a": 1}))
def mutate_arguments_in_place(lst, d):
    lst.append(4)
    lst[0] = "changed"
    d["b"] = 2
    del d["a"]
    lst.reverse()


@program
def constants_and_literals():
    return [0b1010, 0o17, 0xFF, 1_000_000, 1e-3, 2j, "con" "cat", b"by" b"tes", (), ((),), frozenset({1}),
            None, ..., True + 0]


@program
def large_literal_needs_extended_args():
    values = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28,
              29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54,
              55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80,
              81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100, 101, 102, 103, 104,
              105, 106, 107, 108, 109, 110, 111, 112, 113, 114, 115, 116, 117, 118, 119, 120, 121, 122, 123, 124,
              125, 126, 127, 128, 129, 130, 131, 132, 133, 134, 135, 136, 137, 138, 139, 140, 141, 142, 143, 144,
              145, 146, 147, 148, 149, 150, 151, 152, 153, 154, 155, 156, 157, 158, 159, 160, 161, 162, 163, 164,
              165, 166, 167, 168, 169, 170, 171, 172, 173, 174, 175, 176, 177, 178, 179, 180, 181, 182, 183, 184,
              185, 186, 187, 188, 189, 190, 191, 192, 193, 194, 195, 196, 197, 198, 199, 200, 201, 202, 203, 204,
              205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221, 222, 223, 224,
              225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 238, 239, 240, 241, 242, 243, 244,
              245, 246, 247, 248, 249, 250, 251, 252, 253, 254, 255, 256, 257, 258, 259, 260, 261, 262, 263, 264]
    n = len(values)
    more = [n, n + 1, n + 2]
    return n, sum(values), more


@program
def print_to_stdout_and_file_argument():
    import io
    import sys
    buf = io.StringIO()
    print("to stdout", 1, 2.5, None)
    print("to buffer", file=buf)
    print("a", "b", sep="", end="")
    print()
    sys.stdout.write("direct write\n")
    return buf.getvalue()


@program
def hash_of_containers_errors_and_frozen():
    out = [hash((1, 2)) == hash((1, 2)), hash(frozenset({1})) == hash(frozenset({1}))]
    try:
        hash([1])
    except TypeError as e:
        out.append(str(e))
    return out


@program
def dict_views_and_operations():
    d = {"a": 1, "b": 2, "c": 3}
    keys = d.keys()
    d["d"] = 4
    return (list(keys), keys & {"a", "z"}, list(d.values()), list(d.items())[-1], "a" in keys,
            dict.fromkeys("xy", 0), {**d}.get("q"), sorted(d, key=d.get, reverse=True))


@program
def interning_independent_identity_checks():
    a = 256
    b = 256
    t1 = ()
    t2 = ()
    return a is b, t1 is t2, None is None, type(a) is int
