"""Identity tables: looking any object up runs none of its code."""
from magpy.interp.identity import IdentityDict, IdentitySet


class Touchy:
    """Every protocol a dict or set lookup could call raises."""

    def __hash__(self):
        raise AssertionError("__hash__ ran")

    def __eq__(self, other):
        raise AssertionError("__eq__ ran")


def test_identity_set_looks_up_objects_without_hashing_or_comparing_them():
    member = Touchy()
    table = IdentitySet([len, member])
    assert member in table and len in table
    assert Touchy() not in table


def test_identity_dict_tells_equal_keys_apart():
    a, b = [1], [1]
    table = IdentityDict([(a, "a")])
    assert table.get(a) == "a" and table[a] == "a"
    assert b not in table and table.get(b) is None


def test_identity_dict_looks_up_unhashable_objects():
    key = Touchy()
    table = IdentityDict()
    table[key] = 1
    assert table.get(key) == 1 and table.get(Touchy(), 2) == 2
