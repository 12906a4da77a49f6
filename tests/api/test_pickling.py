"""Pickling compiled modules and functions, as ``torch.compile``'s can be: ``pickle`` / ``torch.save`` of a
compiled module gives, loaded, a compiled module of the user's own class with the same state and settings;
compiled code is never pickled (the loaded one compiles anew). Copies keep working."""
import copy
import io
import pickle

import pytest
import torch
import torch.nn as nn

import magpy


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3)
        self.fc = nn.Linear(8, 3)
        self.register_buffer("scale", torch.tensor(2.0))

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1)) * self.scale


@magpy.compile(backend="eager")
def decorated(x):
    return x.sin() + 1


def plain(x):
    return x.cos() * 2


def roundtrip(obj):
    return pickle.loads(pickle.dumps(obj))


@pytest.fixture
def model():
    torch.manual_seed(0)
    return SmallCNN().eval()


X = torch.randn(2, 1, 4, 4)


def test_a_compiled_module_pickles_and_loads_compiled(model):
    cm = magpy.compile(model, backend="eager", mode="reduce-overhead", dynamic=False)
    expected = cm(X)  # (compiled entries exist: they are not pickled)
    loaded = roundtrip(cm)
    assert isinstance(loaded, SmallCNN) and isinstance(loaded, nn.Module)
    assert loaded._magpy_compiled.settings() == cm._magpy_compiled.settings()
    assert loaded._magpy_compiled.stats.calls == 0
    torch.testing.assert_close(loaded(X), expected)
    torch.testing.assert_close(loaded(X), model(X))
    assert loaded._magpy_compiled.stats.compiles == 1 and loaded._magpy_compiled.stats.cache_hits == 1


def test_a_loaded_compiled_module_has_its_own_state(model):
    cm = magpy.compile(model, backend="eager")
    loaded = roundtrip(cm)
    assert loaded.state_dict().keys() == model.state_dict().keys()
    assert all(torch.equal(a, b) for a, b in zip(loaded.state_dict().values(), model.state_dict().values()))
    with torch.no_grad():
        loaded.fc.weight.zero_()
        loaded.fc.bias.zero_()
    assert torch.equal(loaded(X), torch.zeros(2, 3))
    assert model.fc.weight.abs().sum() > 0 and torch.equal(cm(X), model(X))


def test_torch_save_and_load_of_a_compiled_module(model):
    cm = magpy.compile(model, backend="eager")
    cm(X)
    buffer = io.BytesIO()
    torch.save(cm, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)  # (a whole module, as for torch.compile's: not weights only)
    assert isinstance(loaded, SmallCNN) and hasattr(loaded, "_magpy_compiled")
    torch.testing.assert_close(loaded(X), model(X))


def test_the_original_module_and_its_compiled_wrapper_pickle_together(model):
    cm = magpy.compile(model, backend="eager")
    original, compiled = roundtrip((model, cm))
    assert type(original) is SmallCNN and hasattr(compiled, "_magpy_compiled")
    assert compiled.fc is original.fc  # (what both held is one object after loading too)
    torch.testing.assert_close(compiled(X), original(X))


def test_deepcopy_of_a_compiled_module_is_compiled_and_independent(model):
    cm = magpy.compile(model, backend="eager")
    cm(X)
    twin = copy.deepcopy(cm)
    assert hasattr(twin, "_magpy_compiled") and twin.fc is not cm.fc
    with torch.no_grad():
        twin.scale.zero_()
    assert torch.equal(twin(X), torch.zeros(2, 3))
    torch.testing.assert_close(cm(X), model(X))
    assert model.scale.item() == 2.0


def test_a_shallow_copy_shares_submodules_not_attributes(model):
    cm = magpy.compile(model, backend="eager")
    other = copy.copy(cm)
    assert other.fc is cm.fc and hasattr(other, "_magpy_compiled")
    other.eval_note = "copy only"
    assert not hasattr(cm, "eval_note")
    torch.testing.assert_close(other(X), model(X))


def test_a_decorated_module_level_function_pickles_by_reference():
    assert roundtrip(decorated) is decorated
    assert torch.equal(roundtrip(decorated)(X), X.sin() + 1)


def test_a_compiled_module_level_function_pickles_as_compiled_again():
    compiled = magpy.compile(plain, backend="eager", dynamic=False)
    compiled(X)
    loaded = roundtrip(compiled)
    assert isinstance(loaded, type(compiled)) and loaded is not compiled
    assert loaded.settings() == compiled.settings()
    assert torch.equal(loaded(X), plain(X)) and loaded.stats.compiles == 1


def test_a_compiled_lambda_says_why_it_cannot_be_pickled():
    with pytest.raises(pickle.PicklingError, match="not a module-level name"):
        pickle.dumps(magpy.compile(lambda x: x + 1))
