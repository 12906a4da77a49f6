"""Per-function cache of compiled entries, the recompile limit, and statistics."""
from dataclasses import dataclass, field

from .emit import MISS

RECOMPILE_LIMIT = 8


@dataclass
class Stats:
    """What a compiled function did so far."""
    calls: int = 0
    cache_hits: int = 0
    compiles: int = 0
    graphs: int = 0
    graph_breaks: int = 0
    fallbacks: int = 0
    reasons: list = field(default_factory=list)   # why calls fell back to eager (reason, where)


class Cache:
    """The entries of one function, most recently used first."""

    def __init__(self, limit=RECOMPILE_LIMIT):
        self.entries = []
        self.limit = limit

    def lookup(self, bound):
        """The result of the first entry whose guards pass, or MISS."""
        entries = self.entries
        for k, entry in enumerate(entries):
            result = entry.run(bound)
            if result is not MISS:
                if k:
                    entries.insert(0, entries.pop(k))
                return result
        return MISS

    def full(self):
        return len(self.entries) >= self.limit

    def add(self, entry):
        self.entries.insert(0, entry)

    def clear(self):
        self.entries.clear()


_ALL = []


def register(cache):
    _ALL.append(cache)
    return cache


def reset_all():
    for cache in _ALL:
        cache.clear()
