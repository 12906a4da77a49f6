"""Markers a user's program calls to talk to MagPy (no dependencies: capture's rules name them)."""


def graph_break():
    """Mark a graph break in user code: a compiled call splits here (a no-op when run eagerly)."""
