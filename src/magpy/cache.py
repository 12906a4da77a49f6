"""Per-function cache of compiled entries, the recompile limit, and statistics.

Safe under concurrent calls: a lookup walks a snapshot of the entries (a tuple, replaced whole, never
changed in place), so an entry moved to the front or added by another thread is never skipped; the
replacements and the counters take one short lock (``x += 1`` on an attribute is a read and a write:
two threads could lose one).
"""
import threading
import weakref
from dataclasses import dataclass, field

from .emit import MISS

RECOMPILE_LIMIT = 8

# process-wide rather than per object: caches and stats are copied with the functions that own them
_CHANGING = threading.Lock()


@dataclass
class Stats:
    """What a compiled function did so far."""
    calls: int = 0
    cache_hits: int = 0
    compiles: int = 0
    graphs: int = 0
    graph_breaks: int = 0
    fallbacks: int = 0
    eager_while_compiling: int = 0   # calls run eagerly because another thread was capturing or compiling
    eager_calls: int = 0   # calls run eagerly, as a capture that gave up on a call like them (its guards) says
                           # (or because the entry's graph raised: the call reruns eagerly, raising as eager)
    graph_errors: int = 0  # calls whose graph raised where eager, rerun, did not (a bug of ours)
    bucket_pieces: int = 0  # pieces compiled of graphs split at DistributedDataParallel's gradient buckets
    last_graph_error: object = None  # (the exception the last of them raised)
    reasons: list = field(default_factory=list)   # why calls fell back to eager (reason, where)

    def count(self, name, n=1):
        """Add ``n`` to the counter ``name`` (atomically: calls may come from several threads)."""
        with _CHANGING:
            setattr(self, name, getattr(self, name) + n)

    def graph_error(self, error):
        """One more call whose graph raised where eager did not (``error``)."""
        self.last_graph_error = error
        self.count("graph_errors")

    def hit(self):
        """One more call, answered from the cache (the hot path: one lock for both counters)."""
        with _CHANGING:
            self.calls += 1
            self.cache_hits += 1


class ChildStats(Stats):
    """The stats of a function compiled on behalf of another (a resume function, a callee at a graph
    break): its compiles, graphs, breaks and fallbacks count for the function the user compiled too."""

    SHARED = frozenset({"compiles", "graphs", "graph_breaks", "fallbacks", "eager_calls", "graph_errors",
                        "bucket_pieces"})

    def __init__(self, parent):
        super().__init__()
        self.parent = parent
        self.reasons = parent.reasons

    def count(self, name, n=1):
        super().count(name, n)
        if name in self.SHARED:
            self.parent.count(name, n)

    def graph_error(self, error):
        super().graph_error(error)
        self.parent.last_graph_error = error   # (what the user's own stats show after a break, too)


class Cache:
    """The entries of one function, most recently used first."""

    def __init__(self, limit=RECOMPILE_LIMIT):
        self.entries = ()
        self.limit = limit

    def lookup(self, bound):
        """The result of the first entry whose guards pass, or MISS."""
        entries = self.entries
        for k, entry in enumerate(entries):
            result = entry.run(bound)
            if result is not MISS:
                if k:
                    self._move_to_front(entry)
                return result
        return MISS

    def _move_to_front(self, entry):
        with _CHANGING:
            entries = self.entries
            if any(e is entry for e in entries):  # (not when a reset dropped it meanwhile)
                self.entries = (entry, *(e for e in entries if e is not entry))

    def full(self):
        return len(self.entries) >= self.limit

    def add(self, entry):
        with _CHANGING:
            self.entries = (entry, *self.entries)

    def clear(self):
        with _CHANGING:
            self.entries = ()


_ALL = weakref.WeakSet()   # every live cache, for ``reset``; a dropped compiled function frees its own


def register(cache):
    with _CHANGING:
        _ALL.add(cache)
    return cache


def reset_all():
    with _CHANGING:
        caches = list(_ALL)
    for cache in caches:
        cache.clear()
