"""Hypothesis strategies for small, well-scoped Python programs, as source text.

``programs()`` draws the source of a module that defines ``def program():``. The function takes
no arguments, may print, and returns a tuple of the variables bound at its top level — or raises.
Programs are valid, deterministic and small by construction:

- every name is bound before it is read: names are fresh, a variable keeps one type for life, and
  a name bound only on some paths (inside a loop, one branch, a try, a case) is not read after the
  statement that binds it;
- loops are bounded (``range`` of at most 4, ``while`` counters up to at most 4) and nothing
  recurses; every generator that is driven by hand is closed in a ``finally``;
- values stay small: ``*`` always has a small literal side, strings are cut to 24 characters when
  stored, lists grow only by ``append`` or a literal tail;
- nothing depends on addresses, hashing of strings, time or floats.

Exceptions are part of the language under test: division by zero, bad indexes and keys, failed
unpacking, ``int('ab')``, ``raise``, ``assert`` are generated on purpose, and caught by
``try``/``except``/``else``/``finally`` or left to escape.
"""
from hypothesis import strategies as st

from program_expressions import DICT, INT, LIST, STR, ExpressionBuilder, Scope

CAUGHT = ("ZeroDivisionError", "IndexError", "KeyError", "ValueError", "LookupError",
          "ArithmeticError", "AssertionError", "Exception", "(KeyError, ZeroDivisionError)")
RAISED = ("ValueError", "KeyError", "RuntimeError", "IndexError")

MAX_STATEMENTS = 24
MAX_DEPTH = 3           # nesting of compound statements
MAX_LOOPS = 2           # nesting of loops, function bodies included
STORED_STR = 24


