"""Emit: cache entries as real bytecode (guard + mock in one code object) and their readable form.

    asm           a bytecode assembler over ``bytecode`` (hides 3.11/3.12/3.13)
    guard_calls, made, undo
                  what entries call: guard helpers, objects the call made rebuilt, a graph's run taken back
    program       guard + mock in one code object (``build_entry``), and its readable rendering
    continuation  the rest of a call after a graph break: the breaking instruction run natively, then the
                  compiled resume function (the rewrites themselves are ``capture.resume``'s: capture makes
                  them while it can still let the call run on in the VM)

Emit reads what capture produced (guards, sources, the Split of a break) and imports nothing above it.
"""
from .program import build_entry, build_eager_entry, Entry, MISS, EAGER, Raised  # noqa: F401
