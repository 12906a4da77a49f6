"""Scopes: closures and cells, nonlocal, global, del, late binding, class-body scoping."""
from . import program

counter = 0
registry = {}
unused_global = "present"


@program
def closure_reads_cell():
    x = 10

    def inner():
        return x + 1
    x = 20
    return inner()


@program
def nonlocal_counter():
    def make():
        n = 0

        def bump(step=1):
            nonlocal n
            n += step
            return n
        return bump
    b = make()
    b()
    b(5)
    return b(), b.__closure__[0].cell_contents


@program
def closures_share_a_cell():
    def make():
        value = []

        def push(v):
            value.append(v)

        def get():
            return value
        return push, get
    push, get = make()
    push(1)
    push(2)
    return get()


@program
def late_binding_in_loop():
    fs = []
    for i in range(3):
        fs.append(lambda: i)
    gs = [lambda i=i: i for i in range(3)]
    return [f() for f in fs], [g() for g in gs]


@program
def three_level_closure():
    a = 1

    def level1():
        b = 2

        def level2():
            c = 3

            def level3():
                nonlocal a, c
                a += 100
                c += 10
                return a + b + c
            return level3() + c
        return level2()
    return level1(), a


@program
def global_write_and_read():
    global counter
    counter += 1
    counter = counter * 10
    registry["k"] = counter
    return counter


@program
def global_declared_in_nested_function():
    def setter(v):
        global counter
        counter = v
    setter(77)
    return counter


@program
def delete_global():
    global unused_global
    del unused_global
    return "unused_global" in globals()


@program
def delete_missing_global():
    global never_defined_global
    del never_defined_global


@program
def unbound_local_error():
    x = counter  # noqa: F841 - the assignment below makes counter local to this function
    counter = 1  # noqa: F841
    return x


@program
def unbound_local_after_del():
    x = 1
    del x
    return x


@program
def delete_fast_twice():
    x = 1
    del x
    del x


@program
def free_variable_referenced_before_assignment():
    def inner():
        return y
    r = []
    try:
        inner()
    except NameError as e:
        r.append((type(e).__name__, str(e)))
    y = 5
    r.append(inner())
    return r


@program
def delete_cell_variable():
    v = "cell"

    def read():
        return v
    first = read()
    del v
    try:
        read()
    except NameError as e:
        return first, type(e).__name__, str(e)


@program
def name_error_for_undefined_global():
    return undefined_name_xyz  # noqa: F821


@program
def builtins_shadowed_by_global_and_local():
    global len

    def count(x):
        return 99
    before = len([1, 2])
    len = count
    try:
        middle = len([1, 2])
    finally:
        del len
    after = len([1, 2, 3])
    return before, middle, after


@program
def class_body_scope_skips_to_globals():
    x = "function-local"

    class C:
        x = "class-attr"
        y = x  # the class body sees its own x
        z = [x for _ in range(1)]  # the comprehension skips the class scope

        def method(self):
            return x  # methods skip the class scope too
    return C.y, C.z, C().method()


@program
def class_body_reads_enclosing_function_variable():
    value = 41

    class C:
        attr = value + 1
    return C.attr


@program
def class_body_assigned_name_does_not_see_enclosing_function():
    name = "outer"

    class C:
        print(name)
        name = "inner"
        seen = name
    return C.seen, name


@program
def closure_over_loop_variable_cells():
    funcs = []
    for i in range(3):
        def make(j=i):
            k = j * 10

            def get():
                return k + i
            return get
        funcs.append(make())
    return [f() for f in funcs]


@program
def nonlocal_in_nested_class_method():
    total = 0

    class Acc:
        def add(self, v):
            nonlocal total
            total += v
            return total
    a = Acc()
    a.add(3)
    a.add(4)
    return total


@program
def cell_for_argument():
    def outer(arg):
        def inner():
            return arg * 2
        arg += 1
        return inner()
    return outer(5)


@program
def closure_introspection():
    a = 1
    b = "two"

    def f():
        return a, b
    return f.__code__.co_freevars, [c.cell_contents for c in f.__closure__]


@program
def global_statement_in_comprehension_scope():
    global counter
    counter = 5
    return [counter + i for i in range(3)]


@program
def locals_shadow_builtins():
    list = lambda *a: "shadowed"  # noqa: E731
    return list(1, 2), __builtins__ is not None


@program
def cell_contents_written_from_outside():
    def make():
        hidden = "original"

        def read():
            return hidden
        return read
    read = make()
    before = read()
    read.__closure__[0].cell_contents = "rewritten"
    return before, read()


@program
def nonlocal_variable_deleted_then_rebound():
    def outer():
        v = 1

        def drop():
            nonlocal v
            del v

        def set_again():
            nonlocal v
            v = 3

        def get():
            return v
        drop()
        try:
            get()
        except NameError as e:
            err = str(e)
        set_again()
        return err, get()
    return outer()


@program
def nonlocal_loop_variable_from_nested_function():
    def outer():
        results = []
        for i in range(3):
            def bump():
                nonlocal i
                i += 10
            bump()
            results.append(i)
        return results, i
    return outer()


@program
def function_globals_are_the_defining_module():
    def f():
        return counter
    return f.__globals__ is globals(), f()
