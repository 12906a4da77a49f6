"""Builtins on Python values inside a captured call: they just run, and their results are guarded."""
import torch

import magpy

try:
    from .twin import fresh, differential, expect_one_graph, expect_recompile, plain, unsupported, Call
except ImportError:  # tests/capture is not a package: pytest put this folder on sys.path
    from twin import fresh, differential, expect_one_graph, expect_recompile, plain, unsupported, Call


def x3():
    return torch.randn(2, 3)


def test_enumerate_over_a_list_of_tensors():
    def fn(xs):
        out = 0
        for k, x in enumerate(xs):
            out = out + x * (k + 1)
        return out

    def xs(n):
        return [torch.randn(3) for _ in range(n)]
    stats = differential(plain(fn), [(xs(3),), (xs(3),), (xs(4),)])
    expect_recompile(stats)


def test_zip_of_two_lists():
    def fn(xs, ws):
        return [x * w for x, w in zip(xs, ws)]

    def xs():
        return [torch.randn(2), torch.randn(2)]
    stats = differential(plain(fn), [(xs(), [1.5, -2.0]), (xs(), [1.5, -2.0]), (xs(), [1.5, 3.0, 4.0])])
    expect_recompile(stats)


def test_map_with_a_lambda():
    def fn(xs):
        return list(map(lambda t: t.relu() + 1, xs))

    stats = differential(plain(fn), fresh(lambda: ((torch.randn(3), torch.randn(3)),)))
    expect_one_graph(stats)


def test_map_with_a_builtin_over_python_values():
    def fn(x, sizes):
        total = sum(map(int, sizes))
        return x * total

    stats = differential(plain(fn), [(x3(), ["1", "2"]), (x3(), ["1", "2"]), (x3(), ["1", "5"])])
    expect_recompile(stats)


def test_filter_map_and_reduce_keep_their_items_provenance():
    # (torch.broadcast_shapes filters its shapes through a lambda, then reduces their lengths)
    import functools

    def fn(x, sizes):
        kept = list(filter(lambda s: s > 1, sizes))
        longest = functools.reduce(max, (s for s in sizes))
        doubled = map(lambda a, b: a * b, sizes, kept)
        return x * (sum(kept) + longest) + sum(doubled), type(doubled).__name__

    stats = differential(plain(fn), [(x3(), [1, 2, 3]), (x3(), [1, 2, 3]), (x3(), [2, 0, 4])])
    expect_recompile(stats)


def test_an_iterator_consumed_by_a_builtin_after_next():
    # (``sum(it)`` takes what is left of the iterator: the guard must be on those items; before, a plain
    # ``iter(xs)`` was a constant and a partly consumed one counted the items ``next`` took too)
    def of_iter(x, xs):
        return x * sum(iter(xs)), x * max(iter(xs))

    def after_next(x, xs):
        it, gen, mapped = iter(xs), (int(v) for v in xs), map(int, xs)
        next(it), next(gen), next(mapped)
        return x * sum(it), x * sum(gen), x * sum(mapped)

    for fn in (of_iter, after_next):
        stats = differential(plain(fn), [(x3(), [0, 2, 3]), (x3(), [1, 1, 3]), (x3(), [1, 1, 4])])
        assert not stats.fallbacks, stats.reasons


def test_reduce_of_an_empty_sequence_raises_as_eager():
    import functools

    def fn(x, sizes):
        return x * functools.reduce(lambda a, b: a + b, sizes)

    differential(plain(fn), [(x3(), [])] * 3, raises=True)


def test_broadcast_shapes_in_a_loss():
    # F.binary_cross_entropy(weight=...) calls torch.broadcast_shapes, which reads torch's config
    # (a ContextVar per option)
    def fn(score, label, weight):
        return torch.nn.functional.binary_cross_entropy(score, label, weight=weight, reduction="sum")

    stats = differential(plain(fn), fresh(lambda: (torch.rand(4, 3), torch.rand(4, 3), torch.rand(3))))
    expect_one_graph(stats)


