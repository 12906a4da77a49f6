"""The corpus: every base-model architecture transformers maps (``MODEL_MAPPING_NAMES``), and its split.

Architectures are split by a salted hash of their ``model_type`` into a public part (for development and
tuning) and a held-out part (for evaluation only). Selecting never builds or inspects an architecture: the
split is decided from the name alone.
"""
from __future__ import annotations

import fnmatch
import hashlib

SPLIT_SALT = "hf-split-v1:"
HELDOUT_PERCENT = 30            # names hashing below this percentile are held out
SPLITS = ("public", "heldout")


class SelectionError(Exception):
    """transformers is missing, or the selection is invalid."""


def split_of(model_type: str) -> str:
    """``"public"`` or ``"heldout"`` for a ``model_type`` such as ``"bert"``."""
    digest = hashlib.sha256((SPLIT_SALT + model_type).encode()).hexdigest()
    return "heldout" if int(digest, 16) % 100 < HELDOUT_PERCENT else "public"


def select(split: str = "public", limit: int | None = None, only: list[str] | None = None,
           offset: int = 0) -> list[str]:
    """The model types a run covers: those of ``split`` (matching one of the ``only`` globs, or equal to one of
    those names, if given), sorted, then ``offset`` skipped and at most ``limit`` kept."""
    if split not in SPLITS:
        raise SelectionError(f"unknown split {split!r} (choose from {', '.join(SPLITS)})")
    try:
        from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES
    except ImportError as error:
        raise SelectionError(f"transformers is not installed ({error})") from None
    names = sorted(name for name in MODEL_MAPPING_NAMES if split_of(name) == split)
    if only:
        names = [name for name in names
                 if any(name == p or (any(c in p for c in "*?[") and fnmatch.fnmatch(name, p)) for p in only)]
    names = names[offset:]
    return names if limit is None else names[:limit]
