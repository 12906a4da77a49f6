"""Emit: cache entries as real bytecode (guard + mock in one code object) and their readable form."""
from .program import build_entry, Entry, MISS  # noqa: F401
