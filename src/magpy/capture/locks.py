"""Locks the call takes and gives back itself (``with self.lock:`` in ``functools.cached_property``, a logging
lock around a cache update).

A lock held only inside the call leaves nothing behind: the replay, which runs no other thread's code in
between, need not take it. So a lock's ``acquire``/``__enter__`` (blocking, as by default) and its
``release``/``__exit__`` are followed as a count per lock; a lock still held when the call ends, released
without the call having taken it, or taken without blocking (whether it is free depends on other threads)
is unsupported.
"""
import _thread

from .values import _NOT_WRITTEN, _bound_self

#: the native lock types (``threading.Lock()``, ``threading.RLock()``)
LOCK_TYPES = (_thread.LockType, _thread.RLock)
_TAKES = {"acquire", "__enter__", "acquire_lock"}
_GIVES = {"release", "__exit__", "release_lock"}


class Locks:

    """Native locks taken and given back within the call (a mixin of ``CaptureObserver``)."""

    def lock_call(self, fn, args, kwargs):
        """The provenance of a lock method's result (None: the same on every run), or ``_NOT_WRITTEN`` when
        ``fn`` is no method of a native lock."""
        if fn is _thread.allocate_lock or fn is _thread.RLock:
            return None  # (``threading.Lock()``: a new lock of the call's own, free, followed from here)
        lock = _bound_self(fn)
        if type(fn).__name__ == "method_descriptor" and args and isinstance(args[0], LOCK_TYPES):
            lock, args = args[0], args[1:]  # (called unbound: ``RLock.acquire(lock)``)
        if not isinstance(lock, LOCK_TYPES):
            return _NOT_WRITTEN
        name = getattr(fn, "__name__", "")
        held = self.locks_held.get(id(lock), (lock, 0))[1]
        if name in _TAKES:
            blocking = kwargs.get("blocking", args[0] if args and name != "__enter__" else True)
            timeout = kwargs.get("timeout", args[1] if len(args) > 1 and name != "__enter__" else -1)
            if blocking is not True or timeout != -1:
                self.unsupported(f"{type(lock).__name__}.{name}() without waiting (it depends on other threads)")
            self.locks_held[id(lock)] = (lock, held + 1)
            return None
        if name in _GIVES:
            if held == 0:
                self.unsupported(f"{type(lock).__name__}.{name}() of a lock the call did not take")
            self.locks_held[id(lock)] = (lock, held - 1)
            return None
        self.unsupported(f"{type(lock).__name__}.{name}() asks about a lock other threads share")

    def lock_entered(self, manager):
        """``with lock:``: the statement took it (its ``__enter__`` ran natively, unreported). False for a
        manager that is no native lock."""
        if not isinstance(manager, LOCK_TYPES):
            return False
        held = self.locks_held.get(id(manager), (manager, 0))[1]
        self.locks_held[id(manager)] = (manager, held + 1)
        return True

    def finish_locks(self):
        """The call must give back every lock it took."""
        for lock, held in self.locks_held.values():
            if held:
                self.unsupported(f"a {type(lock).__name__} is still held when the call returns")
