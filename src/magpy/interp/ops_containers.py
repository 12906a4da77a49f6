"""Handlers: building, extending and unpacking containers."""
from .decode import PY, handler
from . import protocols
from .ops_calls import function_str


def _iterable(tp):
    return protocols.lookup(tp, "__iter__") is not protocols.MISSING or \
        protocols.lookup(tp, "__getitem__") is not protocols.MISSING


def _pop_n(stack, n):
    if not n:
        return []
    items = stack[-n:]
    del stack[-n:]
    return items


@handler("BUILD_TUPLE")
def build_tuple(f, n, i):
    f.stack.append(tuple(_pop_n(f.stack, n)))
    return i + 1


@handler("BUILD_LIST")
def build_list(f, n, i):
    f.stack.append(_pop_n(f.stack, n))
    return i + 1


@handler("BUILD_SET")
def build_set(f, n, i):
    f.stack.append(set(_pop_n(f.stack, n)))
    return i + 1


@handler("BUILD_MAP")
def build_map(f, n, i):
    items = _pop_n(f.stack, 2 * n)
    d = {}
    for k in range(0, 2 * n, 2):
        d[items[k]] = items[k + 1]
    f.stack.append(d)
    return i + 1


@handler("BUILD_CONST_KEY_MAP")
def build_const_key_map(f, n, i):
    keys = f.stack.pop()
    values = _pop_n(f.stack, n)
    f.stack.append(dict(zip(keys, values)))
    return i + 1


@handler("BUILD_SLICE")
def build_slice(f, n, i):
    f.stack.append(slice(*_pop_n(f.stack, n)))
    return i + 1


@handler("LIST_APPEND")
def list_append(f, n, i):
    v = f.stack.pop()
    f.stack[-n].append(v)
    return i + 1


@handler("SET_ADD")
def set_add(f, n, i):
    v = f.stack.pop()
    f.stack[-n].add(v)
    return i + 1


@handler("MAP_ADD")
def map_add(f, n, i):
    stack = f.stack
    value = stack.pop()
    key = stack.pop()
    stack[-n][key] = value
    return i + 1


@handler("LIST_EXTEND")
def list_extend(f, n, i):
    v = f.stack.pop()
    target = f.stack[-n]
    if type(v) in (list, tuple):
        target.extend(v)
        return i + 1
    if not _iterable(type(v)):
        raise TypeError(f"Value after * must be an iterable, not {type(v).__name__}")
    target.extend(protocols.get_iter(f.vm, v))
    return i + 1


@handler("SET_UPDATE")
def set_update(f, n, i):
    v = f.stack.pop()
    f.stack[-n].update(v)
    return i + 1


def reads_storage(mapping):
    """Does CPython's dict merge (``{**m}``, ``f(**m)``, ``d.update(m)``) read ``m``'s own storage? Only for a
    dict whose iteration is dict's; any other mapping is read through its ``keys()`` and ``__getitem__``
    (an OrderedDict subclass's Python ``__getitem__`` runs; a dict subclass's does not)."""
    return isinstance(mapping, dict) and type(mapping).__iter__ is dict.__iter__


def mapping_keys(f, name, n, v):
    """The keys a merge reads from ``v`` (raising as CPython does for a value that is no mapping)."""
    if not hasattr(v, "keys"):
        if name == "DICT_UPDATE":
            raise TypeError(f"'{type(v).__name__}' object is not a mapping")
        raise TypeError(f"{function_str(_callee(f.stack, n))} argument after ** must be a mapping, "
                        f"not {type(v).__name__}")
    return list(dict.keys(v) if reads_storage(v) else v.keys())


def merge_key(f, name, n, target, key):
    """May ``key`` go into ``target``? ``f(**m)`` refuses a keyword given twice; ``{**m}`` overrides."""
    if name == "DICT_MERGE" and key in target:
        raise TypeError(f"{function_str(_callee(f.stack, n))} got multiple values for keyword argument '{key}'")


def _merge(name):
    def run(f, n, i):
        v = f.stack.pop()
        target = f.stack[-n]
        for k in mapping_keys(f, name, n, v):
            merge_key(f, name, n, target, k)
            target[k] = dict.__getitem__(v, k) if reads_storage(v) else protocols.get_item(f.vm, v, k)
        return i + 1
    return run


handler("DICT_UPDATE")(_merge("DICT_UPDATE"))
handler("DICT_MERGE")(_merge("DICT_MERGE"))


def _callee(stack, n):
    # [NULL, callable, args, kwargs] up to 3.12; [callable, NULL, args, kwargs] from 3.13
    if PY >= (3, 13):
        return stack[-n - 3]
    return stack[-n - 2]


@handler("LIST_TO_TUPLE", "INTRINSIC_LIST_TO_TUPLE")
def list_to_tuple(f, arg, i):
    f.stack[-1] = tuple(f.stack[-1])
    return i + 1


def _top_prov(f):
    """The provenance of the value on top of the stack (observer on), for a dunder it reaches."""
    p = f.pstack
    return p[len(f.stack) - 1] if p is not None and len(p) >= len(f.stack) else None


@handler("UNPACK_SEQUENCE")
def unpack_sequence(f, n, i):
    stack = f.stack
    prov = _top_prov(f)
    seq = stack.pop()
    tp = type(seq)
    if (tp is tuple or tp is list) and len(seq) == n:
        stack.extend(seq[::-1])
        return i + 1
    stack.extend(unpack_items(f.vm, seq, n, prov)[::-1])
    return i + 1


def unpack_items(vm, seq, n, prov=None):
    """The ``n`` items of ``seq`` as a list, or CPython's error for the wrong count or type."""
    tp = type(seq)
    if not _iterable(tp):
        raise TypeError(f"cannot unpack non-iterable {tp.__name__} object")
    it = protocols.get_iter(vm, seq, prov)
    items = []
    for v in it:
        items.append(v)
        if len(items) > n:
            raise ValueError(f"too many values to unpack (expected {n})")
    if len(items) < n:
        raise ValueError(f"not enough values to unpack (expected {n}, got {len(items)})")
    return items


@handler("UNPACK_EX")
def unpack_ex(f, arg, i):
    before = arg & 0xFF
    after = arg >> 8
    stack = f.stack
    prov = _top_prov(f)
    seq = stack.pop()
    tp = type(seq)
    if not _iterable(tp):
        raise TypeError(f"cannot unpack non-iterable {tp.__name__} object")
    items = list(protocols.get_iter(f.vm, seq, prov))
    if len(items) < before + after:
        raise ValueError(f"not enough values to unpack (expected at least {before + after}, got {len(items)})")
    head = items[:before]
    tail = items[len(items) - after:] if after else []
    middle = items[before:len(items) - after]
    stack.extend(tail[::-1])
    stack.append(middle)
    stack.extend(head[::-1])
    return i + 1
