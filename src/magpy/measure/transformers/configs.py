"""Tiny configurations: a base model's default config, shrunk by rules over what each field means.

``tiny_config(model_type)`` takes ``AutoConfig.for_model(model_type)``, rewrites its dictionary (and the
dictionaries of its sub-configs: ``text_config``, ``vision_config``…) with the table below, and builds the
config again from the result, so values a config derives in its constructor (``layer_types``, …) are derived
from the tiny sizes. A field is only ever made smaller. Lists that hold one entry per layer follow the layer
count. Nothing here names an architecture: a config that these rules cannot shrink into a valid model is
reported by the runner as a build failure.
"""
from __future__ import annotations

HIDDEN = 32
LAYERS = 2
HEADS = 2
HEAD_DIM = HIDDEN // HEADS
INTERMEDIATE = 37
VOCAB = 99
EXPERTS = 4
IMAGE = 32
PATCH = 4
POSITIONS = 512
SOURCE_POSITIONS = 64

# field name → the value it shrinks to (only ever lowered)
SIZES = {
    **dict.fromkeys(("hidden_size", "d_model", "n_embd", "embed_dim", "embedding_size", "projection_dim",
                     "hidden_dim", "dim", "word_embed_proj_dim", "out_hidden_size", "projector_hidden_size",
                     "decoder_hidden_size", "encoder_hidden_dim", "encoder_hidden_size", "output_hidden_size",
                     "projection_size", "text_embed_dim", "vision_embed_dim", "pooler_output_size",
                     "image_text_hidden_size", "hidden_size_per_layer_input", "classifier_proj_size",
                     "codevector_dim", "proj_codevector_dim", "xvector_output_dim", "attention_hidden_size",
                     "feature_size", "d_inner", "n_positions_embd"), HIDDEN),
    **dict.fromkeys(("num_hidden_layers", "num_layers", "n_layer", "n_layers", "encoder_layers", "decoder_layers",
                     "num_encoder_layers", "num_decoder_layers", "depth", "num_adapter_layers",
                     "max_window_layers"), LAYERS),
    **dict.fromkeys(("num_attention_heads", "n_head", "n_heads", "num_heads", "encoder_attention_heads",
                     "decoder_attention_heads", "decoder_num_attention_heads", "index_n_heads",
                     "linear_num_key_heads", "linear_num_value_heads", "mamba_n_heads"), HEADS),
    **dict.fromkeys(("head_dim", "d_kv", "qk_head_dim", "v_head_dim", "index_head_dim", "linear_key_head_dim",
                     "linear_value_head_dim", "linear_head_dim", "mamba_d_head", "attention_head_size"), HEAD_DIM),
    **dict.fromkeys(("qk_rope_head_dim", "qk_nope_head_dim"), HEAD_DIM // 2),
    **dict.fromkeys(("kv_lora_rank", "q_lora_rank"), HIDDEN // 2),
    **dict.fromkeys(("intermediate_size", "ffn_dim", "encoder_ffn_dim", "decoder_ffn_dim", "n_inner", "d_ff",
                     "moe_intermediate_size", "shared_intermediate_size", "shared_expert_intermediate_size",
                     "decoder_intermediate_size", "encoder_intermediate_size"), INTERMEDIATE),
    **dict.fromkeys(("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts"), EXPERTS),
    **dict.fromkeys(("num_experts_per_tok", "num_experts_per_token", "moe_topk", "index_topk"), 2),
    **dict.fromkeys(("n_group", "topk_group", "num_expert_group", "n_shared_experts", "num_shared_experts"), 1),
    **dict.fromkeys(("vocab_size",), VOCAB),
    **dict.fromkeys(("image_size", "pretrain_image_size"), IMAGE),
    **dict.fromkeys(("max_position_embeddings", "n_positions", "n_ctx"), POSITIONS),
    **dict.fromkeys(("max_source_positions",), SOURCE_POSITIONS),
    **dict.fromkeys(("mamba_d_state", "state_size", "ssm_state_size", "time_step_rank"), 16),
    **dict.fromkeys(("num_conv_pos_embeddings",), 16),
    **dict.fromkeys(("embedding_dim",), HIDDEN),
}
# fields that must stay divisible into what they split (heads of a hidden size, groups of channels)
KEY_VALUE_HEADS = ("num_key_value_heads", "num_kv_heads", "n_kv_heads", "multi_query_group_num")
# lists of sizes (one per stage or per layer of a feature extractor): each value lowered, length kept
LIST_SIZES = {
    "hidden_sizes": HIDDEN, "conv_dim": HIDDEN, "tdnn_dim": HIDDEN, "embed_dims": HIDDEN,
    "encoder_hidden_sizes": HIDDEN, "decoder_hidden_sizes": HIDDEN, "neck_hidden_sizes": HIDDEN,
    "channels": HIDDEN,
}
LIST_CONSTANT = {"depths": 1, "num_heads": HEADS, "num_attention_heads": HEADS, "num_layers": 1}
# grouped matrix products over experts need 16-byte aligned strides: with experts, intermediate sizes are
# rounded down to a multiple of 4 floats
EXPERT_KEYS = ("num_experts", "num_local_experts", "n_routed_experts", "moe_num_experts")
# rotary sections (lists partitioning the rotated half of a head) are scaled to sum to HEAD_DIM // 2
ROTARY_SECTIONS = ("mrope_section", "section", "mrope_sections")
ROTARY_DICTS = ("rope_parameters", "rope_scaling")
# token ids a tiny vocabulary must hold
TOKEN_SUFFIXES = ("_token_id", "_token_index", "_token_ids")
LAYER_COUNTS = ("num_hidden_layers", "num_layers", "n_layer", "n_layers", "decoder_layers", "encoder_layers")


def tiny_config(model_type: str):
    """The tiny config of ``model_type``: the default config, shrunk (see the module docstring).

    Raises whatever transformers raises when the shrunk dictionary does not make a valid config."""
    from transformers import AutoConfig

    default = AutoConfig.for_model(model_type)
    shrunk = shrink(default.to_dict())
    config = type(default).from_dict(shrunk)
    config._attn_implementation = "eager"
    for name in _sub_config_names(config):
        sub = getattr(config, name, None)
        if hasattr(sub, "_attn_implementation"):
            sub._attn_implementation = "eager"
    return config


def _sub_config_names(config) -> list[str]:
    names = list(getattr(config, "sub_configs", None) or {})
    return [name for name in names if hasattr(getattr(config, name, None), "to_dict")]


def shrink(values: dict) -> dict:
    """A copy of a config dictionary with the size fields lowered, recursively into sub-config dicts."""
    result = dict(values)
    old_layers = _layer_count(values)
    for key, value in values.items():
        if isinstance(value, dict) and ("model_type" in value or _looks_like_config(value)):
            result[key] = shrink(value)
        elif _is_int(value) and key in SIZES:
            result[key] = min(value, SIZES[key]) if value > 0 else value
        elif isinstance(value, list) and value and all(_is_int(v) for v in value):
            if key in LIST_SIZES:
                result[key] = _scaled(value, LIST_SIZES[key])
            elif key in LIST_CONSTANT:
                result[key] = [min(v, LIST_CONSTANT[key]) for v in value]
    if any(_is_int(values.get(key)) and values[key] > 0 for key in EXPERT_KEYS):
        for key, value in result.items():
            if SIZES.get(key) == INTERMEDIATE and _is_int(value) and value % 4:
                result[key] = value - value % 4
    for key in ROTARY_DICTS:
        if isinstance(values.get(key), dict):
            result[key] = _rotary(values[key])
    heads = values.get("num_attention_heads")
    for key in KEY_VALUE_HEADS:
        if _is_int(values.get(key)) and _is_int(heads) and values[key] > 0:
            result[key] = HEADS if values[key] >= heads else 1
    for key, value in values.items():
        if key.endswith(TOKEN_SUFFIXES) and _is_int(result.get("vocab_size")):
            result[key] = _token(value, result["vocab_size"])
    new_layers = _layer_count(result)
    if old_layers and new_layers and new_layers < old_layers:
        for key, value in result.items():
            if isinstance(value, list) and len(value) == old_layers and key not in LIST_SIZES \
                    and key not in LIST_CONSTANT:
                result[key] = value[:new_layers]
            elif isinstance(value, dict) and value and all(_layer_index(k) is not None for k in value):
                result[key] = {k: v for k, v in value.items() if _layer_index(k) < new_layers}
    return result


def _layer_index(key) -> int | None:
    """A dict key naming a layer (``3`` or ``"3"``), as an int; None for any other key."""
    if _is_int(key):
        return key
    return int(key) if isinstance(key, str) and key.isdigit() else None


def _rotary(parameters: dict) -> dict:
    result = dict(parameters)
    for key in ROTARY_SECTIONS:
        sections = parameters.get(key)
        if isinstance(sections, list) and sections and all(_is_int(v) and v > 0 for v in sections) \
                and sum(sections) > HEAD_DIM // 2:
            scaled = [max(1, v * (HEAD_DIM // 2) // sum(sections)) for v in sections]
            scaled[0] += HEAD_DIM // 2 - sum(scaled)
            result[key] = scaled
    return result


def _layer_count(values: dict) -> int | None:
    for key in LAYER_COUNTS:
        if _is_int(values.get(key)) and values[key] > 0:
            return values[key]
    return None


def _scaled(sizes: list[int], top: int) -> list[int]:
    """``sizes`` scaled down so the largest is at most ``top``, ratios (and so divisibility by 2s) kept."""
    largest = max(sizes)
    if largest <= top:
        return list(sizes)
    factor = max(1, largest // top)
    return [max(4, v // factor) for v in sizes]


def _token(value, vocab: int):
    """A special token id moved inside a vocabulary of ``vocab`` (from the top down, keeping ids distinct)."""
    if _is_int(value) and value >= vocab:
        return vocab - 1 - (value % max(1, vocab // 4))
    if isinstance(value, list):
        return [_token(v, vocab) for v in value]
    return value


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _looks_like_config(value: dict) -> bool:
    return any(key in value for key in ("hidden_size", "num_hidden_layers", "d_model"))
