"""What ``magpy.trace`` reports, one object per thing that happened while a call ran in the VM.

Every event knows where it happened (``filename``, ``lineno``: the line of the innermost interpreted
frame) and how deep in interpreted calls (``depth``: 0 for the traced function), and prints as one
line: ``file.py:12  op      torch.relu -> relu``. Paths are rendered as the user writes them.
"""
import os
import types

from ..capture.names import callable_name


class Event:
    """Base of every trace event: ``kind`` names the class of event ("line", "call", "op" …); ``fields``
    are the names of what it carries besides where it happened, ``template`` how its detail reads."""
    __slots__ = ("filename", "lineno", "depth")
    kind = "event"
    fields = ()
    template = ""

    def __init__(self, filename, lineno, depth, *values):
        if len(values) != len(self.fields):
            raise TypeError(f"{type(self).__name__} takes {', '.join(self.fields)}")
        self.filename = filename
        self.lineno = lineno
        self.depth = depth
        for name, value in zip(self.fields, values):
            setattr(self, name, value)

    def detail(self):
        """What happened, without where (the part after the kind in ``str(event)``)."""
        return self.template.format(**{name: getattr(self, name) for name in self.fields})

    def __str__(self):
        where = f"{os.path.basename(self.filename or '?')}:{self.lineno}"
        return f"{where:<24} {'  ' * self.depth}{self.kind:<6} {self.detail()}".rstrip()

    def __repr__(self):
        return f"<{type(self).__name__} {self}>"


def _event_class(name, kind, fields, template, doc):
    return type(name, (Event,), {"__slots__": fields, "kind": kind, "fields": fields, "template": template,
                                 "__doc__": doc, "__module__": __name__})


Line = _event_class("Line", "line", ("function",), "{function}", """A new line starts to run (as
    ``sys.settrace`` reports lines: a change of line in a frame, or a jump back to the same line).
    Recorded only by a trace that asks for lines.""")
Call = _event_class("Call", "call", ("function",), "{function}()",
                    "An interpreted function starts (``lineno``: its ``def`` line).")
Op = _event_class("Op", "op", ("op", "node"), "{op} -> {node}", """A tensor operation recorded into the
    graph as node ``node`` (``op``: the function or method), placed at the user's line that led to it.""")
Input = _event_class("Input", "input", ("path", "node"), "{path} -> {node}",
                     "A tensor from outside became graph input ``node``, read by ``path``.")
Read = _event_class("Read", "read", ("path", "value"), "{path} = {value}", """The program read a value
    from outside its call by ``path`` (``value``: a short description).""")
GuardAdded = _event_class("GuardAdded", "guard", ("guard",), "{guard}",
                          "A guard the cache entry will check (``guard``: its readable form).")
GaveUp = _event_class("GaveUp", "break", ("reason",), "{reason}", """Capture gave up here (a graph break,
    or a call it cannot replay), for ``reason``.""")


class Return(Event):
    """An interpreted function returns, or raises ``raised`` (an exception type's name)."""
    __slots__ = fields = ("function", "raised")
    kind = "return"

    def detail(self):
        return f"{self.function}()" + (f" raised {self.raised}" if self.raised else "")


class Write(Event):
    """The program stored ``value`` at ``path`` outside its call (``value`` None: deleted it)."""
    __slots__ = fields = ("path", "value")
    kind = "write"

    def detail(self):
        return f"{self.path} = {self.value}" if self.value is not None else f"del {self.path}"


#: every kind of event, by name
KINDS = {cls.kind: cls for cls in (Line, Call, Return, Op, Input, Read, Write, GuardAdded, GaveUp)}


_PLAIN = (int, float, complex, bool, str, bytes, type(None))
_CONTAINERS = (tuple, list, dict, set, frozenset)


def describe(value):
    """A short description of a value for an event, cheap to make and never running the program's own
    ``__repr__``: a tensor by its metadata, plain values and small containers of them as written, a
    function, class or module by name, any other object by its class."""
    if hasattr(value, "shape") and hasattr(value, "dtype") and hasattr(value, "device"):
        return f"{type(value).__name__}({str(value.dtype).replace('torch.', '')}, shape={list(value.shape)})"
    if type(value) in _PLAIN or _small_plain(value):
        text = repr(value)
        return text if len(text) <= 60 else text[:57] + "..."
    if type(value) in _CONTAINERS:
        return f"<{type(value).__name__} of {len(value)}>"
    if isinstance(value, types.ModuleType):
        return f"<module {value.__name__}>"
    if isinstance(value, type):
        return f"<class {value.__qualname__}>"
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        return f"<function {callable_name(value)}>"
    return f"<{type(value).__qualname__}>"


def _small_plain(value):
    """A container of a few plain values (``{'act': 'relu'}``, ``(2, 3)``), cheap to show as written."""
    if type(value) not in _CONTAINERS or len(value) > 8:
        return False
    items = [x for pair in value.items() for x in pair] if type(value) is dict else value
    return all(type(x) in _PLAIN for x in items)
