"""Naming a failure for the table: one short line (exception type and the message's first line that says
something), never a traceback. The whole story (traceback, chained causes) goes to the run's log.

Compilers wrap the error that matters (Dynamo's ``BackendCompilerFailed`` holds Inductor's, which may hold a
worker process's traceback as text) and append advice; the rules below are what gets peeled off.
"""
from __future__ import annotations

import re
import traceback

from .runners import Unavailable
from .timing import StepTimeout

# Attributes by which an exception holds the one it wraps (torch._dynamo's BackendCompilerFailed, Inductor's
# InductorError; their messages repeat the wrapped one's, after a line of NOISE_LINES): followed to find a
# timeout behind them.
WRAPPED_ATTRIBUTES = ("inner_exception",)
# Exceptions of ours whose message is already the reason, as the table should show it.
MESSAGE_IS_REASON = (Unavailable, StepTimeout)

TRACEBACK_START = re.compile(r"^Traceback \(most recent call last\):")
# Lines of a message that never name a problem: traceback frames and the advice compilers append.
NOISE_LINES = (TRACEBACK_START,) + tuple(re.compile(pattern) for pattern in (
    r"^\s",                                     # a frame's code, an indented detail
    r"^File \"",
    r"^backend='[^']*' raised:$",               # Dynamo's wrapper; the next line is the error
    r"^An exception occurred in a subprocess:",
    r"^Set TORCH_LOGS|^Set TORCHDYNAMO_VERBOSE|^You can suppress|^For even more developer context",
    r"^from user code:",
    r"^The above exception was the direct cause|^During handling of the above exception",
))
# A line that starts a Python exception, as a traceback printed into a message ends with.
EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt|Timeout|Failed|Warning)(: .*)?$")

NOTE_WIDTH = 200     # a reason as a note under the table


def wrapped(error: BaseException) -> BaseException | None:
    return next((getattr(error, a) for a in WRAPPED_ATTRIBUTES if isinstance(getattr(error, a, None), BaseException)),
                None)


def causes(error: BaseException):
    """``error``, then everything it wraps or was raised from or during, breadth first, each once."""
    seen, queue = set(), [error]
    while queue:
        error = queue.pop(0)
        if error is None or id(error) in seen:
            continue
        seen.add(id(error))
        yield error
        queue += [wrapped(error), error.__cause__, error.__context__]


def underlying_timeout(error: BaseException) -> StepTimeout | None:
    """The StepTimeout behind ``error``: compilers may catch it and raise their own error from it."""
    return next((e for e in causes(error) if isinstance(e, StepTimeout)), None)


def telling_line(text: str) -> str:
    """The line of a message that names the problem: after a traceback printed into it, the exception line
    it ends with; otherwise the first line that is no frame or advice."""
    lines = [line.rstrip() for line in text.splitlines()]
    if any(TRACEBACK_START.match(line) for line in lines):
        raised = [line for line in lines if EXCEPTION_LINE.match(line)]
        if raised:
            return raised[-1]
    return next((line.strip() for line in lines if line.strip() and not any(p.match(line) for p in NOISE_LINES)),
                "")


def one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def short_reason(error: BaseException, width: int = NOTE_WIDTH) -> str:
    """``Type: message`` in one line of at most ``width`` characters; "timeout 90s" for a step past its
    deadline, however a compiler wrapped it."""
    timeout = underlying_timeout(error)
    if timeout is not None:
        return str(timeout)
    line = telling_line(str(error))
    if isinstance(error, MESSAGE_IS_REASON) or EXCEPTION_LINE.match(line):
        return one_line(line, width)         # ours, or a traceback's last line: it names its exception
    name = type(error).__name__
    return one_line(f"{name}: {line}" if line else name, width)


def full_story(error: BaseException) -> str:
    """The traceback with every chained cause, for the log."""
    return "".join(traceback.format_exception(error)).rstrip()
