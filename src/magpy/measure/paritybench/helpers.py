"""A stand-in for ParityBench's ``_paritybench_helpers``, used only when the checkout's own fails to import.

The generated files import a handful of names from it at module level. The checkout's version pulls in torch's
internal test utilities (which need ``expecttest``) and ParityBench's own package; where those are missing, this
module provides the same names with the same meaning, so the corpus still imports. Runs report which was used.
"""
from __future__ import annotations

import re
import sys
import types
import unittest


def build() -> types.ModuleType:
    """A module object named ``_paritybench_helpers`` with the names the generated files use."""
    import torch

    module = types.ModuleType("_paritybench_helpers", __doc__)

    class DummyBlock(torch.nn.ReLU):
        """What a layer argument that could not be deduced becomes."""

        expansion = 1

        def __repr__(self) -> str:
            return "_mock_layer()"

        __str__ = __repr__

    def _mock_layer(in_features=None, out_features=None, *args, **kwargs):
        if in_features and out_features:
            return torch.nn.Linear(in_features, out_features, **kwargs)
        return DummyBlock()

    class _mock_config(dict):
        """A config object: keys read as attributes."""

        def __getattr__(self, name):
            try:
                return self[name]
            except KeyError:
                raise AttributeError(name) from None

    def patch_functional() -> None:
        """Give ``torch.functional`` and ``torch.nn.functional`` each other's public functions (some projects
        import either as ``F``)."""
        first, second = torch.functional, torch.nn.functional
        public = re.compile(r"^[a-z]")
        names_first = {name for name in dir(first) if public.match(name)}
        names_second = {name for name in dir(second) if public.match(name)}
        for name in names_first - names_second:
            setattr(second, name, getattr(first, name))
        for name in names_second - names_first:
            setattr(first, name, getattr(second, name))

    def _fails_compile():
        return unittest.skip("jit compile fails")

    class _paritybench_base(unittest.TestCase):
        pass

    for value in (DummyBlock, _mock_layer, _mock_config, patch_functional, _fails_compile, _paritybench_base):
        setattr(module, value.__name__, value)
        if isinstance(value, type):
            value.__module__ = module.__name__
    return module


def install() -> None:
    sys.modules["_paritybench_helpers"] = build()
