"""Real transformers models in the zoo (when transformers is installed): BERT, GPT-2 and a Llama-style decoder,
built from their configs with seeded random weights (no hub access), eager attention, no KV cache, so that
``python -m magpy bench`` shows library code beside the hand-written models.
"""
from __future__ import annotations

import torch

from .spec import ModelSpec, Tolerance

# size -> (hidden, layers, heads, intermediate, vocab, batch, sequence)
_SIZES = {
    "small": (64, 2, 4, 128, 512, 2, 32),
    "medium": (256, 4, 4, 1024, 8192, 4, 128),
    "large": (768, 12, 12, 3072, 30522, 8, 256),
}


def _config(kind, size):
    import transformers

    hidden, layers, heads, inter, vocab, _, seq = _SIZES[size]
    common = dict(vocab_size=vocab, attn_implementation="eager", use_cache=False)
    if kind == "bert":
        return transformers.BertConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                                       intermediate_size=inter, max_position_embeddings=max(512, seq),
                                       hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **common)
    if kind == "gpt2":
        return transformers.GPT2Config(n_embd=hidden, n_layer=layers, n_head=heads, n_inner=inter,
                                       n_positions=max(1024, seq), resid_pdrop=0.0, embd_pdrop=0.0,
                                       attn_pdrop=0.0, **common)
    return transformers.LlamaConfig(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                                    num_key_value_heads=max(1, heads // 2), intermediate_size=inter,
                                    max_position_embeddings=max(2048, seq), **common)


def _builder(kind):
    def build(size: str):
        import transformers

        transformers.logging.set_verbosity_error()
        model_class = {"bert": transformers.BertModel, "gpt2": transformers.GPT2Model,
                       "llama": transformers.LlamaModel}[kind]
        model = model_class(_config(kind, size))
        _, _, _, _, vocab, batch, seq = _SIZES[size]
        return model, (torch.randint(0, vocab, (batch, seq)),)
    return build


def _spec(kind, summary, exercises):
    return ModelSpec(name=f"hf_{kind}", summary=summary, build=_builder(kind),
                     exercises=("transformers library code: ModelOutput, config reads, mask utilities",
                                *exercises),
                     tolerance=Tolerance(rtol=1e-3, atol=1e-3))


BERT = _spec("bert", "transformers BertModel (encoder, padding mask, pooler)",
             ("extended attention mask built from input ids",))
GPT2 = _spec("gpt2", "transformers GPT2Model (decoder, causal mask, Conv1D projections)",
             ("causal mask utilities", "Conv1D addmm projections"))
LLAMA = _spec("llama", "transformers LlamaModel (RMSNorm, rotary embeddings, grouped-query attention)",
              ("rotary embedding cache", "repeat_kv for grouped-query attention"))
