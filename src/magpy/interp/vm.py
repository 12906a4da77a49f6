"""The VM: the dispatch loop, exception routing, and function entry.

A frame runs in :meth:`VM.execute` over pre-decoded ``(handler, arg)`` pairs; each handler returns the
index of the next instruction. A Python exception raised by a handler is routed through the code
object's exception table exactly as CPython does (unwind the stack to the entry's depth, push the
offset if asked, push the exception, jump). ``RETURN_*`` handlers leave the loop by returning index -1
(the value is in ``frame.result``); ``YIELD_VALUE`` returns -2 and the loop raises :class:`Suspend`.
"""
import linecache
import sys

from . import binding, recursion
from .binding import bind_provenance
from .calls import call
from .decode import Decoded, decode, _cache as _decoded, _PACKAGE_DIR
from .errors import InterpreterError
from .frame import Frame, NULL, ExcState, Suspend, YIELD  # noqa: F401
from .generators import make_generator
from .lookaside import PY_LOOKASIDE as _PY_LOOKASIDE, WRAPPED_BY_ATTRIBUTE as _WRAPPED, wrapped_by as _wrapped_by
from .ops_exceptions import chain_context
from .tracebacks import passed
from .tracking import tracked_instrs, sync
# the handler families register themselves in decode.HANDLERS on import; blocks installs its compiler
from . import ops_stack, ops_operators, ops_calls, ops_control, ops_containers, ops_exceptions, ops_generators, ops_fused  # noqa: F401,E402,E501
from . import blocks  # noqa: F401
#: what a returned frame's locals and their provenance become
_NO_LOCALS = ()
CO_OPTIMIZED = 0x01
CO_VARARGS = 0x04
CO_VARKEYWORDS = 0x08
CO_GENERATOR = 0x20
CO_COROUTINE = 0x80
CO_ITERABLE_COROUTINE = 0x100
CO_ASYNC_GENERATOR = 0x200
CO_SUSPENDING = CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR


