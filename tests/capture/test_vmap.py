"""``torch.vmap`` inside compiled code: one node of the graph running ``torch.vmap`` over a sub-graph of the
body, whose outside tensors (closure cells, globals, attributes) are inputs of the graph. Later calls with new
values in those tensors must compute with them (a node baked over the first call's closure would be stale).
"""
import pytest
import torch
from torch.overrides import TorchFunctionMode

import magpy
from twin import Call, FromEnv, differential, expect, expect_one_graph, fresh, plain


def t(*shape):
    return torch.randn(shape)


def reasons(stats):
    return [r for r, _ in stats.reasons]


# ---- closures, in_dims, out_dims ------------------------------------------------------------------------

def rows_against_closure(x, w, bias):
    def body(row):
        return (row * w).sum() + bias
    return torch.vmap(body)(x)


def test_closure_tensors_made_by_each_call_are_inputs_not_constants():
    stats = differential(plain(rows_against_closure), fresh(lambda: (t(4, 3), t(3), t())))
    expect_one_graph(stats)


class Scorer:
    def __init__(self):
        self.w = torch.arange(3.0)

    def score(self, x):
        return torch.vmap(lambda row: (row * self.w).sum())(x)


def test_a_tensor_attribute_read_in_the_body_follows_its_changes():
    def make():
        s = Scorer()
        return s.score, s

    def change(s):
        s.w = t(3)

    x = t(5, 3)
    stats = differential(make, [Call((x,)), Call((x,), before=change), Call((x,), before=change)],
                         observe=lambda s: s.w)
    expect(stats, compiles=1, graphs=1, cache_hits=2, fallbacks=0)


def in_dims_with_none(x, y, scale):
    return torch.vmap(lambda a, b: a * b + scale, in_dims=(1, None), out_dims=1)(x, y)


def test_in_dims_with_none_and_out_dims():
    stats = differential(plain(in_dims_with_none), fresh(lambda: (t(3, 4), t(3), 2.0)))
    expect_one_graph(stats)


def several_outputs(x, y):
    return torch.func.vmap(lambda a, b: (a + b, a * b), in_dims=(0, 0), out_dims=(0, 1))(x, y)


def test_torch_func_vmap_with_several_outputs():
    stats = differential(plain(several_outputs), fresh(lambda: (t(4, 2), t(4, 2))))
    expect_one_graph(stats)


def nested(x, y, w):
    def inner(a, b):
        return (a * b * w).sum()
    return torch.vmap(torch.vmap(inner, in_dims=(None, 0)), in_dims=(0, None))(x, y)


def test_a_vmap_of_a_vmap_is_one_graph():
    stats = differential(plain(nested), fresh(lambda: (t(3, 2), t(4, 2), t(2))))
    expect_one_graph(stats)


def test_a_vmap_of_a_vmap_traced_by_the_magpy_backend():
    stats = differential(plain(nested), fresh(lambda: (t(3, 2), t(4, 2), t(2))), backend="magpy")
    expect_one_graph(stats)


def four_dims(padding, offset):
    """transformers' ``_vmap_expansion_sdpa``: a mask function over (batch, head, q, kv), vmapped over
    each of the four in turn."""
    def mask(b, h, q, kv):
        return padding[b, kv] & (q >= kv - offset)
    fn = mask
    for dims in [(None, None, None, 0), (None, None, 0, None), (None, 0, None, None), (0, None, None, None)]:
        fn = torch.vmap(fn, in_dims=dims, out_dims=0)
    with _IndexByTensors():
        return fn(torch.arange(padding.shape[0]), torch.arange(1), torch.arange(5), torch.arange(5))


