"""The program of one cache entry: guards, then the mock, as one code object.

    def entry(L):                      # L: the call's arguments bound to the function's slots
        try:
            <each guard; on failure>   return MISS     (an exception while checking is a miss too)
        except Exception:
            return MISS
        out = graph(<input tensors, read by their paths>)
        if out is a Raised:            return out      (undone: the caller runs the call eagerly)
        <side effects, in program order>
        return <the result rebuilt from graph outputs, paths and constants>
"""
import builtins
import collections
import itertools
import operator
import os
import types
import warnings

import torch

from ..capture.guards import TypeGuard, IdGuard, ValueGuard, TruthGuard, NoneGuard, TensorGuard, dense_with_sizes, order
from ..capture import predicates
from ..capture.conditions import is_conditions_guard
from ..capture.names import callable_name
from ..capture.sources import ArgSource, GlobalSource, ConstSource, AttrSource, ItemSource, CellSource, DrawSource, \
    Expr, Const, Source
from ..interp.identity import IdentityDict
from .asm import Assembler
from .guard_calls import GUARD_CALLS, same_float
from .made import fill_mapping as _fill_mapping, new_mapping as _new_mapping, rebuilt as _rebuilt, \
    set_state as _set_state
from .undo import Raised, rng_state, set_rng_state, state_functions, undoable


class _Miss:
    def __repr__(self):
        return "MISS"


MISS = _Miss()


class _Eager:
    def __repr__(self):
        return "EAGER"


#: what an eager entry returns when its guards pass: the caller runs the original function
EAGER = _Eager()


#: pure functions emitted as the bytecode operation itself: fn -> (argc, emit, operands reversed)
_INLINE = IdentityDict({
    operator.eq: (2, lambda a: a.compare_op("=="), False),
    operator.ne: (2, lambda a: a.compare_op("!="), False),
    operator.lt: (2, lambda a: a.compare_op("<"), False),
    operator.le: (2, lambda a: a.compare_op("<="), False),
    operator.gt: (2, lambda a: a.compare_op(">"), False),
    operator.ge: (2, lambda a: a.compare_op(">="), False),
    operator.is_: (2, lambda a: a.is_(), False),
    operator.is_not: (2, lambda a: a.is_(negate=True), False),
    operator.contains: (2, lambda a: a.contains(), True),   # contains(c, x) is ``x in c``
    operator.getitem: (2, lambda a: a.item(), False),
    getattr: (2, None, False),
}.items())


def global_value(namespace, name):
    """A global as LOAD_GLOBAL finds it: the module's dict, then its builtins."""
    if name in namespace:
        return namespace[name]
    b = namespace.get("__builtins__", builtins)
    return (b if isinstance(b, dict) else b.__dict__)[name]


def _replay_call(fn, values, keywords):
    """Re-make a call the program made (``print``, ``warnings.warn``) with this call's arguments."""
    n = len(values) - len(keywords)
    return fn(*values[:n], **dict(zip(keywords, values[n:])))


class Entry:
    """A compiled cache entry: ``run(L)`` returns the call's result, or MISS when a guard fails."""

    def __init__(self, run, text, guards, graph_module, op_count):
        self.run = run
        self.text = text
        self.guards = guards
        self.graph_module = graph_module
        self.op_count = op_count


