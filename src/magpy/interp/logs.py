"""Log calls of interpreted code (``logger.warning(msg)``), attributed to the interpreted caller's line.

``logging`` finds the line a record comes from by walking the native frames (``findCaller``); under the VM those
are the VM's own. A call of a ``Logger``'s level method (or ``log``) therefore runs as ``log_at``: the same level
check, ``makeRecord`` and ``handle`` as ``Logger._log``, with the caller's file, line and function found among
the interpreted frames. Calls this cannot reproduce (``exc_info``, ``stack_info``, a ``stacklevel``, a logger class
with its own ``_log`` or ``findCaller``) run natively as they are.
"""
import logging
import os

from .builtin_lookasides import _caller, _shown
from .lookaside import register_lookaside

#: a Logger's level methods and the level each logs at
LEVELS = {logging.Logger.debug: logging.DEBUG, logging.Logger.info: logging.INFO,
          logging.Logger.warning: logging.WARNING, logging.Logger.error: logging.ERROR,
          logging.Logger.critical: logging.CRITICAL}
#: the keywords ``log_at`` reproduces
_KEYWORDS = {"extra"}


def reproducible(logger, kwargs):
    """Can ``log_at`` make the record ``logger``'s own method would (no traceback or stack to add)?"""
    tp = type(logger)
    return isinstance(logger, logging.Logger) and set(kwargs) <= _KEYWORDS and \
        tp._log is logging.Logger._log and tp.findCaller is logging.Logger.findCaller


def caller_location(vm):
    """``(filename, lineno, function)`` of the interpreted frame a log call comes from, past logging's own."""
    frame = _shown(vm.frame)
    while frame is not None and os.path.normcase(frame.filename) == logging._srcfile:
        frame = _caller(frame)
    if frame is None:
        return "(unknown file)", 0, "(unknown function)"
    return frame.filename, frame.lineno, frame.code.co_name


def log_at(location, logger, level, msg, *args, extra=None):
    """``logger.log(level, msg, *args, extra=extra)`` as called from ``location``."""
    if not isinstance(level, int):
        if logging.raiseExceptions:
            raise TypeError("level must be an integer")
        return
    if logger.isEnabledFor(level):
        filename, lineno, function = location
        logger.handle(logger.makeRecord(logger.name, level, filename, lineno, msg, args, None, function, extra))


def _logged(method):
    level = LEVELS.get(method)

    def run(vm, args, kwargs):
        if len(args) < (2 if level is not None else 3) or not reproducible(args[0], kwargs):
            return method(*args, **kwargs)  # (raising as the method does, or as logging finds the line)
        logger, rest = args[0], args[1:]
        return log_at(caller_location(vm), logger, *((level,) if level is not None else ()), *rest, **kwargs)
    return run


for _method in (*LEVELS, logging.Logger.log):
    register_lookaside(_method, _logged(_method))