class _IndexByTensors(TorchFunctionMode):
    """Like torch's ``TransformGetItemToIndex``: ``t[i]`` with tensor indices as ``aten.index`` (under vmap,
    ``t[i]`` of a 0-d tensor would read it as a Python number, which vmap refuses)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.__getitem__:
            keys = args[1] if isinstance(args[1], tuple) else (args[1],)
            if all(isinstance(k, torch.Tensor) for k in keys):
                return torch.ops.aten.index(args[0], list(keys))
        return func(*args, **(kwargs or {}))


def test_a_mask_vmapped_over_four_dims_in_a_mode_like_transformers():
    stats = differential(plain(four_dims), fresh(lambda: (torch.rand(2, 5) > 0.3, torch.tensor(1))))
    expect_one_graph(stats)


def test_transformers_sdpa_mask_with_vmap():
    masking = pytest.importorskip("transformers.masking_utils")

    def mask(cache_position, padding):
        return masking.sdpa_mask(batch_size=2, q_length=5, kv_length=5, attention_mask=padding,
                                 mask_function=masking.causal_mask_function, use_vmap=True,
                                 allow_is_causal_skip=False)

    position = torch.arange(5)
    stats = differential(plain(mask), fresh(lambda: (position, torch.rand(2, 5) > 0.3)))
    expect_one_graph(stats)


# ---- arguments in containers (a nested in_dims), chunks ---------------------------------------------------

def combine(left, right):
    a_left, b_left = left
    a_right, b_right = right
    return a_left * a_right, a_right * b_left + b_right


def pairs_in_tuples(a, b):
    """torch's ``associative_scan`` (combine_mode="generic"): the combine function vmapped over two pairs,
    ``in_dims=((0, 0), (0, 0))``."""
    run = torch.vmap(combine, in_dims=((0, 0), (0, 0)), out_dims=0)
    return run((a[:-1], b[:-1]), (a[1:], b[1:]))


def test_a_nested_in_dims_over_pairs_in_tuples_is_one_graph():
    stats = differential(plain(pairs_in_tuples), fresh(lambda: (t(5, 3), t(5, 3))))
    expect_one_graph(stats)


def test_a_nested_in_dims_traced_by_the_magpy_backend():
    stats = differential(plain(pairs_in_tuples), fresh(lambda: (t(5, 3), t(5, 3))), backend="magpy")
    expect_one_graph(stats)


def dict_with_unbatched_entries(x, y, scale):
    def body(d):
        return {"sum": (d["x"] * d["y"]).sum() * d["scale"], "pair": [d["x"] + 1, d["x"] - d["y"]]}
    return torch.vmap(body, in_dims=({"x": 1, "y": None, "scale": None},), out_dims={"sum": 0, "pair": 1})(
        {"x": x, "y": y, "scale": scale})


def test_a_dict_argument_with_unbatched_entries_and_a_nested_result():
    stats = differential(plain(dict_with_unbatched_entries), fresh(lambda: (t(3, 4), t(3), 2.0)))
    expect_one_graph(stats)


def test_a_number_in_the_container_is_read_by_its_path():
    x, y = t(3, 4), t(3)
    stats = differential(plain(dict_with_unbatched_entries), [(x, y, 2.0), (x, y, 3.0), (x, y, 3.0)])
    expect(stats, fallbacks=0)
    assert stats.compiles <= 2 and stats.graph_breaks == 0, stats


def outside_list_of_tensors(rows, weights):
    return torch.vmap(lambda r, ws: sum(w * r for w in ws), in_dims=(0, None))(rows, weights)


def test_a_list_argument_passed_unbatched_follows_its_tensors():
    def make():
        weights = [torch.arange(3.0), torch.ones(3)]
        return (lambda rows: outside_list_of_tensors(rows, weights)), weights

    def change(weights):
        weights[1] = weights[1] * 2

    x = t(4, 3)
    stats = differential(make, [Call((x,)), Call((x,), before=change), Call((x,), before=change)],
                         observe=lambda ws: list(ws))
    expect(stats, compiles=1, graphs=1, cache_hits=2, fallbacks=0)


def in_chunks(x, w):
    return torch.vmap(lambda row: (row @ w).relu(), chunk_size=2)(x)


def test_chunk_size_is_one_graph():
    stats = differential(plain(in_chunks), fresh(lambda: (t(5, 3), t(3, 2))))
    expect_one_graph(stats)


def test_torch_associative_scan_generic_is_one_graph():
    scan = getattr(pytest.importorskip("torch._higher_order_ops.associative_scan"), "associative_scan", None)
    if scan is None:
        pytest.skip("no associative_scan in this torch")

    def run(a, b):
        return scan(combine, (a, b), dim=1, combine_mode="generic")

    stats = differential(plain(run), fresh(lambda: (t(2, 6, 3).sigmoid(), t(2, 6, 3))))
    expect_one_graph(stats)


Pair = __import__("collections").namedtuple("Pair", "a b")


def over_a_namedtuple(x, y):
    return torch.vmap(lambda p: p.a * p.b)(Pair(x, y))


def test_arguments_in_a_namedtuple_are_a_graph_break_with_eager_results():
    stats = differential(plain(over_a_namedtuple), fresh(lambda: (t(3, 2), t(3, 2))))
    assert any("Pair" in r for r in reasons(stats)), stats.reasons


def test_an_in_dims_that_does_not_fit_raises_as_in_eager():
    def wrong(x, y):
        return torch.vmap(combine, in_dims=((0, 0), 0, 0))((x, y), (x, y))

    differential(plain(wrong), fresh(lambda: (t(3, 2), t(3, 2))), raises=True)


def test_an_in_dims_list_raises_as_in_eager():
    def listed(x, y):
        return torch.vmap(lambda a, b: a * b, in_dims=[0, 0])(x, y)  # (torch takes an int or a tuple only)

    differential(plain(listed), fresh(lambda: (t(3, 2), t(3, 2))), raises=True)


# ---- what stays eager ------------------------------------------------------------------------------------

def branches_on_data(x):
    def body(row):
        if row.sum() > 0:
            return row * 2
        return row
    return torch.vmap(body)(x)


def test_a_body_deciding_on_tensor_data_raises_as_in_eager():
    stats = differential(plain(branches_on_data), fresh(lambda: (t(3, 2),)), raises=True)
    assert stats.graphs == 0


SEEN = []


def records_calls(x):
    def body(row):
        SEEN.append(1)
        return row + 1
    return torch.vmap(body)(x)


def test_a_body_changing_outside_state_runs_once_and_then_eagerly():
    SEEN.clear()
    stats = differential(plain(records_calls), fresh(lambda: (t(3, 2),)), observe=lambda env: list(SEEN),
                         reset=SEEN.clear)
    assert stats.graphs == 0 and any("changes outside state" in r for r in reasons(stats)), stats.reasons


def draws(x):
    return torch.vmap(lambda row: row + torch.rand(()), randomness="same")(x)


def test_a_body_drawing_random_numbers_is_not_captured():
    stats = differential(plain(draws), fresh(lambda: (t(3, 2),)))
    assert stats.graphs == 0 and any("random" in r for r in reasons(stats)), stats.reasons
