"""MagPy's error hierarchy.

User-facing errors (``MagpyError`` and subclasses) speak in the user's terms: their file and line.
Internal signals (``Unsupported``) are raised while capturing and never reach the user as such.
"""
from .interp.errors import InterpreterError  # noqa: F401  (re-exported: an internal VM failure)


class MagpyError(Exception):
    """Base class of the errors MagPy raises on purpose."""


class GraphBreakError(MagpyError):
    """``fullgraph=True`` was asked for, but the program needs a graph break.

    ``reason`` says why; ``filename``/``lineno`` point at the user's line.
    """

    def __init__(self, reason, filename=None, lineno=None):
        where = f" ({filename}:{lineno})" if filename else ""
        super().__init__(f"{reason}{where}")
        self.reason = reason
        self.filename = filename
        self.lineno = lineno


class SettingError(MagpyError, ValueError, TypeError):
    """``magpy.compile`` was given a setting it cannot use: an unknown backend, mode or option, an option
    value or a flag of the wrong kind. Raised when ``magpy.compile`` is called; the message lists the
    valid values. (A ValueError and a TypeError, as the same mistake in a plain function would be.)"""


class Unsupported(Exception):
    """Internal: capture met something it cannot turn into a graph + guards + replay.

    Carries the reason and the user's source location; the caller turns it into a graph break or an
    eager fallback (never a wrong answer).
    """

    def __init__(self, reason, filename=None, lineno=None, inner=None):
        super().__init__(reason)
        self.reason = reason
        self.filename = filename
        self.lineno = lineno
        self.inner = inner  # "file:line" of the library code below the user's line that met it, or None

    def where(self):
        if not self.filename:
            return "<unknown>"
        return f"{self.filename}:{self.lineno}" + (f", in {self.inner}" if self.inner else "")
