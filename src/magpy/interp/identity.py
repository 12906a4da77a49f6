"""Tables keyed by object identity.

The VM and capture look up any object the program hands them in their tables (is this callable a
lookaside target, a protocol builtin, a rule's function?). A ``dict`` or ``set`` would hash it, and
compare it with ``==`` on a hash collision: the user's code would run inside ours, and may raise
(``__hash__`` that raises, ``__hash__ = None``, ``__eq__`` that raises or returns a tensor). Keyed by
``id``, a lookup runs nothing of the object's. A table holds its keys, so no other object can take
their ids while they are in it.
"""


class IdentityDict:
    """A mapping whose keys are told apart by identity alone."""
    __slots__ = ("_values", "_keys")

    def __init__(self, items=()):
        self._values = {}   # id(key) -> value
        self._keys = {}     # id(key) -> key (held: its id stays its own)
        for key, value in items:
            self[key] = value

    def __setitem__(self, key, value):
        self._keys[id(key)] = key
        self._values[id(key)] = value

    def __getitem__(self, key):
        try:
            return self._values[id(key)]
        except KeyError:
            raise KeyError(key) from None

    def get(self, key, default=None):
        return self._values.get(id(key), default)

    def __contains__(self, key):
        return id(key) in self._values


class IdentitySet:
    """A set whose members are told apart by identity alone."""
    __slots__ = ("_members",)

    def __init__(self, members=()):
        self._members = {id(m): m for m in members}   # id(member) -> member (held)

    def add(self, member):
        self._members[id(member)] = member

    def __contains__(self, member):
        return id(member) in self._members

    def __iter__(self):
        return iter(list(self._members.values()))