class _Emitter:
    def __init__(self, name):
        self.asm = Assembler(name, ["L"])
        self.temps = 0
        # every path is evaluated once: later guards and the mock load it from a local. All guards run
        # in sequence before the mock, so a local is always set by the time it is read.
        self.memo = {}

    def temp(self):
        self.temps += 1
        return f"t{self.temps}"

    # ---- expressions -------------------------------------------------------------------------------
    def expr(self, e):
        if type(e) is Const:
            self.asm.const(e.value)
            return
        var = self.memo.get(e)
        if var is not None:
            self.asm.load_fast(var)
            return
        self._expr(e)
        var = self.temp()
        self.asm.emit("COPY", 1)
        self.asm.store_fast(var)
        self.memo[e] = var

    def _expr(self, e):
        a = self.asm
        t = type(e)
        if t is ArgSource:
            a.load_fast("L")
            a.const(e.index)
            a.item()
        elif t is GlobalSource:
            a.call_begin(global_value)
            a.const(e.namespace)
            a.const(e.name)
            a.call_end(2)
        elif t is ConstSource:
            a.const(e.value)
        elif t is DrawSource:
            a.load_fast(f"draw{e.index}")
        elif t is AttrSource:
            self.expr(e.base)
            a.attr(e.name)
        elif t is ItemSource:
            self.expr(e.base)
            a.const(e.key)
            a.item()
        elif t is CellSource:
            a.const(e.cell)
            a.attr("cell_contents")
        elif t is Expr:
            inline = _INLINE.get(e.fn)
            if inline is not None and inline[0] == len(e.args) and \
                    (e.fn is not getattr or (type(e.args[1]) is Const and type(e.args[1].value) is str)):
                if e.fn is getattr:
                    self.expr(e.args[0])
                    a.attr(e.args[1].value)
                    return
                for arg in (reversed(e.args) if inline[2] else e.args):
                    self.expr(arg)
                inline[1](a)
                return
            a.call_begin(GUARD_CALLS.get(e.fn, e.fn) if len(e.args) == 1 else e.fn)
            for arg in e.args:
                self.expr(arg)
            a.call_end(len(e.args))
        elif t is Const:
            a.const(e.value)
        else:
            raise TypeError(f"cannot emit {e!r}")

    # ---- guards ---------------------------------------------------------------------------------------
    def guard(self, g, miss):
        a = self.asm
        t = type(g)
        if t is TypeGuard:
            self._is(lambda: self._call(type, g.expr), g.type, miss)
        elif t is IdGuard:
            self._is(lambda: self.expr(g.expr), g.obj, miss)
        elif t is NoneGuard:
            self.expr(g.expr)
            a.const(None)
            a.is_(negate=not g.is_none)
            a.jump_if_false(miss)
        elif t is TruthGuard:
            self.expr(g.expr)
            a.jump_if(not g.value, miss)
        elif t is ValueGuard:
            var = self.temp()
            self.expr(g.expr)
            a.store_fast(var)
            if type(g.value) is float:
                a.call_begin(same_float)
                a.load_fast(var)
                a.const(g.value)
                a.call_end(2)
                a.jump_if_false(miss)
                return
            self._is(lambda: self._call_local(type, var), type(g.value), miss)
            if g.value is not None and type(g.value) is not bool:
                a.load_fast(var)
                a.const(g.value)
                a.compare("==")
                a.jump_if_false(miss)
            elif type(g.value) is bool:
                self._is(lambda: a.load_fast(var), g.value, miss)
        elif t is TensorGuard:
            var = self.temp()
            self.expr(g.expr)
            a.store_fast(var)
            self._is(lambda: self._call_local(type, var), g.cls, miss)
            self._is(lambda: (a.load_fast(var), a.attr("dtype")), g.dtype, miss)
            self._is(lambda: (a.load_fast(var), a.attr("requires_grad")), g.requires_grad, miss)
            if g.symbolic:
                a.call_begin(g.holds)
                a.load_fast(var)
                a.call_end(1)
                a.jump_if_false(miss)
                return
            for attr, value in (("device", g.device), ("shape", g.shape)):
                a.load_fast(var)
                a.attr(attr)
                a.const(value)
                a.compare("==")
                a.jump_if_false(miss)
            if g.stride is not None:
                a.call_begin(torch.Tensor.stride)
                a.load_fast(var)
                a.call_end(1)
                a.const(g.stride)
                a.compare("==")
                a.jump_if_false(miss)
        else:
            raise TypeError(f"unknown guard {g!r}")

    def _call(self, fn, e):
        self.asm.call_begin(fn)
        self.expr(e)
        self.asm.call_end(1)

    def _call_local(self, fn, var):
        self.asm.call_begin(fn)
        self.asm.load_fast(var)
        self.asm.call_end(1)

    def _is(self, push, value, miss):
        push()
        self.asm.const(value)
        self.asm.is_()
        self.asm.jump_if_false(miss)

    # ---- templates ------------------------------------------------------------------------------------
    def template(self, t, seen):
        a = self.asm
        if id(t) in seen:
            a.load_fast(seen[id(t)])
            return
        kind = t[0]
        if kind == "output":
            a.load_fast("out")
            a.const(t[1])
            a.item()
        elif kind == "source":
            self.expr(t[1])
        elif kind == "const":
            a.const(t[1])
        elif kind in ("list", "tuple", "set"):
            for part in t[1]:
                self.template(part, seen)
            a.build(kind, len(t[1]))
            self._remember(t, seen)
        elif kind == "namedtuple":
            a.call_begin(t[1])
            for part in t[2]:
                self.template(part, seen)
            a.call_end(len(t[2]))
            self._remember(t, seen)
        elif kind in ("dict", "odict"):
            if kind == "odict":
                a.call_begin(collections.OrderedDict)
            for key, part in t[1]:
                a.const(key)
                self.template(part, seen)
            a.build_map(len(t[1]))
            if kind == "odict":
                a.call_end(1)
            self._remember(t, seen)
        elif kind == "object":
            # a new object of this call: made fresh, remembered before its fields (which may refer
            # back to it), then given the state the first call left it in
            a.call_begin(object.__new__)
            a.const(t[1])
            a.call_end(1)
            self._remember(t, seen)
            a.call_begin(_set_state)
            a.load_fast(seen[id(t)])
            for name, part in t[2]:
                a.const(name)
                self.template(part, seen)
            a.build_map(len(t[2]))
            a.call_end(2)
            a.pop()
        elif kind == "mapping":
            a.call_begin(_new_mapping)
            a.const(t[1])
            a.call_end(1)
            self._remember(t, seen)
            a.call_begin(_fill_mapping)
            a.load_fast(seen[id(t)])
            for parts in (t[2], t[3]):
                for key, part in parts:
                    a.const(key)
                    self.template(part, seen)
                a.build_map(len(parts))
            a.call_end(3)
            a.pop()
        elif kind == "method":
            self.template(t[1], seen)
            a.attr(t[2])
        elif kind == "iter":   # an iterator part-way through (a loop's, at a graph break): its remaining items
            a.call_begin(iter)
            for part in t[1]:
                self.template(part, seen)
            a.build("list", len(t[1]))
            a.call_end(1)
            self._remember(t, seen)
        elif kind == "reduced":  # an iterator over constants (a ``range``'s), rebuilt where it was
            a.call_begin(_rebuilt)
            for x in t[1:]:
                a.const(x)
            a.call_end(3)
            self._remember(t, seen)
        else:
            raise TypeError(f"unknown template {t!r}")

    def _remember(self, t, seen):
        var = self.temp()
        self.asm.emit("COPY", 1)
        self.asm.store_fast(var)
        seen[id(t)] = var


