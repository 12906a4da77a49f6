"""The recursion limit while the VM runs, shared by every thread.

An interpreted call costs a few Python frames, so while any VM runs, the process's limit is raised to
``VM_LIMIT`` and the program's own limit is enforced on interpreted depth instead (see ``VM.resume``).
The limit is process-wide: the first VM to start, in any thread, raises it; the last one to finish
puts the program's limit back. (A VM that restored the limit it found on entry could lower it under
another thread's VM, still deep in its program, or leave it raised for good.)
"""
import sys
import threading

VM_LIMIT = 20000

_lock = threading.Lock()
_running = 0            # VM calls under way, in every thread
_program_limit = None   # the program's own limit while they run


def enter():
    """A VM call starts. Returns the program's recursion limit."""
    global _running, _program_limit
    with _lock:
        if _running == 0:
            _program_limit = sys.getrecursionlimit()
            if _program_limit < VM_LIMIT:
                sys.setrecursionlimit(VM_LIMIT)
        _running += 1
        return _program_limit


def leave():
    """A VM call ends: the last one puts the program's limit back."""
    global _running
    with _lock:
        _running -= 1
        if _running == 0:
            sys.setrecursionlimit(_program_limit)


def set_program_limit(limit):
    """The program the VM runs called ``sys.setrecursionlimit(limit)``: that is its limit from now on
    (after the VM too), and the process keeps room for ``limit`` interpreted calls."""
    global _program_limit
    with _lock:
        _program_limit = limit
        if limit * 6 > sys.getrecursionlimit():
            sys.setrecursionlimit(limit * 6)
