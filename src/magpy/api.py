"""The public API: ``compile``, ``trace``, ``reset``, ``graph_break``; CompiledFunction (``explain``: explaining.py)."""
import functools
import inspect
import os
import pickle
import sys
import types
import warnings
import weakref

import torch
from torch import fx

from . import backends as _backends
from .cache import Cache, ChildStats, Stats, register, reset_all
from .backends.distributed import split_at_buckets
from .backends.symbolic import compile_symbolic, is_symbolic_backend, note_captured
from .compile_lock import LOCK
from .capture import capture
from .capture.breaks import why_no_split
from .capture.observer import STOPPED
from .capture.names import home_of, rendering_home
from .tracing.trace import Trace, event_filter, run_traced
from .emit import build_entry, build_eager_entry, EAGER, MISS, Raised
from .emit.continuation import Continuation, run_eagerly
from .capture.resume import BreakSites
from .emit.program import evaluate, failing_guards
from .capture import rules
from .capture.conditions import is_conditions_guard
from .capture.sources import Expr
from .capture.guards import IdGuard, TensorGuard, TruthGuard, ValueGuard
from .capture.sources import ChangingNumbers, paths_in
from .distributed import DistributedCall
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


def _grad_mode_prologue(cap):
    """The grad mode a graph is compiled and run in: the call's entry mode, except for a graph entered
    without grad that turns it on part-way (a resume function after a break inside ``torch.no_grad()``):
    such a graph starts by setting the entry mode itself and is compiled and run with grad on, so that a
    backend that decides on autograd by the mode it is called in (AOTAutograd) keeps the later part's."""
    sets = [n for n in cap.graph.nodes if n.op == "call_function" and
            getattr(n.target, "__wrapped__", n.target) is torch._C._set_grad_enabled]
    if cap.entry_grad_mode or not sets:
        return cap.entry_grad_mode
    first = next(n for n in cap.graph.nodes if n.op != "placeholder")
    with cap.graph.inserting_before(first):
        cap.graph.call_function(sets[0].target, (False,))
    return True


def _with_grad(graph_fn):
    def run(*args):
        with torch.enable_grad():
            return graph_fn(*args)
    return run


class Family:
    """What a function the user compiled shares with the resume functions made at its graph breaks (and
    theirs): the canonical resume functions (``emit.continuation``) and the break sites found in each
    code object (``capture.resume.BreakSites``)."""

    def __init__(self):
        self.resumes = {}
        self.sites = {}


def _evaluated(expr, bound):
    """``expr`` over a call's arguments, or None where it cannot be evaluated there."""
    try:
        return evaluate(expr, bound)
    except Exception:  # noqa: BLE001 - (a path that call does not have)
        return None


def _changed_dims(g, value) -> frozenset:
    """The dims along which ``value`` differs in size from what tensor guard ``g`` fixed, when that is
    all that differs (class, dtype, device, rank, requires_grad the same); else none."""
    if not isinstance(value, torch.Tensor) or type(value) is not g.cls or value.dtype is not g.dtype or \
            value.device != g.device or value.dim() != len(g.shape) or value.requires_grad is not g.requires_grad:
        return frozenset()
    return frozenset(k for k, (n, m) in enumerate(zip(g.shape, value.shape)) if n is not None and n != m)


