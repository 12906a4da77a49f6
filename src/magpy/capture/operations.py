"""Generic instructions (operators, container builds, formatting, slices, ``except`` matching): the
provenance of what each makes, and the graph ops when tensors are involved. ``OPERATIONS`` maps an
instruction to its rule.
"""
import collections
import itertools
import operator

import torch


from ..interp.protocols import NATIVE_BINARY, NATIVE_COMPARE
from .guards import ValueGuard
from .sources import Const, Expr, Source
from .values import Traced, UNKNOWN, _NOT_WRITTEN, _hkey, _holds_tensor, _is_tensor, _pinned
from .iteration import _elements, _op_for_iter, _op_for_iter_end, _op_get_iter, _op_unpack, _op_unpack_ex


# ---- generic operations: provenance and graph recording per opcode --------------------------------------

def _op_binary(obs, k, inputs, provs, outputs):
    a, b = inputs
    fn = NATIVE_BINARY[k]
    if fn in (operator.add, operator.iadd) and (type(a) is list and type(b) is list or type(a) is tuple and
                                                 type(b) is tuple or _shape_of_graph_sizes(obs, a, b)):
        return _op_concat(obs, fn, inputs, provs, outputs[0])
    if k >= 13 and type(a) in _IN_PLACE_CONTAINERS and outputs[0] is a:
        return [_op_in_place(obs, fn, a, b, provs)]
    provs = [obs.effective(v, p) for v, p in zip(inputs, provs)]
    if k >= 13 and not _is_tensor(a) and type(a) not in (list, dict, set):
        fn = NATIVE_BINARY[k - 13]  # ``n += t`` on an immutable number is ``n = n + t`` (fx cannot write ``0 += t``)
    if type(outputs[0]) is str and (_holds_tensor(a) or _holds_tensor(b)):
        return [obs.traced_op(fn, (a, b), provs)]  # ``"%s" % t``: the graph formats it again every call
    if _is_tensor(a) or _is_tensor(b) or _is_tensor(outputs[0]):
        obs.record(fn, (a, b), provs, None, None, outputs[0])
        return [None]
    return [_derive(fn, inputs, provs, obs)]


_TUPLES = (tuple, torch.Size)


def _shape_of_graph_sizes(obs, a, b):
    """``x.size()[:-1] + (nf,)`` where the graph computes some of the sizes: the elements of both, as
    tuples are concatenated (other shapes are values like any other: ``sample_shape + batch_shape``)."""
    return type(a) in _TUPLES and type(b) in _TUPLES and (obs.holds_traced(a) or obs.holds_traced(b))
_IN_PLACE_CONTAINERS = (list, dict, set, collections.deque, collections.OrderedDict, collections.defaultdict)


def _op_in_place(obs, fn, target, other, provs):
    """``xs *= n``, ``d |= e``, ``s -= t`` … on a container: it changed where it is. What it holds is
    followed for ``xs *= n`` (the count guarded); otherwise it is unknown from here when anything
    involved has a provenance. Returns the target's provenance."""
    if isinstance(provs[0], Source):
        return obs.outside_state.in_place(fn, target, provs[0], other, provs[1])
    if provs[0] is UNKNOWN:
        obs.unsupported(f"{getattr(fn, '__name__', fn)} changes a container of unknown origin in place")
    tracked = obs.sets.pop(id(target), None) if type(target) is set else None
    entry = obs.contents.get(id(target))
    before = entry[1] if entry is not None and entry[0] is target else None
    if tracked is not None and tracked[0] is target:
        before = []  # (a set whose elements were followed: not through set operators)
    if fn is operator.iadd and type(target) is list:
        _op_list_extend_target(obs, target, other, provs[1])  # (``hooks += d.values()``: an extend)
        return provs[0]
    if fn is operator.imul and type(target) is list and type(other) is int:
        obs.need(other, provs[1])
        if before is not None:
            obs.contents[id(target)] = (target, list(before) * other if type(before) is list else None)
        return provs[0]
    if fn is operator.ior and type(target) is dict and isinstance(other, dict) and type(before) in (dict, type(None)):
        provs_now = dict(before) if before is not None else dict.fromkeys(target)
        provs_now.update(obs._dict_provs(other, provs[1]))  # (``d |= e`` is ``d.update(e)``)
        obs.contents[id(target)] = (target, provs_now)
        return provs[0]
    if before is not None or obs.effective(other, provs[1]) is not None:
        dict.__setitem__(obs.contents, id(target), (target, None))
    return provs[0]