def test_torchs_own_reads_of_sizes_and_modes_are_pure():
    # (torch 2.11's broadcast_shapes calls _infer_size; library code asks how many function modes are on)
    def fn(a, b):
        shape = torch._C._infer_size(a.shape, b.shape)
        if torch._C._len_torch_function_stack() > 0:
            return a.expand(shape) - b
        return a.expand(shape) + b

    stats = differential(plain(fn), fresh(lambda: (torch.rand(4, 1), torch.rand(3))))
    expect_one_graph(stats)


_SCALE = __import__("contextvars").ContextVar("scale", default=2.0)


def test_a_context_variable_is_read_again_on_every_call():
    def fn(x):
        return x * _SCALE.get()

    compiled = magpy.compile(fn, backend="eager", fullgraph=True)
    x = x3()
    assert torch.equal(compiled(x), x * 2.0)
    token = _SCALE.set(5.0)
    try:
        assert torch.equal(compiled(x), x * 5.0)
    finally:
        _SCALE.reset(token)
    assert torch.equal(compiled(x), x * 2.0)
    assert compiled.stats.compiles == 2


def test_range_from_an_int_argument():
    def fn(x, n):
        for i in range(1, n, 2):
            x = x * i
        return x

    stats = differential(plain(fn), [(x3(), 5), (x3(), 5), (x3(), 7)])
    expect_recompile(stats)


def test_len_of_a_list_argument():
    def fn(xs):
        return torch.stack(xs).sum(0) / len(xs)

    def xs(n):
        return [torch.randn(2) for _ in range(n)]
    stats = differential(plain(fn), [(xs(2),), (xs(2),), (xs(4),)])
    expect_recompile(stats)


def test_isinstance_dispatch_on_argument_type():
    def fn(x, scale):
        if isinstance(scale, torch.Tensor):
            return x * scale
        if isinstance(scale, (int, float)):
            return x + scale
        return x

    stats = differential(plain(fn), [(x3(), 2.0), (x3(), 2.0), (x3(), torch.full((3,), 2.0))])
    expect_recompile(stats)


class Config:
    def __init__(self, act="relu", depth=2):
        self.act = act
        self.depth = depth


def test_getattr_with_a_string_from_a_config():
    def fn(x, cfg):
        act = getattr(torch, cfg.act)
        for _ in range(cfg.depth):
            x = act(x)
        return x

    stats = differential(plain(fn), [(x3(), Config()), (x3(), Config()), (x3(), Config("tanh"))])
    expect_recompile(stats)


def test_getattr_with_a_default():
    def fn(x, cfg):
        return x * getattr(cfg, "scale", 3)

    cfg = Config()
    scaled = Config()
    scaled.scale = 0.5
    stats = differential(plain(fn), [(x3(), cfg), (x3(), cfg), (x3(), scaled)])
    expect_recompile(stats)


def test_hasattr_on_a_user_object():
    def fn(x, cfg):
        if hasattr(cfg, "bias"):
            return x + cfg.bias
        return x - 1

    with_bias = Config()
    with_bias.bias = 4
    stats = differential(plain(fn), [(x3(), Config()), (x3(), Config()), (x3(), with_bias)])
    expect_recompile(stats)


def test_setattr_on_an_object_made_inside():
    def fn(x):
        cfg = Config()
        for name in ("act", "depth"):
            setattr(cfg, name, name.upper())
        return x.sum(), cfg.act, cfg.depth

    stats = differential(plain(fn), fresh(lambda: (x3(),)))
    expect_one_graph(stats)


def test_min_max_of_python_ints():
    def fn(x, a, b):
        k = max(a, b) - min(a, b, 1)
        return x[:, : min(k, x.shape[1])] * max(1.0, a / 2)

    stats = differential(plain(fn), [(x3(), 2, 4), (x3(), 2, 4), (x3(), 5, 4)])
    expect_recompile(stats)