class CompiledFunction:
    """``fn`` compiled on its first call; later calls reuse the entry whose guards pass."""

    def __init__(self, fn, backend="magpy", fullgraph=False, dynamic=None, mode=None, options=None, stats=None,
                 family=None):
        self.fn = fn
        self.func, self.leading = _target(fn)
        self.backend = backend
        self.fullgraph = fullgraph
        self.mode = mode
        self.options = options or {}
        self.dynamic = dynamic
        # paths of Python numbers a later capture takes as graph inputs (a miss showed they change)
        self.dynamic_numbers = ChangingNumbers(arguments=dynamic is True)
        # input tensors' dims a later capture takes as symbolic (a miss showed their sizes change)
        self.dynamic_dims = True if dynamic is True else {}
        # (a resume function or a callee compiled at a graph break counts into its caller's stats)
        self.stats = ChildStats(stats) if stats is not None else Stats()
        # its resume functions and break sites, shared with theirs: one per function the user compiled
        self.family = family or Family()
        self.cache = register(Cache())
        # graph breaks found so far: root instruction index -> why (an Unsupported); captures stop before them
        self.breaks = BreakSites(self.func.__code__, self.family.sites)
        self.eager = False        # gave up: every call runs eagerly
        self.failed_captures = 0  # captures that gave up and could not be remembered as an eager entry
        self._warned = False
        self._warned_graph_error = False
        self.name = self.func.__qualname__  # (what messages call it: a module's class, for a module)
        self.extra_frames = 0     # frames between the user's call and ours (a module wrapper's)
        functools.update_wrapper(self, self.func)

    def __get__(self, obj, objtype=None):
        """A compiled function stored on a class binds as the function would (``@magpy.compile`` on a
        method or a module's ``forward``): the instance becomes its first argument."""
        if obj is None:
            return self
        return types.MethodType(self, obj)

    def settings(self) -> dict:
        """What it was compiled with, as ``magpy.compile`` takes it (backend, fullgraph, dynamic, mode,
        options)."""
        return dict(backend=self.backend, fullgraph=self.fullgraph, dynamic=self.dynamic, mode=self.mode,
                    options=dict(self.options) or None)

    def __reduce__(self):
        """Pickled by reference where it is what the name it was defined under holds (``@magpy.compile``
        on a module-level function or on a method); else as ``magpy.compile`` of what it compiles, with
        the same settings (``restore``). Compiled entries are never pickled: the loaded one compiles on
        its first call. Raises ``pickle.PicklingError`` when what it compiles is a function no name
        reaches (a lambda, a nested function)."""
        if _named_global(self) is self:
            return self.__qualname__
        if isinstance(self.fn, types.FunctionType) and _named_global(self.fn) is not self.fn:
            raise pickle.PicklingError(
                f"magpy: cannot pickle the compiled {self.func.__qualname__}: a compiled function is pickled "
                f"as a reference to the function it compiles, and {self.func.__qualname__} is not a "
                f"module-level name of {self.func.__module__} (a lambda or a nested function)")
        return restore, (self.fn, self.settings())

    def __vm_call_instead__(self):
        """Inside a function MagPy is capturing, this runs as the code it compiles (one graph)."""
        return self.fn

    def __call__(self, *args, **kwargs):
        stats = self.stats
        if self.eager:
            stats.count("calls")
            return self.fn(*args, **kwargs)
        full_args = (*self.leading, *args)
        try:
            bound = bind(self.func, decode(self.func.__code__), full_args, kwargs)
        except TypeError:  # (arguments that do not fit: the call itself raises eager's error)
            stats.count("calls")
            return self.fn(*args, **kwargs)
        try:
            result = self.cache.lookup(bound)
        except BaseException:
            stats.count("calls")
            raise
        if result is not MISS:
            if result is EAGER:  # (a call like one whose capture gave up: it would again)
                stats.count("calls")
                stats.count("eager_calls")
                return self.fn(*args, **kwargs)
            if type(result) is Raised:
                stats.count("calls")
                return self._rerun(result, args, kwargs)
            stats.hit()
            return result
        stats.count("calls")
        if not LOCK.acquire(blocking=False):
            # another thread is capturing or compiling: this call runs eagerly, as that capture does
            stats.count("eager_while_compiling")
            return self.fn(*args, **kwargs)
        try:
            if not self.eager:
                # another thread may have compiled this very call since the lookup above
                result = self.cache.lookup(bound)
                if result is EAGER:
                    stats.count("eager_calls")
                elif type(result) is Raised:
                    return self._rerun(result, args, kwargs)
                elif result is not MISS:
                    stats.count("cache_hits")
                    return result
                if result is MISS and (self.func.__code__.co_flags & _SUSPENDS or rules.disabled(self.func)):
                    code = self.func.__code__
                    why = rules.DISABLED_EAGER if rules.disabled(self.func) else _SUSPENDING
                    self._give_up(why, f"{code.co_filename}:{code.co_firstlineno}", stacklevel=3 + self.extra_frames)
                elif result is MISS and not self.cache.full():
                    self._note_changed_number(bound)
                    self._note_changed_sizes(bound)
                    self._note_flipped_branch(bound)
                    try:
                        return self._compile_and_run(full_args, args, kwargs)
                    except BaseException as exc:
                        raise exc.with_traceback(_past_our_frames(exc.__traceback__))  # (from the user's frames)
                if result is EAGER:
                    return self.fn(*args, **kwargs)
                if not self.eager:
                    self._give_up(f"recompile limit ({self.cache.limit}) reached", None,
                                  stacklevel=3 + self.extra_frames)
        finally:
            LOCK.release()
        return self.fn(*args, **kwargs)  # (eagerly: past the limit, or as an eager entry says)

    def _rerun(self, raised, args, kwargs):
        """The entry's graph raised and was undone: the call runs eagerly, raising as eager does. Should it
        not raise, the graph was wrong to: say so once (``MAGPY_STRICT=1``: raise it, for our tests)."""
        self.stats.count("eager_calls")
        result = self.fn(*args, **kwargs)
        error = raised.error
        self.stats.graph_error(error)
        if os.environ.get("MAGPY_STRICT") == "1":
            raise RuntimeError(f"magpy: the compiled graph of {self.name} raised where eager "
                               f"did not") from error
        if not self._warned_graph_error:
            self._warned_graph_error = True
            warnings.warn(f"magpy: the compiled graph of {self.name} raised where eager did not "
                          f"({type(error).__name__}: {error}); the call ran eagerly", stacklevel=3 + self.extra_frames)
        return result

    def _note_changed_number(self, bound):
        """Automatic dynamic numbers (``dynamic=None``, and ``True`` for the settings it keeps static): when
        the newest entry missed because a Python number it read from outside changed, later captures take
        that number as a graph input where it is an operand of tensor ops (a counter ``self.step`` in
        arithmetic, the length of a history), instead of one entry per value."""
        if self.dynamic is False or not self.cache.entries:
            return
        entry = self.cache.entries[0]
        # every number that changed, not only the first guard to miss: two counters found one miss apart
        # would cost one more compile (``self.step + 1``: self.step; ``len(self.history)``: that list's length)
        changed = []
        for g, _ in failing_guards(entry, bound):
            if type(g) is IdGuard:
                break  # (another object there: its numbers are its own, not changes)
            if type(g) is ValueGuard and type(g.value) in (int, float):
                changed.append(g.expr)
        self.dynamic_numbers = self.dynamic_numbers.with_paths(p for e in changed for p in paths_in(e))
        # numbers the newest entry wrote to outside state (a counter in a dict, ``d[k] = d.get(k, 0) + 1``)
        # are state written on every call: they change, whichever guard missed first
        self.dynamic_numbers = self.dynamic_numbers.with_paths(
            p for p in getattr(entry, "written_numbers", ()) if type(_evaluated(p, bound)) in (int, float))

    def _note_changed_sizes(self, bound):
        """Automatic dynamic shapes (``dynamic=None``): when a tensor the newest entry read from outside
        comes with other sizes (same class, dtype, device and rank), later captures take those dims as
        symbolic — one entry for every size of at least 2 — instead of one entry per size."""
        if self.dynamic is not None or not self.cache.entries:
            return
        for g in self.cache.entries[0].guards:
            if type(g) is not TensorGuard:
                continue
            try:
                value = evaluate(g.expr, bound)
            except Exception:  # noqa: BLE001 - (another guard fails first)
                continue
            changed = _changed_dims(g, value)
            if changed:
                self.dynamic_dims[g.expr] = self.dynamic_dims.get(g.expr, frozenset()) | changed

    def _note_flipped_branch(self, bound):
        """A branch on tensor data went another way than in every entry so far: once two entries exist,
        the next capture splits the call at that branch (a graph break) instead of compiling one entry
        per combination of ways (a policy's ``.item()`` deciding, block by block, which blocks run)."""
        if len(self.cache.entries) < 2:
            return
        entry = self.cache.entries[0]
        guard = next((g for g in entry.guards if is_conditions_guard(g)), None)
        sites = getattr(entry, "condition_sites", ())
        if guard is None or not sites:
            return
        try:
            found = evaluate(guard.expr, bound)
        except Exception:  # noqa: BLE001 - (another guard fails first)
            return
        flipped = next((k for k, (a, b) in enumerate(zip(found, guard.value)) if a != b), None)
        at = sites[flipped] if flipped is not None else None
        if at is not None and at not in self.breaks and why_no_split(self.func.__code__, at) is None:
            self.breaks[at] = Unsupported(_FLIPPED, *self._line_of(at))
            self.stats.count("graph_breaks")

    def _line_of(self, index):
        decoded = decode(self.func.__code__)
        return self.func.__code__.co_filename, decoded.linenos[index]

    def _compile_and_run(self, full_args, args, kwargs):
        numbers = self.dynamic_numbers
        dims = self.dynamic_dims if self.dynamic_dims is True else dict(self.dynamic_dims)
        result, exc, cap = capture(self.func, full_args, kwargs, dynamic_numbers=numbers, dynamic_dims=dims,
                                   stop_at=None if self.fullgraph else
                                   frozenset(k for k, u in self.breaks.items() if u is not None))
        if cap.unsupported is None:
            try:
                if result is STOPPED:
                    cap.resume = self._continuation(cap.stopped)
                self.cache.add(self._build(cap))
                self.stats.count("compiles")
                if cap.op_count:
                    self.stats.count("graphs")
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
            if result is STOPPED:
                # (compiling what came before the break failed: the call goes on eagerly from there)
                self._remember_failure(cap, u, stacklevel=4 + self.extra_frames)
                return run_eagerly(self.func, cap.stopped)
            # the call could not be captured: it ran eagerly (in the VM, exactly once). Where it gave up
            # in this function's own code, the next capture stops before that instruction: a graph
            # break, the rest of the call continuing in a resume function
            at = cap.failed_at
            known = self.breaks.get(at)
            if known is not None and known.reason == _FLIPPED:
                # (a split to save entries that cannot be made: entries per way it is, then)
                self.breaks[at] = None
            elif known is not None:  # (the capture that was to stop there could not: say why it had to)
                first = self.breaks[at]
                u = Unsupported(f"{first.reason}; the call cannot be split there: {u.reason}", first.filename,
                                first.lineno)
                self._remember_failure(cap, u, stacklevel=4 + self.extra_frames)
            elif at is None or at in self.breaks or why_no_split(self.func.__code__, at) is not None:
                self.stats.count("graph_breaks")
                self._remember_failure(cap, u, stacklevel=4 + self.extra_frames)
            else:
                self._add_break(at, u)
        if exc is not None and not isinstance(exc, Unsupported):
            try:
                raise exc
            finally:
                del exc  # (no cycle through this frame, in the traceback: it dies when the program drops it)
        if result is STOPPED:
            return cap.resume(*cap.stopped.values)
        return result

    def _add_break(self, index, u):
        """A graph break at root instruction ``index`` (why: ``u``): later captures stop before it."""
        self.stats.count("graph_breaks")
        self.stats.reasons.append((u.reason, u.where()))
        self.breaks[index] = u

    def _continuation(self, stopped):
        if stopped.index not in self.breaks:  # (found by this capture: later captures stop there too)
            self._add_break(stopped.index, stopped.found)
        u = self.breaks[stopped.index]
        options = dict(backend=self.backend, dynamic=self.dynamic, mode=self.mode, options=self.options,
                       stats=self.stats)
        return Continuation(self.func, stopped.split, u.reason, u.where(),
                            lambda fn: CompiledFunction(fn, family=self.family, **options),
                            lambda obj: compiled_callee(obj, options), self.family.resumes)

    def _build(self, cap):
        with rendering_home(_home(self.fn)):  # (the entry's readable text names the user's globals bare)
            return self._build_entry(cap)

    def _build_entry(self, cap):
        if cap.op_count:
            cap.graph.output(tuple(cap.outputs))
            grad_on = _grad_mode_prologue(cap)
            gm = fx.GraphModule(torch.nn.Module(), cap.graph)
            example = [t for _, t in cap.inputs]
            backend = _backends.lookup_backend(self.backend, self.options, self.mode)
            backend = split_at_buckets(backend, example)  # (while DDP runs: one piece per gradient bucket)
            try:
                # a graph over Python numbers (random draws, ``t.item()``) runs as captured: compiling
                # backends would bake those numbers in as constants
                with torch.set_grad_enabled(grad_on):  # (backends decide on autograd by the mode now)
                    if self._symbolic_compile(cap):
                        graph_fn = self._compile_symbolic(cap, gm, backend, example)
                    else:
                        graph_fn = gm.forward if cap.host_values or cap.autograd_nodes else backend(gm, example)
            except Exception as err:  # noqa: BLE001 - a backend that cannot compile a graph: run it as is
                warnings.warn(f"magpy: backend {self.backend!r} failed on a graph of "
                              f"{self.name} ({type(err).__name__}: {err}); running it eagerly",
                              stacklevel=5)
                graph_fn = gm.forward
            pieces = getattr(graph_fn, "pieces", 0)
            if pieces:
                self.stats.count("bucket_pieces", pieces)
            if grad_on and not cap.entry_grad_mode:
                graph_fn = _with_grad(graph_fn)
        else:
            gm, graph_fn = None, None
        code = self.func.__code__
        entry = build_entry(cap, graph_fn, name=f"magpy_entry_{code.co_name}", filename=code.co_filename)
        entry.graph_module = gm
        entry.condition_sites = cap.condition_sites
        entry.written_numbers = cap.written_numbers
        return entry

    def _symbolic_compile(self, cap) -> bool:
        """Does ``cap``'s graph go to the backend with symbolic sizes? Only when its inputs' sizes and the
        numbers from outside are all the Python numbers it takes or computes (no ``t.item()``, no random
        draw, no size from data), and the backend takes them (floats too, where there are some)."""
        return cap.host_values and not cap.data_values and not cap.autograd_nodes and \
            is_symbolic_backend(self.backend, unbacked=cap.data_shapes, floats=cap.float_inputs)

    def _compile_symbolic(self, cap, gm, backend, example):
        """The backend compiles ``gm`` once for every size the tensor guards let through; the relations
        between sizes it relied on join the entry's guards."""
        symbolic = dict(cap.symbolic)
        dims = [symbolic.get(source, frozenset()) for source, _ in cap.inputs]
        try:
            graph_fn, sizes_hold = compile_symbolic(backend, gm, example, dims, unbacked=cap.data_shapes)
        except Exception as err:  # noqa: BLE001 - sizes from data the backend cannot trace (a count Python reads)
            if not cap.data_shapes:
                raise
            note_captured(self.backend, gm, f"sizes from data it cannot trace ({type(err).__name__}: {err})")
            return gm.forward
        if sizes_hold is not None:
            g = TruthGuard(Expr(sizes_hold, tuple(source for source, _ in cap.inputs)), True)
            cap.guards[g.key()] = g
        return graph_fn

    def _remember_failure(self, cap, u, stacklevel):
        """A capture gave up: later calls that pass the guards it had collected by then would reach the same
        point, so they run eagerly with no capture (an eager entry); other calls are still captured. Say
        why, once."""
        self.stats.count("fallbacks")
        self.stats.reasons.append((u.reason, u.where()))
        if not self._warned:
            self._warned = True
            warnings.warn(f"magpy: {self.name} runs eagerly: {u.reason} ({u.where()}); calls "
                          "that go another way are still compiled", stacklevel=stacklevel)
        try:
            code = self.func.__code__
            with rendering_home(_home(self.fn)):
                self.cache.add(build_eager_entry(cap, name=f"magpy_eager_{code.co_name}",
                                                 filename=code.co_filename))
        except Exception:  # noqa: BLE001 - not remembered: the next call is captured again, up to the limit
            self.failed_captures += 1
            if self.failed_captures + len(self.cache.entries) >= self.cache.limit:
                self.eager = True

    def _give_up(self, reason, where, stacklevel):
        """From now on every call runs eagerly; say why, once (called holding ``LOCK``)."""
        self.stats.count("fallbacks")
        self.stats.reasons.append((reason, where))
        if not self._warned:
            self._warned = True
            said = f"{reason} ({where})" if where else reason
            warnings.warn(f"magpy: {self.name} runs eagerly: {said}",
                          stacklevel=stacklevel)
        self.eager = True


