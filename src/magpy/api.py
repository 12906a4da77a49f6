"""The public API: ``compile``, ``explain``, ``reset``, ``graph_break``; CompiledFunction."""
import functools
import types
import warnings

import torch
from torch import fx

from . import backends as _backends
from .cache import Cache, Stats, register, reset_all
from .capture import capture
from .emit import build_entry, MISS
from .errors import GraphBreakError, Unsupported
from .interp.binding import bind
from .interp.decode import decode


def _target(fn):
    """(function, leading bound arguments) of what the user asked to compile."""
    if isinstance(fn, CompiledFunction):
        return fn.func, fn.leading  # ``explain(compiled, ...)`` explains what it compiles
    if isinstance(fn, types.MethodType):
        return fn.__func__, (fn.__self__,)
    if isinstance(fn, types.FunctionType):
        return fn, ()
    raise TypeError(f"magpy.compile() takes a Python function, method or nn.Module, "
                    f"not {type(fn).__name__}")


class CompiledFunction:
    """``fn`` compiled on its first call; later calls reuse the entry whose guards pass."""

    def __init__(self, fn, backend="magpy", fullgraph=False, dynamic=None, options=None):
        self.fn = fn
        self.func, self.leading = _target(fn)
        self.backend = backend
        self.fullgraph = fullgraph
        self.options = options or {}
        self.stats = Stats()
        self.cache = register(Cache())
        self.eager = False        # gave up: every call runs eagerly
        self._warned = False
        self.extra_frames = 0     # frames between the user's call and ours (a module wrapper's)
        functools.update_wrapper(self, self.func)

    def __vm_call_instead__(self):
        """Inside a function MagPy is capturing, this runs as the code it compiles (one graph)."""
        return self.fn

    def __call__(self, *args, **kwargs):
        self.stats.calls += 1
        if self.eager:
            return self.fn(*args, **kwargs)
        full_args = (*self.leading, *args)
        bound = bind(self.func, decode(self.func.__code__), full_args, kwargs)
        result = self.cache.lookup(bound)
        if result is not MISS:
            self.stats.cache_hits += 1
            return result
        if self.cache.full():
            return self._fall_back(f"recompile limit ({self.cache.limit}) reached", None, args, kwargs)
        return self._compile_and_run(full_args, args, kwargs)

    def _compile_and_run(self, full_args, args, kwargs):
        result, exc, cap = capture(self.func, full_args, kwargs)
        if cap.unsupported is None:
            try:
                self.cache.add(self._build(cap))
                self.stats.compiles += 1
                self.stats.graphs += 1 if cap.op_count else 0
            except Unsupported as u:
                cap.unsupported = u
            except Exception as err:  # noqa: BLE001 - the call already ran; never fail it for our sake
                code = self.func.__code__
                cap.unsupported = Unsupported(f"compiling the captured graph failed: {type(err).__name__}: "
                                              f"{err}", code.co_filename, code.co_firstlineno)
        if cap.unsupported is not None and exc is None:
            u = cap.unsupported
            if self.fullgraph:
                raise GraphBreakError(u.reason, u.filename, u.lineno)
            self.stats.graph_breaks += 1
            self._note(u)
        if exc is not None and not isinstance(exc, Unsupported):
            raise exc
        return result

    def _build(self, cap):
        if cap.op_count:
            cap.graph.output(tuple(cap.outputs))
            gm = fx.GraphModule(torch.nn.Module(), cap.graph)
            example = [t for _, t in cap.inputs]
            backend = _backends.lookup_backend(self.backend, self.options)
            try:
                # a graph over Python numbers (random draws, ``t.item()``) runs as captured: compiling
                # backends would bake those numbers in as constants
                graph_fn = gm.forward if cap.host_values or cap.autograd_nodes else backend(gm, example)
            except Exception as err:  # noqa: BLE001 - a backend that cannot compile a graph: run it as is
                warnings.warn(f"magpy: backend {self.backend!r} failed on a graph of "
                              f"{self.func.__qualname__} ({type(err).__name__}: {err}); running it eagerly",
                              stacklevel=5)
                graph_fn = gm.forward
        else:
            gm, graph_fn = None, None
        code = self.func.__code__
        entry = build_entry(cap, graph_fn, name=f"magpy_entry_{code.co_name}", filename=code.co_filename)
        entry.graph_module = gm
        return entry

    def _note(self, u):
        """The call could not be captured: it ran eagerly (in the VM, exactly once). Say why, once."""
        self.stats.fallbacks += 1
        self.stats.reasons.append((u.reason, u.where()))
        if not self._warned:
            self._warned = True
            warnings.warn(f"magpy: {self.func.__qualname__} runs eagerly: {u.reason} ({u.where()})",
                          stacklevel=4 + self.extra_frames)
        self.eager = True

    def _fall_back(self, reason, where, args, kwargs):
        self.stats.fallbacks += 1
        self.stats.reasons.append((reason, where))
        if not self._warned:
            self._warned = True
            warnings.warn(f"magpy: {self.func.__qualname__} runs eagerly: {reason}",
                          stacklevel=3 + self.extra_frames)
        self.eager = True
        return self.fn(*args, **kwargs)


