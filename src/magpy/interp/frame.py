"""Interpreted frames and the values that only exist inside the VM."""


import sys

_REUSE_LOCALS_DICT = sys.version_info < (3, 13)


class _Null:
    """The NULL that CPython pushes before callables and keeps in unbound local slots."""
    __slots__ = ()

    def __repr__(self):
        return "NULL"


NULL = _Null()


class ExcState:
    """One link of the handled-exception chain (CPython's ``_PyErr_StackItem``)."""
    __slots__ = ("value", "previous")

    def __init__(self, value=None, previous=None):
        self.value = value
        self.previous = previous


class Frame:
    """The state of one interpreted call.

    ``locals`` is CPython's localsplus (arguments, locals, cells, free variables by slot);
    ``names`` is the mapping used by LOAD_NAME/STORE_NAME (class bodies, module code, exec), else None.
    ``plocals``/``pstack`` carry provenance parallel to ``locals``/``stack`` when an observer is on.
    """

    # what every frame sets lives in slots; what few frames need has a class-level default and, once
    # set, lives in the instance dict (a frame is made per call: its creation is on the hot path)
    __slots__ = ("vm", "decoded", "func", "globals", "names", "locals", "stack", "back", "index",
                 "result", "__dict__")
    kwnames = ()
    exc_state = None
    plocals = None
    pstack = None
    locals_snapshot = None
    _builtins = None
    fault = -1   # index of the instruction that raised inside a compiled block (see blocks.py)
    raised_at = None  # (exception, index of the instruction that raised it here) while it is handled

    def __init__(self, vm, decoded, func, globals_, locals_, names=None):
        self.vm = vm
        self.decoded = decoded
        self.func = func
        self.globals = globals_
        self.names = names
        self.locals = locals_
        self.stack = []
        self.index = 0
        self.back = None

    @property
    def code(self):
        return self.decoded.code

    @property
    def builtins(self):
        """The builtins namespace of the frame's globals (looked up on first use)."""
        b = self._builtins
        if b is None:
            b = self.globals.get("__builtins__", None)
            if b is None:
                import builtins
                b = builtins.__dict__
            elif not isinstance(b, dict):
                b = b.__dict__
            self._builtins = b
        return b

    @property
    def lineno(self):
        return self.decoded.linenos[min(self.index, len(self.decoded.linenos) - 1)]

    @property
    def filename(self):
        return self.code.co_filename

    def local_dict(self):
        """The frame's variables as ``locals()`` returns them: before 3.13 one dict per frame,
        refreshed by each call; from 3.13 (PEP 667) a new snapshot each time."""
        if self.names is not None:
            return self.names
        if _REUSE_LOCALS_DICT:
            # PyFrame_FastToLocals: bound variables are written, unbound ones removed, other keys stay
            out = self.locals_snapshot
            if out is None:
                out = self.locals_snapshot = {}
        else:
            out = {}
        code = self.code
        cells = set(code.co_cellvars) | set(code.co_freevars)
        for name, value in zip(self.decoded.localsplus_names, self.locals):
            if value is NULL:
                out.pop(name, None)
                continue
            if name in cells and type(value).__name__ == "cell":
                try:
                    value = value.cell_contents
                except ValueError:
                    out.pop(name, None)
                    continue
            out[name] = value
        return out

    def __repr__(self):
        return f"<vm frame {self.code.co_name} at {self.filename}:{self.lineno}>"


class Suspend(BaseException):
    """A frame yielded: the value is in ``frame.result``, the resume index in ``frame.index``."""


YIELD = Suspend("yield")