def _past_our_frames(tb):
    """``tb`` without its first entries in this package's files (they show how we ran the user's code)."""
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_PACKAGE):
        tb = tb.tb_next
    return tb


#: generator, coroutine and async generator functions: a call returns an object whose body runs later,
#: step by step, as its consumer asks
_SUSPENDS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | \
    inspect.CO_ITERABLE_COROUTINE
_SUSPENDING = ("a generator or async function (each call returns an object whose body runs later, step by "
               "step; MagPy compiles calls that run to completion: compile the function it calls per step)")

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep

_FLIPPED = "a branch on tensor data that goes different ways on different calls (graph break)"


def _home(fn):
    """The module whose globals guards and traces of ``fn`` name bare (for a module, its ``forward``'s)."""
    if type(fn) is types.MethodType and isinstance(fn.__self__, torch.nn.Module):  # (a module's ``__call__``)
        fn = fn.__self__
    if isinstance(fn, torch.nn.Module):
        return home_of(type(fn).forward)
    return home_of(_target(fn)[0])


def _compiled_module(module, **options):
    """An nn.Module sharing ``module``'s state (its very ``__dict__``) whose calls are compiled.

    A copy of the wrapper (``copy.deepcopy`` for an EMA or teacher model) gets its own compiled call,
    bound to the copy. Pickled (and copied) as ``magpy.compile`` of an instance of the module's own
    class holding the same state, with the same settings (``restore``): the class made here is no name
    a pickle could refer to, and compiled code is never pickled (the loaded module compiles anew)."""
    cls = type(module)

    def compiled_call_of(wrapper):
        if rules.distributed_wrapper(module) is not None:  # (DDP, FSDP: their bookkeeping runs natively)
            return DistributedCall(types.MethodType(cls.__call__, wrapper), wrapper, _work_compiler(options))
        compiled = CompiledFunction(types.MethodType(cls.__call__, wrapper), **options)
        compiled.extra_frames = 1
        compiled.name = cls.__qualname__
        return compiled

    compiled_call = compiled_call_of(module)
    # id(wrapper) -> (weak reference to it, its compiled call): by identity, so that the module's own
    # __eq__ / __hash__ never run (a WeakKeyDictionary calls both); setdefault: two threads making
    # the first call of a copy at once share one compiled call
    per_instance = {}

    def track(wrapper, compiled):
        key = id(wrapper)
        ref = weakref.ref(wrapper, lambda _: per_instance.pop(key, None))
        return per_instance.setdefault(key, (ref, compiled))[1]

    def __call__(self, *args, **kwargs):
        entry = per_instance.get(id(self))
        compiled = entry[1] if entry is not None else track(self, compiled_call_of(self))
        return compiled(*args, **kwargs)

    def __reduce_ex__(self, protocol):
        plain = object.__new__(cls)
        # (a copy of the mapping, as a shallow copy of a module has: ``copy.copy`` shares the values only)
        object.__setattr__(plain, "__dict__", dict(self.__dict__))
        return restore, (plain, options)

    # ``stats`` is a plain class attribute: a user attribute of that name in the shared __dict__ wins
    sub = type(cls.__name__, (cls,), {"__call__": __call__, "__reduce_ex__": __reduce_ex__,
                                      "__module__": cls.__module__, "_magpy_compiled": staticmethod(compiled_call),
                                      "stats": compiled_call.stats})
    wrapper = object.__new__(sub)
    object.__setattr__(wrapper, "__dict__", module.__dict__)
    track(wrapper, compiled_call)
    return wrapper


