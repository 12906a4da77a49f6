"""``magpy.explain``: one call told as compiled calls run it, segment by segment.

A call with graph breaks runs in *segments*: a graph with its guards and its replay (the mock), then the
breaking instruction run natively, then the rest of the call in a resume function, captured in turn. A
call the breaking instruction makes to Python code (a submodule whose ``forward`` breaks) is split on its
own, as compiled calls compile it on its own. The explanation lists every segment in the order it runs:
its code, its guards (those of the user's program unless ``verbose``: ``capture.origins``), its replay,
and what runs natively at its end, with the reason and the user's file and line.

A break known before it runs (``print`` of tensors, ``magpy.graph_break()``, a loop over an iterator from
outside) splits the call at once. One found only by running into it (inside a called function, or a native
call capture has no rule for) is learnt the way a compiled function learns it on its first call: the
call runs on uncaptured, and explain runs it again, split there (``_RUNS`` runs at most). The program's
side effects happen once per run; the report says how many runs it took.

A call that raises raises the program's own exception, unchanged, as eager does (``explain``).
"""
import types

import torch
from torch import fx

from .api import (CompiledFunction, _callee_of, _called, _compilable, _home, _module_called, _past_our_frames,
                  _target)
from .backends.distributed import active_ddp, bucket_caps, bucket_pieces, parameter_bytes, piece_count
from .capture import rules
from .capture import capture
from .capture.breaks import why_no_split
from .capture.guards import order
from .capture.names import rendering_home
from .capture.observer import STOPPED
from .capture.origins import OriginsObserver, users_guard
from .capture.places import short_path
from .capture.resume import BreakSites
from .capture.user_files import is_user_file
from .compile_lock import LOCK
from .distributed import DistributedCall
from .emit import build_entry
from .emit.continuation import Continuation, run_eagerly, split_place
from .emit.program import guard_lines, render_mock

#: runs of one call at most: each learns one more break found by running into it (as many as a compiled
#: function's recompile limit lets it learn)
_RUNS = 8


class GraphBreak:
    """Why and where a program could not stay in one graph."""

    def __init__(self, reason, filename, lineno):
        self.reason = reason
        self.filename = filename
        self.lineno = lineno

    def __repr__(self):
        return f"GraphBreak({self.reason!r}, {self.filename}:{self.lineno})"


class Segment:
    """One piece of the call as compiled calls run it.

    ``function``: what runs it (qualified name, and where it starts or which break it resumes after);
    ``graph``: its fx.GraphModule (None without tensor ops); ``guards``: every guard, in the order
    checked; ``users_guards``: those of the user's program; ``mock``: its replay, ending in what runs
    natively at its break; ``brk``: the GraphBreak that ends it (None for the last)."""

    def __init__(self, function, graph, op_count, guards, users_guards, mock, brk=None, symbolic=()):
        self.function = function
        self.graph = graph
        self.op_count = op_count
        self.guards = guards
        self.users_guards = users_guards
        self.mock = mock
        self.brk = brk
        self.symbolic = list(symbolic)
        self.inside = False     # its break was found inside the call it makes natively …
        self.followed = False   # … and that call is explained as segments of its own (which tell the break)
        self.pieces = 1         # compiled as this many pieces, one per DDP gradient bucket

    def render(self, number, verbose):
        ops = f"{self.op_count} op{'s' if self.op_count != 1 else ''}" if self.graph is not None else "no graph"
        lines = [f"segment {number}: {self.function}, {ops}"]
        if self.pieces > 1:
            lines.append(f"  compiled in {self.pieces} pieces, one per DistributedDataParallel gradient bucket "
                         "(each bucket's all-reduce starts as its piece's backward ends)")
        if self.symbolic:
            lines.append(f"  symbolic sizes: {', '.join(self.symbolic)}")
        if self.graph is not None:
            lines.append("  graph:")
            lines += [f"    {line}" if line else "" for line in self.graph.code.strip().splitlines()]
        shown = self.guards if verbose else self.users_guards
        lines.append("  guards:")
        lines += [f"    {g}" for g in shown]
        hidden = len(self.guards) - len(shown)
        if hidden:
            lines.append(f"    (+{hidden} of torch's machinery hidden: verbose=True shows every guard)")
        lines += [f"  {line}" for line in self.mock.splitlines()]
        return "\n".join(lines)


