"""What a graph depends on beyond the values its paths lead to: torch's global state, and how the input
tensors share memory.

Both are facts of the entry state that no access path names. A graph traced under
``torch.set_default_dtype(torch.float64)`` made float64 zeros; a graph traced with two disjoint views of one
storage ran ``a.mul_(2)`` and then read ``b`` as it was. A later call must find the same, or miss.
"""
import torch

from .guards import TruthGuard
from .sources import Expr


def global_state_guard():
    """A guard that torch's global state (grad mode, default dtype, autocast, deterministic algorithms,
    float32 matmul precision, intra-op threads, torch-function modes) is what it was now."""
    snapshot = _snapshot_global_state()

    def same_torch_state():
        return snapshot()

    same_torch_state.spelling = "torch's global state is as when captured (grad mode, default dtype, " \
                                "autocast, deterministic algorithms, matmul precision)"
    return TruthGuard(Expr(same_torch_state, ()), True)


def _snapshot_global_state():
    """A function telling whether the global state is still what it is now: torch's own native check where
    there is one (one call, ~0.1 µs), else a tuple of the same readings compared."""
    try:
        checker = torch._C._dynamo.guards.GlobalStateGuard()
        if checker.check():
            return checker.check
    except Exception:  # noqa: BLE001 - an older or different torch: read the state ourselves
        pass
    seen = _global_state()
    return lambda: _global_state() == seen


def autocast_state():
    """What autocast does now: per device, on or off and to which dtype; and whether it caches casts."""
    return tuple((device, torch.is_autocast_enabled(device), torch.get_autocast_dtype(device))
                 for device in ("cpu", "cuda")) + (torch.is_autocast_cache_enabled(),)


def _global_state():
    autocast = autocast_state()
    return (torch.is_grad_enabled(), torch.get_default_dtype(), torch.are_deterministic_algorithms_enabled(),
            torch.get_float32_matmul_precision(), torch.get_num_threads(), autocast,
            torch._C._is_torch_function_mode_enabled())


def aliasing_guard(paths, tensors, written):
    """A guard on how the input tensors share memory, or None when nothing can depend on it.

    Distinct input tensors are always required (the graph has one placeholder per tensor). Where the call
    wrote into an input in place, which other inputs' memory overlaps the written one's, and where, also
    decides what the graph computes (``a.mul_(2); b + 1`` with ``b`` a view overlapping ``a``): that is part
    of the guard, tested by address ranges (a view interleaved with another counts as overlapping: a miss
    compiles for what the call meets, which is always right)."""
    if not written:
        if len(paths) < 2:
            return None
        return TruthGuard(Expr(distinct, paths), True)
    try:
        signature = overlaps(written, *tensors)
    except Exception:  # noqa: BLE001 - tensors without addresses (sparse, nested): identity is all we can say
        return TruthGuard(Expr(distinct, paths), True)

    # The addresses last found sharing memory as when captured: parameters and buffers stay where they are,
    # so most calls need no sweep (sizes and strides are the tensor guards', which the entry's guard holds too).
    last: list = []

    def same_aliasing(*tensors):
        if not distinct(*tensors):
            return False
        pointers = [t.data_ptr() for t in tensors]
        if pointers == last:
            return True
        if overlaps(written, *tensors) != signature:
            return False
        last[:] = pointers
        return True

    same_aliasing.spelling = "input tensors share memory as when captured (" + \
        ", ".join(f"{{{k}}}" for k in range(len(paths))) + ")"
    return TruthGuard(Expr(same_aliasing, paths), True)


def distinct(*tensors):
    """Are these different objects? (tensors hash by identity, but through a Python ``__hash__``)"""
    return len(set(map(id, tensors))) == len(tensors)


def overlaps(written, *tensors):
    """Which inputs' address ranges meet a written input's (by position), and how far apart they start
    (with the sizes and strides the tensor guards fix, that is where each element of one lies in the
    other: the graph compiled for one such layout); then whether each written input has elements sharing
    memory (an expanded view). One sweep over the ranges in address order: a module's hundred parameters
    cost a sort, not a hundred comparisons each."""
    spans = [_span(t) for t in tensors]
    is_written = frozenset(written)  # (membership per pair: a tuple would rescan W entries each time)
    met = []
    open_spans = []  # (end, position) of ranges begun and not yet ended at the current start
    for k in sorted(range(len(spans)), key=lambda k: spans[k][0]):
        start, end = spans[k]
        if start == end:
            continue
        open_spans = [(e, j) for e, j in open_spans if e > start]
        met.extend((j, k, start - spans[j][0]) for _, j in open_spans if j in is_written or k in is_written)
        open_spans.append((end, k))
    return tuple(sorted(met)), tuple(self_overlapping(tensors[i]) for i in written)


def self_overlapping(t):
    """Do some elements of ``t`` share memory (torch's own test; "too hard to tell" counts as yes)?"""
    try:
        return torch._debug_has_internal_overlap(t) != 0
    except Exception:  # noqa: BLE001 - a layout without strides (sparse): nothing to tell
        return False


def _span(t):
    """[first byte, past the last byte) of the memory ``t`` addresses; an empty tensor addresses none."""
    start = t.data_ptr()
    if t.is_contiguous():
        return start, start + t.nbytes
    if t.numel() == 0:
        return start, start
    low = high = 0
    for size, stride in zip(t.shape, t.stride()):
        reach = (size - 1) * stride
        if reach < 0:
            low += reach
        else:
            high += reach
    item = t.element_size()
    return start + low * item, start + (high + 1) * item

