"""Programs for the capture fuzzer: tensor ops mixed with reads and changes of outside state.

A program is the source of a module defining ``make()``, which returns ``(program, cells)``:
``program(st, x, a, b)`` works on ``st`` (a user object holding lists, dicts, a set, a deque, an
OrderedDict, numbers, a tensor; one list reachable twice, one nested in another), on the module's
globals (a list, a dict, a number, a tensor) and on closure cells of ``make`` (a list and a counter);
``cells()`` reads the cells back. Every statement is drawn from ``STATEMENTS``: one kind of read or
change, written so that eager never fails on it whatever state earlier calls left (its guards are
part of the program: ``if len(L) > 1: del L[0]``), except where the program catches the error itself.
Between calls the harness changes the state from outside (``BETWEEN``).

Those are the "containers" family; ``capture_families`` holds the others (stale reads after writes,
aliased input views, identities, text of tensors, gradients, torch's global state, integer edges). A
``Case`` is one drawn program: its statements, the changes between calls, how the compiled function is
bound (a function, a decorated method, a module's decorated ``forward``, a compiled bound method) and
the backend.
"""
from dataclasses import dataclass, field

from hypothesis import strategies as st

from capture_families import FAMILIES, STEADY_COMPILES, Family

#: names the templates' placeholders stand for (drawn one at a time, each time it is used)
#: lists of tensors the program can reach (the same list twice: ``st.alias is st.tl``)
TENSOR_LISTS = ["st.tl", "st.alias", "GL", "cl", "st.nest[0]"]
#: lists of small ints
INT_LISTS = ["st.il", "st.nest[1]"]
#: dicts of str -> tensor
TENSOR_DICTS = ["st.td", "GD"]
KEYS = ["a", "b", "c"]
#: dicts of str -> number (keys "steps" and "lr" always there) and plain objects (``Obj``)
NUMBER_DICTS = ["st.cnt", "GC"]
NUMBER_KEYS = ["steps", "lr"]
OBJECTS = ["st.obj", "GO"]
#: the input views
VIEWS = ["a", "b"]

