"""``magpy.trace``: one call run in the VM under capture, reporting what happened as events.

``TracingObserver`` is the capture observer that also reports: each event it handles is reported after
capture's own handling (so a path is the one capture settled on), the fx graph reports each node added
to it, each new guard is reported, and so is the place where capture gives up, with its reason. The call
then runs on under a ``FramesObserver`` that still reports calls, returns and lines. Lines are reported
only when the trace asks for them: they take a step of the VM's per instruction.
"""
import torch
from torch import fx

from ..interp import Observer
from . import events as ev
from ..capture.guards import order
from ..capture.names import callable_name, rendering_home
from ..capture.observer import CaptureObserver, capture
from ..capture.sources import AttrSource, CellSource, GlobalSource, ItemSource, Source
from ..capture.user_files import is_user_file
from .refgraph import RefGraph

# ---- which events a trace keeps ----------------------------------------------------------------------

#: kinds a "user" trace keeps wherever they happened: the graph and why capture gave up are the program's
#: (a graph node made in a library is placed at the user's line that led to it, when there is one)
_ALWAYS_USERS = frozenset({"op", "input", "break"})


def _user_event(event):
    return event.kind in _ALWAYS_USERS or is_user_file(event.filename)


def _op_event(event):
    return event.kind in ("op", "input")


#: ``only=`` names -> the predicate of the events a trace keeps (None: all)
FILTERS = {"all": None, "user": _user_event, "ops": _op_event}


def event_filter(only):
    """The predicate of ``magpy.trace(only=...)``: a name of ``FILTERS`` or the caller's own predicate."""
    if only is None or callable(only):
        return only
    if only not in FILTERS:
        raise ValueError(f"magpy.trace(only=...) takes one of {', '.join(map(repr, FILTERS))} or a predicate "
                         f"over events, not {only!r}")
    return FILTERS[only]


# ---- the trace ---------------------------------------------------------------------------------------

class Trace:
    """What one call under ``magpy.trace`` did.

    ``events`` (the kept ``magpy.tracing.events.Event`` objects, in order), ``graph`` (the fx.GraphModule
    of the tensor ops, None when there were none), ``guards`` (readable strings), ``refgraph`` (outside
    objects read and written, and the paths between them), ``unsupported`` (why capture gave up, or
    None), ``capture`` (the raw ``Capture``). ``str(trace)`` lists the events.
    """

    def __init__(self, keep=None, on_event=None, lines=False):
        self.events = []
        self.keep = keep
        self.on_event = on_event
        self.lines = lines
        self.refgraph = RefGraph()
        self.capture = None
        self.graph = None
        self.guards = []
        self.callback_error = None   # what ``keep`` or ``on_event`` raised (the call ran on without them)
        self.internal_error = None   # a failure of the trace's own reporting (the call ran on)

    # ---- while the call runs --------------------------------------------------------------------
    def report(self, event):
        """Keep ``event`` if the filter takes it, and hand it to ``on_event``."""
        if self.callback_error is not None:
            return
        try:
            if self.keep is not None and not self.keep(event):
                return
            self.events.append(event)
            if self.on_event is not None:
                self.on_event(event)
        except Exception as err:  # noqa: BLE001 - the caller's callback must not change the program
            self.callback_error = err

    def failed(self, err):
        if self.internal_error is None:
            self.internal_error = err

    def finish(self, cap):
        """The call is over: keep its capture, guards and graph."""
        self.capture = cap
        self.guards = [g.describe() for g in order(cap.guards.values())]
        cap.graph.observer = None
        if cap.op_count:
            try:
                cap.graph.output(tuple(cap.outputs))
                self.graph = fx.GraphModule(torch.nn.Module(), cap.graph)
            except Exception as err:  # noqa: BLE001 - a graph cut short where capture gave up
                self.failed(err)

    # ---- afterwards -----------------------------------------------------------------------------
    @property
    def unsupported(self):
        """Why capture gave up on this call (``reason``, ``filename``, ``lineno``), or None."""
        return self.capture.unsupported if self.capture is not None else None

    def select(self, kind):
        """The kept events of one kind (``"op"``, ``"read"``, ``"line"`` …; see ``events.KINDS``)."""
        return [e for e in self.events if e.kind == kind]

    def refgraph_text(self):
        """The RefGraph as indented text."""
        return self.refgraph.to_text()

    def to_dot(self):
        """The RefGraph as Graphviz dot text."""
        return self.refgraph.to_dot()

    def __str__(self):
        lines = [str(e) for e in self.events]
        if self.unsupported is not None:
            u = self.unsupported
            lines.append(f"capture gave up: {u.reason} ({u.where()})")
        return "\n".join(lines)


