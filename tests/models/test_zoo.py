"""The model zoo: every model builds, runs deterministically in eval mode, and has the documented shapes."""
import importlib.util

import pytest
import torch

from magpy import zoo
from magpy.zoo import bert, blockdrop, quant_resnet

# Output structure of each model at size "small": nested tuples / dicts of shapes.
EXPECTED_SHAPES = {
    "resnet": (2, 10),
    "densenet": (2, 10),
    "bert": {"last_hidden_state": (2, 32, 64), "pooler_output": (2, 64)},
    "gpt": (2, 32, 512),
    "lstm": ((16, 4, 64), ((2, 4, 64), (2, 4, 64))),
    "monodepth": ((1, 2, 64, 128), (1, 2, 32, 64), (1, 2, 16, 32), (1, 2, 8, 16)),
    "blockdrop": ((4, 10), (4, 6)),
    "quant_resnet": (2, 10),
    "tridentnet": (6, 10),
}
if importlib.util.find_spec("transformers") is not None:
    EXPECTED_SHAPES.update({"hf_bert": {"last_hidden_state": (2, 32, 64), "pooler_output": (2, 64)},
                            "hf_gpt2": {"last_hidden_state": (2, 32, 64)},
                            "hf_llama": {"last_hidden_state": (2, 32, 64)}})


def shapes(value):
    if isinstance(value, torch.Tensor):
        return tuple(value.shape)
    if isinstance(value, dict):
        return {k: shapes(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return tuple(shapes(v) for v in value)
    raise TypeError(f"unexpected output element {type(value).__name__}")


@pytest.fixture(scope="module")
def built():
    """Each small model and its example inputs, built once for the module."""
    return {name: zoo.get(name).make("small") for name in zoo.names()}


def test_registry_lists_every_model_with_a_matching_spec():
    assert zoo.names() == list(EXPECTED_SHAPES)
    for name in zoo.names():
        spec = zoo.get(name)
        assert spec.name == name
        assert spec.summary and spec.exercises


def test_unknown_model_is_a_key_error_naming_the_known_ones():
    with pytest.raises(KeyError, match="resnet"):
        zoo.get("alexnet")


def test_unknown_size_is_a_value_error():
    with pytest.raises(ValueError, match="small"):
        zoo.get("gpt").make("huge")


@pytest.mark.parametrize("name", list(EXPECTED_SHAPES))
def test_model_runs_twice_identically_with_expected_shapes(built, name):
    model, inputs = built[name]
    assert not any(m.training for m in model.modules())
    with torch.no_grad():
        first = model(*inputs)
        second = model(*inputs)
    assert shapes(first) == EXPECTED_SHAPES[name]
    torch.testing.assert_close(first, second, rtol=0, atol=0)


@pytest.mark.parametrize("name", ["gpt", "quant_resnet"])
def test_build_is_seeded_and_leaves_the_global_rng_alone(name):
    torch.manual_seed(123)
    expected_draw = torch.rand(3)
    torch.manual_seed(123)
    (a, a_inputs), (b, b_inputs) = zoo.get(name).make(), zoo.get(name).make()
    assert torch.equal(torch.rand(3), expected_draw)
    for (key, pa), pb in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(pa, pb), key
    torch.testing.assert_close(a_inputs, b_inputs, rtol=0, atol=0)


def test_bert_chunked_feed_forward_matches_unchunked(built):
    model, inputs = built["bert"]
    layer = model.layer[0]
    hidden = torch.randn(2, 32, 64)
    assert 0 < layer.chunk_size_feed_forward < hidden.shape[1]
    with torch.no_grad():
        chunked = bert.apply_chunking_to_forward(layer.feed_forward_chunk, 8, 1, hidden)
        whole = layer.feed_forward_chunk(hidden)
    torch.testing.assert_close(chunked, whole)


def test_bert_chunking_checks_the_forward_signature():
    with pytest.raises(ValueError, match="expects 2 arguments"):
        bert.apply_chunking_to_forward(lambda a, b: a, 0, 1, torch.zeros(1, 4))


def test_blockdrop_policy_runs_skips_and_masks_blocks(built):
    model, inputs = built["blockdrop"]
    with torch.no_grad():
        _, policy = model(*inputs)
    per_block = policy.sum(0)
    batch = policy.shape[0]
    assert (per_block == 0).any(), "some block is dropped for the whole batch (the skip branch)"
    assert (per_block == batch).any(), "some block runs for the whole batch"
    assert ((per_block > 0) & (per_block < batch)).any(), "some block runs for part of the batch (masking)"


def test_blockdrop_decision_is_far_from_the_threshold(built):
    model, (images,) = built["blockdrop"]
    with torch.no_grad():
        logits = model.agent.logit(model.agent.features(images))
    assert logits.abs().min() > 1.0


def test_monodepth_keeps_disparities_on_self(built):
    model, inputs = built["monodepth"]
    with torch.no_grad():
        disparities = model(*inputs)
    assert disparities[0] is model.disp1 and disparities[3] is model.disp4
    assert model.udisp4.shape[-2:] == disparities[2].shape[-2:]


def test_quant_resnet_is_calibrated_and_quantizes_onto_its_grid(built):
    model, _ = built["quant_resnet"]
    act = model.layer1[0].act1
    assert float(act.scale) != 1.0 and not act.observing
    x = torch.randn(1000)
    q = quant_resnet.FakeQuantize.apply(x, 0.05, 3, 0, 255)
    steps = q / 0.05 + 3
    torch.testing.assert_close(steps, steps.round(), rtol=0, atol=1e-3)
    assert steps.min() >= 0 and steps.max() <= 255


def test_tridentnet_test_branch_switch_runs_one_branch():
    model, (images,) = zoo.get("tridentnet").make("small")
    for module in model.modules():
        if hasattr(module, "test_branch_idx"):
            module.test_branch_idx = 1
    with torch.no_grad():
        assert model(images).shape == (2, 10)
