"""magpy.zoo — a download-free model zoo of realistic eager PyTorch programs for a compiler to capture.

Each model lives in its own module exposing ``MODEL = ModelSpec(...)`` (the transformers models, listed
when transformers is installed, share ``magpy.zoo.hf``)::

    from magpy import zoo
    spec = zoo.get("resnet")
    module, inputs = spec.make(size="small")      # eval mode, seeded weights, example inputs
    module(*inputs)

Sizes are "small" (fits a 2-core CPU, a few ms per call), "medium" and "large" (ResNet-50 / BERT-base scale).
Model modules are imported on first use, so ``import magpy.zoo`` stays cheap.
"""
from __future__ import annotations

import importlib
import importlib.util

from .spec import SIZES, ModelSpec, Tolerance, seeded

# name -> module holding MODEL; the order is the order of benchmark tables.
REGISTRY: dict[str, str] = {
    "resnet": "magpy.zoo.resnet",
    "densenet": "magpy.zoo.densenet",
    "bert": "magpy.zoo.bert",
    "gpt": "magpy.zoo.gpt",
    "lstm": "magpy.zoo.lstm",
    "monodepth": "magpy.zoo.monodepth",
    "blockdrop": "magpy.zoo.blockdrop",
    "quant_resnet": "magpy.zoo.quant_resnet",
    "tridentnet": "magpy.zoo.tridentnet",
}
if importlib.util.find_spec("transformers") is not None:  # (real library models, when it is installed)
    REGISTRY.update({"hf_bert": "magpy.zoo.hf:BERT", "hf_gpt2": "magpy.zoo.hf:GPT2",
                     "hf_llama": "magpy.zoo.hf:LLAMA"})


def names() -> list[str]:
    """All model names, in table order."""
    return list(REGISTRY)


def get(name: str) -> ModelSpec:
    """The ModelSpec called ``name``. Raises KeyError naming the known models for an unknown name."""
    try:
        module_name, _, attribute = REGISTRY[name].partition(":")
    except KeyError:
        raise KeyError(f"unknown model {name!r}; known: {', '.join(REGISTRY)}") from None
    return getattr(importlib.import_module(module_name), attribute or "MODEL")


__all__ = ["SIZES", "ModelSpec", "Tolerance", "seeded", "REGISTRY", "names", "get"]