def run_traced(fn, args, kwargs, trace, home=None):
    """Run ``fn(*args, **kwargs)`` in the VM under capture, reporting to ``trace`` (paths render with the
    globals of ``home`` bare). Returns ``(result, exception)``: what the call returned or raised."""
    with rendering_home(home):
        result, exc, cap = capture(fn, args, kwargs, lambda fn_globals: TracingObserver(fn_globals, trace))
        trace.finish(cap)
    return result, exc


# ---- the observers -----------------------------------------------------------------------------------

class _FrameReports:
    """Calls, returns and (when the trace asks) lines: what is reported before and after capture gives up."""
    root = None       # the traced function's frame
    entering = None   # the same, while its arguments are read (before it starts)

    def _init_reports(self, trace):
        self.trace = trace
        if trace.lines:
            self.step = self._step

    def where(self, users=False):
        """(filename, line, depth) of what the innermost interpreted frame is doing (``users``: the
        innermost frame running the user's code, when there is one)."""
        frame = self.vm.frame or self.root
        if frame is None:  # (the traced function's arguments, read before it starts: at its ``def``)
            frame = self.entering
            return (frame.filename, frame.code.co_firstlineno, 0) if frame is not None else (None, None, 0)
        depth = max(self.vm.depth - 1, 0)
        if users:
            found, up = frame, 0
            while found is not None and not is_user_file(found.filename):
                found, up = found.back, up + 1
            if found is not None:
                frame, depth = found, max(depth - up, 0)
        return frame.filename, frame.lineno, depth

    def enter_frame(self, frame):
        super().enter_frame(frame)
        if frame is not self.entering:  # (the traced function's call is reported with its arguments)
            self._report_call(frame)

    def _report_call(self, frame):
        self.trace.report(ev.Call(frame.filename, frame.code.co_firstlineno, self.vm.depth, _function(frame)))

    def leave_frame(self, frame, value, exc):
        super().leave_frame(frame, value, exc)
        self.trace.report(ev.Return(frame.filename, frame.lineno, self.vm.depth, _function(frame),
                                    type(exc).__name__ if exc is not None else None))

    def _step(self, frame, index):
        # (as ``sys.settrace`` reports lines: a new line of this frame, or a jump back to the same one)
        line = frame.decoded.linenos[index]
        at = getattr(frame, "trace_at", None)
        frame.trace_at = (line, index)
        if line is not None and (at is None or line != at[0] or index < at[1]):
            self.trace.report(ev.Line(frame.filename, line, self.vm.depth - 1, _function(frame)))


def _function(frame):
    func = frame.func
    return getattr(func, "__qualname__", None) or frame.code.co_name


class FramesObserver(_FrameReports, Observer):
    """After capture gave up: the call runs on, still reporting calls, returns and lines."""

    def __init__(self, trace, vm, root):
        self.vm = vm
        self.root = root
        self._init_reports(trace)


def _also(report):
    """The capture observer's event of the same name, then ``report(self, its result, *its arguments)``
    (a failure of the report is the trace's, never the program's)."""
    handle = getattr(CaptureObserver, report.__name__)

    def event(self, *args, **kwargs):
        result = handle(self, *args, **kwargs)
        try:
            report(self, result, *args, **kwargs)
        except Exception as err:  # noqa: BLE001 - reporting must not change the program
            self.trace.failed(err)
        return result
    event.__name__ = report.__name__
    event.__doc__ = handle.__doc__
    return event


class ReportingGraph(fx.Graph):
    """The capture's fx graph, reporting each op node added to it (an ``op`` event)."""

    def __init__(self, observer):
        super().__init__()
        self.observer = observer

    def create_node(self, op, target, *args, **kwargs):
        node = super().create_node(op, target, *args, **kwargs)
        if self.observer is not None and op in ("call_function", "call_method", "call_module"):
            try:
                self.observer.report_node(node)
            except Exception as err:  # noqa: BLE001 - reporting must not change the program
                self.observer.trace.failed(err)
        return node