def _op_concat(obs, fn, inputs, provs, result):
    """``xs + ys`` / ``xs += ys`` on lists or tuples: the elements of both, each with its provenance."""
    a, b = inputs
    if result is a:  # ``xs += ys`` grew the list in place
        if isinstance(provs[0], Source):
            if obs.change_unread(list.extend, a, provs[0], (b,), [provs[1]], {}, None) is _NOT_WRITTEN:
                obs.outside_state.call(list.extend, a, provs[0], (b,), [provs[1]], {}, {}, None)
            return [provs[0]]
        _op_list_extend_target(obs, a, b, provs[1])
        return [provs[0]]
    left, right = _elements(obs, a, provs[0]), _elements(obs, b, provs[1])
    both = left + right if left is not None and right is not None else None
    return [None if obs.holds(result, both) else UNKNOWN]


def _op_compare(obs, k, inputs, provs, outputs):
    a, b = inputs
    if any(obs.holds_traced(v) for v in inputs):
        # ``hx.size() != (layers, int(batch_sizes[0]), hidden)``: a tuple holding numbers the graph
        # computes, compared in the graph
        return [obs.traced_op(NATIVE_COMPARE[k], inputs, provs)]
    provs = [obs.effective(v, p) for v, p in zip(inputs, provs)]
    fn = NATIVE_COMPARE[k]
    if _is_tensor(a) or _is_tensor(b) or _is_tensor(outputs[0]):
        obs.record(fn, (a, b), provs, None, None, outputs[0])
        return [None]
    return [_derive(fn, inputs, provs, obs)]


def _op_unary(fn):
    def op(obs, arg, inputs, provs, outputs):
        provs = [obs.effective(v, p) for v, p in zip(inputs, provs)]
        if _is_tensor(inputs[0]):
            if fn in (operator.not_, operator.truth):
                # ``not t``: a Python bool of tensor data, computed by the graph (a branch on it is
                # guarded by rerunning it)
                return [obs.scalar_of(fn, inputs, provs, outputs[0])]
            obs.record(fn, inputs, provs, None, None, outputs[0])
            return [None]
        return [_derive(fn, inputs, provs, obs)]
    return op


def _derive(fn, inputs, provs, obs=None):
    """Provenance of ``fn(*inputs)``: an expression over the entry state, a graph node when the graph
    computes an input (``obs`` given; else unknown), None for constants."""
    if all(p is None for p in provs):
        return None
    if any(p is UNKNOWN for p in provs):
        return UNKNOWN
    if any(type(p) is Traced for p in provs):
        return obs.traced_op(fn, inputs, provs) if obs is not None else UNKNOWN
    return Expr(fn, tuple(p if p is not None else Const(v) for v, p in zip(inputs, provs)))


def _op_is(obs, invert, inputs, provs, outputs):
    provs = [obs.effective(v, p) for v, p in zip(inputs, provs)]
    return [_derive(operator.is_not if invert else operator.is_, inputs, provs)]


def _op_contains(obs, invert, inputs, provs, outputs):
    item, container = inputs
    changed = obs.set_changes.get(id(container))
    if changed is not None and changed[0] is container and isinstance(provs[1], Source):
        # an outside set the call added to / discarded from: those items are known, others are as on entry
        obs.need(item, provs[0])
        if item in changed[1]:
            return [None]
        fn = _not_contains if invert else operator.contains
        return [Expr(fn, (provs[1], provs[0] if provs[0] is not None else Const(item)))]
    if type(container) is set and provs[1] is None and obs.sets.get(id(container), (None,))[0] is container \
            and _pinned(item, provs[0]) and obs.set_pinned(container):
        return [None]  # membership by identity among objects whose identities replay (a memo set)
    if _is_tensor(container):
        return [_tensor_contains(obs, invert)]
    if _is_tensor(item):
        obs.unsupported("`in` with a tensor on its left (compared by ==: graph break)")
    fn = _not_contains if invert else operator.contains
    if isinstance(provs[1], (Source, Expr)) and obs.items_written.get(id(container)) is container and \
            isinstance(container, dict) and not obs.contents.changed_outside(container):
        # one key of an outside dict the call wrote items of: a key it wrote is there by its own doing (or
        # gone, deleted); any other is as on entry (no need to follow the whole dict for it)
        try:
            written = obs.written.get((id(container), ("item", _hkey(item))), _NOT_WRITTEN)
        except TypeError:
            written = UNKNOWN
        if written is not UNKNOWN:
            obs.need(item, provs[0])
            if written is not _NOT_WRITTEN:
                return [None]
            return [Expr(fn, (provs[1], provs[0] if provs[0] is not None else Const(item)))]
    provs = [obs.effective(v, p) for v, p in zip(inputs, provs)]
    return [_derive(fn, (container, item), (provs[1], provs[0]), obs)]  # (``x.size(0) in (3, 5)``)


