"""The differential harness of the capture tests: one program, run eagerly and compiled, compared.

A test builds the program (and the outside state it reads and writes) twice — once for each side —
and makes the same sequence of calls on both, each with its own identical copy of the arguments.
After every call the two sides must agree on everything a user can see:

* the result (values, dtypes, shapes, requires_grad, container types) and its aliasing — which
  parts of the result are the same object as each other, as an argument or as a piece of state;
* the exception raised (same type, same arguments);
* the arguments after the call (in-place updates of input tensors and containers);
* the outside state (``observe(env)``: module parameters, buffers, flags, user attributes, globals);
* the warnings the program issued itself.

That is correctness, asserted by ``AssertionError`` and never expected to fail. How well the program
was captured (graph count, cache hits, recompiles) is checked afterwards by ``expect``, which raises
``CaptureShortfall``: a test of a feature capture does not support yet is marked ``@unsupported(...)``,
an xfail that only accepts ``CaptureShortfall`` — a wrong answer still fails the test.
"""
import collections
import copy
import dataclasses
import math
import random
import types
import warnings

import numpy as np
import pytest
import torch

import magpy


class CaptureShortfall(Exception):
    """The results were right, but capture did not do as well as the test expects."""


def unsupported(reason):
    """Mark a test whose capture expectations are not met yet (its correctness checks must still pass)."""
    return pytest.mark.xfail(strict=True, raises=CaptureShortfall, reason=reason)


@dataclasses.dataclass
class Call:
    """One call of the program: arguments (copied afresh for each side; ``FromEnv`` markers are
    replaced by that side's state) and an optional change of the outside state made first."""
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    before: object = None      # before(env), run on each side just before this call


class FromEnv:
    """An argument that is (a part of) the side's own outside state: ``FromEnv(lambda env: env.obj)``."""

    def __init__(self, get=lambda env: env):
        self.get = get

    def __deepcopy__(self, memo):
        return self


@dataclasses.dataclass
class Outcome:
    result: object             # the live objects (later calls may change them) ...
    error: BaseException
    args: tuple
    kwargs: dict
    seen: object               # ... and what result, args and kwargs held right after this call
    state: object
    user_warnings: list
    aliasing: list


class Side:
    """What one side did over the whole call sequence."""

    def __init__(self, fn, env):
        self.fn = fn
        self.env = env
        self.outcomes = []
        self.magpy_warnings = []


def seed_everything():
    torch.manual_seed(0)
    random.seed(0)
    np.random.seed(0)


def stats_of(compiled):
    if isinstance(compiled, torch.nn.Module):
        return compiled._magpy_compiled.stats
    return compiled.stats


def _prepare(call, env):
    if not isinstance(call, Call):
        call = Call(tuple(call))
    args, kwargs = copy.deepcopy((call.args, call.kwargs))
    args = tuple(a.get(env) if isinstance(a, FromEnv) else a for a in args)
    kwargs = {k: v.get(env) if isinstance(v, FromEnv) else v for k, v in kwargs.items()}
    return call, args, kwargs


def _run_side(fn, env, calls, observe, reset):
    side = Side(fn, env)
    reset()
    for call in calls:
        call, args, kwargs = _prepare(call, env)
        if call.before is not None:
            call.before(env)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result, error = fn(*args, **kwargs), None
            except Exception as exc:  # noqa: BLE001 - the program's own exception is compared
                result, error = None, exc
        mine = [w for w in caught if str(w.message).startswith("magpy:")]
        side.magpy_warnings += mine
        user = [(w.category, str(w.message)) for w in caught if w not in mine]
        seen = snapshot({"result": result, "arguments": args, "keyword arguments": kwargs})
        side.outcomes.append(Outcome(result, error, args, kwargs, seen, snapshot(observe(env)), user,
                                     alias_pattern(result, args, kwargs, env)))
    return side