def _compiled_module(module, **options):
    """An nn.Module sharing ``module``'s state (its very ``__dict__``) whose calls are compiled.

    A copy of the wrapper (``copy.deepcopy`` for an EMA or teacher model) gets its own compiled call,
    bound to the copy."""
    import weakref
    cls = type(module)
    compiled_call = CompiledFunction(types.MethodType(cls.__call__, module), **options)
    compiled_call.extra_frames = 1
    per_instance = weakref.WeakKeyDictionary()

    def __call__(self, *args, **kwargs):
        compiled = per_instance.get(self)
        if compiled is None:
            compiled = CompiledFunction(types.MethodType(cls.__call__, self), **options)
            compiled.extra_frames = 1
            per_instance[self] = compiled
        return compiled(*args, **kwargs)

    # ``stats`` is a plain class attribute: a user attribute of that name in the shared __dict__ wins
    sub = type(cls.__name__, (cls,), {"__call__": __call__, "__module__": cls.__module__,
                                      "_magpy_compiled": compiled_call, "stats": compiled_call.stats})
    wrapper = object.__new__(sub)
    object.__setattr__(wrapper, "__dict__", module.__dict__)
    per_instance[wrapper] = compiled_call
    return wrapper


def compile(fn=None, *, backend="magpy", fullgraph=False, dynamic=None, options=None):
    """Compile a function, method or ``nn.Module``.

    Returns a callable with the same results, exceptions and side effects; for a module, an
    ``nn.Module`` sharing the original's parameters, buffers and state. ``.stats`` (or, for a module,
    ``._magpy_compiled.stats``) counts calls, cache hits, compiles, graphs, graph breaks, fallbacks.
    Raises ``GraphBreakError`` on the first call when ``fullgraph=True`` and the program cannot be
    captured as one graph.
    """
    if fn is None:
        return lambda f: compile(f, backend=backend, fullgraph=fullgraph, dynamic=dynamic, options=options)
    kw = dict(backend=backend, fullgraph=fullgraph, dynamic=dynamic, options=options)
    if isinstance(fn, torch.nn.Module):
        return _compiled_module(fn, **kw)
    return CompiledFunction(fn, **kw)


def reset():
    """Drop every compiled entry of every compiled function."""
    reset_all()


def graph_break():
    """Mark a graph break in user code (a no-op when run eagerly)."""


Stats = Stats


class GraphBreak:
    """Why and where a program could not stay in one graph."""

    def __init__(self, reason, filename, lineno):
        self.reason = reason
        self.filename = filename
        self.lineno = lineno

    def __repr__(self):
        return f"GraphBreak({self.reason!r}, {self.filename}:{self.lineno})"


class Explanation:
    """What ``magpy.explain`` found: graphs, breaks (with reasons and lines), guards, op count."""

    def __init__(self, graphs, breaks, guards, op_count, text):
        self.graphs = graphs
        self.breaks = breaks
        self.guards = guards
        self.op_count = op_count
        self.text = text

    @property
    def graph_count(self):
        return len(self.graphs)

    @property
    def graph_break_count(self):
        return len(self.breaks)

    def __str__(self):
        lines = [f"{self.graph_count} graph(s), {self.graph_break_count} graph break(s), "
                 f"{self.op_count} op(s)"]
        for b in self.breaks:
            lines.append(f"  break: {b.reason} ({b.filename}:{b.lineno})")
        if self.text:
            lines.append(self.text)
        return "\n".join(lines)


def explain(fn, *args, **kwargs):
    """Capture one call of ``fn`` (it really runs, once) and report what MagPy made of it."""
    if isinstance(fn, torch.nn.Module):
        target = types.MethodType(type(fn).__call__, fn)
    else:
        target = fn
    func, leading = _target(target)
    result, exc, cap = capture(func, (*leading, *args), kwargs)
    if exc is not None and cap.unsupported is not None and str(cap.unsupported.reason).startswith("the call raised"):
        raise exc
    if cap.unsupported is not None:
        u = cap.unsupported
        return Explanation([], [GraphBreak(u.reason, u.filename, u.lineno)], [], cap.op_count, "")
    graphs = []
    if cap.op_count:
        cap.graph.output(tuple(cap.outputs))
        graphs.append(fx.GraphModule(torch.nn.Module(), cap.graph))
    entry = build_entry(cap, None)
    return Explanation(graphs, [], [g.describe() for g in entry.guards], cap.op_count, entry.text)


def trace(fn):
    """``fn`` run in the VM on every call (no caching), keeping the last call's capture in ``.last``."""
    func, leading = _target(fn)

    def traced(*args, **kwargs):
        result, exc, cap = capture(func, (*leading, *args), kwargs)
        traced.last = cap
        if exc is not None:
            raise exc
        return result
    traced.last = None
    functools.update_wrapper(traced, func)
    return traced
