"""``magpy.testing.check_equivalent``: a user's function or module, compiled, against itself, eager.

Put it in your own tests (plain pytest, or inside a Hypothesis ``@given`` test: it is deterministic
and raises an ``AssertionError``)::

    from magpy.testing import check_equivalent

    def test_my_block_compiles_to_the_same_thing():
        check_equivalent(MyBlock(), torch.randn(8, 16), calls=4)

Each call runs eagerly and compiled side by side, each side on its own deep copy of the inputs (and
of the module, or of a method's ``self``), from the same random-generator state. The first call takes
the examples as given; later ones take copies varied in turn: new values, then a new leading (batch)
size, then (for functions) float32 and float64 swapped. Then everything observable is compared: what
was returned or raised, the arguments afterwards (in-place changes), and the module's parameters,
buffers, gradients and attributes — tensors by metadata and values within tolerances, containers and
objects deeply, and which objects and storages are one and the same (aliasing).
"""
import copy
import math
import random
import types

import torch

__all__ = ["check_equivalent", "difference", "NotEquivalent"]

#: what call k (from the second on) does to the examples, in turn
VARIATIONS = ("new values", "new batch size", "float32 <-> float64")


class NotEquivalent(AssertionError):
    """The compiled function differs from eager: ``call`` (1-based), ``path`` (``result[1]['h']``,
    ``args[0][2]``, ``module.running_mean``), ``eager`` and ``compiled`` (the two differing values)."""

    def __init__(self, call, calls, inputs, path, what, eager, compiled):
        self.call, self.path, self.eager, self.compiled = call, path, eager, compiled
        self.detail = f"{path}: {what}"   # (the difference alone, without the call)
        super().__init__(f"call {call} of {calls} ({inputs}): {self.detail}")


def check_equivalent(fn_or_module, *example_inputs, calls=3, mutate=None, backend="magpy", seed=0,
                     rtol=None, atol=None, **compile_options):
    """Run ``fn_or_module`` eagerly and through ``magpy.compile`` ``calls`` times and compare them.

    ``mutate(inputs)``, if given, replaces the varied copies: from the second call on, each side's
    inputs of the previous call (as that call left them) are passed to it as a list, which it may
    change in place or replace by returning new inputs. ``backend`` and ``compile_options`` go to
    ``magpy.compile``; ``rtol``/``atol`` override the per-dtype tolerances of
    ``torch.testing.assert_close``. The global random generators are left as they were.

    Returns the compiled function (or module), e.g. to look at its ``stats``. Raises
    :class:`NotEquivalent` (an ``AssertionError``) at the first difference.
    """
    from . import api

    if (rtol is None) != (atol is None):
        raise ValueError("check_equivalent: give rtol and atol together (or neither)")
    eager_target = _copy_target(fn_or_module)
    compiled_target = _copy_target(fn_or_module)
    compiled = api.compile(compiled_target, backend=backend, **compile_options)
    compare = _Comparison(rtol, atol)
    generators = _RandomState()
    eager_inputs = compiled_inputs = None
    try:
        for call in range(1, calls + 1):
            if call == 1 or mutate is None:
                inputs = list(example_inputs) if call == 1 else _vary(example_inputs, call, seed,
                                                                      _is_module(fn_or_module))
                eager_inputs, compiled_inputs = _deepcopy(inputs), _deepcopy(inputs)
                described = "the examples" if call == 1 else _variation(call, _is_module(fn_or_module))
            else:
                eager_inputs = generators.replay(lambda: _mutated(mutate, eager_inputs))
                compiled_inputs = generators.replay(lambda: _mutated(mutate, compiled_inputs), again=True)
                described = "mutated inputs"
            eager = generators.replay(lambda: _outcome(eager_target, eager_inputs))
            errors = compiled.stats.graph_errors
            got = generators.replay(lambda: _outcome(compiled, compiled_inputs), again=True)
            if compiled.stats.graph_errors != errors:  # (its graph raised; the call reran eagerly)
                got = ("raised", compiled.stats.last_graph_error)
            compare.start(call, calls, described)
            compare.same_outcome(eager, got)
            compare.same(eager_inputs, compiled_inputs, "args")
            name, state = _state_of(eager_target)
            if name is not None:
                compare.same(state, _state_of(compiled_target)[1], name)
    finally:
        generators.restore()
    return compiled


def difference(eager, compiled, path="result", rtol=None, atol=None):
    """The first difference between two values as ``check_equivalent`` compares them (tensors by
    metadata and by values within the per-dtype tolerances of ``torch.testing.assert_close``, or
    ``rtol``/``atol``; containers and objects deeply; aliasing), as one message that starts with its
    path (``result[1]: values differ …``); None when they agree."""
    comparison = _Comparison(rtol, atol)
    comparison.start(1, 1, "")
    try:
        comparison.same(eager, compiled, path)
    except NotEquivalent as found:
        return found.detail
    return None