def differential(make, calls, *, observe=None, reset=seed_everything, raises=False, **compile_kw):
    """Run ``calls`` on the eager program and on the compiled one; assert they agree; return the
    compiled side's ``Stats``.

    ``make()`` builds ``(program, env)`` afresh for one side: the callable to run, and the outside
    state it works on (a module, a user object, anything ``observe(env)`` can snapshot; may be None).
    ``reset()`` runs before each side's sequence (restore globals, seed the generators).
    ``raises``: the program is expected to raise on some calls (otherwise an eager error is a bug of
    the test itself).
    """
    compile_kw.setdefault("backend", "eager")
    observe = observe or _default_observe
    eager_fn, eager_env = make()
    eager = _run_side(eager_fn, eager_env, calls, observe, reset)
    fn, env = make()
    compiled_fn = magpy.compile(fn, **compile_kw)
    compiled = _run_side(compiled_fn, env, calls, observe, reset)
    for k, (e, c) in enumerate(zip(eager.outcomes, compiled.outcomes)):
        where = f"call {k + 1}"
        if e.error is not None and not raises:
            raise AssertionError(f"{where}: the test program itself raised") from e.error
        if c.error is not None and e.error is None:
            raise AssertionError(f"{where}: compiled raised {type(c.error).__name__}: {c.error}, "
                                 f"eager returned") from c.error
        if e.error is not None:
            assert c.error is not None, f"{where}: eager raised {e.error!r}, compiled returned {c.result!r}"
            assert type(c.error) is type(e.error), f"{where}: raised {c.error!r}, eager raised {e.error!r}"
            assert c.error.args == e.error.args, f"{where}: raised {c.error!r}, eager raised {e.error!r}"
        assert_same(c.result, e.result, f"{where}: result")  # types, as they are now
        assert_same(c.seen, e.seen, f"{where}: right after the call")
        assert_same(c.state, e.state, f"{where}: outside state")
        assert c.user_warnings == e.user_warnings, f"{where}: warnings {c.user_warnings} != {e.user_warnings}"
        assert c.aliasing == e.aliasing, f"{where}: aliasing differs"
    stats = stats_of(compiled_fn)
    assert stats.calls == len(calls)
    # a fallback is announced exactly once, by one warning naming the reason
    assert len(compiled.magpy_warnings) == min(stats.fallbacks, 1), \
        f"{len(compiled.magpy_warnings)} magpy warnings for {stats.fallbacks} fallbacks"
    for w in compiled.magpy_warnings:
        assert "runs eagerly" in str(w.message)
    stats.side = compiled
    return stats


def expect(stats, **wanted):
    """Raise CaptureShortfall unless every ``stats.<name> == value`` in ``wanted`` holds."""
    wrong = {k: getattr(stats, k) for k, v in wanted.items() if getattr(stats, k) != v}
    if wrong:
        raise CaptureShortfall(f"wanted {wanted}, got {wrong}; fallback reasons: {stats.reasons}")


def expect_not_one_graph(stats):
    """The program could not stay in one graph: it was split at a graph break (or ran eagerly)."""
    if not stats.graph_breaks:
        raise CaptureShortfall(f"wanted a graph break, got none; stats: {stats}")


def expect_one_graph(stats, calls=3):
    """The usual expectation: one compile, one graph, every later call a cache hit, no fallback."""
    expect(stats, compiles=1, graphs=1, cache_hits=calls - 1, fallbacks=0)


def expect_recompile(stats, compiles=2, calls=3):
    """Each state change made one more compile (and graph); every other call was a cache hit."""
    expect(stats, compiles=compiles, graphs=compiles, cache_hits=calls - compiles, fallbacks=0)


# ---- comparing what the user sees ----------------------------------------------------------------

def _default_observe(env):
    return env


_BUILTIN_ITERATORS = frozenset(type(iter(x)) for x in ([], (), range(0), range(1 << 64), "", {}, {}.values(),
                                                       {}.items()))


