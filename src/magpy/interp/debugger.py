"""``breakpoint()`` and ``pdb.set_trace()`` inside the VM: pdb stops at the user's line, in the user's frame.

The frames the VM runs are not CPython frames: a native ``pdb.set_trace`` would stop in the VM's own
dispatch loop, on the next line of *its* code. These lookasides start pdb on the interpreted frame instead
(a ``FrameProxy``: its locals, globals, code and line, its callers through ``f_back``), so ``p x``, ``pp``,
``l``/``ll``, ``w``, ``u``/``d`` and ``c`` behave as in a native session, and variables assigned at the
prompt are written back to the frame. Stepping (``n``, ``s``, ``r``, ``unt``) continues instead: nothing
traces the VM's frames line by line to stop at.

``breakpoint()`` honours ``sys.breakpointhook`` and ``PYTHONBREAKPOINT`` as CPython's does (``0`` turns it
off; another hook runs in the VM like any callable).
"""
import bdb
import importlib
import inspect
import os
import pdb
import sys

from .builtin_lookasides import FrameProxy, LocalsProxy, _caller, _outside_frame, _shown
from .calls import call
from .lookaside import register_lookaside

#: MagPy's own files (``.../magpy/``)
_OURS = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep

#: before 3.13 ``f_locals`` is a snapshot of the frame's variables: what pdb assigns there is copied back
_SNAPSHOT_LOCALS = sys.version_info < (3, 13)


class DebugFrame(FrameProxy):
    """An interpreted frame as pdb sees it: below the outermost interpreted frame lies the native frame
    that called into the VM (pdb walks ``f_back`` from inside its own frames, where the proxy's own
    notion of "outside the VM" would find pdb)."""
    __slots__ = ("_outside",)

    def __init__(self, frame, outside):
        super().__init__(frame)
        self._outside = outside

    @property
    def f_back(self):
        back = _caller(self._frame)
        return DebugFrame(back, self._outside) if back is not None else self._outside


class _InterpretedFrames:
    """What a pdb (any ``bdb.Bdb``: pdb's own, pytest's, IPython's) does differently over interpreted
    frames: it stops once, where it is started, and never installs a tracer (the program's native frames,
    and whatever traces them, are left alone)."""

    def get_stack(self, f, t):
        """The stack ``w``, ``u`` and ``d`` walk, without MagPy's own frames (how the user's code is run)."""
        stack, current = super().get_stack(f, t)
        shown = [k for k, (frame, _) in enumerate(stack) if k == current or not _ours(frame.f_code)]
        # (the native step of a graph break stands where the frame standing in for the user's does: once)
        shown = [k for n, k in enumerate(shown) if n + 1 == len(shown) or not _same_place(stack[k], stack[shown[n + 1]])]
        return [stack[k] for k in shown], shown.index(current) if current in shown else len(shown) - 1

    def set_continue(self):
        self._set_stopinfo(self.botframe, None, -1)

    def set_quit(self):
        self.quitting = True

    def _cannot_step(self, *args):
        self.message("*** the VM cannot stop at the next line: continuing")
        self.set_continue()

    set_step = set_next = set_return = set_until = _cannot_step

    def do_longlist(self, arg):
        frame = self.curframe
        if not isinstance(frame, FrameProxy):  # (``inspect`` takes only native frames)
            return super().do_longlist(arg)
        try:
            lines, lineno = inspect.getsourcelines(frame.f_code)
        except OSError as err:
            self.error(err)
            return None
        self._print_lines(lines, max(1, lineno), self.get_file_breaks(frame.f_code.co_filename), frame)
        return None

    do_ll = do_longlist


#: debugger class -> the same class over interpreted frames
_OVER_INTERPRETED = {}


def _ours(code) -> bool:
    """MagPy's code: its files, and the cache entries it emits (named after the user's function, in the
    user's file, so that their tracebacks read naturally)."""
    return code.co_filename.startswith(_OURS) or code.co_name.startswith("magpy_entry_")