class Explanation:
    """What ``magpy.explain`` found: ``segments`` in the order they run; over all of them ``graphs``,
    ``breaks`` (GraphBreak: reason, filename, lineno), ``guards`` (every guard, readable), ``op_count``,
    ``symbolic`` sizes (an input's dims marked with ``magpy.mark_dynamic``); ``runs``: how many times the
    call ran (one more per break found by running into it). ``str()`` is a readable report: each
    segment's graph code, guards (the user's program's, unless explained with ``verbose=True``), replay
    and break."""

    def __init__(self, segments, verbose=False, runs=1):
        self.segments = segments
        self.verbose = verbose
        self.runs = runs
        self.graphs = [s.graph for s in segments if s.graph is not None]
        self.breaks = [s.brk for s in segments if s.brk is not None and not (s.inside and s.followed)]
        self.guards = [g for s in segments for g in s.guards]
        self.op_count = sum(s.op_count for s in segments)
        self.symbolic = [size for s in segments for size in s.symbolic]

    @property
    def graph_count(self):
        return len(self.graphs)

    @property
    def graph_break_count(self):
        return len(self.breaks)

    @property
    def text(self):
        """The segments, readable."""
        return "\n".join(s.render(k, self.verbose) for k, s in enumerate(self.segments, 1))

    def render(self, verbose=None):
        """The report; ``verbose`` (default: as explained) shows every guard, torch's machinery's too."""
        verbose = self.verbose if verbose is None else verbose
        lines = [f"{self.graph_count} graph(s), {self.graph_break_count} graph break(s), {self.op_count} op(s), "
                 f"{len(self.segments)} segment(s)"]
        seen = {}  # (a break in a loop splits each iteration: one line, with how many times)
        for b in self.breaks:
            key = (b.reason, short_path(b.filename or "?"), b.lineno)
            seen[key] = seen.get(key, 0) + 1
        lines += [f"  break: {reason} ({where}:{lineno})" + (f" ×{n}" if n > 1 else "")
                  for (reason, where, lineno), n in seen.items()]
        if self.runs > 1:
            lines.append(f"  (the call ran {self.runs} times: a graph break found by running into it splits the "
                         f"call from the next run on, as compiled calls split it from their next call)")
        lines += [s.render(k, verbose) for k, s in enumerate(self.segments, 1)]
        return "\n".join(lines)

    def __str__(self):
        return self.render()


def explain(fn, *args, verbose=False, **kwargs):
    """Run one call of ``fn`` (a function, method or ``nn.Module``) as compiled calls run it, and return a
    ``magpy.Explanation`` of it: every segment, in the order it runs — its graph (code), guards, replay,
    and what runs natively at the graph break that ends it, with the reason and your file and line.

    ``str()`` of it shows the guards of your program: those made by reads in your files, on values your
    code read, or on the call's inputs; ``verbose=True`` shows torch's machinery's too (a function taking
    an argument named ``verbose`` is explained through a lambda passing it).

    The call runs once, unless a graph break is found only by running into it (inside a called function,
    say): it then runs again, split there, as a compiled function splits it from its second call.
    Raises what the call raises, as eager does: the program's own exception, its traceback through your
    frames (the innermost of your lines is where it was raised).
    """
    try:
        return explain_call(fn, args, kwargs, verbose)
    except BaseException as exc:
        raise exc.with_traceback(_past_our_frames(exc.__traceback__))  # (from the user's frames)


