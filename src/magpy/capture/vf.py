"""Importable stand-ins for torch builtins that fx would otherwise render under a wrong name.

fx names a builtin of ``torch._C._VariableFunctions`` as ``torch.<name>``; where ``torch.<name>`` is a
different Python function (``broadcast_tensors``, ``meshgrid``, ``norm`` … take other arguments), the graph
would call the wrong one. The graph calls the stand-in defined here instead, which calls the builtin.
"""
import torch


def exact(fn):
    """``fn`` itself when fx renders it faithfully, else a stand-in of this module that calls it."""
    name = getattr(fn, "__name__", None)
    if not name or getattr(fn, "__module__", None) not in (None, "torch", "torch._C", "torch._C._VariableFunctions"):
        return fn
    if getattr(torch, name, None) is fn:
        return fn
    stand_in = globals().get(name)
    if stand_in is None or stand_in.__wrapped__ is not fn:
        def stand_in(*args, **kwargs):
            return fn(*args, **kwargs)
        stand_in.__name__ = stand_in.__qualname__ = name
        stand_in.__module__ = __name__
        stand_in.__wrapped__ = fn
        globals()[name] = stand_in
    return stand_in


def calling(fn, name):
    """A plain function of this module that calls ``fn`` (fx then holds ``fn`` by reference instead of
    naming it by an import path that does not exist, as for ``SomeFunction.apply``)."""
    def stand_in(*args, **kwargs):
        return fn(*args, **kwargs)
    stand_in.__name__ = stand_in.__qualname__ = name
    stand_in.__module__ = __name__
    stand_in.__wrapped__ = fn
    return stand_in
