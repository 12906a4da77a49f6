"""A module imported by corpus programs (imports.py); loaded afresh for every run."""
__all__ = ["public", "shout"]

loaded_times = []
loaded_times.append("loaded")
public = "public value"
_private = "private value"


def shout(text):
    return text.upper() + "!"