# ---- what is compiled, and its copies --------------------------------------------------------------

def _is_module(target):
    return isinstance(target, torch.nn.Module)


def _copy_target(target):
    """A copy that shares no state with ``target`` or another copy: a module (or a method's ``self``)
    deep-copied; a function as it is (its globals are the program's own)."""
    if _is_module(target):
        return copy.deepcopy(target)
    if isinstance(target, types.MethodType):
        return types.MethodType(target.__func__, copy.deepcopy(target.__self__))
    return target


def _state_of(target):
    """(path, object) of what a call may change besides its arguments."""
    if _is_module(target):
        return "module", target
    if isinstance(target, types.MethodType):
        return "self", target.__self__
    return None, None


def _deepcopy(inputs):
    """A deep copy; a tensor with autograd history (which cannot be copied) becomes a new leaf."""
    memo = {}
    for t in _tensors(inputs):
        if not t.is_leaf:
            memo[id(t)] = t.detach().clone().requires_grad_(t.requires_grad)
    return copy.deepcopy(inputs, memo)


def _outcome(target, inputs):
    try:
        return ("returned", target(*inputs))
    except Exception as error:  # noqa: BLE001 - an exception is an outcome to compare
        return ("raised", error)


def _mutated(mutate, inputs):
    inputs = list(inputs)
    replaced = mutate(inputs)
    return list(replaced) if replaced is not None else inputs


class _RandomState:
    """Python's, numpy's and torch's global generators: each side of a call starts from the same
    state; at the end they are put back as they were before the first call."""

    def __init__(self):
        self.initial = self.start = self._get()

    @staticmethod
    def _get():
        import numpy as np
        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None
        return random.getstate(), np.random.get_state(), torch.get_rng_state(), cuda

    @staticmethod
    def _set(state):
        import numpy as np
        random.setstate(state[0])
        np.random.set_state(state[1])
        torch.set_rng_state(state[2])
        if state[3] is not None:
            torch.cuda.set_rng_state_all(state[3])

    def replay(self, run, again=False):
        """``run()`` from the current call's state; ``again``: the second side of the same call (the
        state it leaves is where the next call starts)."""
        if not again:
            self.start = self._get()
        else:
            self._set(self.start)
        return run()

    def restore(self):
        self._set(self.initial)


# ---- varied inputs -------------------------------------------------------------------------------

def _variation(call, module):
    kinds = VARIATIONS if not module else VARIATIONS[:2]
    return kinds[(call - 2) % len(kinds)]


def _vary(inputs, call, seed, module):
    """Copies of ``inputs`` with every tensor made anew (deterministically, by ``seed`` and ``call``)
    as ``_variation`` says. Python values are kept: they are often sizes, flags and options."""
    kind = _variation(call, module)
    generator = torch.Generator().manual_seed(seed * 1000 + call)
    resize = _batch_resize(inputs, random.Random(seed * 1000 + call)) if kind == VARIATIONS[1] else {}
    memo = {}

    def vary(value):
        if id(value) in memo:   # the same tensor twice stays one tensor
            return memo[id(value)][1]
        if isinstance(value, torch.Tensor):
            made = _new_tensor(value, generator, resize, kind == VARIATIONS[2])
        elif type(value) in (list, tuple):
            made = type(value)(vary(v) for v in value)
        elif _is_namedtuple(value):
            made = type(value)(*map(vary, value))
        elif type(value) is dict:
            made = {k: vary(v) for k, v in value.items()}
        else:
            made = copy.deepcopy(value)
        memo[id(value)] = (value, made)
        return made
    return [vary(v) for v in inputs]


def _is_namedtuple(value):
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


def _tensors(value):
    if isinstance(value, torch.Tensor):
        yield value
    elif type(value) in (list, tuple) or _is_namedtuple(value):
        for v in value:
            yield from _tensors(v)
    elif type(value) is dict:
        for v in value.values():
            yield from _tensors(v)


def _batch_resize(inputs, rng):
    """{old leading size: new}: the leading size most tensors share (the batch), changed for all of
    them alike, to at most twice as large."""
    sizes = [t.shape[0] for t in _tensors(inputs) if t.dim() > 0]
    if not sizes:
        return {}
    batch = max(set(sizes), key=sizes.count)
    choices = [n for n in (1, batch - 1, batch + 1, 2 * batch) if n >= 1 and n != batch]
    return {batch: rng.choice(choices)} if choices else {}


_SWAPPED = {torch.float32: torch.float64, torch.float64: torch.float32}