#: statement templates: {T} a tensor list, {I} an int list, {D} a tensor dict, {k} a key,
#: {c} a small int, {i} an index that exists when the guard in front says so
STATEMENTS = [
    "{T}.append(x * {c})",
    "{T}.extend([x + {c}, acc])",
    "{T}.insert({i}, x - {c})",
    "if len({T}) > 1: acc = acc + {T}.pop({i})",
    "if {T}: acc = acc + {T}[{i}]",
    "{T}.reverse()",
    "if len({T}) > 1: del {T}[0]",
    "if len({T}) > 2: {T}[1:3] = [x * {c}]",
    "if {T}: {T}[-1] = acc * {c}",
    "{T} += [acc]",
    "if len({T}) > 3: {T}.clear()",
    "for v in {T}: acc = acc + v",
    "acc = acc * len({T})",
    "try:\n    acc = acc + {T}[{big}]\nexcept IndexError:\n    acc = acc - 1",
    "{I}.append({c})",
    "if {c} in {I}: {I}.remove({c})",
    "{I}.sort()",
    "{I}.sort(reverse=True)",
    "heapq.heappush({I}, {c})",
    "if {I}: acc = acc * heapq.heappop({I})",
    "bisect.insort({I}, {c})",
    "if {I}: acc = acc + {I}[0]",
    "{I}.insert(0, {c})",
    "if len({I}) > 1: {I}.pop()",
    "if len({I}) > 4: del {I}[1:3]",
    "{I} *= 1 + (len({I}) < 3)",
    "{D}['{k}'] = x * {c}",
    "acc = acc + {D}.pop('{k}', x)",
    "acc = acc + {D}.setdefault('{k}', acc)",
    "{D}.update({k}=x + {c})",
    "if '{k}' in {D}: del {D}['{k}']",
    "if {D}: acc = acc + {D}.popitem()[1]",
    "for key in {D}: acc = acc + {D}[key]",
    "acc = acc + {D}.get('{k}', x)",
    "{D} |= {{'{k}': acc}}",
    "if len({D}) > 2: {D}.clear()",
    "if '{k}' in st.od: st.od.move_to_end('{k}')",
    "if st.od: acc = acc + st.od.popitem(last=False)[1]",
    "st.od['{k}'] = acc",
    "for value in st.od.values(): acc = acc + value",
    "st.iset.add({c})",
    "st.iset.discard({c})",
    "st.iset |= {{{c}}}",
    "st.iset -= {{{c}}}",
    "if {c} in st.iset: acc = acc + 1",
    "acc = acc * len(st.iset)",
    "st.tq.append(x * {c})",
    "st.tq.appendleft(acc)",
    "if st.tq: acc = acc + st.tq.popleft()",
    "st.tq.rotate({c})",
    "if st.tq: acc = acc + st.tq[0]",
    "st.n = st.n + {c}",
    "acc = acc * st.n",
    "st.t = acc * {c}",
    "acc = acc + st.t",
    "st.tmp = x * {c}",
    "if hasattr(st, 'tmp'): del st.tmp",
    "if hasattr(st, 'tmp'): acc = acc + st.tmp",
    "GN = GN + {c}",
    "if GN > {c}: acc = acc + 1",
    "GT = acc * {c}",
    "acc = acc + GT",
    "cn += {c}",
    "acc = acc * cn",
    "print(len({T}), {I})",
    "print(sorted(st.iset))",
    # rebinding, copies, containers inside containers, aliasing made by the program
    "st.tl = [x * {c}]",
    "GL = GL + [acc]",
    "st.nest[0].append(acc)",
    "tmp = list({T})\ntmp.append(x)\nacc = acc + tmp[-1] * len({T})",
    "if {I}: acc = acc + sorted({I})[-1]",
    "st.td['{k}'] = acc\nst.od['{k}'] = st.td['{k}']",
    "if {T}: {T}.remove({T}[0])",
    "try:\n    {I}.remove(9)\nexcept ValueError:\n    acc = acc + 2",
    "try:\n    del {D}['zz']\nexcept KeyError:\n    acc = acc * 2",
    "for k2, v2 in list({D}.items()): {D}[k2] = v2 + 1",
    "st.nest[1][0:1] = [{c}, {c}]",
    "st.n, st.m = st.n + 1, len({T})",
    # an nn.Module's own state: a counter, a list attribute, a buffer, a submodule's attribute
    "st.mod.count = st.mod.count + {c}",
    "acc = acc * st.mod.count",
    "st.mod.hist.append(acc)",
    "if st.mod.hist: acc = acc + st.mod.hist.pop(0)",
    "st.mod.buf.add_(x * {c})",
    "acc = acc + st.mod.buf",
    "acc = st.mod.lin(acc)",
    "st.mod.lin.tag = len(st.mod.hist)",
    # capture gives up on some calls only (a tensor printed): those calls run eagerly, others compile
    "if len({T}) > {c}: print(acc.sum())",
    "if st.n > {c}: print(acc)",
]




#: changes made from outside between calls (on both sides alike), as statements over ``st`` and ``g``
#: (the program's module globals)
BETWEEN = [
    "pass",
    "st.il.append(2)",
    "st.tl.append(torch.ones(3))",
    "st.n += 1",
    "st.td['b'] = torch.ones(3)",
    "st.iset.add(3)",
    "st.tq.clear()",
    "g['GN'] += 1",
    "g['GL'].clear()",
    "st.alias = list(st.tl)",
    "st.alias = st.tl",
    "st.nest[0] = st.tl",
    "g['GD'].pop('a', None)",
]


def _placeholders(choose):
    """One value for every placeholder a template may hold (``choose(options)`` picks one)."""
    return dict(T=choose(TENSOR_LISTS), I=choose(INT_LISTS), D=choose(TENSOR_DICTS), k=choose(KEYS),
                c=choose(range(1, 4)), i=choose([0, -1]), big=choose([2, 5]), N=choose(NUMBER_DICTS),
                K=choose(NUMBER_KEYS), O=choose(OBJECTS), V=choose(VIEWS))


#: changes between calls that matter to every family
COMMON_BETWEEN = ["pass", "st.n += 1"]

#: the containers family: the statements above
CONTAINERS = Family(tuple(STATEMENTS), tuple(b for b in BETWEEN if b not in COMMON_BETWEEN))
ALL_FAMILIES = {"containers": CONTAINERS, **FAMILIES}

#: how the compiled function is bound, with its weight in draws (see ``render``)
BINDINGS = {"function": 7, "method": 1, "module": 1, "bound": 1}


