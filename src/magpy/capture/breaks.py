"""Graph breaks: where a capture stops so that the rest of the call continues in a resume function.

A capture that gives up at an instruction of the root frame says where (``Capture.failed_at``). The next
capture of that function stops *before* that instruction (``stop_at``): nothing of it has run, so the
live stack and locals are exactly the ones the instruction would see. Their templates become the
entry's result, handed to a ``Continuation`` (``emit.continuation``) that runs the instruction natively
and the rest of the call compiled. Stopping unwinds the VM (``StopCapture``): the call goes on from the
same live values, through the same continuation its entry will use on later calls.
"""
import types

from ..interp.errors import InterpreterError
from ..errors import Unsupported
from ..interp.frame import NULL
from .iteration import from_outside, unfollowed_reason
from . import rules
from .resume import Layout, Split, origin, step_shape, why_not_resumable
from .values import _Abandon, _holds_tensor


class StopCapture(InterpreterError):
    """Internal: unwinds the VM, untouched by the program's handlers, at the break capture stops at."""

    def __init__(self):
        super().__init__("capture stopped at a graph break")


class Stopped:
    """Where and with what a capture stopped: the live values go to the continuation."""

    def __init__(self, index, split, values, found=None):
        self.index = index    # (in the code that ran: a resume function's own numbering)
        self.split = split
        self.values = values
        self.found = found    # (an Unsupported: a break this capture found, not one it was told of)


def why_no_split(code, index):
    """Why a break at VM index ``index`` of ``code`` cannot continue in a resume function (None: it can)."""
    why = why_not_resumable(code)
    if why is None and step_shape(code, index) is None:
        why = "a graph break at an instruction that cannot run on its own"
    return why


_CALLS = frozenset({"CALL", "CALL_313"})


def _known_break(stack, argc):
    """Why a call about to run in the root frame is a graph break (None: not known before it runs). Known
    at once, the capture stops before it, so even the first call is split there."""
    items = stack[-(argc + 2):]
    for fn in items[:2]:  # (the callable is one of the two slots below the arguments, by version)
        if rules.disabled(fn):
            return rules.DISABLED_BREAK
        if rules.distributed_wrapper(fn) is not None:
            return f"{rules.distributed_says(fn)} (graph break)"
        known = rules.KNOWN_BREAKS.get(fn) if type(fn) in (types.FunctionType, types.BuiltinFunctionType) else None
        if known is not None and (not known[1] or any(_holds_tensor(x) for x in items[2:])):
            return known[0]
    return None


class Breaks:
    """The root frame's instructions, watched for the break points the capture is to stop at."""

    def _cell_contents(self, cell):
        """(value, provenance) a cell of the root frame holds (value NULL: empty)."""
        try:
            value = cell.cell_contents
        except ValueError:
            return NULL, None
        known = self.cells.get(id(cell))
        return value, (known[1] if known is not None and known[0] is cell else None)

    def root_step(self, frame, index):
        if frame is not self.root or self.vm.observer is not self or self.stop_at is None or self.in_mode_region():
            return  # (inside a torch-function mode's region the call is not split: ``splittable``)
        if index in self.stop_at:
            self._stop(frame, index)
        else:
            name = frame.decoded.names[index]
            if name == "FOR_ITER" and from_outside(self, frame.stack[-1], frame.pstack[-1]):
                # a loop over an iterator from outside (a resume function's, inside the loop it broke in)
                # goes on one iteration per call: its next item is taken natively, then the body is
                # compiled again
                self._stop(frame, index, unfollowed_reason(frame.stack[-1]))
            elif name in _CALLS:
                why = _known_break(frame.stack, frame.decoded.unfused[index][1])
                if why is not None:
                    self._stop(frame, index, why)

    def splittable(self):
        """Can the root frame be split where it is now? (not inside an except block: a resume function
        cannot take over the exception being handled; not inside a torch-function mode's region: the
        modes the program entered are the VM's, which a resume function would run without)"""
        if self.in_mode_region():
            return False
        state = self.vm.exc_state
        while state is not None:
            if state.value is not None:
                return False
            state = state.previous
        return True

    def _stop(self, frame, index, reason=None):
        """Stop before instruction ``index`` of the root frame: at a break found before, or (``reason``) at
        one found now."""
        code = frame.decoded.code
        try:
            why = why_no_split(code, index)
            if why is None and not self.splittable():
                why = "a graph break inside an except block"
            if why is not None:
                self.unsupported(why, frame)
            decoded = frame.decoded
            original, shift = origin(code)  # (a break in a resume function splits its original's code)
            # (the locals of the original: a resume function's own stack parameters are not among them)
            names = set(original.co_varnames) | set(original.co_cellvars)
            cellvars = set(code.co_cellvars)
            live = [(v, p) for v, p in zip(frame.stack, frame.pstack) if v is not NULL]
            bound = []
            for k in range(decoded.free_start):
                name, value = decoded.localsplus_names[k], frame.locals[k]
                if value is NULL or name not in names:
                    continue
                if name in cellvars:
                    # (a cell of this frame: the resume function makes its own, holding the same value;
                    # a closure made before the break that shares it cannot leave the graph: refused)
                    value, prov = self._cell_contents(value)
                    if value is NULL:
                        continue
                else:
                    prov = frame.plocals[k]
                bound.append(k)
                live.append((value, prov))
            self.cap.result_template = ("tuple", [self.template(v, p) for v, p in live])
            layout = Layout([v is NULL for v in frame.stack], [decoded.localsplus_names[k] for k in bound])
            try:  # (made now, while the call can still run on in the VM if they cannot be)
                split = Split(original, index - shift, layout)
            except Exception as err:  # noqa: BLE001 - a rewrite we cannot make is a break we cannot take
                self.unsupported(f"a graph break whose resume function cannot be made ({err})", frame)
        except _Abandon:
            return  # capture gave up (``cap.unsupported`` says why): the call runs on, unobserved
        self.cap.stopped = Stopped(index, split, tuple(v for v, _ in live),
                                   None if reason is None else Unsupported(reason, code.co_filename,
                                                                           frame.decoded.linenos[index]))
        self.stop_observing()
        raise StopCapture
