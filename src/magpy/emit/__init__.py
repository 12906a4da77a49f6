"""Emit: cache entries as real bytecode (guard + mock in one code object) and their readable form."""
from .program import build_entry, build_eager_entry, Entry, MISS, EAGER, Raised  # noqa: F401
