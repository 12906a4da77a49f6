"""Errors raised by the VM itself (never by the user's code)."""


class InterpreterError(RuntimeError):
    """An internal failure of the VM while it executed user code.

    ``filename`` and ``lineno`` name the user's source line being executed; the original internal
    exception is chained as ``__cause__``.
    """

    def __init__(self, message, filename=None, lineno=None):
        where = f"{filename}:{lineno}: " if filename else ""
        super().__init__(f"{where}{message}")
        self.filename = filename
        self.lineno = lineno
