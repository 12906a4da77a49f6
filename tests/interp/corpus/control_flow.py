"""Branches and loops: if/elif/else, while/for with break/continue/else, boolean short-circuits."""
from . import program


@program(cases=[(-5,), (0,), (5,), (50,)])
def if_elif_else(x):
    if x < 0:
        return "negative"
    elif x == 0:
        return "zero"
    elif x < 10:
        return "small"
    else:
        return "large"


@program(cases=[(0,), (1,), ([],), ([0],), (None,), ("",), ("x",), (0.0,)])
def truthiness_of_values(x):
    out = []
    if x:
        out.append("truthy")
    if not x:
        out.append("falsy")
    out.append(bool(x))
    return out


@program
def truthiness_via_dunders():
    class WithBool:
        def __bool__(self):
            return False

    class WithLen:
        def __len__(self):
            return 0

    class Plain:
        pass
    return [bool(WithBool()), bool(WithLen()), bool(Plain()), "yes" if WithLen() else "no",
            not WithBool()]


@program
def bool_returning_non_bool_raises():
    class Bad:
        def __bool__(self):
            return 1
    if Bad():
        return "taken"
    return "not taken"


@program(cases=[(0, 1), (2, 0), (3, 4), (None, "b"), ("", [])])
def and_or_values(a, b):
    return [a and b, a or b, not a or b, a and not b, (a or b) and a, a or b or "default"]


@program
def short_circuit_skips_calls():
    calls = []

    def t(v):
        calls.append(v)
        return v
    r1 = t(0) and t(1)
    r2 = t(2) or t(3)
    r3 = t(0) or t(0) or t(4)
    r4 = t(5) and t(6) and t(0) and t(7)
    return r1, r2, r3, r4, calls


@program(args=(10,))
def while_loop_with_else(n):
    total = 0
    i = 0
    while i < n:
        total += i
        i += 1
    else:
        total = -total
    return total


@program(cases=[(10,), (3,)])
def while_break_skips_else(n):
    i = 0
    while True:
        if i * i > n:
            break
        i += 1
    found = None
    for j in range(n):
        if j == 5:
            found = j
            break
    else:
        found = "none"
    return i, found


@program
def for_continue():
    out = []
    for i in range(12):
        if i % 3 == 0:
            continue
        if i > 9:
            break
        out.append(i)
    return out


@program
def nested_loops_with_labels_by_flags():
    pairs = []
    for i in range(4):
        for j in range(4):
            if j > i:
                break
            if (i + j) % 2:
                continue
            pairs.append((i, j))
        else:
            pairs.append("inner-done")
    return pairs


@program
def loop_over_many_iterables():
    out = []
    for c in "abc":
        out.append(c)
    for k in {"x": 1, "y": 2}:
        out.append(k)
    for v in (1, 2):
        out.append(v)
    for b in b"hi":
        out.append(b)
    for i, c in enumerate("pq", start=10):
        out.append((i, c))
    for x in reversed([1, 2, 3]):
        out.append(x)
    return out


@program
def for_loop_target_variants():
    class Box:
        pass
    box = Box()
    d = {}
    lst = [0, 0, 0]
    for box.attr in range(3):
        pass
    for d["k"] in "xyz":
        pass
    for i, lst[i] in enumerate([7, 8, 9]):
        pass
    return box.attr, d, lst


@program
def loop_variable_after_loop():
    for i in range(5):
        pass
    for j in []:
        pass
    try:
        return i, j
    except UnboundLocalError as e:
        return i, str(e)


@program
def while_with_complex_condition():
    a, b, steps = 0, 10, 0
    while a < b and not (a == 3 and b == 7) or steps == 0:
        a += 1
        b -= 1
        steps += 1
    return a, b, steps


@program(cases=[(1,), (7,), (12,)])
def conditional_expressions(x):
    y = "odd" if x % 2 else "even"
    z = ("big" if x > 10 else "medium") if x > 5 else "small"
    return y, z, (lambda v: v if v else -1)(x - 1)


@program
def for_over_custom_iterator():
    class Countdown:
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return self

        def __next__(self):
            if self.n <= 0:
                raise StopIteration
            self.n -= 1
            return self.n
    return list(Countdown(4)), [x * 2 for x in Countdown(3)]


@program
def for_over_getitem_sequence():
    class Seq:
        def __getitem__(self, i):
            if i >= 4:
                raise IndexError(i)
            return i * i
    out = []
    for v in Seq():
        out.append(v)
    return out, 9 in Seq(), list(iter(Seq()))


@program
def iterating_non_iterable():
    for x in 5:
        pass


@program
def mutate_list_while_iterating():
    items = [1, 2, 3, 4, 5, 6]
    seen = []
    for x in items:
        seen.append(x)
        if x % 2 == 0:
            items.remove(x)
    return seen, items


@program
def dict_changed_size_during_iteration():
    d = {1: 1, 2: 2}
    for k in d:
        d[k + 10] = k


@program
def deep_nesting_of_blocks():
    total = 0
    for a in range(3):
        if a:
            for b in range(3):
                while b:
                    if b % 2:
                        total += a * b
                    else:
                        total -= 1
                    b -= 1
        else:
            total += 100
    return total


@program(cases=[(0,), (1,), (2,)])
def early_return_in_loop(k):
    for i in range(10):
        if i == k:
            return "found", i
    return "absent"


@program
def long_loop_body_needs_extended_jumps():
    # A loop body long enough that the backward jump needs EXTENDED_ARG.
    acc = 0
    for i in range(3):
        acc += i; acc -= 1; acc *= 2; acc += 3; acc //= 1; acc += i * 2; acc -= i; acc += 7  # noqa: E702
        acc += i; acc -= 1; acc *= 2; acc += 3; acc //= 1; acc += i * 2; acc -= i; acc += 7  # noqa: E702
        acc += i; acc -= 1; acc *= 2; acc += 3; acc //= 1; acc += i * 2; acc -= i; acc += 7  # noqa: E702
        acc += i; acc -= 1; acc *= 2; acc += 3; acc //= 1; acc += i * 2; acc -= i; acc += 7  # noqa: E702
        acc += i; acc -= 1; acc *= 2; acc += 3; acc //= 1; acc += i * 2; acc -= i; acc += 7  # noqa: E702
        acc += i; acc -= 1; acc *= 2; acc += 3; acc //= 1; acc += i * 2; acc -= i; acc += 7  # noqa: E702
        acc += i; acc -= 1; acc *= 2; acc += 3; acc //= 1; acc += i * 2; acc -= i; acc += 7  # noqa: E702
        acc += i; acc -= 1; acc *= 2; acc += 3; acc //= 1; acc += i * 2; acc -= i; acc += 7  # noqa: E702
        acc += i; acc -= 1; acc *= 2; acc += 3; acc //= 1; acc += i * 2; acc -= i; acc += 7  # noqa: E702
        acc += i; acc -= 1; acc *= 2; acc += 3; acc //= 1; acc += i * 2; acc -= i; acc += 7  # noqa: E702
        acc %= 1000003
    return acc


@program(cases=[(None,), (0,), ("s",)])
def is_none_checks(x):
    out = []
    if x is None:
        out.append("none")
    if x is not None:
        out.append("not-none")
    while x is not None:
        out.append("loop")
        x = None
    return out


@program(cases=[(0,), (3,)])
def while_is_none_loop(n):
    value = None
    steps = 0
    while value is None:
        steps += 1
        if steps > n:
            value = steps
    return value, steps
