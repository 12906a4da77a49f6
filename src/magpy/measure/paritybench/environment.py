"""Preparing the process that forks the workers: import paths, packages or stand-ins, --compat, helpers.

Everything a generated file needs is imported once here, before any worker is forked, so each worker starts
with it already loaded. This process keeps torch on one thread: the workers must be forked from a process
that has not started torch's thread pools (the compilers' warm-up is the only tensor work done here).
"""
from __future__ import annotations

import os
import platform
import sys

from . import compat as compat_layer
from . import helpers, standins
from .corpus import Corpus

# Packages some files import beyond the common first line; reported (installed or not), never stood in for.
EXTRAS = ("tensorboard", "expecttest")


def prepare(corpus: Corpus, compat: bool = False, sites: list[str] | None = None) -> dict:
    """Set this process up to import ``corpus``'s files. Returns what was set up, for the report:
    ``{"python", "torch", "packages": {name: version or "stand-in (why)"}, "extras": {name: version or
    "not installed"}, "compat": [restored] | "off", "helpers", "sites"}``."""
    import torch

    torch.set_num_threads(1)        # keep the intra-op pool unstarted until each worker sets its own
    for folder in reversed([os.path.abspath(p) for p in (sites or [])] + corpus.import_paths):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    packages = standins.install()
    restored = compat_layer.install() if compat else "off"
    try:
        import _paritybench_helpers  # noqa: F401
        origin = "ParityBench's own"
    except Exception as error:
        helpers.install()
        origin = f"stand-in ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
    return {"python": platform.python_version(), "torch": torch.__version__, "packages": packages,
            "extras": {name: _installed(name) for name in EXTRAS}, "compat": restored, "helpers": origin,
            "sites": list(sites or [])}


def _installed(name: str) -> str:
    """The version of an installed distribution, or "not installed" (without importing it)."""
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"
