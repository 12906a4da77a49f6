"""What a cache entry does after its graph when the call has a graph break: the breaking instruction runs
natively (a *step*), and the rest of the call runs in a compiled resume function (``emit.resume``).

A call the step makes to Python code (a submodule, a helper, a library function) is itself compiled, on
its own: the break inside it splits that function in turn, and nothing silently runs uncompiled.
"""
import sys
import types

from ..interp.decode import decode
from ..interp.frame import NULL
from .resume import Layout, origin, resume_code, step_code, step_shape

PY = sys.version_info[:2]

#: canonical resume functions, shared by every break that continues at the same place of the same
#: function (a break inside a loop continues in one resume function, whichever iteration it was):
#: (id(code), id(globals), ids of the closure's cells, index, layout) -> (code, compiled resume function)
_RESUMES = {}


class Continuation:
    """Runs the breaking instruction at ``index`` of ``func``'s code on the live stack, then the rest of
    the call in a resume function. Called by the entry's mock with ``(stack values..., locals...)``
    (NULL stack slots left out, as ``layout`` says)."""

    def __init__(self, func, code, index, layout, reason, where, compile_function, compile_callee):
        self.func = func
        self.code, shift = origin(code)   # (a break in a resume function breaks its original's code)
        self.index = index - shift
        self.layout = layout
        self.reason = reason
        self.where = where
        self.compile_function = compile_function
        self.compile_callee = compile_callee
        self.pops, self.instr = step_shape(self.code, self.index)
        nulls = layout.nulls[len(layout.nulls) - self.pops:]
        self.step_nulls = nulls
        self.step = types.FunctionType(step_code(self.code, self.index, nulls), func.__globals__,
                                       func.__name__)
        d = decode(self.code)
        self.handler = d.handler_at[self.index]
        self.offset = d.offsets[self.index]
        self.n_stack = sum(not n for n in layout.nulls)

    @classmethod
    def eager(cls, func, stopped):
        """Go on from a stopped capture without compiling anything (its graph could not be compiled)."""
        cont = cls(func, stopped.code, stopped.index, stopped.layout, "", "", lambda fn: fn, lambda obj: obj)
        cont.shared = False
        return cont(*stopped.values)

    shared = True  # (its resume functions are the canonical, compiled ones)

    def __repr__(self):
        return f"<continuation of {self.func.__qualname__} at {self.where}: {self.reason}>"

    def describe(self):
        return (f"then: {self.instr.name} at {self.where} runs natively (graph break: {self.reason}), "
                f"and the rest of the call continues in a compiled resume function")

    def __call__(self, *live):
        stack = []
        values = iter(live[:self.n_stack])
        for null in self.layout.nulls:
            stack.append(NULL if null else next(values))
        local_values = live[self.n_stack:]
        cut = len(stack) - self.pops
        top = self._compiled_callees(stack[cut:])
        try:
            exit_index, pushed = self.step(*[v for v in top if v is not NULL])
        except BaseException as exc:  # noqa: BLE001 - the program's own exception, routed as CPython would
            if self.handler is None:
                raise
            target, depth, lasti = self.handler
            handled = stack[:depth] + ([self.offset] if lasti else []) + [exc]
            return self._resume(target, handled, local_values)
        return self._resume(exit_index, stack[:cut] + list(pushed), local_values)

    def _compiled_callees(self, top):
        """The step's items with the Python function a CALL calls replaced by its compiled form."""
        name = self.instr.name
        if name == "CALL":
            k = len(top) - self.instr.arg - 2
            # [NULL, callable, args...] or [function, self, args...] (3.13: [callable, NULL or self, ...])
            if PY < (3, 13) and top[k] is NULL:
                k += 1
            top[k] = self.compile_callee(top[k])
        elif name == "CALL_FUNCTION_EX":
            k = 1 if top[0] is NULL else 0
            top[k] = self.compile_callee(top[k])
        return top

    def _resume(self, index, stack, local_values):
        layout = Layout([v is NULL for v in stack], self.layout.local_names)
        fn = self.func
        key = (id(self.code), id(fn.__globals__), tuple(map(id, fn.__closure__ or ())), index, layout.key())
        known = _RESUMES.get(key) if self.shared else None
        if known is None or known[0] is not self.code:
            code = resume_code(self.code, index, layout)
            resumed = types.FunctionType(code, fn.__globals__, fn.__name__, None, fn.__closure__)
            resumed.__qualname__ = fn.__qualname__
            known = (self.code, self.compile_function(resumed), fn)
            if self.shared:
                _RESUMES[key] = known
        return known[1](*[v for v in stack if v is not NULL], *local_values)