class TracingObserver(_FrameReports, CaptureObserver):
    """The capture observer, reporting to a ``Trace`` what it sees (see the module's docstring)."""

    def __init__(self, fn_globals, trace):
        super().__init__(fn_globals)
        self._init_reports(trace)
        self.cap.graph = ReportingGraph(self)

    def _report(self, kind, *details):
        # (graph nodes are placed at the user's line that led to them, wherever in a library they were made)
        filename, lineno, depth = self.where(users=kind in (ev.Op, ev.Input))
        self.trace.report(kind(filename, lineno, depth, *details))

    # ---- reads -------------------------------------------------------------------------------------
    def _read(self, prov, value):
        if isinstance(prov, Source):
            self._report(ev.Read, prov.render(), ev.describe(value))
            self.trace.refgraph.read(prov, value)

    def argument(self, frame, index, name, value):
        if self.entering is None:  # (reads of the arguments, and their guards, come after its call)
            self.entering = frame
            self._report_call(frame)
        prov = CaptureObserver.argument(self, frame, index, name, value)
        try:
            self._read(prov, value)
        except Exception as err:  # noqa: BLE001 - reporting must not change the program
            self.trace.failed(err)
        return prov

    @_also
    def read_global(self, prov, frame, name, value):
        self._read(prov, value)

    @_also
    def read_cell(self, prov, frame, cell, name, value):
        self._read(prov, value)

    @_also
    def read_attr(self, prov, obj, obj_prov, name, value, computed=None):
        self._read(prov, value)

    @_also
    def read_item(self, prov, obj, obj_prov, key, key_prov, value, computed=None):
        self._read(prov, value)

    # ---- writes ------------------------------------------------------------------------------------
    def _write(self, target, value, deleted=False):
        self._report(ev.Write, target.render(), None if deleted else ev.describe(value))
        self.trace.refgraph.write(target, value, deleted)

    @_also
    def write_attr(self, _, obj, obj_prov, name, value, prov):
        if isinstance(obj_prov, Source):
            self._write(AttrSource(obj_prov, name), value)

    @_also
    def write_item(self, _, obj, obj_prov, key, key_prov, value, prov):
        if isinstance(obj_prov, Source) and _hashable(key):
            self._write(ItemSource(obj_prov, key), value)

    @_also
    def delete_attr(self, _, obj, obj_prov, name):
        if isinstance(obj_prov, Source):
            self._write(AttrSource(obj_prov, name), None, deleted=True)

    @_also
    def delete_item(self, _, obj, obj_prov, key, key_prov):
        if isinstance(obj_prov, Source) and _hashable(key):
            self._write(ItemSource(obj_prov, key), None, deleted=True)

    @_also
    def write_global(self, _, frame, name, value, prov):
        if frame.names is None or frame.names is frame.globals:  # (not a class body's namespace)
            self._write(GlobalSource(frame.globals, name), value)

    @_also
    def write_cell(self, _, frame, cell, name, value, prov):
        if self.cells.get(id(cell), ())[2:] != ("inside",):  # (a closure's cell from before the call)
            self._write(CellSource(cell, name), value)

    # ---- the graph, guards, giving up --------------------------------------------------------------
    def report_node(self, node):
        op = f"Tensor.{node.target}" if node.op == "call_method" else callable_name(node.target)
        self._report(ev.Op, op, node.name)

    def tensor_input(self, tensor, source):
        known = len(self.cap.inputs)
        node = super().tensor_input(tensor, source)
        if len(self.cap.inputs) > known:
            self._report(ev.Input, source.render(), node.name)
        return node

    def guard(self, g):
        key = g.key()
        fresh = key not in self.cap.guards
        super().guard(g)
        if fresh and key in self.cap.guards:
            try:
                self._report(ev.GuardAdded, g.describe())
            except Exception as err:  # noqa: BLE001 - reporting must not change the program
                self.trace.failed(err)

    def stop_observing(self):
        if self.vm.observer is not self:
            return  # (an event that capture gave up in may give up again on its way out)
        u = self.cap.unsupported
        self.trace.report(ev.GaveUp(u.filename, u.lineno, max(self.vm.depth - 1, 0), u.reason))
        self.vm.observer = FramesObserver(self.trace, self.vm, self.root)


def _hashable(key):
    try:
        hash(key)
    except TypeError:
        return False
    return True