@dataclass
class Case:
    """One drawn program: ``repr`` is ready to paste into ``prop_capture.FOUND``."""
    body: list
    changes: list
    binding: str = "function"
    backend: str = "eager"
    families: list = field(default_factory=list, compare=False)
    #: a steady state: the compiled side compiles at most this many times over all the calls
    most_compiles: int = None

    def source(self):
        return render(self.body, self.binding)

    def __repr__(self):
        steady = f", most_compiles={self.most_compiles}" if self.most_compiles is not None else ""
        return (f"Case(body={self.body!r},\n     changes={self.changes!r},\n"
                f"     binding={self.binding!r}, backend={self.backend!r}{steady})  # {'+'.join(self.families)}")


def draw_case(choose, calls, families=None, bindings=None):
    """A ``Case`` drawn with ``choose(options)`` (Hypothesis' ``sampled_from`` or ``random.choice``):
    one or two families (of ``families``, default all), 1–8 of their statements, one change per call,
    a binding (of ``bindings``, default all, by weight)."""
    names = sorted(families or ALL_FAMILIES)
    drawn = sorted({choose(names) for _ in range(choose([1, 1, 2]))})
    pool = [t for name in drawn for t in ALL_FAMILIES[name].statements]
    templates = [choose(pool) for _ in range(choose(range(1, 9)))]
    body = [template.format(**_placeholders(choose)) for template in templates]
    betweens = COMMON_BETWEEN + [b for name in drawn for b in ALL_FAMILIES[name].betweens]
    alone = ALL_FAMILIES[drawn[0]] if len(drawn) == 1 else None
    if alone is not None and alone.steady and choose([True, False]):
        betweens = COMMON_BETWEEN  # (half of such programs: nothing else changes their state)
    changes = [choose(betweens) for _ in range(alone.calls if alone and alone.calls else calls)]
    steady = alone is not None and alone.steady and all(t in alone.steady for t in templates) and \
        all(c in COMMON_BETWEEN for c in changes)
    binding = choose([name for name, weight in BINDINGS.items() for _ in range(weight)
                      if name in (bindings or BINDINGS)])
    codegen = max(ALL_FAMILIES[name].codegen for name in drawn)
    backend = "magpy" if choose(range(100)) < codegen else "eager"
    return Case(body, changes, binding, backend, drawn, STEADY_COMPILES if steady else None)


@st.composite
def cases(draw, calls, families=None, bindings=None):
    return draw_case(lambda options: draw(st.sampled_from(list(options))), calls, families, bindings)


def render(body, binding="function"):
    """The module source of a program whose body is ``body`` (a list of statements), bound as
    ``binding`` says (``BINDINGS``): ``COMPILE`` (a global the harness sets: ``magpy.compile`` or
    nothing) is applied to the function, as a decorator of a method or of a module's ``forward``, or
    to a bound method."""
    name, head, tail = BINDING_SOURCE[binding]
    depth = 2 if not head else 3
    pad = "    " * (depth - 1)
    lines = [pad + "def " + name + ("(st, x, a, b):" if not head else "(self, st, x, a, b):"),
             pad + "    global GN, GT, GL", pad + "    nonlocal cn", pad + "    acc = x * 1"]
    lines += [pad + "    " + line for statement in body for line in statement.splitlines()]
    lines.append(pad + "    return acc")
    return PRELUDE + head + "\n".join(lines) + "\n" + tail + EPILOGUE


PRELUDE = '''\
import bisect
import copy
import heapq
import random
import weakref
import torch
from torch._higher_order_ops.scan import scan


class AddOne(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return out + 1 if func in (torch.add, torch.Tensor.add, torch.Tensor.__add__) else out


class Obj:
    count = 1

    def __init__(self, n):
        self.n = n


class Released:
    """Logs its death (a resource released by ``__del__``)."""

    def __init__(self, log, n):
        self.log, self.n = log, n

    def __del__(self):
        self.log.append(self.n)


GL = [torch.ones(3)]
GD = {"a": torch.zeros(3)}
GN = 1
GT = torch.full((3,), 2.0)
GC = {"steps": 0, "lr": 1.0}
GO = Obj(2)


def make():
    cl = [torch.full((3,), 3.0)]
    cn = 1

'''

#: binding -> (the function's name, source before it, source after it: binds ``program``)
BINDING_SOURCE = {
    "function": ("program", "", "    program = COMPILE(program)\n"),
    "method": ("program", "    class Holder:\n        @COMPILE\n", "    program = Holder().program\n"),
    "module": ("forward", "    class Holder(torch.nn.Module):\n        @COMPILE\n", "    program = Holder()\n"),
    "bound": ("program", "    class Holder:\n", "    program = COMPILE(Holder().program)\n"),
}

EPILOGUE = '''
    def cells():
        return cl, cn

    return program, cells
'''
