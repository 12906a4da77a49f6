"""The expression half of the program strategies: typed scopes and typed expressions.

An ``ExpressionBuilder`` draws expressions of four types (int, str, list of ints, dict of str to
int) over a ``Scope``: the names bound so far, with their types, and the helper functions,
generators and classes defined so far. It only reads names, so an expression drawn in a scope
never meets an unbound name; values stay small (``*`` has a small literal side, repetition has a
literal count). Some expressions raise on purpose (division by zero, a bad index or key,
``int('ab')``, an arity mismatch): the exception is part of the behaviour under test.
"""
from hypothesis import strategies as st

INT, STR, LIST, DICT = "int", "str", "list", "dict"
KEYS = ("a", "b", "c", "d")


class Scope:
    """The names a piece of code may read, with their types, and those it may rebind."""

    def __init__(self, parent=None, function=False):
        self.parent = parent
        self.function = function       # a new function body: outer names are read-only
        self.vars = {}                 # name -> type, bound in this block
        self.writable = set()          # names this function may rebind
        # Copies, not shares: what a block defines is gone once the block is left (a branch
        # may not have run).
        self.helpers = list(parent.helpers) if parent else []        # (name, parameters) -> int
        self.generators = list(parent.generators) if parent else []  # (name, driven by hand?)
        self.classes = list(parent.classes) if parent else []        # classes with .m(w) -> int
        self.managers = list(parent.managers) if parent else []      # context manager classes
        if parent is not None and not function:
            self.writable = parent.writable      # the same function: the same locals

    def child(self, function=False):
        return Scope(self, function)

    def readable(self, kind):
        names = []
        scope = self
        while scope is not None:
            names += [n for n, k in scope.vars.items() if k == kind]
            scope = scope.parent
        return sorted(set(names))

    def rebindable(self, kind):
        return [n for n in self.readable(kind) if n in self.writable]

    def counters(self):
        """Ints a nested function may declare nonlocal: not loop counters, not globals."""
        return [n for n in self.readable(INT) if not n.startswith(("w", "G"))]

    def bind(self, name, kind):
        self.vars[name] = kind
        self.writable.add(name)