def _new_tensor(t, generator, resize, swap_dtype):
    shape = list(t.shape)
    if shape and shape[0] in resize:
        shape[0] = resize[shape[0]]
    dtype = _SWAPPED.get(t.dtype, t.dtype) if swap_dtype else t.dtype
    if t.dtype == torch.bool:
        made = torch.randint(0, 2, shape, generator=generator).bool()
    elif t.dtype.is_floating_point or t.dtype.is_complex:
        scale = float(t.detach().abs().max()) if t.numel() else 1.0   # (about the example's magnitude)
        scale = scale if math.isfinite(scale) and scale > 0 else 1.0
        made = (torch.randn(shape, generator=generator, dtype=torch.float64) * scale).to(dtype)
    else:  # integers: within the example's own range (they may be indices)
        low, high = (int(t.min()), int(t.max())) if t.numel() else (0, 1)
        made = torch.randint(low, high + 1, shape, generator=generator, dtype=t.dtype)
    return made.to(t.device).requires_grad_(t.requires_grad)


# ---- comparison ----------------------------------------------------------------------------------

_SCALARS = (bool, int, str, bytes, type(None), type(Ellipsis))


class _Comparison:
    """Walks the eager and the compiled side together; the first difference raises NotEquivalent.

    Objects and tensor storages met on one side must correspond one to one to those on the other
    (``aliases``), across the result, the arguments and the state of one call."""

    def __init__(self, rtol, atol):
        self.rtol, self.atol = rtol, atol

    def start(self, call, calls, inputs):
        self.call, self.calls, self.inputs = call, calls, inputs
        self.aliases = {}    # ("e"|"c", id) -> (the object, its counterpart, where it was first met)

    def differ(self, path, what, eager, compiled):
        raise NotEquivalent(self.call, self.calls, self.inputs, path, what, eager, compiled)

    def same_outcome(self, eager, compiled):
        if eager[0] != compiled[0]:
            self.differ("result", f"eager {_said(eager)}, compiled {_said(compiled)}", eager[1], compiled[1])
        if eager[0] == "raised":
            self.same_exception(eager[1], compiled[1], "exception")
        else:
            self.same(eager[1], compiled[1], "result")

    def same_exception(self, e, c, path):
        if type(e) is not type(c) or str(e) != str(c):
            self.differ(path, f"eager raised {_short(e)}, compiled raised {_short(c)}", e, c)
        causes = (e.__cause__, c.__cause__)
        if any(x is not None for x in causes):
            if None in causes:
                self.differ(path + ".__cause__", f"eager {_short(causes[0])}, compiled {_short(causes[1])}", *causes)
            self.same_exception(*causes, path + ".__cause__")

    def same(self, e, c, path):
        if type(e) is not type(c):
            self.differ(path, f"type differs: eager {type(e).__qualname__}, compiled {type(c).__qualname__}",
                        e, c)
        if isinstance(e, _SCALARS):
            if e != c:
                self.differ(path, f"eager {e!r}, compiled {c!r}", e, c)
            return
        if isinstance(e, (float, complex)):
            return self.same_number(e, c, path)
        if not self.corresponds(e, c, path):
            return   # (met before, and compared then)
        if isinstance(e, torch.Tensor):
            return self.same_tensor(e, c, path)
        if isinstance(e, (list, tuple)):
            if len(e) != len(c):
                self.differ(path, f"eager has {len(e)} items, compiled {len(c)}", e, c)
            for k, (a, b) in enumerate(zip(e, c)):
                self.same(a, b, f"{path}[{k}]")
        elif isinstance(e, dict):
            if list(e) != list(c):
                self.differ(path, f"keys differ: eager {list(e)!r}, compiled {list(c)!r}", e, c)
            for k in e:
                self.same(e[k], c[k], f"{path}[{k!r}]")
        elif isinstance(e, (set, frozenset)):
            if e != c:
                self.differ(path, f"eager {e!r}, compiled {c!r}", e, c)
        elif isinstance(e, torch.nn.Module):
            self.same_module(e, c, path)
        elif isinstance(e, (types.FunctionType, types.BuiltinFunctionType, types.ModuleType, type)):
            if e is not c:
                self.differ(path, f"eager {e!r}, compiled {c!r}", e, c)
        elif hasattr(e, "__dict__") or hasattr(type(e), "__slots__"):
            self.same_attributes(e, c, path)
        elif not _equal(e, c):
            self.differ(path, f"eager {e!r}, compiled {c!r}", e, c)

    def corresponds(self, e, c, path):
        """Record that ``e`` and ``c`` stand for each other; False when met already (and consistent)."""
        if isinstance(e, tuple):
            return True   # (a tuple's identity is nobody's business)
        seen_e = self.aliases.get(("e", id(e)))
        seen_c = self.aliases.get(("c", id(c)))
        if seen_e is None and seen_c is None:
            self.aliases[("e", id(e))] = (e, c, path)
            self.aliases[("c", id(c))] = (c, e, path)
            return True
        if seen_e is not None and seen_e[1] is c:
            return False
        if seen_e is not None:
            self.differ(path, f"aliasing: eager's {path} is its {seen_e[2]}, compiled's is not", e, c)
        self.differ(path, f"aliasing: compiled's {path} is its {seen_c[2]}, eager's is not", e, c)

    def same_tensor(self, e, c, path):
        for attr in ("dtype", "shape", "device", "layout", "requires_grad"):
            a, b = getattr(e, attr), getattr(c, attr)
            if a != b:
                self.differ(path, f"{attr} differs: eager {a}, compiled {b}", e, c)
        if e.layout == torch.strided and e.numel() and e.untyped_storage().data_ptr():
            self.same_storage(e, c, path)
        try:
            torch.testing.assert_close(c.detach(), e.detach(), rtol=self.rtol, atol=self.atol, equal_nan=True,
                                       check_stride=False)
        except AssertionError as mismatch:
            detail = "\n  ".join(line for line in str(mismatch).splitlines() if line.strip())
            self.differ(path, f"values differ\n  {detail}\n  eager:    {_preview(e)}\n  compiled: {_preview(c)}",
                        e, c)
        if (e.is_leaf or e.retains_grad) and (e.grad is not None or c.grad is not None):
            self.same(e.grad, c.grad, path + ".grad")

    def same_storage(self, e, c, path):
        """Tensors sharing memory on one side (a view of an argument, an output twice) share it on the
        other."""
        keys = (("e-storage", e.untyped_storage().data_ptr()), ("c-storage", c.untyped_storage().data_ptr()))
        seen = [self.aliases.get(k) for k in keys]
        if seen == [None, None]:
            self.aliases[keys[0]] = (e, keys[1], path)
            self.aliases[keys[1]] = (c, keys[0], path)
        elif seen[0] is None or seen[1] is None or seen[0][1] != keys[1]:
            side, other = ("eager", "compiled") if seen[0] is not None else ("compiled", "eager")
            first = (seen[0] or seen[1])[2]
            self.differ(path, f"aliasing: {side}'s {path} shares memory with its {first}, {other}'s does not",
                        e, c)

    def same_number(self, e, c, path):
        if e == c or (math.isnan(abs(e)) and math.isnan(abs(c))):
            return
        rtol = self.rtol if self.rtol is not None else 1.3e-6
        atol = self.atol if self.atol is not None else 1e-5
        if not abs(e - c) <= atol + rtol * abs(e):
            self.differ(path, f"eager {e!r}, compiled {c!r}", e, c)

    def same_module(self, e, c, path):
        for kind in ("_parameters", "_buffers", "_modules"):
            a, b = e.__dict__.get(kind, {}), c.__dict__.get(kind, {})
            if list(a) != list(b):
                self.differ(path, f"{kind[1:]} differ: eager {list(a)}, compiled {list(b)}", e, c)
            for name in a:
                self.same(a[name], b[name], f"{path}.{name}")
        self.same_attributes(e, c, path, skip=_MODULE_INTERNALS)

    def same_attributes(self, e, c, path, skip=()):
        a, b = _attributes(e, skip), _attributes(c, skip)
        if list(a) != list(b):
            self.differ(path, f"attributes differ: eager {sorted(a)}, compiled {sorted(b)}", e, c)
        for name in a:
            self.same(a[name], b[name], f"{path}.{name}")