def compile(fn=None, *, backend="magpy", fullgraph=False, dynamic=None, mode=None, options=None):
    """Compile a function, method or ``nn.Module``.

    Returns a callable with the same results, exceptions and side effects; for a module, an
    ``nn.Module`` sharing the original's parameters, buffers and state. ``.stats`` (or, for a module,
    ``._magpy_compiled.stats``) counts calls, cache hits, compiles, graphs, graph breaks, fallbacks.
    ``mode`` ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs") stands for a
    set of ``options`` (``backends/settings.py``); options given explicitly win over the mode's.

    Raises ``magpy.SettingError`` (a ValueError and a TypeError) at once, naming the valid values, for
    an unknown backend name, mode or option, an option value the backend does not take, or a
    ``fullgraph``/``dynamic`` that is not a bool (or None). Raises ``GraphBreakError`` on the first call
    when ``fullgraph=True`` and the program cannot be captured as one graph.
    """
    _backends.check_settings(backend, mode, options, fullgraph, dynamic)
    if fn is None:
        return lambda f: compile(f, backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode,
                                 options=options)
    kw = dict(backend=backend, fullgraph=fullgraph, dynamic=dynamic, mode=mode, options=options)
    if isinstance(fn, torch.nn.Module):
        return _compiled_module(fn, **kw)
    return CompiledFunction(fn, **kw)


