"""Naming failures: an exception becomes a short reason to count (similar failures share it) and a detail.

A reason is what the failure tables group by, so it drops what differs between two instances of the same
problem: addresses, sizes, file paths, quoted names. The detail keeps the first line as raised, and ``where``
the innermost frame of the test file that was running, so a reader can find the line.
"""
from __future__ import annotations

import re
import traceback

REASON_LENGTH = 110
DETAIL_LENGTH = 400

_NORMALISE = (
    (re.compile(r"0x[0-9a-fA-F]+"), "0x…"),
    (re.compile(r"(/[\w.\-+]+)+\.py"), "FILE.py"),
    (re.compile(r"\b\d+(\.\d+)?(e-?\d+)?\b"), "N"),
    (re.compile(r"\s+"), " "),
)


def normalise(text: str) -> str:
    """``text`` with addresses, paths and numbers replaced and whitespace collapsed, cut to one short line."""
    for pattern, replacement in _NORMALISE:
        text = pattern.sub(replacement, text)
    text = text.strip()
    return text if len(text) <= REASON_LENGTH else text[:REASON_LENGTH - 1] + "…"


def first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    head = lines[0] if lines else ""
    return f"{type(error).__name__}: {head}" if head else type(error).__name__


def detail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= DETAIL_LENGTH else text[:DETAIL_LENGTH - 1] + "…"


def where(error: BaseException, file_name: str) -> str:
    """``test_x.py:123 in forward``: the innermost traceback frame in ``file_name``, or "" if none."""
    found = ""
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename.endswith(file_name):
            found = f"{file_name}:{frame.lineno} in {frame.name}"
    return found


def origin(error: BaseException) -> str:
    """``module.py:123 in f``: the innermost traceback frame, wherever it is (for a compiler's own errors)."""
    frames = traceback.extract_tb(error.__traceback__)
    if not frames:
        return ""
    frame = frames[-1]
    return f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno} in {frame.name}"


def describe(error: BaseException, file_name: str) -> dict:
    """The reason/detail/where/origin fields of a record for an exception that is not a compiler's own
    graph break: ``where`` is the test file's line, ``origin`` the innermost frame (often a compiler's)."""
    line = first_line(error)
    return {"reason": normalise(line), "detail": detail(line), "where": where(error, file_name),
            "origin": origin(error)}