def build_eager_entry(cap, name="entry", filename="<magpy>"):
    """Emit the guards a capture that gave up had collected, and ``return EAGER`` after them: a later call
    that passes them would reach the same point (a call that does not is captured afresh). Raises
    ``Unsupported`` for a capture whose guards need its random draws (they would be drawn twice)."""
    if cap.draws:
        from ..errors import Unsupported
        raise Unsupported("a capture that gave up after drawing random numbers is not remembered")
    em = _Emitter(name)
    a = em.asm
    mock = _emit_guards(em, cap, order(cap.guards.values()))
    a.place(mock)
    a.const(EAGER)
    a.ret()
    run = types.FunctionType(a.to_code(filename), {"__builtins__": builtins})
    return Entry(run, "guards:\n" + "\n".join(f"  {g.describe()}" for g in order(cap.guards.values())) +
                 "\nthen: the original function, eagerly (" + str(cap.unsupported.reason) + ")", [], None, 0)


def build_entry(cap, graph_fn, name="entry", filename="<magpy>"):
    """Emit the guard + mock program of a capture whose graph compiled to ``graph_fn``."""
    em = _Emitter(name)
    a = em.asm
    if cap.symbolic or any(type(example) is int for _, example in cap.inputs):
        from ..capture.size_guards import combine  # (sympy, only for entries over sizes)

        try:
            combine(cap)
        except Exception as e:  # noqa: BLE001 - the conditions stay the separate guards they were
            if os.environ.get("MAGPY_STRICT") == "1":
                raise
            warnings.warn(f"magpy: size guards not combined ({type(e).__name__}: {e})")
    guards = order(cap.guards.values())
    mock = _emit_guards(em, cap, guards)
    a.place(mock)
    _emit_mock(em, cap, graph_fn)
    code = a.to_code(filename)
    run = types.FunctionType(code, {"__builtins__": builtins})
    return Entry(run, render(cap, guards), guards, None, cap.op_count)


