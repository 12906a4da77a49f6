"""Access paths and constants: equal when they denote the same thing, and built from user objects
without running their code."""
import torch

from magpy.capture.sources import ArgSource, Const, ItemSource


class Touchy:
    def __hash__(self):
        raise AssertionError("__hash__ ran")

    def __eq__(self, other):
        raise AssertionError("__eq__ ran")


def test_constants_of_user_objects_compare_and_hash_by_identity():
    obj = Touchy()
    assert Const(obj) == Const(obj) and hash(Const(obj)) == hash(Const(obj))
    assert Const(obj) != Const(Touchy())


def test_item_paths_with_user_object_keys_compare_by_identity():
    base = ArgSource("d", 0)
    key = Touchy()
    assert ItemSource(base, key) == ItemSource(base, key)
    assert len({ItemSource(base, key), ItemSource(base, key), ItemSource(base, Touchy())}) == 2


def test_constants_tell_apart_values_python_calls_equal():
    assert Const(0.0) != Const(-0.0)
    assert Const(1) != Const(1.0) and Const(1) != Const(True)
    assert Const((1, "a")) == Const((1, "a")) and Const(float("nan")) == Const(float("nan"))


def test_constants_of_equal_tensors_are_different_constants():
    assert Const(torch.ones(2)) != Const(torch.ones(2))
    assert Const(slice(torch.ones(()), 2)) != Const(slice(torch.ones(()), 2))