def explain_call(fn, args, kwargs, verbose=False):
    """``magpy.explain``'s work (see there): the call explained, run again while runs find new breaks."""
    wrapper = rules.distributed_wrapper(fn) is not None
    if not wrapper:
        func, leading = _target(_called(fn))
    sites, inside = {}, {}
    with LOCK, rendering_home(_home(fn)):
        for runs in range(1, _RUNS + 1):
            explainer = _Explainer(sites, inside, last=runs == _RUNS)
            if wrapper:
                explainer.run_natively(fn, args, kwargs)
            else:
                explainer.run(func, (*leading, *args), kwargs)
            if not explainer.split_anew:
                break
    return Explanation(explainer.segments, verbose, runs)


class _Explainer:
    """One run of the call: each capture (the call's, its resume functions', the functions called at its
    breaks) a segment. ``sites``: the breaks known so far, by code (``BreakSites``' table), kept from run
    to run; ``inside``: id -> those of them found inside the call their instruction makes."""

    def __init__(self, sites, inside, last):
        self.sites = sites
        self.inside = inside
        self.last = last
        self.segments = []
        self.split_anew = False  # this run found a break by running into it: the next run splits there

    def run(self, func, args, kwargs, resumed=None):
        """Capture ``func(*args, **kwargs)`` as a segment and go on through its break; returns what the
        call returns, raises what it raises. ``resumed``: the Place of the break a resume function goes on
        after."""
        code = func.__code__
        breaks = BreakSites(code, self.sites)
        observers = []

        def observe(fn_globals):
            observers.append(OriginsObserver(fn_globals))
            return observers[-1]

        result, exc, cap = capture(func, args, kwargs, make_observer=observe,
                                   stop_at=frozenset(k for k, u in breaks.items() if u is not None))
        if exc is not None:
            try:
                raise exc  # (the program's own error, raised as eager raises it)
            finally:
                del exc  # (see ``_compile_and_run``)
        observer = observers[0]
        name = f"{func.__qualname__}, resumed after {resumed.where()}" if resumed is not None else \
            f"{func.__qualname__} ({short_path(code.co_filename)}:{code.co_firstlineno})"
        u = cap.unsupported
        if u is not None:
            return self._given_up(func, result, cap, breaks, observer, name)
        brk = None
        if result is STOPPED:
            stopped = cap.stopped
            u = stopped.found or breaks[stopped.index]
            after = split_place(stopped.split)
            cap.resume = Continuation(func, stopped.split, u.reason, u.where(),
                                      lambda fn: self._resumed(fn, after), self._callee)
            brk = GraphBreak(u.reason, u.filename, u.lineno)
        graph = None
        if cap.op_count:
            cap.graph.output(tuple(cap.outputs))
            graph = fx.GraphModule(torch.nn.Module(), cap.graph)
        entry = build_entry(cap, None)
        segment = self._segment(name, graph, cap, entry.guards, observer, render_mock(cap), brk)
        if graph is not None:
            segment.pieces = _bucket_pieces(graph, cap)
        segment.inside = brk is not None and id(u) in self.inside
        self.segments.append(segment)
        return cap.resume(*cap.stopped.values) if result is STOPPED else result

    def _given_up(self, func, result, cap, breaks, observer, name):
        """Capture gave up (``cap.unsupported`` says why) while the call ran on: a break found by running
        into it is split from the next run on; otherwise the segment is what compiled calls remember, an
        eager entry, and the call goes on eagerly, as theirs does."""
        u, at = cap.unsupported, cap.failed_at
        if result is STOPPED:  # (what came before a break cannot be replayed: eagerly on from the break)
            place = split_place(cap.stopped.split).where()
            then = f"calls that pass these guards run the function eagerly, through the break at {place}"
            result = run_eagerly(func, cap.stopped)
        elif at is not None and at not in breaks and why_no_split(func.__code__, at) is None:
            if not self.last:
                breaks[at] = u  # (the next run stops before that instruction)
                if observer.failed_inside:
                    self.inside[id(u)] = u
                self.split_anew = True
                return result
            then = "compiled calls split the call before this line from their next call on"
        else:
            then = "calls that pass these guards run the function eagerly"
        self.segments.append(self._segment(name, None, cap, order(cap.guards.values()), observer,
                                           f"mock: none ({then}): {u.reason} ({u.where()})",
                                           GraphBreak(u.reason, u.filename, u.lineno)))
        return result

    def _segment(self, name, graph, cap, guards, observer, mock, brk):
        lines = list(guard_lines(cap, guards))
        users = [line for g, line, place in lines if (
            is_user_file(place.filename) if place is not None else
            users_guard(g, observer.origins.get(g.key()), observer.users_paths))]
        symbolic = [f"{source.render()}.size({d})" for source, dims in cap.symbolic for d in sorted(dims)]
        return Segment(name, graph, cap.op_count if graph is not None else 0, [line for _, line, _ in lines],
                       users, mock, brk, symbolic)

    def _resumed(self, fn, after):
        """What a continuation calls as the resume function ``fn`` (going on after Place ``after``): its
        own segments."""
        return lambda *live: self.run(fn, live, {}, resumed=after)

    def run_natively(self, module, args, kwargs):
        """A call of a distributed wrapper (DDP, an FSDP module): its bookkeeping natively, told as a segment
        of its own ending in a break, then the work it wraps as segments of their own."""
        forward = getattr(type(module), "forward", None)
        code = getattr(forward, "__code__", None)
        brk = GraphBreak(f"{rules.distributed_says(module)} (graph break)", code and code.co_filename,
                         code and code.co_firstlineno)
        self.segments.append(Segment(f"{type(module).__qualname__} (its own call, natively)", None, 0, [], [],
                                     f"mock: none (runs natively): {brk.reason}", brk))
        return self._natively(module)(*args, **kwargs)

    def _natively(self, module):
        """A call of distributed wrapper ``module`` run natively, the work it wraps explained."""
        call = getattr(module, "_magpy_compiled", None)  # (``magpy.compile(ddp)``: the wrapper's own call)
        call = call.call if isinstance(call, DistributedCall) else types.MethodType(type(module).__call__, module)
        return DistributedCall(call, module, lambda target, stats: (
            lambda *args, **kwargs: self.run(target.__func__, (target.__self__, *args), kwargs)))

    def _callee(self, obj):
        """What the breaking instruction calls instead of ``obj``: Python code explained as segments of
        its own, as compiled calls compile it on its own (a distributed wrapper: its own call natively,
        the work it wraps explained); anything else as it is."""
        module = _module_called(obj)
        if rules.distributed_wrapper(module) is not None:
            self.segments[-1].followed = True
            return self._natively(module)
        target = explained_target(obj)
        if target is None:
            return obj
        self.segments[-1].followed = True
        func, leading = target
        return lambda *args, **kwargs: self.run(func, (*leading, *args), kwargs)


def _bucket_pieces(graph, cap) -> int:
    """How many pieces compiling ``graph`` would make while a DDP module runs (1: it stays whole)."""
    ddp = active_ddp()
    if ddp is None or not torch.is_grad_enabled():
        return 1
    sizes = parameter_bytes(ddp, [t for _, t in cap.inputs])
    return piece_count(bucket_pieces(graph, sizes, bucket_caps(ddp))) if any(sizes) else 1


def explained_target(obj):
    """(function, leading bound arguments) of the Python code calling ``obj`` at a graph break runs
    (``api.compiled_callee``'s choice: a module's ``forward``, or its whole call when it has hooks); None
    for a callable that runs natively (a C function, MagPy's own code, a generator function, a function
    compiled with ``magpy.compile``)."""
    obj = _callee_of(obj)
    if isinstance(obj, torch.nn.Module) and not isinstance(type(obj).__call__, CompiledFunction):
        obj = types.MethodType(type(obj).__call__, obj)
    if type(obj) is types.MethodType and type(obj.__func__) is types.FunctionType:
        func, leading = obj.__func__, (obj.__self__,)
    elif type(obj) is types.FunctionType:
        func, leading = obj, ()
    else:
        return None
    return (func, leading) if _compilable(func) else None
