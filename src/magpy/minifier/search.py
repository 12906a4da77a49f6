"""Delta debugging: the smallest part of a list that still fails a test.

Zeller's ddmin, over contiguous chunks (the list is a graph's ops in order, so a chunk is a stretch of
the program): first try each chunk alone, then the list without each chunk, then finer chunks. The
result is 1-minimal: removing any single item from it makes the test pass.
"""
from typing import Callable, Sequence, TypeVar

Item = TypeVar("Item")


def smallest(items: Sequence[Item], fails: Callable[[list], bool]) -> list:
    """A 1-minimal sublist of ``items`` (order kept) on which ``fails`` holds; ``fails(items)`` must
    hold. ``fails`` is called on sublists only, never on the empty list."""
    items = list(items)
    chunks = 2
    while len(items) >= 2:
        parts = _split(items, chunks)
        reduced = next((part for part in parts if fails(part)), None)
        if reduced is not None:  # (one chunk alone fails: start again from halves of it)
            items, chunks = reduced, 2
            continue
        if len(parts) > 2:  # (with two parts, each complement is the other part: tried just above)
            reduced = next((rest for rest in _complements(parts) if fails(rest)), None)
            if reduced is not None:
                items, chunks = reduced, max(chunks - 1, 2)
                continue
        if chunks >= len(items):
            break
        chunks = min(2 * chunks, len(items))
    return items


def _split(items: list, n: int) -> list[list]:
    """``items`` cut into ``n`` contiguous chunks of nearly equal length."""
    size, extra = divmod(len(items), n)
    parts, start = [], 0
    for k in range(n):
        end = start + size + (1 if k < extra else 0)
        parts.append(items[start:end])
        start = end
    return parts


def _complements(parts: list[list]):
    for k in range(len(parts)):
        yield [item for j, part in enumerate(parts) if j != k for item in part]