def restore(target, settings):
    """What loading a pickled compiled function or module calls: ``magpy.compile(target, **settings)``."""
    return compile(target, **settings)


def _named_global(obj):
    """What the name ``obj`` was defined under (its module and qualified name) holds now; None when no
    name reaches it (defined in a function, or its module gone)."""
    qualname, module = getattr(obj, "__qualname__", None), sys.modules.get(getattr(obj, "__module__", None))
    if module is None or not qualname or "<locals>" in qualname:
        return None
    found = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found


def reset():
    """Drop every compiled entry of every compiled function."""
    reset_all()


from .markers import graph_break  # noqa: E402,F401  (public: ``magpy.graph_break``)


Stats = Stats


def _called(fn):
    """What calling ``fn`` runs: a module's call (hooks included) as a method of it."""
    return types.MethodType(type(fn).__call__, fn) if isinstance(fn, torch.nn.Module) else fn


class Traced:
    """What ``magpy.trace(fn)`` returns: each call runs ``fn`` in the VM under capture (no caching) and
    keeps a ``Trace`` of it in ``.trace`` (also ``.last``)."""

    def __init__(self, fn, only=None, lines=False, on_event=None):
        self.fn = fn
        target = types.MethodType(type(fn).__call__, fn) if isinstance(fn, torch.nn.Module) else fn
        self.func, self.leading = _target(target)
        self.keep = event_filter(only)
        self.lines = lines
        self.on_event = on_event
        self.trace = None
        functools.update_wrapper(self, self.func)

    @property
    def last(self):
        """The last call's ``Trace`` (None before the first call)."""
        return self.trace

    def __call__(self, *args, **kwargs):
        trace = Trace(self.keep, self.on_event, self.lines)
        self.trace = trace
        with LOCK:
            result, exc = run_traced(self.func, (*self.leading, *args), kwargs, trace, _home(self.fn))
        if exc is not None:
            try:
                raise exc
            finally:
                del exc  # (see ``_compile_and_run``)
        if trace.callback_error is not None:
            raise trace.callback_error  # (the call itself completed: its effects happened)
        return result


