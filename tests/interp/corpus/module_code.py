"""Programs made of top-level code rather than functions: module bodies (LOAD_NAME/STORE_NAME/DELETE_NAME,
annotations, star imports), interactive statements (whose values are printed), and PEP 695 syntax from
Python 3.12 on (generic classes and functions, `type` aliases), kept in text so that 3.11 can load this file.
Each runs with this module's namespace as its globals and locals, as a module body does."""
from . import PY312, program, source_program

module_body_names = source_program(globals(), """
counter = 1
counter += 41
temporary = [counter, "x"]
del temporary
annotated: int = 5
unannotated_only: str
class Local:
    value = counter
    del value
    other = annotated * 2
try:
    temporary
except NameError as e:
    missing = str(e)
outcome = (counter, annotated, Local.other, __annotations__, missing)
""")

module_body_delete_missing_name = source_program(globals(), """
del name_that_was_never_bound
""")

module_body_loops_and_functions = source_program(globals(), """
squares = []
for i in range(4):
    squares.append(i * i)
def helper(v, scale=2):
    return v * scale + len(squares)
table = {k: helper(k) for k in squares}
total = sum(table.values())
while total > 50:
    total -= 7
""")

interactive_expression_is_printed = source_program(globals(), "1 + 2 * 3\n", mode="single")

interactive_loop_prints_each_value = source_program(globals(), """
for i in range(3):
    i * 10
    None
    'text'
""", mode="single")

interactive_print_none_is_silent = source_program(globals(), "None\n", mode="single")


@program
def run_compiled_module_code_via_exec():
    namespace = {"__name__": "executed"}
    exec(compile("a = 1\nb = a + 1\nimport math\nc = math.floor(2.5)", "<string>", "exec"), namespace)
    return namespace["a"], namespace["b"], namespace["c"]


pep695_generic_class = source_program(globals(), """
def make_box():
    class Box[T]:
        items: list[T]

        def __init__(self, first: T):
            self.items = [first]

        def add[U](self, extra: U) -> "Box[T]":
            self.items.append(extra)
            return self
    box = Box(1).add("two")
    params = Box.__type_params__
    return box.items, [p.__name__ for p in params], Box.add.__type_params__[0].__name__
generic_result = make_box()
""", when=PY312)

pep695_type_alias = source_program(globals(), """
def make_aliases():
    type Pair[K, V] = tuple[K, V]
    type Number = int | float
    class Holder:
        type Inner = list[int]
        inner_value = Inner.__value__
    return (Pair.__name__, [p.__name__ for p in Pair.__type_params__], str(Number.__value__),
            str(Holder.inner_value), Holder.Inner.__name__)
alias_result = make_aliases()
""", when=PY312)

pep695_bounded_and_constrained_type_variables = source_program(globals(), """
def make():
    def first[T: (int, str), *Ts, **P](x: T) -> T:
        return x
    class Bounded[N: float]:
        pass
    params = first.__type_params__
    return (first(3), [type(p).__name__ for p in params], params[0].__constraints__,
            Bounded.__type_params__[0].__bound__)
bound_result = make()
""", when=PY312)

pep695_generic_class_in_class_body_reads_class_names = source_program(globals(), """
def make():
    class Outer:
        Alias = int
        class Inner[T]:
            marker = T
        def method[M](self) -> Alias:
            return M
    return Outer.Inner.marker.__name__, Outer().method().__name__
nested_generic_result = make()
""", when=PY312)