class VM:
    """A bytecode interpreter. ``observer`` (optional) receives what the program does."""

    def __init__(self, observer=None):
        self.observer = observer
        self.frame = None          # the innermost running interpreted frame
        self.depth = 0
        self.exc_state = ExcState()
        self.call_provs = None     # provenance of the arguments of the call being made (observer on)
        self.returned = None       # (frame, value, prov) of the last interpreted return (observer on)
        self.reraising = None      # the exception RERAISE is raising again (it gets no new context)
        self.lookaside_provs = None  # provenance of a lookaside call's arguments (observer on)
        self.made_iterator = None  # the map/filter object a lookaside just made (see builtin_lookasides.MadeIterator)
        # (observer on) ``opaque(func, args, kwargs)``: Python functions the observer has called natively
        # instead of interpreted (a compiler's opaque functions); None: none
        self.opaque = None
        # ``hook(fn, args, kwargs, provs)`` that runs every native operation the program makes (calls,
        # operators, subscripts) in its place, or None: a layer above that must see them before they run
        # (capture's torch-function modes entered by the program). ``provs``: (positional, keyword, callable)
        # provenance of the operation's inputs, or None
        self.native_hook = None
        self.user_limit = sys.getrecursionlimit()
        self._bind = binding.bind

    # ---- public entry --------------------------------------------------------------------------
    def call(self, fn, *args, **kwargs):
        """Call ``fn`` with the VM: what it returns or raises is what ``fn`` returns or raises."""
        if self.depth:
            return call(self, fn, args, kwargs)
        self.user_limit = recursion.enter()
        try:
            return call(self, fn, args, kwargs)
        finally:
            recursion.leave()

    # ---- exception state -----------------------------------------------------------------------
    def current_exception(self):
        """The exception being handled, as ``sys.exception()`` would see it inside the VM."""
        state = self.exc_state
        while state is not None:
            if state.value is not None:
                return state.value
            state = state.previous
        return sys.exc_info()[1]

    # ---- function entry ------------------------------------------------------------------------
    def call_function(self, func, args, kwargs):
        """Interpret a call of the Python function ``func``."""
        # the common case first: no observer, a plain function called with exactly its positional
        # parameters (decoded.plain_arity says which code objects qualify; -1 for none)
        code = func.__code__
        decoded = _decoded.get(id(code))
        if decoded is not None and decoded.code is code and len(args) == decoded.plain_arity \
                and not kwargs and func not in _PY_LOOKASIDE:
            frame = Frame(self, decoded, func, func.__globals__, [*args, *decoded.null_tail])
            if self.observer is None:
                return self.resume(frame, None, decoded.instrs)
            if self.opaque is not None and self.opaque(func, args, kwargs):
                return self._call_natively(func, args, kwargs)
            provs = self.call_provs
            if provs is not None and not provs[1] and len(provs[0]) == len(args):
                # an interpreted CALL followed every argument: they bind in order (bind_provenance's
                # own first case)
                self.call_provs = None
                frame.pstack = []
                frame.plocals = [*provs[0], *decoded.none_tail]
            else:
                self._track_arguments(frame, func, decoded, args)
            return self.run_frame(frame)
        special = _PY_LOOKASIDE.get(func)
        if special is not None:
            self.lookaside_provs, self.call_provs = self.call_provs, None
            return special(self, args, kwargs or {})
        inner = _wrapped_by(func) if _WRAPPED else None
        if inner is not None:
            return self.call(inner, *args, **(kwargs or {}))
        if self.opaque is not None and self.observer is not None and self.opaque(func, args, kwargs):
            return self._call_natively(func, args, kwargs)
        code = func.__code__
        flags = code.co_flags
        if flags & CO_ITERABLE_COROUTINE:
            # generator-based coroutines must keep CPython's own flags to be awaitable
            return func(*args, **(kwargs or {}))
        decoded = decode(code)
        if decoded.internal:
            return func(*args, **(kwargs or {}))
        if not kwargs and len(args) == code.co_argcount and decoded.simple_args:
            locals_ = [*args, *decoded.null_tail]
        else:
            locals_ = self._bind(func, decoded, args, kwargs)
        frame = Frame(self, decoded, func, func.__globals__, locals_,
                      None if flags & CO_OPTIMIZED else func.__globals__)
        if self.observer is not None:
            self._track_arguments(frame, func, decoded, args)
        if flags & CO_SUSPENDING:
            return make_generator(self, frame, func)
        if self.observer is not None:
            return self.run_frame(frame)
        return self.resume(frame)

    def _track_arguments(self, frame, func, decoded, args):
        provs, self.call_provs = self.call_provs, None
        frame.pstack = []
        if provs is not None:
            positional = tuple(provs[0])
            if len(positional) < len(args):  # the caller could not follow every argument
                opaque = self.observer.opaque
                positional += tuple(opaque(a) for a in args[len(positional):])
            try:
                frame.plocals = bind_provenance(func, decoded, positional[:len(args)], provs[1], len(args),
                                                frame.locals, self.observer)
            except TypeError:  # the observer's provenance did not match the call's shape
                opaque = self.observer.opaque
                frame.plocals = [None if v is NULL else opaque(v) for v in frame.locals]
        elif self.frame is None:  # the root call: its arguments come from outside the VM
            names = decoded.localsplus_names
            arg = self.observer.argument
            frame.plocals = [None if v is NULL else arg(frame, k, names[k], v)
                             for k, v in enumerate(frame.locals)]
        else:  # a call made by the VM's own protocol code (dunders, properties)
            opaque = self.observer.opaque
            frame.plocals = [None if v is NULL else opaque(v) for v in frame.locals]

    def _call_natively(self, func, args, kwargs):
        self.call_provs = None
        hook = self.native_hook
        result = func(*args, **(kwargs or {})) if hook is None else hook(func, args, kwargs, None)
        self.observer.native_call(func, args, kwargs, result)
        return result

    def run_frame(self, frame):
        """Run a (non-generator) frame to completion and return its value."""
        observer = self.observer
        if observer is not None:
            observer.enter_frame(frame)
        try:
            value = self.resume(frame)
        except BaseException as exc:
            if observer is not None:
                observer.leave_frame(frame, None, exc)
            raise
        if observer is not None:
            observer.leave_frame(frame, value, None)
        # a returned frame's locals die now, as CPython's do (``vm.returned`` keeps the frame a while): a
        # local can be a guard whose death is its effect (``guard = torch._C._DisableFuncTorch()``)
        frame.locals = frame.plocals = _NO_LOCALS
        return value

    def resume(self, frame, throw=None, plain=None):
        """Run ``frame`` from ``frame.index`` until it returns (value) or yields (raises Suspend).

        ``throw``: an exception to raise at the current instruction first (generator throw()).
        ``plain``: the frame's instruction list, given for a new frame of a plain function run
        without an observer: it starts in a bare dispatch loop, and only an exception moves it to
        :meth:`execute` (which routes it as raised at the same instruction).
        """
        frame.back = self.frame
        self.frame = frame
        self.depth += 1
        try:
            if self.depth > self.user_limit:
                raise RecursionError("maximum recursion depth exceeded")
            if plain is None:
                return self.execute(frame, throw)
            i = 0
            try:
                while i >= 0:
                    fn, arg = plain[i]
                    i = fn(frame, arg, i)
                return frame.result
            except BaseException as exc:
                frame.index = i
                raised = exc
            # outside the except clause: a native raise while it is active would take `raised`
            # as its __context__
            return self.execute(frame, raised)
        finally:
            self.depth -= 1
            self.frame = frame.back

    def execute(self, frame, throw=None):
        decoded = frame.decoded
        step = None
        if self.observer is None:
            instrs = decoded.instrs
        else:
            instrs = decoded.tracked
            if instrs is None:
                instrs = decoded.tracked = tracked_instrs(decoded)
            step = self.observer.step
            if step is None and frame.back is None:
                step = self.observer.root_step  # (the root frame's instructions, one by one)
            if step is not None:  # one handler per instruction: no compiled blocks
                instrs = decoded.tracked_handlers
            if frame.pstack is None:
                frame.pstack = []
                frame.plocals = [None] * decoded.nlocalsplus
            if len(frame.pstack) != len(frame.stack):
                sync(frame)
        handler_at = decoded.handler_at
        i = frame.index
        pending = throw
        while True:
            try:
                if pending is not None:
                    exc, pending = pending, None
                    raise exc
                # handlers return the next index; RETURN_* return -1 and YIELD_VALUE -2
                if step is None:
                    while i >= 0:
                        fn, arg = instrs[i]
                        i = fn(frame, arg, i)
                else:
                    while i >= 0:
                        frame.index = i
                        step(frame, i)
                        fn, arg = instrs[i]
                        i = fn(frame, arg, i)
                if i == -1:
                    return frame.result
                raise YIELD  # frame.index was set by the yield
            except Suspend:
                raise
            except BaseException as exc:
                if frame.fault >= 0:  # a compiled block says which of its instructions raised
                    i = frame.fault
                    frame.fault = -1
                if isinstance(exc, InterpreterError):
                    raise
                if type(exc) in _SUSPECT and _is_internal_failure(exc):
                    frame.index = i
                    raise internal_error(frame, exc) from exc
                if exc.__context__ is None and exc is not self.reraising:
                    chain_context(exc, self.current_exception())
                self.reraising = None
                target = handler_at[i] if i < len(handler_at) else None
                prov = None
                if self.observer is not None:
                    prov = self.observer.raised(frame, exc, decoded.names[i], target is not None)
                # (its traceback gets this frame, where it was raised here: a re-raise from a handler
                # keeps the place, as CPython's does)
                raised_at = frame.raised_at
                if raised_at is None or raised_at[0] is not exc or decoded.names[i] != "RERAISE":
                    frame.raised_at = (exc, i)
                    passed(exc, frame, i)
                if target is None:
                    frame.index = i
                    frame.raised_at = None
                    raise
                i = self._unwind(frame, exc, i, target, prov)

    def _unwind(self, frame, exc, i, target, prov=None):
        index, depth, lasti = target
        stack = frame.stack
        del stack[depth:]
        if lasti:
            stack.append(i)
        stack.append(exc)
        if frame.pstack is not None:
            p = frame.pstack
            del p[depth:]
            p.extend([None] * (len(stack) - depth - 1))
            p.append(prov)
        return index