def _tensor_contains(obs, invert):
    """``x in t``: ``Tensor.__contains__`` ran interpreted just now (``(x == t).any().item()``): its answer
    is a value the graph computes, which a branch then decides on as on any tensor data."""
    r = obs.vm.returned
    if r is None or r[0].back is not obs.frame or type(r[1]) is not bool:
        obs.unsupported("`in` on a tensor whose __contains__ MagPy did not follow (graph break)")
    if not invert or r[2] is None:
        return r[2]
    return _derive(operator.not_, (r[1],), (r[2],), obs)


def _not_contains(container, item):
    return item not in container


def _op_build(kind):
    def op(obs, n, inputs, provs, outputs):
        if any(p is not None for p in provs) or kind is list:
            obs.contents[id(outputs[0])] = (outputs[0], list(provs))
        return [None]
    return op


def _op_list_to_tuple(obs, arg, inputs, provs, outputs):
    """``(a, *rest)``: the tuple holds the list's elements, with their provenance."""
    return [None if obs.holds(outputs[0], _elements(obs, inputs[0], provs[0])) else UNKNOWN]


def _op_build_map(obs, n, inputs, provs, outputs):
    d = outputs[0]
    keys, key_provs, value_provs = inputs[0::2], provs[0::2], provs[1::2]
    for k, kp in zip(keys, key_provs):
        obs.need(k, kp)
    if any(p is not None for p in value_provs):
        obs.contents[id(d)] = (d, dict(zip(keys, value_provs)))
    return [None]


def _op_build_const_key_map(obs, n, inputs, provs, outputs):
    d = outputs[0]
    if any(p is not None for p in provs[:-1]):
        obs.contents[id(d)] = (d, dict(zip(inputs[-1], provs[:-1])))
    return [None]


def _op_map_add(obs, n, inputs, provs, outputs):
    key, value = inputs
    obs.need(key, provs[0])
    target = obs.frame.stack[-n]
    entry = obs.contents.get(id(target))
    if entry is not None and entry[0] is target:
        if type(entry[1]) is dict:  # (else what it holds is unknown already)
            entry[1][key] = provs[1]
    elif provs[1] is not None:
        obs.contents[id(target)] = (target, {**dict.fromkeys(target), key: provs[1]})
    return None


def _op_list_extend(obs, n, inputs, provs, outputs):
    return _op_list_extend_target(obs, obs.frame.stack[-n], inputs[0], provs[0])


def _op_list_extend_target(obs, target, iterable, prov):
    """``target`` (a list made here) grew by the elements of ``iterable``."""
    entry = obs.contents.get(id(target))
    if entry is not None and entry[0] is target and entry[1] is None:
        return None  # (what it holds is unknown already)
    added = _elements(obs, iterable, prov)
    count = len(target) - (len(entry[1]) if entry is not None and entry[0] is target else 0)
    if added is None and type(prov) is Expr and prov.fn is itertools.repeat and len(prov.args) == 2:
        # ``[a, *repeat(1, n - 2), b]``: n decided how many; each is the repeated value
        value, times = prov.args
        if type(times) is not Const:
            obs.guard(ValueGuard(times, count))
        added = [None if type(value) is Const else value] * count
    elif added is None and prov is None and type(iterable) is itertools.repeat:
        added = [None] * count  # a constant repeated a constant number of times
    if added is None or (type(iterable) in (list, tuple) and len(added) != len(iterable)):
        added = [UNKNOWN] * count
    if entry is not None and entry[0] is target:
        entry[1].extend(added[:count])
    elif any(p is not None for p in added):
        obs.contents[id(target)] = (target, [None] * (len(target) - len(added)) + list(added))
    return None


def _op_dict_update(obs, n, inputs, provs, outputs):
    target = obs.frame.stack[-n]
    source = inputs[0]
    entry = obs.contents.get(id(target))
    added = obs._dict_provs(source, provs[0]) if type(source) is dict else dict.fromkeys(source, UNKNOWN)
    if entry is not None and entry[0] is target and type(entry[1]) is dict:
        entry[1].update(added)
    elif any(p is not None for p in added.values()):
        obs.contents[id(target)] = (target, {**dict.fromkeys(target), **added})
    return None


