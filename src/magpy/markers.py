"""Markers a user's program calls to talk to MagPy (no dependencies: capture's rules name them)."""


def graph_break():
    """Mark a graph break in user code: a compiled call splits here (a no-op when run eagerly)."""


#: the attributes ``mark_dynamic``/``mark_static`` keep on a tensor: the dims each names
DYNAMIC = "_magpy_dynamic_dims"
STATIC = "_magpy_static_dims"
#: the attributes torch's own markers keep (``torch._dynamo.mark_dynamic``, ``maybe_mark_dynamic``,
#: ``mark_unbacked``; ``mark_static``), read as ours are (torch's dynamic marks win over its static ones)
TORCH_DYNAMIC = ("_dynamo_dynamic_indices", "_dynamo_weak_dynamic_indices", "_dynamo_unbacked_indices")
TORCH_STATIC = "_dynamo_static_indices"


def marked_dims(t):
    """``(dynamic, static)``: the dims of ``t`` marked by ours and torch's markers."""
    torch_dynamic = set()
    for name in TORCH_DYNAMIC:
        torch_dynamic |= set(getattr(t, name, ()))
    static = set(getattr(t, STATIC, ())) | (set(getattr(t, TORCH_STATIC, ())) - torch_dynamic)
    return set(getattr(t, DYNAMIC, ())) | torch_dynamic, static


def has_marks(t):
    """Does ``t`` carry a dynamic mark of ours or torch's?"""
    return hasattr(t, DYNAMIC) or any(hasattr(t, name) for name in TORCH_DYNAMIC)


def mark_dynamic(t, dim):
    """Compile ``t``'s size along ``dim`` (an int or a list of them) as symbolic from the first call:
    one entry for every size of that dim (sizes 0 and 1 still specialise)."""
    _mark(t, dim, DYNAMIC, STATIC)


def mark_static(t, dim):
    """Keep ``t``'s size along ``dim`` a constant of the compiled code, even when it changes between
    calls (``dynamic=None``/``True`` would make it symbolic): one entry per size."""
    _mark(t, dim, STATIC, DYNAMIC)


def _mark(t, dim, name, other):
    dims = [dim] if isinstance(dim, int) else list(dim)
    n = t.dim()
    for d in dims:
        if not isinstance(d, int) or not -n <= d < n:
            raise IndexError(f"dim {d!r} is out of range for a tensor of {n} dims")
    dims = {d % n for d in dims}
    setattr(t, name, getattr(t, name, set()) | dims)
    if hasattr(t, other):
        setattr(t, other, getattr(t, other) - dims)
