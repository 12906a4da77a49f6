"""Building one architecture's tiny model: the config, seeded random weights, eval mode."""
from __future__ import annotations

import torch

from .configs import tiny_config

SEED = 0


def build(model_type: str, device: str = "cpu"):
    """``(model, config)``: ``AutoModel.from_config`` of the tiny config, weights drawn from ``SEED`` (on the
    CPU, so every device gets the same ones), in eval mode, on ``device``. Raises whatever building raises."""
    from transformers import AutoModel

    config = tiny_config(model_type)
    torch.manual_seed(SEED)
    model = AutoModel.from_config(config, attn_implementation="eager")
    model.eval()
    return model.to(device), config


def parameter_count(model) -> int:
    return sum(p.numel() for p in model.parameters())