def _op_set_add(obs, n, inputs, provs, outputs):
    target = obs.frame.stack[-n]
    if type(target) is set:
        return obs.set_added(target, inputs[0], provs[0])
    if any(p is not None for p in provs):
        obs.contents[id(target)] = (target, None)  # a set holding values from outside: not replayable
    return None


def _op_set_update(obs, n, inputs, provs, outputs):
    target = obs.frame.stack[-n]
    if type(target) is set:
        return obs.set_added(target, inputs[0], provs[0], many=True)
    return _op_set_add(obs, n, inputs, provs, outputs)


def _op_build_set(obs, n, inputs, provs, outputs):
    s = outputs[0]
    obs.sets[id(s)] = (s, [])
    for v, p in zip(inputs, provs):
        obs.set_added(s, v, p)
    return [None]


def _op_list_append(obs, n, inputs, provs, outputs):
    # the list is below the appended value; its identity is on the real stack (not among inputs)
    frame = obs.frame
    target = frame.stack[-n] if frame is not None else None
    if target is not None:
        entry = obs.contents.get(id(target))
        if entry is not None and entry[0] is target:
            entry[1].append(provs[0])
        elif provs[0] is not None:
            obs.contents[id(target)] = (target, [None] * (len(target) - 1) + [provs[0]])
    return None

def _op_before_with(obs, arg, inputs, provs, outputs):
    """``with m:``: a native lock's ``__enter__`` took it (followed by ``locks``); for any other manager what
    it hands back is of unknown origin when the manager has a provenance."""
    if obs.lock_entered(inputs[0]):
        return [None, None]  # (the lock's own ``__exit__``, and ``True``)
    return None if all(p is None for p in provs) else [UNKNOWN] * len(outputs)


def _op_neutral(obs, arg, inputs, provs, outputs):
    return [p for p in provs[:len(outputs)]] + [None] * (len(outputs) - len(provs))


def _op_format(obs, arg, inputs, provs, outputs):
    if any(_is_tensor(x) for x in inputs):
        # a tensor's values as text (``rules.TENSOR_TEXT``): the graph formats them again on every call
        return [_tensor_text(obs, _FORMATS[arg & 3 if type(arg) is int else 0], inputs, provs, outputs[0])]
    conversion = arg & 3 if type(arg) is int else 0  # FORMAT_VALUE's !s / !r / !a
    if not conversion and type(inputs[0]) in (int, float, str, bool) and \
            all(type(spec) is str for spec in inputs[1:]):
        return [_derive(_format_value, inputs, provs, obs)]
    return [None if all(p is None for p in provs) else UNKNOWN]


def _tensor_text(obs, fn, inputs, provs, text):
    """The provenance of ``text``, a tensor formatted: as the tensor's ``__format__`` (interpreted just now for
    this frame) computed it, else ``fn`` of the inputs in the graph."""
    r = obs.vm.returned
    if r is not None and r[1] is text and r[0].back is obs.frame and type(r[2]) is Traced:
        return r[2]
    return obs.traced_op(fn, inputs, provs)


def _format_value(value, spec=""):
    return format(value, spec)


def _format_str(value, spec=""):
    return format(str(value), spec)


def _format_repr(value, spec=""):
    return format(repr(value), spec)


def _format_ascii(value, spec=""):
    return format(ascii(value), spec)


#: FORMAT_VALUE's conversions (none, !s, !r, !a)
_FORMATS = (_format_value, _format_str, _format_repr, _format_ascii)


def _concat(*parts):
    return "".join(parts)


def _op_format_simple(obs, arg, inputs, provs, outputs):
    if any(_is_tensor(x) for x in inputs):
        return [_tensor_text(obs, _format_value, inputs, provs, outputs[0])]
    if type(inputs[0]) not in (int, float, str, bool, type(None)):
        return _op_format(obs, arg, inputs, provs, outputs)
    return [_derive(_format_value, inputs, provs, obs)]


def _op_build_string(obs, n, inputs, provs, outputs):
    return [_derive(_concat, inputs, provs, obs)]


def _op_build_slice(obs, n, inputs, provs, outputs):
    provs = list(provs)
    for k, x in enumerate(inputs):
        if _is_tensor(x):
            # ``losses[:k]`` for a count the graph computes: a number traced as ``t.item()`` is
            # (the slice's result has as many elements as the data says)
            if x.numel() != 1 or x.is_floating_point() or x.is_complex():
                obs.unsupported("a tensor used as a slice bound (graph break)")
            provs[k] = obs.scalar_of(None, (x,), (provs[k],), None, method="__index__")
    return [_derive(slice, inputs, provs, obs)]


