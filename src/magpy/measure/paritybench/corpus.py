"""The ParityBench checkout: where its generated test files are, and which of them a run covers.

A checkout holds ``generated/test_*.py`` (one file per crawled project, each listing ``TESTCASES``) and
``generated/_paritybench_helpers.py``, which imports the ``paritybench`` package at the checkout's root.

Files are split by a salted hash of their name into a public part (for development and tuning) and a held-out
part (for evaluation only). Selecting files never opens one: the split is decided from the name alone, so a
held-out file is not read unless ``split`` asks for it.
"""
from __future__ import annotations

import fnmatch
import hashlib
import os
from dataclasses import dataclass

SPLIT_SALT = "pb-split-v1:"
HELDOUT_PERCENT = 30            # names hashing below this percentile are held out
SPLITS = ("public", "heldout", "all")
HELPERS = "_paritybench_helpers.py"


class CorpusError(Exception):
    """The path is not a usable ParityBench checkout, or the selection is invalid."""


def split_of(file_name: str) -> str:
    """``"public"`` or ``"heldout"`` for a generated file's base name, e.g. ``test_foo_bar.py``."""
    digest = hashlib.sha256((SPLIT_SALT + file_name).encode()).hexdigest()
    return "heldout" if int(digest, 16) % 100 < HELDOUT_PERCENT else "public"


@dataclass(frozen=True)
class Corpus:
    root: str           # the checkout (holds generated/ and, normally, the paritybench package)
    generated: str      # the folder of test_*.py files

    @classmethod
    def locate(cls, path: str) -> "Corpus":
        """The checkout at ``path`` (its root or its ``generated/`` folder).

        Raises CorpusError when no ``generated/test_*.py`` files are found there."""
        path = os.path.abspath(os.path.expanduser(path))
        for root, generated in ((path, os.path.join(path, "generated")), (os.path.dirname(path), path)):
            if os.path.isdir(generated) and any(_is_test_file(name) for name in os.listdir(generated)):
                return cls(root, generated)
        raise CorpusError(f"{path}: not a ParityBench checkout (no generated/test_*.py files)")

    def names(self) -> list[str]:
        """Every test file's base name, sorted."""
        return sorted(name for name in os.listdir(self.generated) if _is_test_file(name))

    def select(self, split: str = "public", limit: int | None = None, only: list[str] | None = None,
               offset: int = 0) -> list[str]:
        """The base names a run covers: those of ``split``, matching one of the ``only`` glob patterns if given,
        sorted by name, then ``offset`` files skipped and at most ``limit`` kept."""
        if split not in SPLITS:
            raise CorpusError(f"unknown split {split!r} (choose from {', '.join(SPLITS)})")
        names = [name for name in self.names() if split == "all" or split_of(name) == split]
        if only:
            patterns = [p if p.endswith(".py") or any(c in p for c in "*?[") else f"*{p}*" for p in only]
            names = [name for name in names if any(fnmatch.fnmatch(name, p) for p in patterns)]
        names = names[offset:]
        return names if limit is None else names[:limit]

    def path(self, name: str) -> str:
        return os.path.join(self.generated, name)

    @property
    def import_paths(self) -> list[str]:
        """Folders a test file needs on sys.path: ``generated/`` for its helpers, the root for the package."""
        return [self.generated, self.root]


def _is_test_file(name: str) -> bool:
    return name.startswith("test_") and name.endswith(".py")
