"""What a cache entry does after its graph when the call has a graph break: the breaking instruction runs
natively (a *step*), and the rest of the call runs in a compiled resume function (``capture.resume``).

A call the step makes to Python code (a submodule, a helper, a library function) is itself compiled, on
its own: the break inside it splits that function in turn, and nothing silently runs uncompiled.
"""
import builtins
import os
import pdb
import sys
import types

from ..capture.places import Place
from ..interp.debugger import stop_at
from ..interp.decode import decode
from ..interp.frame import NULL
from ..interp.tracebacks import run_at



class Continuation:
    """Runs the breaking instruction of ``split`` (a ``capture.resume.Split`` of ``func``'s code) on the live
    stack, then the rest of the call in a resume function. Called by the entry's mock with
    ``(stack values..., locals...)`` (NULL stack slots left out)."""

    def __init__(self, func, split, reason, where, compile_function, compile_callee, resumes=None):
        self.func = func
        self.split = split
        self.reason = reason
        self.where = where
        self.compile_callee = compile_callee
        self.step = types.FunctionType(split.step, func.__globals__, func.__name__)
        self.calls = split.instr.name in ("CALL", "CALL_FUNCTION_EX")
        self.resumed = {at: _resume_function(func, split.code, at, code, layout, compile_function, resumes)
                        for at, (code, layout) in split.resumes.items()}
        self.offset = decode(split.code).offsets[split.index] if split.handler and split.handler[2] else None

    def __repr__(self):
        return f"<continuation of {self.func.__qualname__} at {self.where}: {self.reason}>"

    def describe(self):
        place = split_place(self.split)
        # (a break found inside the call this instruction makes is told at its own line)
        inside = not self.where.startswith(f"{place.filename}:{place.lineno}")
        why = f"graph break inside it: {self.reason} at {self.where}" if inside else f"graph break: {self.reason}"
        return (f"then: {place.text() or self.split.instr.name} runs natively ({place.where()}; {why}), and the rest of the call "
                f"continues in a compiled resume function")

    def __call__(self, *live):
        split = self.split
        n = len(live) - len(split.local_names)
        top = list(live[split.lower:n])
        local_values = live[n:]
        namespace = None
        if self.calls and _starts_debugger(top[0]):
            # (``breakpoint()``: pdb opens in a frame standing at the user's line, with the user's variables;
            # what is assigned at its prompt is what the rest of the call sees)
            namespace = {k: v for k, v in zip(split.local_names, local_values) if v is not NULL}
            top[0] = self._debugger(namespace)
        elif self.calls:
            # (the callable is the first live item of a CALL / CALL_FUNCTION_EX in every layout)
            top[0] = self.compile_callee(top[0])
        try:
            exit_index, pushed = self.step(*top)
        except BaseException as exc:  # noqa: BLE001 - the program's own exception, routed as CPython would
            if split.handler is None:
                raise
            kept = live[:split.handled] + ((self.offset,) if self.offset is not None else ())
            return self.resumed[split.handler[0]](*kept, exc, *local_values)
        if namespace is not None:
            local_values = tuple(namespace.get(k, v) for k, v in zip(split.local_names, local_values))
        return self.resumed[exit_index](*live[:split.lower], *pushed, *local_values)

    def _debugger(self, namespace):
        """What the program's ``breakpoint()`` / ``pdb.set_trace()`` call runs instead."""
        split = self.split

        def start(*args, header=None, **kwargs):
            def stop():
                debugger = pdb.Pdb(nosigint=True)
                if header is not None:
                    debugger.message(header)
                stop_at(debugger, sys._getframe(1))

            run_at(stop, split.code, decode(split.code).offsets[split.index], self.func.__globals__, namespace)
        return start


def split_place(split):
    """Where the breaking instruction of ``split`` stands in the source (a ``places.Place``)."""
    return Place(split.code, decode(split.code).offsets[split.index])


def _starts_debugger(fn) -> bool:
    """Does calling ``fn`` open pdb at its caller (``breakpoint()`` with the default hook, ``pdb.set_trace``)?"""
    if fn is pdb.set_trace:
        return True
    if fn is not builtins.breakpoint and fn is not sys.breakpointhook:
        return False  # (every call at a break asks: the cheap answer first)
    return sys.breakpointhook is sys.__breakpointhook__ and os.environ.get("PYTHONBREAKPOINT", "") in (
        "", "pdb.set_trace")


def run_eagerly(func, stopped):
    """Go on from a stopped capture without compiling anything (its graph could not be compiled)."""
    return Continuation(func, stopped.split, "", "", lambda fn: fn, lambda obj: obj)(*stopped.values)


def _resume_function(func, original, at, code, layout, compile_function, resumes):
    """The compiled resume function of ``func`` going on at VM index ``at`` of ``original`` with ``code``
    (``capture.resume.resume_code``'s). ``resumes``: the table that makes it canonical — one per function the
    user compiled (a model instance), shared by every break that continues at the same place of the same
    code (a break inside a loop continues in one resume function, whichever iteration it was): (id(code),
    id(globals), ids of the closure's cells, index, layout) -> (code, compiled resume function, func)."""
    key = (id(original), id(func.__globals__), tuple(map(id, func.__closure__ or ())), at, layout.key())
    known = resumes.get(key) if resumes is not None else None
    if known is None or known[0] is not original:
        resumed = types.FunctionType(code, func.__globals__, func.__name__, None, func.__closure__)
        resumed.__qualname__ = func.__qualname__
        known = (original, compile_function(resumed), func)
        if resumes is not None:
            resumes[key] = known
    return known[1]
