"""Programs for the capture fuzzer: tensor ops mixed with reads and changes of outside state.

A program is the source of a module defining ``make()``, which returns ``(program, cells)``:
``program(st, x)`` works on ``st`` (a user object holding lists, dicts, a set, a deque, an
OrderedDict, numbers, a tensor; one list reachable twice, one nested in another), on the module's
globals (a list, a dict, a number, a tensor) and on closure cells of ``make`` (a list and a counter);
``cells()`` reads the cells back. Every statement is drawn from ``STATEMENTS``: one kind of read or
change, written so that eager never fails on it whatever state earlier calls left (its guards are
part of the program: ``if len(L) > 1: del L[0]``), except where the program catches the error itself.
Between calls the harness changes the state from outside (``BETWEEN``).
"""
from hypothesis import strategies as st

#: lists of tensors the program can reach (the same list twice: ``st.alias is st.tl``)
TENSOR_LISTS = ["st.tl", "st.alias", "GL", "cl", "st.nest[0]"]
#: lists of small ints
INT_LISTS = ["st.il", "st.nest[1]"]
#: dicts of str -> tensor
TENSOR_DICTS = ["st.td", "GD"]
KEYS = ["a", "b", "c"]

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


@st.composite
def statements(draw):
    template = draw(st.sampled_from(STATEMENTS))
    return template.format(T=draw(st.sampled_from(TENSOR_LISTS)), I=draw(st.sampled_from(INT_LISTS)),
                           D=draw(st.sampled_from(TENSOR_DICTS)), k=draw(st.sampled_from(KEYS)),
                           c=draw(st.integers(1, 3)), i=draw(st.sampled_from([0, -1])),
                           big=draw(st.sampled_from([2, 5])))


def render(body):
    """The module source of a program whose body is ``body`` (a list of statements)."""
    lines = ["    " + line for statement in body for line in statement.splitlines()]
    return PRELUDE + "\n".join("    " + line for line in lines) + "\n" + EPILOGUE


PRELUDE = '''\
import bisect
import heapq
import torch

GL = [torch.ones(3)]
GD = {"a": torch.zeros(3)}
GN = 1
GT = torch.full((3,), 2.0)


def make():
    cl = [torch.full((3,), 3.0)]
    cn = 1

    def program(st, x):
        global GN, GT, GL
        nonlocal cn
        acc = x * 1
'''

EPILOGUE = '''\
        return acc

    def cells():
        return cl, cn

    return program, cells
'''


@st.composite
def programs(draw, min_size=1, max_size=8):
    return render(draw(st.lists(statements(), min_size=min_size, max_size=max_size)))


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


def betweens(calls):
    return st.lists(st.sampled_from(BETWEEN), min_size=calls, max_size=calls)