class ExpressionBuilder:
    """Draws typed expressions, as source text, from a Hypothesis ``draw``."""

    def __init__(self, draw):
        self.draw = draw
        self.counter = 0
        self.in_fstring = 0      # f-strings do not nest before 3.12

    # -- small draws --------------------------------------------------------------------------

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def pick(self, options):
        return self.draw(st.sampled_from(options))

    def chance(self, percent):
        return self.draw(st.integers(0, 99)) < percent

    def small(self, low=-5, high=12):
        return self.draw(st.integers(low, high))

    def str_literal(self):
        return repr(self.draw(st.text(alphabet="abcxyz 1", max_size=4)))

    def key(self):
        return repr(self.pick(KEYS))

    # -- expressions --------------------------------------------------------------------------

    def expr(self, kind, scope, depth=2):
        return {INT: self.int_expr, STR: self.str_expr, LIST: self.list_expr,
                DICT: self.dict_expr}[kind](scope, depth)

    def int_expr(self, scope, depth=2):
        names = scope.readable(INT)
        forms = ["literal"] + ["name"] * bool(names) * 3
        if depth > 0:
            forms += ["add", "scale", "divide", "negate", "length", "ternary", "bool"]
            forms += ["index"] * bool(scope.readable(LIST))
            forms += ["lookup"] * bool(scope.readable(DICT))
            forms += ["text"] * bool(scope.readable(STR))
            forms += ["reduce", "genexpr", "comprehension", "parse"]
            forms += ["call"] * bool(scope.helpers) * 2
            forms += ["splat"] * bool(scope.helpers and scope.readable(LIST))
            forms += ["set"]
            forms += ["method"] * bool(scope.classes)
            forms += ["generator"] * bool([g for g, driven in scope.generators if not driven])
        form = self.pick(forms)
        sub = lambda: self.int_expr(scope, depth - 1)  # noqa: E731
        if form == "literal":
            return str(self.small())
        if form == "name":
            return self.pick(names)
        if form == "add":
            return f"({sub()} {self.pick(['+', '-'])} {sub()})"
        if form == "scale":
            return f"({sub()} * {self.small(-3, 5)})"
        if form == "divide":
            return f"({sub()} {self.pick(['//', '%'])} {sub()})"
        if form == "negate":
            return self.pick([f"-{sub()}", f"abs({sub()})", f"~{sub()}"])
        if form == "length":
            kind = self.pick([k for k in (STR, LIST, DICT) if scope.readable(k)] or [LIST])
            return f"len({self.expr(kind, scope, depth - 1)})"
        if form == "ternary":
            return f"({sub()} if {self.cond_expr(scope, depth - 1)} else {sub()})"
        if form == "bool":
            return f"({sub()} {self.pick(['and', 'or'])} {sub()})"
        if form == "index":
            return f"{self.pick(scope.readable(LIST))}[{sub()}]"
        if form == "lookup":
            d = self.pick(scope.readable(DICT))
            return self.pick([f"{d}[{self.key()}]", f"{d}.get({self.key()}, {sub()})"])
        if form == "text":
            s = self.pick(scope.readable(STR))
            return self.pick([f"{s}.find({self.str_literal()})", f"{s}.count({self.str_literal()})",
                              f"len({s}.split())"])
        if form == "reduce":
            items = self.list_expr(scope, depth - 1)
            return self.pick([f"sum({items})", f"max({items}, default={sub()})", f"min({items})",
                              f"{items}.index({sub()})"])
        if form == "genexpr":
            x = self.fresh("x")
            inner = scope.child()
            inner.bind(x, INT)
            source = self.iterable(scope, depth - 1)
            return (f"sum({self.int_expr(inner, depth - 1)} for {x} in {source}"
                    f" if {self.cond_expr(inner, depth - 1)})")
        if form == "comprehension":
            x = self.fresh("x")
            inner = scope.child()
            inner.bind(x, INT)
            return (f"len([{x} for {x} in {self.iterable(scope, depth - 1)}"
                    f" if {self.cond_expr(inner, depth - 1)}])")
        if form == "parse":
            return f"int({self.str_expr(scope, depth - 1)})"
        if form == "call":
            name, params = self.pick(scope.helpers)
            args = [sub() for _ in params]
            if params and self.chance(30):     # the last ones by keyword
                cut = self.small(0, len(params) - 1)
                args = args[:cut] + [f"{p}={a}" for p, a in zip(params[cut:], args[cut:])]
            return f"{name}({', '.join(args)})"
        if form == "splat":
            # Binding errors raise TypeError: CPython's own messages must come out.
            name, params = self.pick(scope.helpers)
            items = self.pick(scope.readable(LIST))
            arity = len(params)
            keywords = {p: sub() for p in params}
            if params and self.chance(50):
                keywords[self.pick(params)] = sub()
            if self.chance(20):
                keywords["zz"] = sub()          # no such parameter
            mapping = "{" + ", ".join(f"{p!r}: {v}" for p, v in keywords.items()) + "}"
            return self.pick([f"{name}(*{items})", f"{name}(*{items}[:{arity}])",
                              f"{name}(*[{', '.join(sub() for _ in range(arity))}])",
                              f"{name}(**{mapping})", f"{name}(*{items}[:1], **{mapping})"])
        if form == "set":
            x = self.fresh("x")
            inner = scope.child()
            inner.bind(x, INT)
            return (f"len({{{self.int_expr(inner, depth - 1)} % 3"
                    f" for {x} in {self.iterable(scope, depth - 1)}}})")
        if form == "method":
            return f"{self.pick(scope.classes)}({sub()}).m({sub()})"
        if form == "generator":
            name = self.pick([g for g, driven in scope.generators if not driven])
            return self.pick([f"sum({name}({sub()}))", f"next({name}({sub()}), {sub()})"])
        raise AssertionError(form)

    def iterable(self, scope, depth):
        lists = scope.readable(LIST)
        forms = [f"range({self.small(0, 4)})"]
        if lists:
            forms.append(self.pick(lists))
        if depth > 0:
            forms.append(self.list_expr(scope, depth - 1))
        return self.pick(forms)

    def cond_expr(self, scope, depth=2):
        forms = ["compare", "compare", "none"]
        if depth > 0:
            forms += ["not", "and", "chain", "isinstance"]
        forms += ["member"] * bool(scope.readable(LIST))
        forms += ["objects"] * bool(scope.classes)
        forms += ["key"] * bool(scope.readable(DICT))
        forms += ["text"] * bool(scope.readable(STR))
        form = self.pick(forms)
        a = lambda: self.int_expr(scope, max(depth - 1, 0))  # noqa: E731
        if form == "compare":
            return f"{a()} {self.pick(['<', '<=', '==', '!=', '>', '>='])} {a()}"
        if form == "none":
            kind = self.pick([INT, STR, LIST, DICT])
            value = self.expr(kind, scope, max(depth - 1, 0))
            # Comparisons with None go through the reflected __eq__/__ne__ of NoneType.
            return self.pick([f"None {self.pick(['==', '!='])} {value}",
                              f"{value} {self.pick(['==', '!='])} None"])
        if form == "objects":
            obj = f"{self.pick(scope.classes)}({a()})"
            other = self.pick([a(), "None", f"{self.pick(scope.classes)}({a()})"])
            op = self.pick(["==", "!=", "<", ">"])
            return self.pick([f"{obj} {op} {other}", f"{other} {op} {obj}"])
        if form == "chain":
            return f"{a()} < {a()} {self.pick(['<=', '!=', '>'])} {a()}"
        if form == "isinstance":
            kind = self.pick([INT, STR, LIST, DICT])
            types = self.pick(["int", "str", "(list, dict)", "bool"])
            return f"isinstance({self.expr(kind, scope, depth - 1)}, {types})"
        if form == "not":
            return f"not ({self.cond_expr(scope, depth - 1)})"
        if form == "and":
            op = self.pick(["and", "or"])
            return f"({self.cond_expr(scope, depth - 1)} {op} {self.cond_expr(scope, depth - 1)})"
        if form == "member":
            return f"{a()} {self.pick(['in', 'not in'])} {self.pick(scope.readable(LIST))}"
        if form == "key":
            return f"{self.key()} in {self.pick(scope.readable(DICT))}"
        if form == "text":
            s = self.pick(scope.readable(STR))
            return self.pick([f"{s}.startswith({self.str_literal()})", f"{self.str_literal()} in {s}",
                              f"{s}.isdigit()"])
        raise AssertionError(form)

    def str_expr(self, scope, depth=2):
        names = scope.readable(STR)
        forms = ["literal", "convert"] + ["name"] * bool(names) * 3
        if depth > 0:
            forms += ["concat", "slice", "method", "join", "repeat", "ternary", "percent"]
            forms += ["fstring"] * (not self.in_fstring)
            forms += ["index"] * bool(names)
        form = self.pick(forms)
        sub = lambda: self.str_expr(scope, depth - 1)  # noqa: E731
        num = lambda: self.int_expr(scope, max(depth - 1, 0))  # noqa: E731
        if form == "literal":
            return self.str_literal()
        if form == "name":
            return self.pick(names)
        if form == "convert":
            return f"str({num()})"
        if form == "concat":
            return f"({sub()} + {sub()})"
        if form == "slice":
            return f"{sub()}[{self.small(-3, 3)}:{self.small(-2, 6)}]"
        if form == "method":
            return self.pick([f"{sub()}.upper()", f"{sub()}.strip()", f"{sub()}.lower()",
                              f"{sub()}.replace({self.str_literal()}, {self.str_literal()})"])
        if form == "fstring":
            self.in_fstring += 1
            text = self.pick([f'f"{{{num()}}}:{{{sub()}!r}}"', f'f"<{{{num()}:>3}}>"'])
            self.in_fstring -= 1
            return text
        if form == "join":
            return f"{self.str_literal()}.join(str(v) for v in {self.list_expr(scope, depth - 1)})"
        if form == "repeat":
            return f"({self.str_literal()} * {self.small(0, 3)})"
        if form == "ternary":
            return f"({sub()} if {self.cond_expr(scope, depth - 1)} else {sub()})"
        if form == "percent":
            return f"('%d/%s' % ({num()}, {sub()}))"
        if form == "index":
            return f"{self.pick(names)}[{num()}]"
        raise AssertionError(form)

    def list_expr(self, scope, depth=2):
        names = scope.readable(LIST)
        forms = ["literal"] + ["name"] * bool(names) * 3
        num = lambda inner=scope: self.int_expr(inner, max(depth - 1, 0))  # noqa: E731
        if depth > 0:
            forms += ["comprehension", "sorted", "slice", "extend", "reverse", "star", "lambda"]
            forms += ["closures"]
            forms += ["values"] * bool(scope.readable(DICT))
            forms += ["generator"] * bool([g for g, driven in scope.generators if not driven])
        form = self.pick(forms)
        if form == "literal":
            return "[" + ", ".join(str(self.small()) for _ in range(self.small(0, 3))) + "]"
        if form == "name":
            return self.pick(names)
        if form == "comprehension":
            x = self.fresh("x")
            inner = scope.child()
            inner.bind(x, INT)
            tail = f" if {self.cond_expr(inner, depth - 1)}" if self.chance(50) else ""
            return f"[{num(inner)} for {x} in {self.iterable(scope, depth - 1)}{tail}]"
        if form == "sorted":
            items = self.list_expr(scope, depth - 1)
            x = self.fresh("x")
            inner = scope.child()
            inner.bind(x, INT)
            return self.pick([f"sorted({items})", f"sorted({items}, reverse=True)",
                              f"sorted({items}, key=lambda {x}: {num(inner)})"])
        if form == "slice":
            return f"{self.list_expr(scope, depth - 1)}[{self.small(-3, 3)}:{self.small(-2, 6)}]"
        if form == "extend":
            return f"({self.list_expr(scope, depth - 1)} + [{num()}])"
        if form == "reverse":
            return f"list(reversed({self.list_expr(scope, depth - 1)}))"
        if form == "star":
            return f"[*{self.list_expr(scope, depth - 1)}, {num()}]"
        if form == "lambda":
            x = self.fresh("x")
            inner = scope.child()
            inner.bind(x, INT)
            items = self.list_expr(scope, depth - 1)
            return self.pick([f"list(map(lambda {x}: {num(inner)}, {items}))",
                              f"list(filter(lambda {x}: {self.cond_expr(inner, 0)}, {items}))"])
        if form == "closures":
            # Late binding: every lambda sees the comprehension variable's last value.
            x = self.fresh("x")
            late = self.pick([f"lambda: {x}", f"lambda {x}={x}: {x}"])
            return f"[f() for f in [{late} for {x} in {self.iterable(scope, depth - 1)}]]"
        if form == "values":
            return f"list({self.pick(scope.readable(DICT))}.values())"
        if form == "generator":
            name = self.pick([g for g, driven in scope.generators if not driven])
            return f"list({name}({num()}))"
        raise AssertionError(form)

    def dict_expr(self, scope, depth=2):
        names = scope.readable(DICT)
        forms = ["literal"] + ["name"] * bool(names) * 2
        if depth > 0:
            forms += ["comprehension", "merge"]
        form = self.pick(forms)
        num = lambda inner=scope: self.int_expr(inner, max(depth - 1, 0))  # noqa: E731
        if form == "literal":
            keys = sorted(set(self.draw(st.lists(st.sampled_from(KEYS), max_size=3))))
            return "{" + ", ".join(f"{k!r}: {num()}" for k in keys) + "}"
        if form == "name":
            return self.pick(names)
        if form == "comprehension":
            x = self.fresh("x")
            inner = scope.child()
            inner.bind(x, INT)
            return f"{{str({x}): {num(inner)} for {x} in {self.iterable(scope, depth - 1)}}}"
        if form == "merge":
            return f"{{**{self.dict_expr(scope, depth - 1)}, {self.key()}: {num()}}}"
        raise AssertionError(form)