def snapshot(value, memo=None):
    """A frozen, comparable copy of ``value``: tensors cloned (with requires_grad and grad), modules
    as their flags, state and attributes, user objects as ``{"__type__": type, **attributes}``."""
    memo = {} if memo is None else memo
    if id(value) in memo:
        return memo[id(value)]
    memo[id(value)] = ("cycle", type(value).__name__)
    if isinstance(value, torch.Tensor):
        out = value.detach().clone()
        if value.requires_grad:
            out.requires_grad_()
        if value.is_leaf and value.grad is not None:
            out.grad = value.grad.detach().clone()
    elif isinstance(value, torch.nn.Module):
        out = {"__module__": type(value).__name__, "training": value.training,
               "state": {k: snapshot(v, memo) for k, v in value.state_dict(keep_vars=True).items()},
               "attributes": {k: snapshot(v, memo) for k, v in vars(value).items()
                              if not k.startswith("_") and k != "training"},
               "children": {k: snapshot(v, memo) for k, v in value._modules.items()}}
    elif isinstance(value, tuple) and hasattr(value, "_fields"):
        out = type(value)._make(snapshot(v, memo) for v in value)
    elif type(value) in (list, tuple):
        out = type(value)(snapshot(v, memo) for v in value)
    elif type(value) is dict:
        out = {k: snapshot(v, memo) for k, v in value.items()}
    elif isinstance(value, collections.OrderedDict):  # (its order is part of its state)
        out = (type(value).__name__, [(k, snapshot(v, memo)) for k, v in value.items()])
    elif isinstance(value, collections.deque):
        out = ("deque", value.maxlen, [snapshot(v, memo) for v in value])
    elif isinstance(value, (set, frozenset)):
        out = type(value)(value)
    elif isinstance(value, np.ndarray):
        out = value.copy()
    elif type(value) in _BUILTIN_ITERATORS:  # (what it has yet to yield: a copy keeps its position)
        out = ("iterator", type(value).__name__, [snapshot(v, memo) for v in copy.copy(value)])
    elif _attributes(value) is not None and not isinstance(value, (int, float, str, bytes, complex)):
        tp = type(value)
        out = {"__type__": (tp.__module__, tp.__qualname__) if "<locals>" in tp.__qualname__ else tp,
               **{k: snapshot(v, memo) for k, v in _attributes(value).items()}}
    else:
        out = value
    memo[id(value)] = out
    return out


def assert_same(got, want, what, seen=None):
    """Same structure, types and values (tensors: dtype, shape, requires_grad and exact values).
    ``seen``: the pairs being compared further up (objects may refer back to each other)."""
    seen = set() if seen is None else seen
    pair = (id(got), id(want))
    if pair in seen:
        return  # a cycle: this pair is being compared further up (alias_pattern checks the shape)
    seen.add(pair)
    try:
        _assert_same(got, want, what, seen)
    finally:
        seen.discard(pair)  # only the pairs on the current path: ids of freed temporaries get reused