def _emit_guards(em, cap, guards):
    """The guards, short-circuiting to ``return MISS``; returns the label the program goes on at."""
    a = em.asm
    miss = a.label()
    handler = a.label()
    mock = a.label()
    tb = a.try_begin(handler)
    if cap.draws:
        # the random numbers the first call drew, drawn again (in order) so that guards can check them;
        # a miss puts the generator back for the next entry (or the recompile) to draw the same ones
        a.call_begin(state_functions(cap)[0])
        a.call_end(0)
        a.store_fast("random_state")
        for k, (fn, args) in enumerate(cap.draws):
            a.call_begin(fn)
            for x in args:
                a.const(x)
            a.call_end(len(args))
            a.store_fast(f"draw{k}")
    tensors = [g for g in guards if type(g) is TensorGuard]
    checker = _tensor_checker(tensors)
    for g in guards:
        if checker is None or type(g) is not TensorGuard:
            em.guard(g, miss)
    if checker is not None:  # every tensor at once, in torch's own C++ check
        a.call_begin(checker)
        for g in tensors:
            em.expr(g.expr)
        a.call_end(len(tensors))
        a.jump_if_false(miss)
        for g in tensors:  # (what torch's check leaves to us: symbolic sizes >= 2, strides that follow them)
            if g.symbolic:
                a.call_begin(dense_with_sizes)
                em.expr(g.expr)
                a.const(g.symbolic)
                a.const(g.order)
                a.call_end(3)
                a.jump_if_false(miss)
    a.try_end(tb)
    a.emit("JUMP_FORWARD", mock)
    a.place(miss)
    _restore_random(a, cap)
    a.const(MISS)
    a.ret()
    a.place(handler)
    a.pop()
    _restore_random(a, cap)
    a.const(MISS)
    a.ret()
    return mock


def _emit_mock(em, cap, graph_fn):
    a = em.asm
    # every path a replayed value reads is read now, from the entry state (later uses load the local)
    # (the objects the mock changes too: a change must not move what a later one's path leads to)
    targets = [target for kind, target, _, _ in cap.side_effects if kind in ("setattr", "setitem")]
    for leaf in targets + _source_leaves([value for kind, _, _, value in cap.side_effects if kind != "call"] +
                                         [part for kind, _, args, kw in cap.side_effects if kind == "call"
                                          for part in [*args, *kw.values()]] + [cap.result_template]):
        em.expr(leaf)
        a.pop()
    seen = {}
    # A graph that raises partway (an index past the end, on this call's data) is undone — the inputs it
    # wrote put back from copies taken first, torch's generators set back — and the call runs eagerly:
    # eager's own effects and exception, at the user's line. So every effect waits for the graph. Copies
    # are taken only for graphs with an op that may raise (``graph_builder.may_raise``): one that writes
    # inputs and has none is run bare, with the effects made before its first tensor op done first (an
    # error then leaves those done, as eager does).
    can_undo = cap.may_raise or cap.checks or not cap.written
    if can_undo:
        before = []
    else:  # (only a prefix of them: the effects keep their order)
        before = list(itertools.takewhile(lambda e: not _uses_outputs(e), cap.side_effects[:cap.pre_graph]))
    after = cap.side_effects[len(before):]
    _side_effects(em, before, seen)
    save_rng = cap.checks or cap.may_raise and predicates.draws(cap.graph)
    if save_rng:
        a.call_begin(rng_state)
        a.call_end(0)
        a.store_fast("rng_state")
    if cap.outputs or cap.op_count:
        undone = cap.written if cap.may_raise or cap.checks else ()
        a.call_begin(undoable(graph_fn, undone, cap.checks if undone else ()) if can_undo else graph_fn)
        for source, _ in cap.inputs:
            em.expr(source)
        a.call_end(len(cap.inputs))
        a.store_fast("out")
        if can_undo:
            _on_raise(a, cap, save_rng)
    if cap.checks and not cap.written:  # (with inputs written, ``undoable`` checks: it has their copies)
        _check_outputs(a, cap)
    _side_effects(em, after, seen)
    if cap.resume is not None:  # a graph break: the live values go on to the breaking instruction
        a.call_begin(cap.resume)
        for part in cap.result_template[1]:
            em.template(part, seen)
        a.call_end(len(cap.result_template[1]))
    else:
        em.template(cap.result_template, seen)
    result = em.temp()
    a.store_fast(result)
    a.load_fast(result)
    a.ret()