_SUSPECT = frozenset({AttributeError, NameError, UnboundLocalError, IndexError, TypeError,
                      AssertionError})


def _is_internal_failure(exc):
    """Did this exception come from a bug in the VM rather than from the user's program?

    User errors raised natively (``[][1]``, ``1 + "a"``) also surface inside the VM's handlers, so only
    unmistakable signs count: an attribute missing on the VM's own objects, a name error or assertion
    that no ``raise`` statement of ours made, the VM's NULL reaching user-visible operations, or
    popping an empty value stack.
    """
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    if not code.co_filename.startswith(_PACKAGE_DIR):
        return False
    if isinstance(exc, AttributeError):
        return isinstance(getattr(exc, "obj", None), (Frame, VM, Decoded, ExcState, type(NULL)))
    if isinstance(exc, TypeError):
        return "_Null" in str(exc)
    if isinstance(exc, IndexError):
        return str(exc) == "pop from empty list" and "stack" in _source_line(code, tb.tb_lineno)
    return "raise " not in _source_line(code, tb.tb_lineno)


def _source_line(code, lineno):
    return linecache.getline(code.co_filename, lineno)


def run(fn, *args, **kwargs):
    """Execute ``fn(*args, **kwargs)`` in a fresh VM and return its result (or raise its exception)."""
    return VM().call(fn, *args, **kwargs)


def internal_error(frame, exc):
    """Wrap a failure of the VM itself so that it names the user's file and line."""
    err = InterpreterError(f"{type(exc).__name__}: {exc}", frame.filename, frame.lineno)
    err.__cause__ = exc
    return err




def _run_code(self, code, globals_, names):
    """Interpret a code object with a names mapping (``exec``/``eval`` source, module-level code)."""
    self.call_provs = None
    decoded = decode(code)
    frame = Frame(self, decoded, None, globals_, [NULL] * decoded.nlocalsplus, names=names)
    return self.run_frame(frame)


def _run_body(self, func, names):
    """Interpret a class body function with ``names`` as its namespace; returns the ``__class__`` cell."""
    decoded = decode(func.__code__)
    frame = Frame(self, decoded, func, func.__globals__, [NULL] * decoded.nlocalsplus, names=names)
    return self.run_frame(frame)


VM.run_code = _run_code
VM.run_body = _run_body