def _assert_same(got, want, what, seen):
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor), f"{what}: {type(got).__name__}, eager gave a tensor"
        assert (got.dtype, got.shape, got.device) == (want.dtype, want.shape, want.device), \
            f"{what}: {got.dtype}{list(got.shape)} vs eager {want.dtype}{list(want.shape)}"
        assert got.requires_grad == want.requires_grad, f"{what}: requires_grad differs"
        if want.is_leaf and got.is_leaf and (want.grad is not None or got.grad is not None):
            assert (got.grad is None) == (want.grad is None), f"{what}: .grad is None in one run only"
            assert_same(got.grad, want.grad, f"{what}.grad", seen)
        assert torch.equal(got.detach(), want.detach()) or (
            got.is_floating_point() and torch.allclose(got.detach(), want.detach(), rtol=1e-5, atol=1e-6,
                                                       equal_nan=True)), \
            f"{what}: values differ:\n{got}\neager:\n{want}"
        return
    assert type(got) is type(want) or _same_local_class(type(got), type(want)), \
        f"{what}: {type(got).__name__} vs eager {type(want).__name__}"
    if isinstance(want, torch.nn.Module):
        assert_same(snapshot(got), snapshot(want), f"{what} state", seen)
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), f"{what}: length {len(got)} vs eager {len(want)}"
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{what}[{k}]", seen)
    elif isinstance(want, dict):
        assert len(got) == len(want), f"{what}: keys {list(got)} vs eager {list(want)}"
        for (gk, gv), (wk, wv) in zip(got.items(), want.items()):  # keys may be tensors: pair by order
            assert_same(gk, wk, f"{what}: key {wk!r}", seen)
            assert_same(gv, wv, f"{what}[{wk!r}]", seen)
    elif isinstance(want, (set, frozenset)):
        assert got == want, f"{what}: {got} vs eager {want}"
    elif isinstance(want, float) and math.isnan(want):
        assert math.isnan(got), f"{what}: {got} vs eager nan"
    elif dataclasses.is_dataclass(want) and not isinstance(want, type):
        assert_same(vars(got), vars(want), what, seen)
    elif isinstance(want, (int, float, complex, str, bytes, bool, type(None), np.generic, np.ndarray,
                           torch.dtype, torch.device, torch.Size)):
        assert np.array_equal(got, want) if isinstance(want, np.ndarray) else got == want, \
            f"{what}: {got!r} vs eager {want!r}"
    elif isinstance(want, types.FunctionType):
        # each side made its own closure or lambda: the same code is the same function
        assert got is want or got.__code__ is want.__code__, f"{what}: {got!r} vs eager {want!r}"
    elif _attributes(want) is not None:
        assert_same(_attributes(got), _attributes(want), f"{what} attributes", seen)
    else:
        assert got is want or got == want, f"{what}: {got!r} vs eager {want!r}"


def _same_local_class(a, b):
    """Two runs of a class statement inside the program (each run makes its own class)."""
    return "<locals>" in a.__qualname__ and a.__qualname__ == b.__qualname__ and a.__module__ == b.__module__


def _attributes(obj):
    """A user object's attributes (``__dict__`` and ``__slots__``), or None for anything else."""
    if isinstance(obj, (type, types.FunctionType, types.MethodType, types.ModuleType, torch.nn.Module)):
        return None
    slots = [name for cls in type(obj).__mro__ for name in getattr(cls, "__slots__", ())
             if hasattr(obj, name)]
    if not hasattr(obj, "__dict__") and not slots:
        return None
    attrs = dict(getattr(obj, "__dict__", {}))
    attrs.update((name, getattr(obj, name)) for name in slots)
    return attrs


def alias_pattern(*roots):
    """Which of the objects reachable from ``roots`` are one and the same: every mutable object (or
    tensor) gets the index of its first sighting, so two runs alias alike iff their patterns match."""
    seen = {}
    pattern = []

    def walk(v, depth=0):
        if depth > 6 or isinstance(v, (int, float, str, bytes, bool, type(None), type, types.FunctionType,
                                       types.MethodType, types.BuiltinFunctionType, torch.dtype)):
            return
        first = seen.setdefault(id(v), len(seen))
        pattern.append(first)
        if first != len(seen) - 1:
            return  # seen before: its insides are known
        if isinstance(v, torch.nn.Module):
            for t in list(v.parameters()) + list(v.buffers()):
                walk(t, depth + 1)
        elif isinstance(v, torch.Tensor):
            return
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x, depth + 1)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x, depth + 1)
        elif _attributes(v) is not None:
            for x in _attributes(v).values():
                walk(x, depth + 1)
    for r in roots:
        walk(r)
    return pattern


def fresh(make_args, n=3):
    """``n`` calls with arguments of the same kinds and shapes but new values (``make_args()`` is
    called once per call: random tensors differ), so a result replayed from a stale first call shows."""
    return [make_args() for _ in range(n)]


def twins(module):
    """``make`` for a module: a fresh deep copy of ``module`` for each side (the module is the program
    and its own outside state)."""
    def make():
        m = copy.deepcopy(module)
        return m, m
    return make


def plain(fn):
    """``make`` for a function with no outside state."""
    return lambda: (fn, None)