#: what of an nn.Module's ``__dict__`` is torch's own bookkeeping (hooks hold functions; the
#: parameters, buffers and submodules are compared by name above)
_MODULE_INTERNALS = frozenset(name for name in vars(torch.nn.Module()) if name.startswith("_"))


def _attributes(obj, skip):
    found = {}
    for name, value in getattr(obj, "__dict__", {}).items():
        if name not in skip:
            found[name] = value
    for name in getattr(type(obj), "__slots__", ()):
        if name not in skip and hasattr(obj, name):
            found[name] = getattr(obj, name)
    return found


def _equal(a, b):
    """Equal, as far as two objects without attributes can say (compared by identity, or unable to
    compare, the same type is all one can ask of them)."""
    if type(a).__eq__ is object.__eq__:
        return True
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return True


def _said(outcome):
    return f"raised {_short(outcome[1])}" if outcome[0] == "raised" else f"returned {_preview(outcome[1])}"


def _short(error):
    return f"{type(error).__name__}({str(error)!r})" if error is not None else "nothing"


def _preview(value):
    if isinstance(value, torch.Tensor):
        shown = "..."
        if value.layout == torch.strided:
            shown = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v)
                              for v in value.detach().flatten()[:8].tolist())
            shown += ", ..." if value.numel() > 8 else ""
        return f"tensor(shape={list(value.shape)}, dtype={value.dtype}, values=[{shown}])"
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