class ProgramBuilder(ExpressionBuilder):
    """Draws one program, statement by statement, keeping track of what is bound."""

    def __init__(self, draw):
        super().__init__(draw)
        self.statements = 0
        self.loops = 0
        self.function_depth = 0  # 0: the body of program() itself

    # -- statements ---------------------------------------------------------------------------

    def block(self, scope, depth, low=1, high=3):
        lines = []
        for _ in range(self.small(low, high)):
            if self.statements >= MAX_STATEMENTS:
                break
            lines += self.statement(scope, depth)
        return lines or ["pass"]

    def statement(self, scope, depth):
        self.statements += 1
        forms = ["bind", "bind", "update", "print"]
        if depth < MAX_DEPTH:
            forms += ["if", "try", "try", "raise", "match", "unpack", "assert"]
            if self.loops < MAX_LOOPS:
                forms += ["for", "while"]
            forms += ["helper", "generator", "class", "manager"]
            forms += ["with"] * bool(scope.managers)
            forms += ["drive"] * bool([g for g, driven in scope.generators if driven])
            forms += ["return", "except_star", "walrus"]
            forms += ["global"] * (self.function_depth == 0)
        form = self.pick(forms)
        return getattr(self, "stmt_" + form)(scope, depth)

    def stmt_bind(self, scope, depth):
        kind = self.pick([INT, STR, LIST, DICT])
        name = self.fresh({INT: "n", STR: "s", LIST: "xs", DICT: "d"}[kind])
        value = self.expr(kind, scope)
        scope.bind(name, kind)
        return [f"{name} = {self.stored(kind, value)}"]

    def stored(self, kind, value):
        return f"({value})[:{STORED_STR}]" if kind == STR else value

    def stmt_update(self, scope, depth):
        choices = []
        for kind in (INT, STR):
            choices += [(kind, n) for n in scope.rebindable(kind)]
        # Mutating a list or dict needs no rebinding: closures may do it too.
        choices += [(LIST, n) for n in scope.readable(LIST)]
        choices += [(DICT, n) for n in scope.readable(DICT)]
        if not choices:
            return self.stmt_bind(scope, depth)
        kind, name = self.pick(choices)
        num = lambda: self.int_expr(scope, 1)  # noqa: E731
        if kind == INT:
            op = self.pick(["+=", "-=", "//=", "%=", "="])
            return [f"{name} {op} {num()}"]
        if kind == STR:
            return [f"{name} = ({name} + {self.str_expr(scope, 1)})[:{STORED_STR}]"]
        if kind == LIST:
            return [self.pick([f"{name}.append({num()})", f"{name}[{num()}] = {num()}",
                               f"{name}[{num()}] += {num()}",
                               f"{name}.pop()", f"{name}.sort()", f"{name}.insert(0, {num()})",
                               f"{name}.remove({num()})", f"del {name}[{num()}]"])]
        return [self.pick([f"{name}[{self.key()}] = {num()}", f"del {name}[{self.key()}]",
                           f"{name}[{self.key()}] += {num()}",
                           f"{name}.pop({self.key()}, None)", f"{name}.setdefault({self.key()}, {num()})"])]

    def stmt_print(self, scope, depth):
        kinds = [k for k in (INT, STR, LIST, DICT) if scope.readable(k)] or [INT]
        args = [self.expr(self.pick(kinds), scope, 1) for _ in range(self.small(1, 2))]
        tail = self.pick(["", ", sep='|'", ", end=';\\n'"])
        if scope.readable(LIST) and self.chance(20):
            return [f"print(*{self.pick(scope.readable(LIST))}{tail})"]
        return [f"print({', '.join(args)}{tail})"]

    def stmt_if(self, scope, depth):
        lines = [f"if {self.cond_expr(scope)}:"]
        lines += indent(self.block(scope.child(), depth + 1))
        if self.chance(40):
            lines += [f"elif {self.cond_expr(scope)}:"]
            lines += indent(self.block(scope.child(), depth + 1))
        if self.chance(60):
            lines += ["else:"] + indent(self.block(scope.child(), depth + 1))
        return lines

    def loop_body(self, scope, depth):
        self.loops += 1
        lines = []
        if self.chance(30):
            lines += [f"if {self.cond_expr(scope, 1)}:", f"    {self.pick(['break', 'continue'])}"]
        lines += self.block(scope, depth + 1)
        if self.chance(20):
            lines += [f"if {self.cond_expr(scope, 1)}:", "    break"]
        self.loops -= 1
        return lines

    def stmt_for(self, scope, depth):
        inner = scope.child()
        lists = scope.readable(LIST)
        dicts = scope.readable(DICT)
        forms = ["range"] + ["list", "enumerate"] * bool(lists) + ["items"] * bool(dicts)
        form = self.pick(forms)
        if form == "range":
            i = self.fresh("i")
            inner.bind(i, INT)
            head = f"for {i} in range({self.small(0, 4)}):"
        elif form == "list":
            i = self.fresh("i")
            inner.bind(i, INT)
            head = f"for {i} in list({self.pick(lists)}):"   # a copy: the body may append
        elif form == "enumerate":
            i, v = self.fresh("i"), self.fresh("v")
            inner.bind(i, INT)
            inner.bind(v, INT)
            head = f"for {i}, {v} in enumerate(list({self.pick(lists)})):"
        else:
            k, v = self.fresh("k"), self.fresh("v")
            inner.bind(k, STR)
            inner.bind(v, INT)
            head = f"for {k}, {v} in list({self.pick(dicts)}.items()):"
        lines = [head] + indent(self.loop_body(inner, depth))
        if self.chance(25):
            lines += ["else:"] + indent(self.block(scope.child(), depth + 1, high=1))
        return lines

    def stmt_while(self, scope, depth):
        w = self.fresh("w")
        scope.vars[w] = INT      # readable, never rebound: the loop must end
        inner = scope.child()
        body = [f"{w} += 1"] + self.loop_body(inner, depth)
        return [f"{w} = 0", f"while {w} < {self.small(0, 4)}:"] + indent(body)

    def stmt_try(self, scope, depth):
        lines = ["try:"] + indent(self.block(scope.child(), depth + 1))
        for _ in range(self.small(1, 2)):
            e = self.fresh("e")
            handler = scope.child()
            body = self.pick([f"print('caught', type({e}).__name__, {e})",
                              f"print('caught', repr({e}))",
                              f"print('caught', repr({e}), repr({e}.__context__), repr({e}.__cause__))"])
            lines += [f"except {self.pick(CAUGHT)} as {e}:", f"    {body}"]
            if self.chance(30):
                lines += indent(self.block(handler, depth + 1, high=1))
            if self.chance(15):
                lines += ["    raise"]
        if self.chance(25):
            lines += ["else:"] + indent(self.block(scope.child(), depth + 1, high=2))
        if self.chance(40):
            lines += ["finally:", f"    print('finally', {self.int_expr(scope, 1)})"]
        return lines

    def stmt_raise(self, scope, depth):
        kind = self.pick(RAISED)
        message = self.pick([self.str_expr(scope, 1), self.int_expr(scope, 1)])
        cause = ""
        if self.chance(20):
            cause = self.pick([" from None", f" from ValueError({self.str_literal()})"])
        return [f"if {self.cond_expr(scope, 1)}:", f"    raise {kind}({message}){cause}"]

    def stmt_return(self, scope, depth):
        return [f"if {self.cond_expr(scope, 1)}:", f"    return {self.int_expr(scope, 1)}"]

    def stmt_except_star(self, scope, depth):
        leaves = [f"{kind}({self.int_expr(scope, 1)})"
                  for kind in self.draw(st.lists(st.sampled_from(RAISED), min_size=1, max_size=3))]
        lines = ["try:",
                 f"    if {self.cond_expr(scope, 1)}:",
                 f"        raise ExceptionGroup({self.str_literal()}, [{', '.join(leaves)}])"]
        lines += indent(self.block(scope.child(), depth + 1, high=1))
        for kind in sorted(set(self.draw(st.lists(st.sampled_from(RAISED), min_size=1, max_size=2)))):
            e = self.fresh("e")
            lines += [f"except* {kind} as {e}:",
                      f"    print('group', repr({e}.message), repr({e}.exceptions))"]
            if self.chance(20):
                lines += [f"    raise TypeError({self.str_literal()})"]
        return lines

    def stmt_walrus(self, scope, depth):
        n = self.fresh("n")
        value = self.int_expr(scope, 1)
        scope.bind(n, INT)
        inner = scope.child()
        return ([f"if ({n} := {value}) {self.pick(['>', '<=', '!='])} {self.small()}:"]
                + indent(self.block(inner, depth + 1, high=2)))

    def stmt_global(self, scope, depth):
        name = self.fresh("G")
        value = self.int_expr(scope, 1)
        scope.bind(name, INT)
        return [f"global {name}", f"{name} = {value}"]

    def stmt_assert(self, scope, depth):
        return [f"assert {self.cond_expr(scope, 1)}, {self.str_expr(scope, 1)}"]

    def stmt_match(self, scope, depth):
        lists = scope.readable(LIST)
        if lists and self.chance(50):
            subject = self.pick(lists)
            head, rest = self.fresh("h"), self.fresh("t")
            case = scope.child()
            case.bind(head, INT)
            case.bind(rest, LIST)
            lines = [f"match {subject}:",
                     "    case []:"] + indent(self.block(scope.child(), depth + 1, high=1), 2)
            lines += [f"    case [{head}, *{rest}] if {self.cond_expr(case, 1)}:"]
            lines += indent(self.block(case, depth + 1, high=2), 2)
            lines += ["    case _:"] + indent(self.block(scope.child(), depth + 1, high=1), 2)
            return lines
        lines = [f"match {self.int_expr(scope, 1)}:"]
        lines += [f"    case {self.small(-1, 3)} | {self.small(4, 6)}:"]
        lines += indent(self.block(scope.child(), depth + 1, high=2), 2)
        v = self.fresh("v")
        guarded = scope.child()
        guarded.bind(v, INT)
        lines += [f"    case {v} if {self.cond_expr(guarded, 1)}:"]
        lines += indent(self.block(guarded, depth + 1, high=2), 2)
        lines += ["    case _:"] + indent(self.block(scope.child(), depth + 1, high=1), 2)
        return lines

    def stmt_unpack(self, scope, depth):
        lists = scope.readable(LIST)
        if lists and self.chance(50):
            a, rest, z = self.fresh("n"), self.fresh("xs"), self.fresh("n")
            line = self.pick([f"{a}, *{rest} = {self.pick(lists)}",
                              f"{a}, *{rest}, {z} = {self.pick(lists)}"])
            scope.bind(a, INT)
            scope.bind(rest, LIST)
            if f", {z} =" in line:
                scope.bind(z, INT)
            return [line]
        a, b = self.fresh("n"), self.fresh("n")
        line = f"{a}, {b} = {self.int_expr(scope, 1)}, {self.int_expr(scope, 1)}"
        scope.bind(a, INT)
        scope.bind(b, INT)
        return [line] + ([f"{a}, {b} = {b}, {a}"] if self.chance(50) else [])

    def function_scope(self, scope, params):
        inner = scope.child(function=True)
        for p in params:
            inner.bind(p, INT)
        # Outer ints this function may rebind: declared nonlocal (only names of enclosing
        # functions qualify, and the whole program is a function).
        outer = [n for n in scope.counters() if n not in params]
        shared = sorted(set(self.draw(st.lists(st.sampled_from(outer), max_size=1)))) if outer else []
        inner.writable.update(shared)
        return inner, shared

    def stmt_helper(self, scope, depth):
        name = self.fresh("f")
        params = [self.fresh("p") for _ in range(self.small(0, 2))]
        inner, shared = self.function_scope(scope, params)
        lines = [f"def {name}({', '.join(params)}):"]
        body = [f"nonlocal {', '.join(shared)}"] if shared else []
        saved, self.loops = self.loops, MAX_LOOPS - 1    # one loop level in a helper
        self.function_depth += 1
        if self.chance(60):
            body += self.block(inner, depth + 1, high=2)
        if self.chance(15):
            # A return in finally swallows whatever the try raised.
            body += ["try:"] + indent(self.block(inner.child(), depth + 1, high=2))
            body += ["finally:", f"    return {self.int_expr(inner, 1)}"]
        self.function_depth -= 1
        self.loops = saved
        body += [f"return {self.int_expr(inner)}"]
        scope.helpers.append((name, tuple(params)))
        return lines + indent(body)

    def stmt_generator(self, scope, depth):
        name = self.fresh("g")
        n = self.fresh("p")
        inner, _ = self.function_scope(scope, [n])
        i = self.fresh("i")
        loop = inner.child()
        loop.bind(i, INT)
        driven = self.chance(40)
        if driven:
            # Driven by hand with next/send/throw/close: receives values, handles throws.
            got, e = self.fresh("r"), self.fresh("e")
            received = loop.child()
            received.bind(got, INT)
            body = [f"for {i} in range({n} % 4 + 1):",
                    "    try:",
                    f"        {got} = yield {self.int_expr(loop, 1)}",
                    f"        print('got', {got})",
                    f"    except ValueError as {e}:",
                    f"        print('thrown', {e})",
                    f"        yield {self.int_expr(loop, 1)}",
                    "    finally:",
                    f"        print('leaving', {i})",
                    f"return {self.int_expr(inner, 1)}"]
        else:
            forms = [[f"for {i} in range({n} % 4):",
                      f"    if {self.cond_expr(loop, 1)}:",
                      f"        yield {self.int_expr(loop, 1)}"],
                     [f"yield from range({n} % 3)", f"yield {self.int_expr(inner, 1)}"],
                     [f"yield from ({self.int_expr(loop, 1)} for {i} in range({n} % 4))"],
                     [f"def sub({i}):", f"    yield {i}", f"    return {i} * 2",
                      f"got = yield from sub({n} % 3)", "yield got + 1"]]
            body = self.pick(forms)
        scope.generators.append((name, driven))
        return [f"def {name}({n}):"] + indent(body)

    def stmt_drive(self, scope, depth):
        name = self.pick([g for g, driven in scope.generators if driven])
        g = self.fresh("gen")
        steps = []
        for _ in range(self.small(1, 4)):
            steps.append(self.pick([f"print('next', next({g}))",
                                    f"print('send', {g}.send({self.int_expr(scope, 1)}))",
                                    f"print('throw', {g}.throw(ValueError({self.str_literal()})))"]))
        return ([f"{g} = {name}({self.int_expr(scope, 1)})", "try:"] + indent(steps)
                + ["finally:", f"    {g}.close()"])

    def stmt_class(self, scope, depth):
        name = self.fresh("K")
        v, w = self.fresh("v"), self.fresh("w")
        method = scope.child(function=True)
        method.bind(w, INT)
        method.bind(f"self.{v}", INT)       # an attribute reads like a name
        base = self.pick(["", "(object)"])
        lines = [f"class {name}{base}:",
                 f"    scale = {self.small(1, 3)}",
                 f"    def __init__(self, {v}):",
                 f"        self.{v} = {v} * self.scale",
                 f"    def m(self, {w}):",
                 f"        return {self.int_expr(method, 1)}",
                 "    def __repr__(self):",
                 f"        return f'{name}({{self.{v}}})'",
                 # Rich comparisons, reflected when the left operand is an int or None.
                 "    def __eq__(self, other):",
                 f"        return self.{v} == getattr(other, {v!r}, other)",
                 "    def __lt__(self, other):",
                 f"        return self.{v} < getattr(other, {v!r}, other)"]
        scope.classes.append(name)
        if self.chance(40):
            sub, w2 = self.fresh("K"), self.fresh("w")
            lines += [f"class {sub}({name}):",
                      f"    def m(self, {w2}):",
                      f"        return super().m({w2} {self.pick(['+', '-'])} {self.small(0, 3)}) * 2"]
            scope.classes.append(sub)
        return lines

    def stmt_manager(self, scope, depth):
        name = self.fresh("CM")
        suppress = self.pick(["True", "False", "isinstance(value, KeyError)"])
        lines = [f"class {name}:",
                 "    def __enter__(self):",
                 f"        print('enter {name}')",
                 f"        return {self.small()}",
                 "    def __exit__(self, kind, value, tb):",
                 f"        print('exit {name}', kind.__name__ if kind else None)",
                 f"        return {suppress}"]
        scope.managers.append(name)
        return lines

    def stmt_with(self, scope, depth):
        x = self.fresh("n")
        inner = scope.child()
        inner.bind(x, INT)
        items = [f"{self.pick(scope.managers)}() as {x}"]
        if self.chance(30):
            y = self.fresh("n")
            inner.bind(y, INT)
            items.append(f"{self.pick(scope.managers)}() as {y}")
        return [f"with {', '.join(items)}:"] + indent(self.block(inner, depth + 1))

    def program(self):
        scope = Scope()
        body = self.block(scope, 0, low=2, high=8)
        results = [n for n in sorted(scope.vars) if not n.startswith("self.")]
        body.append(f"return ({''.join(n + ', ' for n in results)})")
        return "\n".join(["def program():"] + indent(body)) + "\n"


def indent(lines, levels=1):
    return ["    " * levels + line for line in lines]


@st.composite
def programs(draw):
    """Source text of a module defining ``program()`` (see the module docstring)."""
    return ProgramBuilder(draw).program()