def trace(fn, *, only=None, lines=False, on_event=None):
    """``fn`` (a function, method or ``nn.Module``) run in the VM on every call, each call keeping a
    ``Trace`` in ``.trace`` (also ``.last``): its events, fx graph, guards and RefGraph.

    ``only``: which events to keep — ``"all"`` (default), ``"user"`` (those in your files: not torch's,
    MagPy's or the standard library's; tensor ops and graph inputs, placed at the line of yours that led
    to them, and where capture gave up are always kept), ``"ops"`` (tensor ops and graph inputs), or a
    predicate ``event -> bool``. ``lines=True`` also reports each new line run (a step per instruction: slower).
    ``on_event(event)`` is called with each kept event as it happens; what it raises is raised after the
    call. ``breakpoint()`` in ``fn`` opens pdb at your line. Raises ``ValueError`` for an unknown ``only``.
    """
    return Traced(fn, only=only, lines=lines, on_event=on_event)


# callables a continuation calls at a graph break, compiled on their own: function -> CompiledFunction;
# id(module) -> (weak reference, compiled call) (by identity: a module's own __eq__/__hash__ never run)
_CALLEES = weakref.WeakKeyDictionary()
_MODULE_CALLEES = {}


def _callee_of(obj):
    """What calling ``obj`` at a graph break runs: a module's ``__call__`` bound to it as the module; a
    module (or its ``_call_impl``) without hooks as its ``forward``; anything else as it is. (A module's
    ``_call_impl`` with hooks stays itself: it is where the compiled ``__call__`` broke, so compiling the
    module's whole call again there would break there again, without end.)"""
    if type(obj) is types.MethodType and obj.__func__ in _MODULE_CALLS:
        forward = _plain_forward(obj.__self__)
        if forward is not None:
            return forward
        if obj.__func__ is torch.nn.Module.__call__:
            return obj.__self__
        return obj
    forward = _plain_forward(obj)
    return obj if forward is None else forward