def _same_place(entry, other):
    (a, line_a), (b, line_b) = entry, other
    return line_a == line_b and a.f_code.co_filename == b.f_code.co_filename and a.f_code.co_name == b.f_code.co_name


def stop_at(debugger, frame):
    """Run ``debugger``'s prompt at ``frame`` (a ``DebugFrame``) until the user continues. Raises
    ``BdbQuit`` when the user quits, as a native session's next line would."""
    cls = type(debugger)
    over = _OVER_INTERPRETED.get(cls)
    if over is None:
        over = _OVER_INTERPRETED[cls] = type(cls.__name__, (_InterpretedFrames, cls), {})
    debugger.__class__ = over
    try:
        debugger.reset()
        debugger.interaction(frame, None)
    finally:
        debugger.__class__ = cls
    _write_back(frame)
    if debugger.quitting:
        raise bdb.BdbQuit


def _write_back(frame):
    """Copy variables pdb assigned in the snapshots of ``frame`` and its interpreted callers back."""
    if not _SNAPSHOT_LOCALS:
        return
    while isinstance(frame, FrameProxy):
        f = frame._frame
        snapshot = f.locals_snapshot
        if snapshot is not None and f.names is None:
            proxy = LocalsProxy(f)
            for name, value in list(snapshot.items()):
                try:
                    if proxy[name] is not value:
                        proxy[name] = value
                except KeyError:
                    pass  # (a name pdb made up: frames hold only their own variables)
        frame = frame.f_back


def set_trace(vm, args, kwargs):
    """``pdb.set_trace(*, header=None)`` in the VM: the prompt opens at the interpreted caller."""
    header = kwargs.get("header")
    debugger = pdb.Pdb(nosigint=True)  # (Ctrl-C would set a native tracer on the VM's own frames)
    if header is not None:
        debugger.message(header)
    stop_at(debugger, DebugFrame(_shown(vm.frame), _outside_frame(0)))


def _bdb_set_trace(vm, args, kwargs):
    """``debugger.set_trace(frame=None)`` of any debugger (pytest's and IPython's ``set_trace`` end here):
    on an interpreted frame, its prompt opens there."""
    debugger, frame = args[0], (args[1] if len(args) > 1 else kwargs.get("frame"))
    if frame is None:  # (the caller of ``set_trace``)
        frame = FrameProxy(_shown(vm.frame))
    if not isinstance(frame, FrameProxy):
        return bdb.Bdb.set_trace(*args, **kwargs)  # a native frame: a native session
    return stop_at(debugger, DebugFrame(frame._frame, _outside_frame(0)))


def _breakpoint(vm, args, kwargs):
    """``breakpoint(*args, **kwargs)``: calls ``sys.breakpointhook`` (the default one stops here)."""
    hook = sys.breakpointhook
    if hook is sys.__breakpointhook__:
        return _default_hook(vm, args, kwargs)
    return call(vm, hook, args, kwargs)


def _default_hook(vm, args, kwargs):
    """``sys.__breakpointhook__``: the hook ``PYTHONBREAKPOINT`` names, pdb's by default, none for ``0``."""
    target = "" if sys.flags.ignore_environment else os.environ.get("PYTHONBREAKPOINT", "")
    if target == "0":
        return None
    if target in ("", "pdb.set_trace"):
        return set_trace(vm, args, kwargs)
    module, _, name = target.rpartition(".")
    try:
        hook = getattr(importlib.import_module(module or "builtins"), name)
    except (ImportError, AttributeError, ValueError):
        return sys.__breakpointhook__(*args, **kwargs)  # (CPython's own warning, and nothing else)
    return call(vm, hook, args, kwargs)


register_lookaside(breakpoint, _breakpoint)
register_lookaside(sys.__breakpointhook__, _default_hook)
register_lookaside(pdb.set_trace, set_trace)
register_lookaside(bdb.Bdb.set_trace, _bdb_set_trace)
