"""Tracebacks in the user's terms: an exception that leaves interpreted frames shows those frames.

Interpreted code has no CPython frames of its own: an exception raised in it carries a traceback of the
VM's machinery (``execute``, handlers, blocks) and none of the user's lines. The VM notes each
interpreted frame an exception passes (``passed``: where it was raised, or the call it came up through);
at the boundary where the exception reaches the
user, ``user_traceback`` rebuilds its traceback: one entry per noted frame, outermost first, at the
line it was running — a real frame object, made by raising the exception in a code object placed at
that file and line and named after the function, whose locals are the interpreted frame's (so
``pdb.pm()`` shows the user's variables) — followed by the native frames the exception came from
below the VM (library Python code it called natively), without the VM's own.
"""
import functools
import types

from .decode import _PACKAGE_DIR

#: the exception's attribute holding (frame, instruction index) of each interpreted frame it passed, innermost first
_PASSED = "_magpy_frames_passed"


class _Passed(list):
    """The frames an exception passed: kept as its traceback keeps frames (no longer), never pickled with it
    (an exception sent to another process arrives as eager's would)."""

    def __reduce__(self):
        return _Passed, ()


def passed(exc, frame, index):
    """``exc`` was raised in interpreted ``frame`` at its instruction ``index`` (or came up to it there)."""
    try:
        noted = exc.__dict__.get(_PASSED)
        if noted is None:
            noted = exc.__dict__[_PASSED] = _Passed()
        noted.append((frame, index))
    except AttributeError:  # (an exception without a __dict__: its traceback stays the VM's)
        pass


def user_traceback(exc):
    """The traceback ``exc`` would have had had the interpreted frames it passed run natively (its own,
    when it passed none). The note is consumed: a later call raising the same object starts afresh."""
    noted = exc.__dict__.pop(_PASSED, None) if hasattr(exc, "__dict__") else None
    if not noted:
        return exc.__traceback__
    tb = [_below_the_vm(exc.__traceback__)]
    for frame, index in noted:  # (innermost first: each one wraps the ones below it)
        made = _made_frame(frame, index)
        if made is not None:
            tb.append(types.TracebackType(tb.pop(), made[0], made[1], made[0].f_lineno))
    # (the frames made here come back to this one, and to the callers': none may hold the exception or the
    # traceback, which hold them: a cycle would keep the program's objects alive until a collection)
    exc = noted = made = frame = None
    return tb.pop()


def in_users_terms(exc):
    """``exc`` and the exceptions chained to it, with tracebacks in the user's terms."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        exc.__traceback__ = user_traceback(exc)
        exc = exc.__cause__ or exc.__context__
    exc = None  # (see ``user_traceback``)


def _below_the_vm(tb):
    """The native frames after the last one of this package (where a native call raised), or None."""
    rest = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.startswith(_PACKAGE_DIR.rsplit("/", 2)[0] + "/"):
            rest = None
        elif rest is None:
            rest = tb
        tb = tb.tb_next
    return rest


def _made_frame(frame, index):
    """(a real frame standing where interpreted ``frame``'s instruction ``index`` stands — its file, line
    and columns, its function's name, its variables — and that frame's instruction offset), or None."""
    try:
        offset = frame.decoded.offsets[index]
    except (IndexError, AttributeError):
        return None

    def mark():
        raise _Marker

    try:
        run_at(mark, frame.decoded.code, offset, frame.globals, dict(_locals(frame)))
        return None  # (cannot happen: it raises)
    except _Marker as marker:
        made = [marker.__traceback__.tb_next.tb_next]  # (past this frame and ``run_at``'s: the made one)
    # (the made frame comes back to this one: no local of it may hold the made frame, a cycle)
    return _frame_and_offset(made)


def _frame_and_offset(made):
    tb = made.pop()
    return tb.tb_frame, tb.tb_lasti


def run_at(fn, code, offset, globals_, namespace):
    """``fn()``, called from a real frame standing at instruction ``offset`` of ``code`` (its file, line and
    columns, its function's name) whose variables are ``namespace`` (read and written through it): what
    a traceback, or a debugger stopped there, shows as the user's frame."""
    try:
        position = _positions(code)[offset // 2]
    except IndexError:
        position = (code.co_firstlineno, None, None, None)
    if position[0] is None:
        position = (code.co_firstlineno, None, None, None)
    placed = _placed(code.co_filename, code.co_name, getattr(code, "co_qualname", code.co_name), position)
    namespace[_CALLED] = fn
    try:
        exec(placed, globals_ if isinstance(globals_, dict) else {}, namespace)
    finally:
        del namespace[_CALLED]


class _Marker(Exception):
    pass


def _locals(frame):
    try:
        return frame.local_dict()
    except Exception:  # noqa: BLE001 - a frame mid-way through binding: no variables to show
        return {}


@functools.lru_cache(maxsize=256)
def _positions(code):
    return list(code.co_positions())


#: the local the placed code calls
_CALLED = "__magpy_called__"
_CALL = compile(f"{_CALLED}()", "<placed>", "exec")


@functools.lru_cache(maxsize=512)
def _placed(filename, name, qualname, position):
    """Code calling ``__magpy_called__()`` whose every instruction stands at ``position`` (line, end line,
    column, end column) of ``filename``, named ``name``: a traceback through it prints that line and
    underlines what eager's would; a debugger shows it there."""
    line, end_line, column, end_column = position
    units = len(_CALL.co_code) // 2
    table = bytearray()
    for start in range(0, units, 8):  # (an entry covers at most 8 code units)
        length = min(8, units - start)
        if column is None or end_line is None or end_column is None:
            table.append(0x80 | (13 << 3) | (length - 1))   # (a line, no columns)
            table += _svarint(0)
        else:
            table.append(0x80 | (14 << 3) | (length - 1))   # (line, end line, columns)
            table += _svarint(0) + _varint(end_line - line) + _varint(column + 1) + _varint(end_column + 1)
    replaced = {"co_name": name, "co_filename": filename, "co_firstlineno": line, "co_linetable": bytes(table)}
    if hasattr(_CALL, "co_qualname"):
        replaced["co_qualname"] = qualname
    return _CALL.replace(**replaced)


def _varint(n):
    out = bytearray()
    while n >= 64:
        out.append(0x40 | (n & 63))
        n >>= 6
    out.append(n)
    return bytes(out)


def _svarint(n):
    return _varint((-n << 1) | 1 if n < 0 else n << 1)