def compiled_callee(obj, options):
    """What a call at a graph break calls instead of ``obj``: the compiled form of a Python function,
    method or module, so that the break inside it splits it in turn (a distributed wrapper: its own call
    natively, the work it wraps compiled); any other callable as it is."""
    module = _module_called(obj)
    if rules.distributed_wrapper(module) is not None:
        return _instance_callee(module, DistributedCall, None, options, lambda: DistributedCall(
            types.MethodType(type(module).__call__, module), module, _work_compiler(options),
            parent=options.get("stats")))
    obj = _callee_of(obj)
    if type(obj) is types.MethodType and type(obj.__func__) is types.FunctionType:
        if isinstance(obj.__self__, torch.nn.Module):
            return _instance_callee(obj.__self__, obj.__func__, obj, options) if _compilable(obj.__func__) else obj
        compiled = compiled_callee(obj.__func__, options)
        return obj if compiled is obj.__func__ else types.MethodType(compiled, obj.__self__)
    if type(obj) is types.FunctionType:
        compiled = _CALLEES.get(obj)  # (every call through a break comes here: the lock only to add one)
        if compiled is None:
            if not _compilable(obj):
                return obj
            with LOCK:
                compiled = _CALLEES.get(obj)
                if compiled is None:
                    compiled = _CALLEES[obj] = CompiledFunction(obj, **options)
        return compiled
    if isinstance(obj, torch.nn.Module) and not isinstance(type(obj).__call__, CompiledFunction):
        call = type(obj).__call__
        return _instance_callee(obj, call, types.MethodType(call, obj), options)
    return obj