def _tensor_checker(guards):
    """One native check of all tensor guards (class, dtype, device, requires_grad, sizes, strides), or
    None where torch has none (the guards are then emitted one by one)."""
    if not guards or any(g.stride is None for g in guards):
        return None
    try:
        from torch._C._dynamo.guards import TensorGuards
        examples = [g.example for g in guards]
        checker = TensorGuards(*examples, dynamic_dims_sizes=[list(g.shape) for g in guards],
                               dynamic_dims_strides=[list(g.stride) for g in guards])
        if not checker.check(*examples):
            return None
    except Exception:  # noqa: BLE001 - an older or different torch: fall back to our own checks
        return None
    for g in guards:
        g.example = None  # the checker keeps what it needs; the first call's tensors can go
    return checker.check


def _on_raise(a, cap, save_rng):
    """``if type(out) is Raised: <generators back>; return out`` (``MISS`` for a graph over random
    conditions)."""
    ran = a.label()
    a.call_begin(type)
    a.load_fast("out")
    a.call_end(1)
    a.const(Raised)
    a.is_()
    a.jump_if_false(ran)
    if save_rng:
        a.call_begin(set_rng_state)
        a.load_fast("rng_state")
        a.call_end(1)
        a.pop()
    _restore_random(a, cap)
    if cap.checks:  # (on other random numbers a graph may fail where the first call's did not: its
        a.const(MISS)  # checks would; the call is captured again, on its own numbers)
    else:
        a.load_fast("out")
    a.ret()
    a.place(ran)


def _check_outputs(a, cap):
    """Conditions on random data the graph computed: another outcome undoes the run (the graph only drew
    random numbers: its generators go back) and misses, so the call takes the path it really takes."""
    passed, failed = a.label(), a.label()
    for index, truth in cap.checks:
        a.load_fast("out")
        a.const(index)
        a.item()
        a.const(truth)
        a.is_()
        a.jump_if_false(failed)
    a.emit("JUMP_FORWARD", passed)
    a.place(failed)
    a.call_begin(set_rng_state)
    a.load_fast("rng_state")
    a.call_end(1)
    a.pop()
    _restore_random(a, cap)
    a.const(MISS)
    a.ret()
    a.place(passed)


def _restore_random(a, cap):
    if cap.draws:
        a.call_begin(state_functions(cap)[1])
        a.load_fast("random_state")
        a.call_end(1)
        a.pop()


def _uses_outputs(effect):
    kind, _, key, value = effect
    templates = [*key, *value.values()] if kind == "call" else [value]
    return any(t[0] == "output" for t in _walk(templates))


def _source_leaves(templates):
    return [t[1] for t in _walk(templates) if t[0] == "source"]


