"""Inputs for a model, made from its config and the parameters its ``forward`` takes.

A parameter is given a value when its name says what it holds (``input_ids``, ``pixel_values``,
``input_features``…: the table below, with shapes from the config). The first set of inputs tried is the
model's main input (``main_input_name``) with the parameters ``forward`` requires, plus the attention mask and,
for an encoder-decoder, the decoder's ids; the second adds every optional input the table knows. A required
parameter the table does not know makes the architecture one we cannot make inputs for (``InputsError``).
"""
from __future__ import annotations

import inspect

import torch

BATCH = 2
SEQUENCE = 7
AUDIO_SAMPLES = 1600
MEL_FRAMES = 128


class InputsError(Exception):
    """No inputs can be made for this forward (a required parameter of unknown meaning)."""


def input_sets(model, config) -> list[list[str]]:
    """Parameter-name sets to try, in order (see the module docstring); raises InputsError."""
    parameters = inspect.signature(model.forward).parameters
    names = [name for name, p in parameters.items() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    required = [name for name in names if parameters[name].default is inspect.Parameter.empty]
    unknown = [name for name in required if name not in MAKERS]
    if unknown:
        raise InputsError(f"forward requires {', '.join(unknown)}: no rule makes it")
    main = getattr(model, "main_input_name", None) or "input_ids"
    first = list(dict.fromkeys(([main] if main in names and main in MAKERS else []) + required))
    if any(name in first for name in ("input_ids", "decoder_input_ids")) and "attention_mask" in names:
        first.append("attention_mask")
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in names:
        first.append("decoder_input_ids")
    if not first:
        raise InputsError("forward takes no input the rules know: " + ", ".join(names[:8]))
    second = list(dict.fromkeys(first + [name for name in names if name in MAKERS and name in OPTIONAL]))
    return [first] if second == first else [first, second]


def make_inputs(names: list[str], config, seed: int) -> dict:
    """Keyword arguments for ``names``, drawn from a generator seeded with ``seed``."""
    generator = torch.Generator().manual_seed(seed)
    return {name: MAKERS[name](config, generator) for name in names}


def _vocab(config) -> int:
    for source in (config, getattr(config, "text_config", None), getattr(config, "decoder", None)):
        vocab = getattr(source, "vocab_size", None)
        if isinstance(vocab, int) and vocab > 0:
            return vocab
    return 99


def _special_ids(config) -> set[int]:
    ids = set()
    for source in (config, getattr(config, "text_config", None)):
        for key, value in (source.to_dict() if hasattr(source, "to_dict") else {}).items():
            if key.endswith(("_token_id", "_token_index")) and isinstance(value, int):
                ids.add(value)
    return ids


def _ids(config, generator) -> torch.Tensor:
    """Token ids avoiding the config's special tokens (an image token with no image is an error)."""
    vocab = _vocab(config)
    special = _special_ids(config)
    allowed = torch.tensor([i for i in range(vocab) if i not in special] or [0])
    picks = torch.randint(0, len(allowed), (BATCH, SEQUENCE), generator=generator)
    return allowed[picks]


def _mask(config, generator) -> torch.Tensor:
    mask = torch.ones(BATCH, SEQUENCE, dtype=torch.long)
    mask[1, -1] = 0                  # one padded position: the masking path runs
    return mask


def _sub(config, *names):
    for name in names:
        sub = getattr(config, name, None)
        if sub is not None:
            return sub
    return config


def _pixels(config, generator) -> torch.Tensor:
    vision = _sub(config, "vision_config", "backbone_config")
    channels = getattr(vision, "num_channels", None) or getattr(config, "num_channels", 3)
    size = getattr(vision, "image_size", None) or getattr(config, "image_size", 32)
    if isinstance(size, (list, tuple)):
        height, width = size[0], size[-1]
    elif isinstance(size, dict):
        height, width = size.get("height", 32), size.get("width", 32)
    else:
        height = width = size
    return torch.randn(BATCH, channels, height, width, generator=generator)


def _features(config, generator) -> torch.Tensor:
    audio = _sub(config, "audio_config", "encoder_config")
    bins = getattr(audio, "num_mel_bins", None) or getattr(audio, "feature_size", None) \
        or getattr(audio, "input_feat_per_channel", None) or 80
    positions = getattr(audio, "max_source_positions", None)
    frames = 2 * positions if isinstance(positions, int) and positions > 0 else MEL_FRAMES
    return torch.randn(BATCH, bins, frames, generator=generator)


def _values(config, generator) -> torch.Tensor:
    return torch.randn(BATCH, AUDIO_SAMPLES, generator=generator)


def _token_types(config, generator) -> torch.Tensor:
    return torch.zeros(BATCH, SEQUENCE, dtype=torch.long)


def _boxes(config, generator) -> torch.Tensor:
    corners = torch.randint(0, 500, (BATCH, SEQUENCE, 2), generator=generator)
    return torch.cat([corners, corners + torch.randint(1, 500, (BATCH, SEQUENCE, 2), generator=generator)], -1)


def _time_series(config, generator) -> torch.Tensor:
    length = (getattr(config, "context_length", None) or 8) + max(getattr(config, "lags_sequence", None) or [0])
    return torch.randn(BATCH, length, generator=generator)


# parameter name → how to make it
MAKERS = {
    "input_ids": _ids,
    "decoder_input_ids": _ids,
    "attention_mask": _mask,
    "decoder_attention_mask": _mask,
    "token_type_ids": _token_types,
    "pixel_values": _pixels,
    "input_features": _features,
    "input_values": _values,
    "bbox": _boxes,
    "past_values": _time_series,
}
# optional parameters the second input set adds
OPTIONAL = ("input_ids", "pixel_values", "token_type_ids", "bbox", "decoder_input_ids")