def _instance_callee(module, func, target, options, make=None):
    """The compiled ``target`` (``func`` bound to ``module``; or what ``make()`` makes), one per module
    instance as ``magpy.compile(module)`` makes: its entries, resume functions and recompile limit are its
    own, not shared with every other instance of the class (twelve layers would reach the limit)."""
    key = (id(module), func)
    known = _MODULE_CALLEES.get(key)
    if known is not None and known[0]() is module:
        return known[1]
    with LOCK:
        known = _MODULE_CALLEES.get(key)
        if known is None or known[0]() is not module:
            compiled = make() if make is not None else CompiledFunction(target, **options)
            ref = weakref.ref(module, lambda _, table=_MODULE_CALLEES: table.pop(key, None))
            known = _MODULE_CALLEES[key] = (ref, compiled)
    return known[1]


_MODULE_CALLS = (torch.nn.Module.__call__, torch.nn.Module._call_impl)


def _module_called(obj):
    """The module a call of ``obj`` calls (itself, or the module of its bound ``__call__``), else None."""
    if type(obj) is types.MethodType and obj.__func__ in _MODULE_CALLS:
        obj = obj.__self__
    return obj if isinstance(obj, torch.nn.Module) else None


def _work_compiler(options):
    """What compiles the work a distributed wrapper wraps: ``(target, stats) -> CompiledFunction`` with the
    wrapper's settings (``options`` may hold the caller's stats: the wrapper's own replace them)."""
    settings = {k: v for k, v in options.items() if k != "stats"}

    def compile_work(target, stats):
        compiled = CompiledFunction(target, stats=stats, **settings)
        compiled.name = type(target.__self__).__qualname__  # (what its messages call it: the module's class)
        return compiled
    return compile_work


def _plain_forward(obj):
    """``m.forward`` when calling ``obj`` (a module) runs just that: no hook of the module's or global
    ones (``Module._call_impl``'s own test)."""
    if not isinstance(obj, torch.nn.Module) or type(obj).__call__ is not torch.nn.Module.__call__:
        return None
    from torch.nn.modules import module as m
    d = obj.__dict__
    if d.get("_backward_hooks") or d.get("_backward_pre_hooks") or d.get("_forward_hooks") or \
            d.get("_forward_pre_hooks") or m._global_backward_pre_hooks or m._global_backward_hooks or \
            m._global_forward_hooks or m._global_forward_pre_hooks or torch._C._get_tracing_state():
        return None
    return obj.forward


_OWN_DIR = os.path.dirname(os.path.abspath(__file__))


def _compilable(fn):
    code = fn.__code__
    return not code.co_flags & (0x20 | 0x80 | 0x100 | 0x200) and not code.co_filename.startswith(_OWN_DIR) \
        and not rules.disabled(fn)