def _op_make_function(obs, arg, inputs, provs, outputs):
    obs.made[id(outputs[0])] = outputs[0]  # (a new function object each call: a closure holds its cells)
    return [None]


def _op_push_exc_info(obs, arg, inputs, provs, outputs):
    return [None, provs[0]]  # (the exception handled before: restored by POP_EXCEPT)


def _op_check_exc_match(obs, arg, inputs, provs, outputs):
    """``except E:``: which way it goes depends on the exception's type, fixed where it was raised."""
    exc = obs.frame.stack[-2]
    known = obs.raises.get(id(exc))
    if known is None or known[0] is not exc or not known[1]:
        return [UNKNOWN]
    obs.need(inputs[0], provs[0])
    return [None]

_OPERATIONS = {
    "BINARY_OP": _op_binary,
    "COMPARE_OP": _op_compare,
    "COMPARE_OP_BOOL": _op_compare,
    "UNARY_NEGATIVE": _op_unary(operator.neg),
    "UNARY_POSITIVE": _op_unary(operator.pos),
    "UNARY_INVERT": _op_unary(operator.invert),
    "UNARY_NOT": _op_unary(operator.not_),
    "TO_BOOL": _op_unary(operator.truth),
    "IS_OP": _op_is,
    "CONTAINS_OP": _op_contains,
    "BUILD_TUPLE": _op_build(tuple),
    "BUILD_LIST": _op_build(list),
    "LIST_TO_TUPLE": _op_list_to_tuple,
    "INTRINSIC_LIST_TO_TUPLE": _op_list_to_tuple,
    "GET_ITER": _op_get_iter,
    "FOR_ITER": _op_for_iter,
    "FOR_ITER_END": _op_for_iter_end,
    "UNPACK_SEQUENCE": _op_unpack,
    "LIST_APPEND": _op_list_append,
    "LIST_EXTEND": _op_list_extend,
    "DICT_UPDATE": _op_dict_update,
    "DICT_MERGE": _op_dict_update,
    "SET_ADD": _op_set_add,
    "SET_UPDATE": _op_set_update,
    "BUILD_SET": _op_build_set,
    "BUILD_MAP": _op_build_map,
    "BUILD_CONST_KEY_MAP": _op_build_const_key_map,
    "MAP_ADD": _op_map_add,
    "FORMAT_VALUE": _op_format,
    "FORMAT_SIMPLE": _op_format_simple,
    "FORMAT_WITH_SPEC": _op_format,
    "BUILD_STRING": _op_build_string,
    "BUILD_SLICE": _op_build_slice,
    "PUSH_EXC_INFO": _op_push_exc_info,
    "MAKE_FUNCTION": _op_make_function,
    "MAKE_FUNCTION_313": _op_make_function,
    "CHECK_EXC_MATCH": _op_check_exc_match,
    "UNPACK_EX": _op_unpack_ex,
    "BEFORE_WITH": _op_before_with,
}
#: opcodes that may see tensors without computing on them
_TENSOR_NEUTRAL = {"BUILD_SLICE", "BUILD_MAP", "BUILD_CONST_KEY_MAP", "BUILD_SET", "LIST_APPEND",
                   "LIST_EXTEND", "DICT_UPDATE", "DICT_MERGE", "MAP_ADD", "SET_ADD", "KW_NAMES",
                   "MAKE_FUNCTION", "SET_FUNCTION_ATTRIBUTE", "BEFORE_WITH", "WITH_EXCEPT_START",
                   "PUSH_EXC_INFO", "POP_EXCEPT", "RAISE_VARARGS", "RERAISE", "CHECK_EXC_MATCH",
                   "CALL_FUNCTION_EX", "CALL_FUNCTION_EX_313", "RETURN_CONST", "LOAD_BUILD_CLASS",
                   "GET_LEN", "MATCH_SEQUENCE", "MATCH_MAPPING", "SWAP", "COPY",
                   "END_FOR", "END_FOR_313", "INTRINSIC_LIST_TO_TUPLE", "YIELD_VALUE",
                   "GET_YIELD_FROM_ITER", "SEND", "SEND_311", "END_SEND", "RETURN_GENERATOR",
                   "IMPORT_NAME", "IMPORT_FROM"}