def _walk(templates):
    """Every part of these templates, each once (new objects may refer to each other in a cycle)."""
    stack, visited = list(templates), set()
    while stack:
        t = stack.pop()
        if id(t) in visited:
            continue
        visited.add(id(t))
        yield t
        kind = t[0]
        if kind in ("list", "tuple", "set", "iter"):
            stack.extend(t[1])
        elif kind == "method":
            stack.append(t[1])
        elif kind == "namedtuple":
            stack.extend(t[2])
        elif kind in ("dict", "odict", "object"):
            stack.extend(part for _, part in t[-1])
        elif kind == "mapping":
            stack.extend(part for _, part in (*t[2], *t[3]))


def _side_effects(em, effects, seen):
    """Replay ``effects``: all their values first, then the writes and calls, in program order."""
    a = em.asm
    values = []
    for kind, target, key, value in effects:
        if kind == "call":  # a replayed call: its arguments, then (below) the call itself
            for part in key:
                em.template(part, seen)
            for part in value.values():
                em.template(part, seen)
            a.build("tuple", len(key) + len(value))
        else:
            em.template(value, seen)
        var = em.temp()
        a.store_fast(var)
        values.append(var)
    for (kind, target, key, value), var in zip(effects, values):
        if kind == "call":
            a.call_begin(_replay_call)
            a.const(target)
            a.load_fast(var)
            a.const(tuple(value))
            a.call_end(3)
            a.pop()
            continue
        a.load_fast(var)
        if kind == "setattr":
            em.expr(target)
            a.store_attr(key)
        elif kind == "setitem":
            em.expr(target)
            a.const(key)
            a.store_item()
        elif kind == "setglobal":
            a.const(target)
            a.const(key)
            a.store_item()
        elif kind == "setcell":
            a.const(target)
            a.store_attr("cell_contents")


def render(cap, guards):
    """The same program, readable: what ``explain`` shows."""
    return "\n".join(["guards:", *(f"  {line}" for _, line, _ in guard_lines(cap, guards)), render_mock(cap)])


def guard_lines(cap, guards):
    """Each guard as a reader is shown it, as (guard, line, place): the guard that reruns the branches on
    tensor data gives one line per branch — the condition as the program wrote it, at its
    ``places.Place`` — any other guard one line (place None)."""
    for g in guards:
        places = cap.condition_places if is_conditions_guard(g) else ()
        if places and len(places) == len(g.value) and None not in places:
            for place, truth in zip(places, g.value):
                yield g, place.describe(truth), place
        else:
            yield g, g.describe(), None


def render_mock(cap):
    """The replay part of the program, readable: the graph's call, the side effects, the result."""
    lines = []
    if cap.outputs or cap.op_count:
        inputs = ", ".join(src.render() for src, _ in cap.inputs)
        lines.append(f"mock:\n  out = graph({inputs})   # {cap.op_count} ops, {len(cap.outputs)} outputs")
        lines += [f"  out[{k}] is {truth} (else: random generators back, miss)" for k, truth in cap.checks]
    else:
        lines.append("mock:")
    lines += [f"  {_render_effect(*effect)}" for effect in cap.side_effects]
    if cap.resume is not None:
        lines.append(f"  live = {_render_template(cap.result_template)}")
        lines.append(f"  {cap.resume.describe()}")
    else:
        lines.append(f"  return {_render_template(cap.result_template)}")
    return "\n".join(lines)


#: side effect kind -> the path a replayed store writes, and a note on what kind of place that is
_STORES = {"setattr": (AttrSource, ""), "setitem": (ItemSource, ""), "setglobal": (GlobalSource, "   # global"),
           "setcell": (CellSource, "   # closure cell")}


def _render_effect(kind, target, key, value):
    """One replayed side effect as the user would write it: ``self.count = …``, ``self.hist.append(…)``."""
    if kind == "call":
        args = [_render_template(p) for p in key] + [f"{k}={_render_template(p)}" for k, p in value.items()]
        if isinstance(getattr(target, "__objclass__", None), type) and key:  # ``list.append(xs, v)``
            return f"{args[0]}.{target.__name__}({', '.join(args[1:])})"
        return f"{callable_name(target)}({', '.join(args)})"
    store = _STORES.get(kind)
    if store is None or (kind in ("setattr", "setitem") and not isinstance(target, Source)):
        where = target.render() if hasattr(target, "render") else f"<{kind[3:]}>"
        return f"{kind} {where} {key!r} = {_render_template(value)}"
    path, note = store
    return f"{path(target, key).render()} = {_render_template(value)}{note}"


