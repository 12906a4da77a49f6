"""transformers base models, built tiny from their configs, through ``magpy.compile(fullgraph=True)`` against
eager: one graph, the same outputs on the first call and on a second call with new inputs (a cache hit).
Skipped when transformers is not installed. The architectures are from the public split."""
import pytest
import torch

transformers = pytest.importorskip("transformers")

import magpy  # noqa: E402
from magpy.measure.harness.compare import difference  # noqa: E402
from magpy.measure.transformers import select, split_of  # noqa: E402
from magpy.measure.transformers.configs import shrink  # noqa: E402
from magpy.measure.transformers.inputs import input_sets, make_inputs  # noqa: E402
from magpy.measure.transformers.models import build  # noqa: E402

ARCHITECTURES = ["bert", "gpt2", "llama"]


@pytest.fixture(autouse=True)
def quiet_transformers():
    transformers.logging.set_verbosity_error()


@pytest.mark.parametrize("model_type", ARCHITECTURES)
def test_one_graph_matching_eager(model_type):
    assert split_of(model_type) == "public"
    model, config = build(model_type)
    names = input_sets(model, config)[0]
    first, second = make_inputs(names, config, 1), make_inputs(names, config, 2)
    with torch.no_grad():
        expected = [model(**first), model(**second)]
        compiled = magpy.compile(model, backend="eager", fullgraph=True)
        got = [compiled(**first), compiled(**second)]
    for call, (want, have) in enumerate(zip(expected, got), start=1):
        assert difference(want, have, path=f"call {call}") is None
    stats = compiled._magpy_compiled.stats
    assert (stats.graphs, stats.cache_hits, stats.fallbacks) == (1, 1, 0)


def test_the_public_split_holds_these_architectures():
    public = select("public")
    assert set(ARCHITECTURES) <= set(public) and len(public) > 300


def test_tiny_configs_shrink_sizes_and_keep_lists_per_layer():
    shrunk = shrink({"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                     "num_key_value_heads": 8, "intermediate_size": 11008, "vocab_size": 32000,
                     "pad_token_id": 31999, "layer_types": ["full"] * 32, "num_local_experts": 8,
                     "per_layer_config": {"3": {}, "30": {}},
                     "rope_parameters": {"mrope_section": [16, 24, 24]},
                     "text_config": {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 4}})
    assert (shrunk["hidden_size"], shrunk["num_hidden_layers"], shrunk["num_attention_heads"]) == (32, 2, 2)
    assert shrunk["num_key_value_heads"] == 1                 # fewer key/value heads than heads stay fewer
    assert shrunk["intermediate_size"] == 36                  # experts: 16-byte aligned
    assert shrunk["vocab_size"] == 99 and shrunk["pad_token_id"] < 99
    assert shrunk["layer_types"] == ["full", "full"]          # one entry per layer
    assert shrunk["per_layer_config"] == {}                   # layers 3 and 30 are gone
    assert sum(shrunk["rope_parameters"]["mrope_section"]) == 8
    assert (shrunk["text_config"]["hidden_size"], shrunk["text_config"]["num_hidden_layers"]) == (32, 2)


@pytest.mark.parametrize("name", ["hf_gpt2", "hf_llama"])
def test_a_training_step_through_a_compiled_zoo_model_matches_eager(name):
    from magpy import zoo

    spec = zoo.get(name)
    (eager, inputs), (model, _) = spec.make("small"), spec.make("small")
    eager.train()
    model.train()
    compiled = magpy.compile(model)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (eager, model)]
    for step in range(2):
        for m, run, opt in zip((eager, model), (eager, compiled), optimizers):
            opt.zero_grad()
            run(*inputs).last_hidden_state.pow(2).mean().backward()
            opt.step()
        for (pname, p), q in zip(eager.named_parameters(), model.parameters()):
            assert torch.allclose(p.grad, q.grad, rtol=1e-4, atol=1e-5), (step, pname)
            assert torch.allclose(p, q, rtol=1e-4, atol=1e-5), (step, pname)
    stats = compiled._magpy_compiled.stats
    assert stats.fallbacks == 0 and stats.graphs >= 1


@pytest.mark.parametrize("model_type", ["bert", "gpt2"])
def test_six_sequence_lengths_compile_twice(model_type):
    # (automatic dynamic shapes: the first call static, the second symbolic in the sequence length,
    # which then serves every later length; with an attention mask whose padding moves)
    model, config = build(model_type)
    compiled = magpy.compile(model, backend="eager")
    with torch.no_grad():
        for length in (5, 8, 11, 16, 23, 31):
            ids = torch.randint(0, config.vocab_size, (2, length), generator=torch.Generator().manual_seed(length))
            mask = torch.ones(2, length, dtype=torch.long)
            mask[1, length // 2:] = 0
            want = model(input_ids=ids, attention_mask=mask)
            have = compiled(input_ids=ids, attention_mask=mask)
            assert difference(want, have, path=f"length {length}") is None
    stats = compiled._magpy_compiled.stats
    assert stats.compiles <= 2 and stats.fallbacks == 0 and stats.eager_calls == 0, stats
