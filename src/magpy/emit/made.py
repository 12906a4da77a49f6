"""Objects the call made, made again by an entry's mock: what the replay calls to rebuild them in the
state the first call left them (their ``__init__``'s own effects are replayed separately)."""
import collections


def set_state(obj, fields):
    """Give a new object the attributes the first call left it with (its ``__init__`` already ran
    then; its own side effects are replayed separately)."""
    obj.__dict__.update(fields)


def new_mapping(cls):
    """A fresh, empty dict of the program's class (its ``__init__`` ran on the first call; its effects are
    replayed separately)."""
    return dict.__new__(cls)


def fill_mapping(obj, items, fields):
    """Give a new dict of the program's class the items and attributes the first call left it with, through
    the base class's own ``__setitem__`` (the class's Python one ran on the first call)."""
    setitem = collections.OrderedDict.__setitem__ if isinstance(obj, collections.OrderedDict) else dict.__setitem__
    for key, value in items.items():
        setitem(obj, key, value)
    obj.__dict__.update(fields)


def rebuilt(fn, args, state):
    """What unpickling ``(fn, args, state)`` makes (3.12's range iterator reduces to a range from where
    it stands, with no state: pickle then calls no ``__setstate__``)."""
    made = fn(*args)
    if state is not None:
        made.__setstate__(state)
    return made