def test_min_max_over_a_list_and_shapes():
    def fn(xs):
        widest = max(t.shape[0] for t in xs)
        return [torch.nn.functional.pad(t, (0, widest - t.shape[0])) for t in xs]

    stats = differential(plain(fn), fresh(lambda: ([torch.randn(2), torch.randn(4)],), 2) +
                         [([torch.randn(5), torch.randn(1)],)])
    expect_recompile(stats)


def test_sorted_reversed_sum_any_all():
    def fn(x, ks):
        order = sorted(ks, reverse=True)
        if any(k < 0 for k in ks) or not all(ks):
            return x * 0
        return x * sum(order[:2]) + list(reversed(order))[0]

    stats = differential(plain(fn), [(x3(), [3, 1, 2]), (x3(), [3, 1, 2]), (x3(), [-1, 2])])
    expect_recompile(stats)


def test_abs_round_divmod_pow():
    def fn(x, v):
        q, r = divmod(abs(v), 3)
        return x * round(v / 7, 2) + q - pow(r, 2)

    stats = differential(plain(fn), [(x3(), -10), (x3(), -10), (x3(), 11)])
    expect_recompile(stats)


def test_type_and_callable_checks():
    def fn(x, f):
        if callable(f) and type(x) is torch.Tensor:
            return f(x)
        return x

    stats = differential(plain(fn), [(x3(), torch.sigmoid), (x3(), torch.sigmoid), (x3(), torch.tanh)])
    expect_recompile(stats)


def test_str_methods_on_a_mode_argument():
    def fn(x, mode):
        if mode.lower().startswith("sum"):
            return x.sum()
        return x.mean()

    stats = differential(plain(fn), [(x3(), "SUM"), (x3(), "SUM"), (x3(), "Mean")])
    expect_recompile(stats)


def test_dict_items_and_keys():
    def fn(x, weights):
        out = x
        for name, w in weights.items():
            out = out + w * len(name)
        return out, sorted(weights.keys())

    w = {"a": 1.0, "bb": 2.0}
    stats = differential(plain(fn), [(x3(), w), (x3(), w), (x3(), {"a": 1.0, "bb": 3.0})])
    expect_recompile(stats)


def test_int_float_bool_conversions_of_python_values():
    def fn(x, s):
        return x * float(s) + int(s) + bool(s)

    stats = differential(plain(fn), [(x3(), "3"), (x3(), "3"), (x3(), "0")])
    expect_recompile(stats)


def test_builtin_keyword_call():
    def fn(x, ks):
        return x * max(ks, key=lambda k: -k) + min(ks, default=0)

    stats = differential(plain(fn), fresh(lambda: (x3(), [4, 2, 9]), 2) + [Call((x3(), [4, 5]))])
    expect_recompile(stats)


def test_sum_of_a_generator_expression_over_an_argument():
    def fn(x, ks):
        return x * sum(k * 2 for k in ks)

    stats = differential(plain(fn), [(x3(), [1, 1]), (x3(), [1, 1]), (x3(), [1, 2])])
    expect_recompile(stats)


def test_any_and_all_over_generator_expressions():
    def fn(x, ks):
        if all(k > 0 for k in ks) and not any(k > 5 for k in ks):
            return x * 2
        return x - 1

    stats = differential(plain(fn), [(x3(), [1, 2]), (x3(), [1, 2]), (x3(), [1, 9])])
    expect_recompile(stats)


def test_max_and_tuple_of_generator_expressions():
    def fn(x, ks):
        doubled = tuple(k * 2 for k in ks)
        return x * max(k for k in ks) + doubled[-1]

    stats = differential(plain(fn), [(x3(), [1, 2]), (x3(), [1, 2]), (x3(), [1, 3])])
    expect_recompile(stats)


def test_values_a_user_generator_yields_are_guarded():
    # a for loop over a generator the VM runs: each value keeps the provenance it was yielded with
    def fn(x, ks):
        def gen():
            for k in ks:
                yield k * 2
        total = 0
        for v in gen():
            total = total + v
        return x * total

    stats = differential(plain(fn), [(x3(), [1, 2]), (x3(), [1, 2]), (x3(), [1, 5])])
    expect_recompile(stats)