def _render_template(t, inside=()):
    kind = t[0]
    if kind == "object":
        if id(t) in inside:
            return f"<the new {t[1].__name__}>"
        inside = (*inside, id(t))
        fields = ", ".join(f"{name}={_render_template(p, inside)}" for name, p in t[2])
        return f"new {t[1].__name__}({fields})"
    if kind == "mapping":
        if id(t) in inside:
            return f"<the new {t[1].__name__}>"
        inside = (*inside, id(t))
        items = ", ".join(f"{k!r}: {_render_template(p, inside)}" for k, p in t[2])
        fields = ", ".join(f"{name}={_render_template(p, inside)}" for name, p in t[3])
        return f"new {t[1].__name__}({{{items}}}, {fields})"
    if kind == "output":
        return f"out[{t[1]}]"
    if kind == "source":
        return t[1].render()
    if kind == "const":
        return repr(t[1])
    if kind == "list":
        return "[" + ", ".join(_render_template(p, inside) for p in t[1]) + "]"
    if kind == "tuple":
        return "(" + ", ".join(_render_template(p, inside) for p in t[1]) + ("," if len(t[1]) == 1 else "") + ")"
    if kind == "namedtuple":
        return f"{t[1].__name__}(" + ", ".join(_render_template(p, inside) for p in t[2]) + ")"
    if kind in ("dict", "odict"):
        text = "{" + ", ".join(f"{k!r}: {_render_template(p, inside)}" for k, p in t[1]) + "}"
        return text if kind == "dict" else f"OrderedDict({text})"
    if kind == "set":
        return "{" + ", ".join(_render_template(p, inside) for p in t[1]) + "}" if t[1] else "set()"
    if kind == "method":
        return f"{_render_template(t[1], inside)}.{t[2]}"
    if kind == "iter":
        return "iter([" + ", ".join(_render_template(p, inside) for p in t[1]) + "])"
    if kind == "reduced":
        return f"{t[1].__name__}{t[2]!r} from item {t[3]}"
    return repr(t)


def evaluate(e, bound):
    """The value of a path or expression for the call whose bound arguments are ``bound`` (the same
    meaning the emitted bytecode gives it; used to explain which guard failed)."""
    t = type(e)
    if t is ArgSource:
        return bound[e.index]
    if t is GlobalSource:
        return global_value(e.namespace, e.name)
    if t is ConstSource:
        return e.value
    if t is AttrSource:
        return getattr(evaluate(e.base, bound), e.name)
    if t is ItemSource:
        return evaluate(e.base, bound)[e.key]
    if t is CellSource:
        return e.cell.cell_contents
    if t is Expr:
        return e.fn(*(evaluate(a, bound) for a in e.args))
    if t is Const:
        return e.value
    raise TypeError(f"cannot evaluate {e!r}")


def failing_guards(entry, bound):
    """Each guard of ``entry`` that does not hold for ``bound``, in order, with why (one that cannot be
    evaluated there fails)."""
    for g in entry.guards:
        try:
            value = evaluate(g.expr, bound)
        except Exception as exc:  # noqa: BLE001 - a guard that cannot be evaluated fails
            yield g, f"raised {type(exc).__name__}: {exc}"
            continue
        t = type(g)
        ok = {
            TypeGuard: lambda: type(value) is g.type,
            IdGuard: lambda: value is g.obj,
            NoneGuard: lambda: (value is None) == g.is_none,
            TruthGuard: lambda: bool(value) is g.value,
            ValueGuard: lambda: (same_float(value, g.value) if type(g.value) is float else
                                 type(value) is type(g.value) and value == g.value),
            TensorGuard: lambda: g.holds(value),
        }[t]()
        if not ok:
            yield g, f"found {value!r}"[:200]
