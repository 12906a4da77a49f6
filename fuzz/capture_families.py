"""Families of statements for the capture fuzzer, beyond changes of containers.

Each family is one kind of outside state a compiled call may get wrong from its second call on: its
statement templates (read and written inside the call) and the changes the harness makes between calls
that matter to it. A program draws one or two families and mixes their statements, so that a write and
a later read of the same thing meet in one call often. Families are tables; adding a read kind or a
write kind is adding a row.

Templates use the placeholders of ``capture_programs.PLACEHOLDERS`` (``{N}`` a dict of numbers, ``{K}``
one of its keys, ``{O}`` a plain object, ``{V}`` an input view, ...). What the program reaches:
``st.cnt``/``GC`` dicts of numbers with keys "steps" and "lr" (never deleted), ``st.obj``/``GO``
instances of the module's class ``Obj`` (instance attribute ``n``, class attribute ``count``),
``a``/``b`` the input views (their relation, ``call.views``, changes between calls), ``st.memo`` (id →
the object itself, so that no id is reused while the check runs), ``st.ids`` (ids of inputs), ``st.log``
(strings); for the steady family ``st.srt`` (a sorted list of floats), ``st.heap`` (ints), ``st.hist`` (a
history of tensors), ``st.win`` (a deque of at most 3 ints), ``st.recent`` (a deque), ``st.step``.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    statements: tuple
    betweens: tuple = ()
    #: chance in percent that a program of this family runs on the "magpy" backend (our codegen):
    #: aliasing and integer edges go wrong only in generated kernels, retained gradients and the
    #: default dtype there first
    codegen: int = 20
    #: how many calls a program of this family alone makes (None: the harness's number)
    calls: int = None
    #: statements whose programs reach a steady state: a program of this family alone, drawn from these
    #: only, whose state nothing else changes between calls (``COMMON_BETWEEN`` only: a change from outside
    #: is one more thing that changes, one more compile), compiles at most ``STEADY_COMPILES`` times over
    #: all its calls
    steady: tuple = ()


#: what a steady state allows: a first entry, and one that takes what changes as it comes
STEADY_COMPILES = 2


#: writes of a value the call reads back later through another path (the read kinds below)
STALE_WRITES = (
    "{N}['{K}'] += {c}",
    "{N}['{K}'] *= 0.5",
    "{N}['{K}'] = {N}['{K}'] - {c}",
    "{N}.update({K}={N}['{K}'] * 2)",
    "{N}['extra'] = {c}",
    "{O}.n += {c}",
    "{O}.n = {O}.n * 2",
    "setattr({O}, 'n', {O}.n - {c})",
    "type({O}).count += {c}",
    "Obj.count = Obj.count * 2",
    "{O}.__dict__['n'] = {c}",
    "vars({O})['n'] += 1",
)

#: reads of a dict or an object through anything but one key or one attribute
STALE_READS = (
    "acc = acc * sum({N}.values())",
    "acc = acc + sum(v for _, v in {N}.items())",
    "acc = acc * next(iter({N}.values()))",
    "acc = acc + list({N}.items())[-1][1]",
    "acc = acc + dict({N})['{K}']",
    "acc = acc + {N}.copy()['{K}']",
    "acc = acc + {{**{N}}}['{K}']",
    "acc = acc + len(str({N}))",
    "acc = acc + sorted({N}.values())[0]",
    "acc = acc + max({N}.values())",
    "acc = acc + [*{N}.values()][0]",
    "acc = acc + {N}['{K}']",
    "acc = acc + vars({O})['n']",
    "acc = acc + {O}.__dict__['n']",
    "acc = acc + copy.copy({O}).n",
    "acc = acc + {O}.count",
    "acc = acc + type({O}).count",
    "acc = acc + getattr({O}, 'n')",
    "acc = acc + sum(vars({O}).values())",
    "acc = acc + len(str(vars({O})))",
    "acc = acc + {O}.n",
)

#: in-place writes through one input view, reads through another (their overlap changes between calls)
ALIAS = (
    "{V}.mul_({c})",
    "{V}.add_(x)",
    "{V} += {c}",
    "{V}.copy_(acc)",
    "{V}[0] = acc[{i}]",
    "{V}.clamp_(min=0)",
    "a.sub_(b)",
    "acc = acc + {V}",
    "acc = acc + a * b",
    "acc = acc + {V}.sum()",
    "torch.add(acc, {c}, out={V})",
    "acc = acc + {V}.clone()",
)

#: identities and hashes used as values: they must follow each call's new objects
IDENTITY = (
    "st.memo[id(x)] = x",
    "st.memo[id({V})] = {V}",
    "st.memo[hash(x)] = x",
    "acc = acc + len(st.memo)",
    "if id(x) in st.memo: acc = acc + st.memo[id(x)]",
    "acc = acc + st.memo.get(id({V}), x)",
    "st.ids.append(id(x))",
    "st.ids.append(id({V}))",
    "acc = acc + len(set(st.ids))",
    "acc = acc + (id(a) == id(b))",
    "acc = acc + (hash(a) == hash(b))",
    "acc = acc + (a is b)",
    "acc = acc + (a.data_ptr() == b.data_ptr())",
    "acc = acc + (a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())",
    "acc = acc + (st.ids.count(id(x)) if st.ids else -1)",
)

#: the text of tensor values, used in the result or stored
TEXT = (
    "acc = acc + len(str(acc))",
    "acc = acc + len(repr(x))",
    "acc = acc + len('%s' % (acc,))",
    "acc = acc + len(f'{{x}}')",
    "acc = acc + float(format(x.sum(), '.2f'))",
    "acc = acc + len(str(x.tolist()))",
    "st.log.append(str(acc))",
    "st.log.append('%s' % (x,))",
    "st.log.append(format(acc.sum(), '.2f'))",
    "st.log.append(repr(x.max()))",
    "acc = acc + len(st.log)",
)

#: gradients inside the call: retained ones of non-leaves, of parameters, of a leaf made here
GRAD = (
    "w = x.detach().requires_grad_()\nh = w * {c} + acc.detach()\nh.retain_grad()\n"
    "(h * h).sum().backward()\nacc = acc + h.grad + w.grad",
    "h = st.mod.lin(acc.detach())\nh.retain_grad()\nh.pow(2).sum().backward()\nacc = acc + h.grad",
    "acc = acc + st.mod.lin.bias.grad if st.mod.lin.bias.grad is not None else acc",
    "h = acc * {c}\nif h.requires_grad:\n    h.retain_grad()\n    h.sum().backward()\n    acc = acc + h.grad",
    "st.keep = st.mod.lin(x)\nst.keep.retain_grad()\nst.keep.sum().backward()",
    "if hasattr(st, 'keep') and st.keep.grad is not None: acc = acc + st.keep.grad",
    "acc = acc + st.mod.lin.weight.sum()",
)

#: reads (and a few writes) of torch's global state; the harness changes it between calls
GLOBALS = (
    "acc = acc + torch.zeros(3)",
    "acc = acc + torch.tensor([0.5, 1.0, 2.0])",
    "acc = acc + torch.arange(3) / 2",
    "acc = acc * torch.is_grad_enabled()",
    "acc = acc + st.mod.lin.weight.sum()",
    "acc = acc + torch.are_deterministic_algorithms_enabled()",
    "acc = acc + (torch.get_float32_matmul_precision() == 'highest')",
    "acc = acc + torch.mm(acc.reshape(-1, 3), st.mod.lin.weight).reshape(acc.shape)",
    "acc = acc + torch.get_default_dtype().itemsize",
    "acc = acc.to(torch.get_default_dtype())",
    "acc = acc + torch.is_autocast_enabled('cpu')",
    "torch.set_grad_enabled(st.n % 2 == 1)",
    "torch.set_default_dtype(torch.float64 if st.n > 2 else torch.float32)",
)

#: out-of-range indices, zero divisors, negative exponents, ints past int64, float floor division:
#: eager raises (or not) by the call's values; compiled must raise the same
EDGES = (
    "acc = acc + acc[(x * 2).long()]",
    "acc = acc + acc[(x * 2).long() % 3 - 3]",
    "acc = acc + torch.gather(acc.reshape(-1), 0, (x.reshape(-1) * 2).long().clamp(min=0))[:3]",
    "acc = acc + torch.arange(3) // (x > 0).long()",
    "acc = acc + torch.arange(3) % (x > -0.5).long()",
    "acc = acc + torch.arange(1, 4) ** (st.n - 2)",
    "acc = acc * (1 << (30 * st.n))",
    "acc = acc + torch.tensor(1 << (21 * st.n)).float()",
    "acc = acc + acc // 0.3",
    "acc = acc + torch.remainder(acc, -0.7)",
    "acc = acc + (torch.full((3,), 2 ** 62) * (x > 0).long() * 4).float()",
    "acc = acc + torch.zeros(5).index_add(0, (x.reshape(-1) * 3).long()[:3].abs(), acc.reshape(-1)[:3])[:3]",
    "acc = acc + torch.nn.functional.one_hot((x.reshape(-1) * 2).long().abs(), 4)[:3, 0]",
)

#: effects made before an op that may fail on a later call's data (an index past the end): the inputs
#: written in place, the generators drawn from, outside state changed and text printed up to the failing
#: op must be eager's, and none after it
PARTIAL = (
    "a.add_({c})",
    "b.mul_(0.5)",
    "st.log.append('p')",
    "st.n += 1",
    "{N}['{K}'] += {c}",
    "print('at', st.n)",
    "acc = acc + torch.nn.functional.dropout(acc, 0.5)",
    "acc = acc * random.random()",
    # conditions the graph computes and the entry checks after it runs (a draw decides, or data read
    # after an input was written): a check that fails undoes the run, the effects before it included
    "if torch.rand(()) > 0.5: acc = acc * 2",
    "if (acc + a).sum() > {c}: acc = acc - 1",
    "if torch.nn.functional.dropout(acc, 0.5).sum() > acc.sum(): acc = acc + 1",
) + EDGES[:3] + EDGES[11:]

#: outside state the call itself changes on every call (a sorted list, a heap, counters in a dict or on an
#: object, a history, a window), read as a length or a number: each reaches a steady state
STEADY = (
    "bisect.insort(st.srt, float(len(st.srt) % 5))\nacc = acc + x * len(st.srt)",
    "heapq.heappush(st.heap, {c} + 1)\nacc = acc + len(st.heap)",
    "heapq.heappush(st.heap, {c} * 3)\nacc = acc - heapq.heappop(st.heap) - len(st.heap)",
    "st.cnt['steps'] += {c}\nacc = acc + x * st.cnt['steps']",
    "st.cnt['k'] = st.cnt.get('k', 0) + {c}\nacc = acc + st.cnt['k']",
    "st.hist.append(acc.sum())\nacc = acc + x * len(st.hist)",
    "st.win.append({c})\nacc = acc + x * len(st.win)",
    "st.step += {c}\nacc = acc + x * st.step + st.step / 2",
    "st.mod.count = st.mod.count + {c}\nacc = acc + x * st.mod.count",
)
#: ... and decisions on such state (each way they go may compile once more), reads of what it holds
STEADY_DECIDED = (
    "st.recent.append(acc.mean())\nif len(st.recent) > 3: st.recent.popleft()\nacc = acc + x * len(st.recent)",
    "if len(st.hist) > {c}: acc = acc + 1",
    "if st.heap and st.heap[0] < {c} + 2: acc = acc + heapq.heappop(st.heap)",
    "if len(st.win) == st.win.maxlen: acc = acc + sum(st.win)",
    "if st.step % 2: acc = acc - st.step",
)
#: changes from outside between calls of the same kinds (results still eager's; each may compile once more)
STEADY_BETWEENS = ("st.hist.append(torch.ones(()))", "st.srt.append(100.0)", "st.heap.append(9)",
                   "st.cnt['steps'] += 2", "st.step += 3", "st.win.append(7)")

#: ``torch.vmap`` over bodies that read outside tensors (a global, a closure list, an input), nested vmaps,
#: and torch-function modes entered in the call (``AddOne``: every ``add`` one larger); the harness
#: rebinds and changes those tensors between calls, so a body replayed over the first call's values shows
BATCHED = (
    "acc = acc + torch.vmap(lambda r: r * GT)(torch.stack([acc, x]))[0]",
    "acc = acc + torch.vmap(lambda u, v: u * v + GN, in_dims=(0, None))(x.reshape(3, 1), a).sum(0)",
    "acc = acc + torch.vmap(lambda r: (r * GL[0]).sum(), in_dims=1)(torch.stack([x, b], 1).t())",
    "acc = acc + torch.vmap(torch.vmap(lambda u, v: u * v * cl[0][0]), in_dims=(0, None))(torch.stack([x, a]), b)"
    ".sum(0)",
    "acc = acc + torch.func.vmap(lambda r: (r + GT, r * 2), out_dims=(0, 1))(x.reshape(3, 1))[1].sum(0)",
    "with AddOne():\n    acc = torch.add(acc, x)",
    "with AddOne():\n    acc = acc + a * 2",
    "with AddOne():\n    acc = acc + torch.vmap(lambda r: torch.add(r, GT))(torch.stack([x, b])).sum(0)",
    # arguments and results in containers (pytree in_dims), chunks (templates: braces doubled)
    "acc = acc + torch.vmap(lambda p: p[0] * p[1] + GT, in_dims=((0, 0),))((torch.stack([x, a]), torch.stack([b, x])))"
    ".sum(0)",
    "acc = acc + torch.vmap(lambda d: d['u'] * d['v'] + GN, in_dims=({{'u': 0, 'v': None}},))"
    "({{'u': torch.stack([x, b]), 'v': a}}).sum(0)",
    "acc = acc + torch.vmap(lambda r: r.sin() * GL[0], chunk_size=1)(torch.stack([x, a])).sum(0)",
    # a list in_dims: eager raises ValueError (it had been read as a tuple: a result where eager raised)
    "acc = acc + torch.vmap(lambda u, v: u * v + GN, in_dims=[0, None])(x.reshape(3, 1), a).sum(0)",
    "acc = acc + torch.vmap(lambda r: {{'s': r * 2, 't': (r + GT,)}})(torch.stack([x, b]))['t'][0].sum(0)",
    # torch's higher-order operators: a predicate on data, a scan over rows, both reading outside tensors
    "acc = torch.cond(x.sum() > 0, lambda u: u + GT, lambda u: u * GN, (acc,))",
    "acc = acc + scan(lambda c, r: (c + r * GT, c * 2), acc, torch.stack([x, a, b]))[1].sum(0)",
)

#: objects whose death is their effect: a ``__del__`` (the program's ``Released``), torch's guard inside
#: the text of a tensor (functorch off while it formats: a ``vmap`` of a ``vmap`` after it needs it back)
LIFETIMES = (
    "r = Released(st.log, {c})\ndel r\nacc = acc * len(st.log)",
    "keep = Released(st.log, {c})\nacc = acc + keep.n",
    "acc = acc + len(f'{{x}}')",
    "acc = acc + float(format(x.sum(), '.2f'))",
    "acc = acc + torch.vmap(torch.vmap(lambda u, v: u * v + GN, in_dims=(None, 0)), in_dims=(0, None))(x, acc).sum(0)",
    "acc = acc + len(st.log)",
    "o = Obj.__new__(Obj)\nw = weakref.ref(o, lambda _: st.log.append({c}))\ndel o\nacc = acc * len(st.log)",
    "d = weakref.WeakValueDictionary()\nd['k'] = Obj({c})\nacc = acc + len(d)",
    "print(acc.sum())\nr = Released(st.log, {c})\ndel r\nacc = acc + len(st.log)",
)

FAMILIES = {
    "stale": Family(STALE_WRITES + STALE_READS, ("st.cnt['steps'] = 0", "g['GO'].n = 5", "g['Obj'].count += 1")),
    "alias": Family(ALIAS, tuple(f"call.views = {name!r}" for name in ("disjoint", "overlap", "same",
                                                                          "same_region", "interleaved",
                                                                          "expanded", "separate")),
                    codegen=70),
    "identity": Family(IDENTITY, ("call.views = 'same'", "call.views = 'disjoint'", "st.memo.clear()")),
    "text": Family(TEXT, ("st.log.clear()",)),
    "lifetimes": Family(LIFETIMES, ("st.log.clear()", "st.log.append(0)")),
    "grad": Family(GRAD, ("st.mod.zero_grad()", "torch.set_grad_enabled(False)", "torch.set_grad_enabled(True)"),
                   codegen=50),
    "globals": Family(GLOBALS, ("torch.set_default_dtype(torch.float64)", "torch.set_default_dtype(torch.float32)",
                                "torch.set_grad_enabled(False)", "torch.set_grad_enabled(True)",
                                "torch.use_deterministic_algorithms(True)",
                                "torch.set_float32_matmul_precision('medium')",
                                "torch.set_autocast_enabled('cpu', True)",
                                "torch.set_autocast_enabled('cpu', False)"),
                      codegen=50),
    "edges": Family(EDGES, ("st.n += 1", "call.scale = 3.0", "call.scale = 0.25"), codegen=70),
    "partial": Family(PARTIAL, ("call.scale = 3.0", "call.scale = 0.25", "call.scale = 1.0"), codegen=60),
    "steady": Family(STEADY + STEADY_DECIDED, STEADY_BETWEENS, codegen=40, calls=8, steady=STEADY),
    "batched": Family(BATCHED, ("g['GT'] = g['GT'] + 1", "g['GT'].mul_(-0.5)", "g['GN'] += 1",
                                "g['GL'][0] = g['GL'][0] * -2 + 1"), codegen=40),
}


def _views(base):
    """The input views ``(a, b)`` by relation, over a 6-element ``base`` made fresh for each call."""
    return {
        "disjoint": (base[0:3], base[3:6]),
        "overlap": (base[0:3], base[1:4]),
        "same": (base[0:3],) * 2,
        "same_region": (base[0:3], base[0:3]),
        "interleaved": (base[0:6:2], base[1:6:2]),
        "expanded": (base[0:1].expand(3), base[3:6]),
        "separate": (base[0:3].clone(), base[3:6].clone()),
    }


def views(base, relation):
    return _views(base)[relation]
