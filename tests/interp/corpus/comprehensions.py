"""Comprehensions: list/set/dict/generator, nested, with conditions and walrus, scoping and shadowing
(inlined in 3.12+, functions before), exceptions raised inside them."""
from . import program

x = "global-x"


@program
def list_set_dict_comprehensions():
    nums = [3, 1, 4, 1, 5, 9, 2, 6]
    return ([n * 2 for n in nums if n > 2], sorted({n % 3 for n in nums}),
            {n: n ** 2 for n in nums if n % 2}, list(n for n in nums if n < 3))


@program
def nested_comprehension_clauses():
    return ([(i, j) for i in range(3) for j in range(i) if (i + j) % 2],
            [[i * j for j in range(3)] for i in range(3)],
            {(i, c) for i in range(2) for c in "ab"})


@program
def comprehension_variable_does_not_leak():
    i = "outer"
    squares = [i * i for i in range(4)]
    return i, squares


@program
def comprehension_shadowing_a_global():
    before = x
    doubled = [x * 2 for x in range(3)]
    return before, doubled, x


@program
def comprehension_reads_enclosing_locals_and_cells():
    k = 10
    offsets = [1, 2]

    def uses_cell():
        return k
    return [v + k for v in offsets], [uses_cell() + v for v in offsets]


@program
def comprehension_captured_by_lambda():
    fs = [lambda: i for i in range(3)]
    gs = [(lambda j=i: j) for i in range(3)]
    return [f() for f in fs], [g() for g in gs]


@program
def walrus_in_comprehension_binds_outer():
    data = [5, 12, 7, 20]
    big = [y for v in data if (y := v * 2) > 15]
    return big, y


@program
def walrus_in_nested_comprehension():
    total = 0
    rows = [[(total := total + v) for v in row] for row in [[1, 2], [3]]]
    return rows, total


@program
def comprehension_over_dict_items_and_zip():
    d = {"a": 1, "b": 2}
    inverted = {v: k for k, v in d.items()}
    pairs = [f"{a}{b}" for a, b in zip("xyz", range(3))]
    return inverted, pairs


@program
def comprehension_exception_propagates():
    return [1 / n for n in (1, 2, 0, 4)]


@program
def comprehension_exception_caught_outside_keeps_locals():
    n = "kept"
    try:
        [int(s) for s in ["1", "x"]]
    except ValueError as e:
        return n, str(e)


@program
def comprehension_in_class_body():
    class C:
        base = 10
        values = [v for v in range(3)]
        # The first iterable is evaluated in the class scope; the rest cannot see class names.
        shifted = [v + 1 for v in values]
    return C.values, C.shifted


@program
def comprehension_in_class_body_cannot_see_class_names():
    class C:
        base = 10
        values = [base + v for v in range(3)]
    return C.values


@program
def dict_comprehension_key_order_and_duplicates():
    return {k % 3: k for k in range(7)}, {c: i for i, c in enumerate("abcab")}


@program
def set_comprehension_of_unhashable_fails():
    return {[v] for v in range(3)}


@program
def comprehension_with_multiple_conditions_and_nested_functions():
    def square(v):
        return v * v
    return [square(v) for v in range(20) if v % 2 if v % 3 if square(v) < 200]


@program
def generator_expression_inside_call_arguments():
    words = ["apple", "kiwi", "banana"]
    return (sorted((w for w in words), key=len), any(len(w) > 5 for w in words),
            all(w.islower() for w in words), dict((w[0], w) for w in words), "".join(w[0] for w in words))


@program
def comprehension_uses_locals_after_loop_variable_named_like_argument():
    def f(i):
        values = [i for i in range(i)]
        return i, values
    return f(3)


@program
def comprehension_iterating_over_its_own_target_name():
    v = [1, 2, 3]
    v = [v for v in v]
    return v


@program
def comprehension_unpacking_targets():
    pts = [(1, 2, 3), (4, 5, 6)]
    return [a + c for a, _, c in pts], [(h, t) for h, *t in ["abc", "de"]]


@program
def nested_comprehension_with_cell_in_inner():
    result = [[(lambda: i + j)() for j in range(2)] for i in range(2)]
    return result


@program
def comprehension_in_nested_function_with_nonlocal_state():
    def outer():
        count = 0

        def inc():
            nonlocal count
            count += 1
            return count
        vals = [inc() for _ in range(3)]
        return vals, count
    return outer()


@program
def comprehension_with_locals_call():
    a = 1
    names = [sorted(locals()) for _ in range(1)]
    return names[0], a


@program
def comprehension_target_shadows_a_cell_variable():
    value = "outer-cell"

    def reader():
        return value
    squares = [value * 2 for value in range(3)]
    return squares, value, reader()


@program
def comprehension_exception_restores_outer_variable():
    item = "outer"
    try:
        [1 / item for item in (1, 0)]
    except ZeroDivisionError:
        pass
    return item


@program
def comprehension_target_unbound_outer_stays_unbound():
    [t for t in range(2)]
    try:
        return t  # noqa: F821
    except NameError as e:
        return type(e).__name__, str(e)


@program
def nested_comprehension_reusing_names():
    matrix = [[1, 2], [3, 4]]
    flat = [x for x in matrix for x in x]
    return flat, [[x * 10 for x in row] for row in matrix]
