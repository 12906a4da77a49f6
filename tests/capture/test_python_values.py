"""Python-level computation inside a captured call: math and numpy on Python values, Python
``random`` (re-drawn on every call), and scalars taken out of tensors (``float(t)``, ``.item()``)."""
import math
import random
import re

import numpy as np
import torch
import torch.nn as nn

import magpy

try:
    from .twin import expect_not_one_graph, fresh, differential, expect, expect_one_graph, expect_recompile, plain, twins, \
        unsupported, FromEnv, Call, assert_same, stats_of
except ImportError:  # tests/capture is not a package: pytest put this folder on sys.path
    from twin import expect_not_one_graph, fresh, differential, expect, expect_one_graph, expect_recompile, plain, twins, \
        unsupported, FromEnv, Call, assert_same, stats_of


def t(*shape):
    return torch.randn(*(shape or (2, 3)))


# ---- math --------------------------------------------------------------------------------------------

def test_math_on_a_python_argument():
    def fn(x, d):
        return x / math.sqrt(d) + math.log(d) * math.pi

    stats = differential(plain(fn), [(t(), 16), (t(), 16), (t(), 64)])
    expect_recompile(stats)


def test_math_on_a_tensor_shape():
    def fn(x):
        scale = 1.0 / math.sqrt(x.shape[-1])
        return torch.softmax(x * scale, -1)

    stats = differential(plain(fn), fresh(lambda: (t(),), 2) + [(t(2, 5),)])
    expect_recompile(stats)


def test_math_floor_ceil_into_a_slice():
    def fn(x, ratio):
        k = math.ceil(x.shape[1] * ratio)
        return x[:, :k], math.floor(ratio * 10)

    stats = differential(plain(fn), [(t(2, 8), 0.3), (t(2, 8), 0.3), (t(2, 8), 0.6)])
    expect_recompile(stats)


# ---- numpy on Python values ----------------------------------------------------------------------------

def test_numpy_on_python_values():
    # the array is made again from the argument on every call: new values need no new graph
    def fn(x, sizes):
        weights = np.array(sizes, dtype=np.float32)
        weights = weights / weights.sum()
        return x * torch.from_numpy(weights)

    stats = differential(plain(fn), [(t(), [1, 2, 1]), (t(), [1, 2, 1]), (t(), [1, 1, 1])])
    expect_one_graph(stats)


def test_numpy_scalar_math_on_shapes():
    # MonoDepth computes scales with numpy inside forward
    def fn(x):
        h = x.shape[-1]
        scale = float(np.log2(h)) + float(np.sqrt(4.0))
        return x * scale

    stats = differential(plain(fn), fresh(lambda: (t(2, 4),), 2) + [(t(2, 8),)])
    expect_recompile(stats)


def test_numpy_array_argument():
    def fn(x, arr):
        return x + torch.as_tensor(arr)

    arr = np.arange(3, dtype=np.float32)
    stats = differential(plain(fn), [(t(), arr), (t(), arr), (t(), arr + 1), (t(), arr.astype(np.float64))])
    expect_recompile(stats, calls=4)  # (a float64 array makes a float64 tensor: another graph)


def _anchors(base_size, scales):
    # (RetinaFace's anchor generator: an array made here, then written slice by slice)
    anchors = np.zeros((len(scales), 4))
    anchors[:, 2:] = base_size * np.tile(scales, (2, 1)).T
    anchors[:, 0::2] -= np.tile(anchors[:, 2] * 0.5, (2, 1)).T
    return anchors


class _Anchors(nn.Module):
    def __init__(self):
        super().__init__()
        self.size = 16.0
        self.scales = np.array([1.0, 2 ** 0.5, 2.0])

    def forward(self, x):
        anchors = _anchors(self.size, self.scales)
        shifted = anchors + np.arange(x.shape[-1])[:, None, None]
        return x.sum() + torch.from_numpy(shifted.reshape(-1, 4).astype(np.float32))


def test_numpy_array_made_here_and_written_slice_by_slice():
    def set_size(size):
        return lambda m: setattr(m, "size", size)

    def set_scale(value):
        def change(m):
            m.scales[0] = value          # (in place: the guard compares the values the array held)
        return change

    stats = _run_with_changes(_Anchors, [None, None, set_size(32.0), None, set_scale(3.0), None],
                              lambda: t(2, 3))
    expect(stats, compiles=3, fallbacks=0)


def _run_with_changes(make, changes, make_x, state=None):
    """Calls of a compiled module and its eager twin, each after a change made to both; compares
    outputs (and ``state(module)`` after each call). Returns the compiled module's stats."""
    eager, model = make(), make()
    compiled = magpy.compile(model, backend="eager", fullgraph=True)
    for k, change in enumerate(changes):
        if change is not None:
            change(eager)
            change(model)
        x = make_x()
        assert_same(compiled(x), eager(x), f"call {k}")
        if state is not None:
            assert_same(state(model), state(eager), f"the state after call {k}")
    return stats_of(compiled)


class _GaussKernel(nn.Module):
    """LapLoss: a Gaussian kernel built with np.mgrid (np.indices → np.arange(n, dtype=result_type(...))
    into an np.empty array) from the module's size, cached on the module at the first call."""

    def __init__(self):
        super().__init__()
        self.size, self.sigma, self.kernel = 5, 2.0, None

    def forward(self, x):
        if self.kernel is None or self.kernel.shape[0] != x.shape[1]:
            grid = np.float32(np.mgrid[0:self.size, 0:self.size].T)
            k = np.sum(np.exp((grid - self.size // 2) ** 2 / (-2 * self.sigma ** 2)), axis=2)
            self.kernel = torch.FloatTensor(np.tile(k / k.sum(), (x.shape[1], 1, 1))[:, None, :, :])
        return nn.functional.conv2d(x, self.kernel, padding=2, groups=x.shape[1])


def test_a_kernel_built_by_np_mgrid_from_module_attributes():
    def rebuild(size):
        def change(m):
            m.size, m.kernel = size, None
        return change
    # (the first call builds the kernel, the second reads it; a rebuild of the same size takes the
    # first entry again; another size builds, then reads, a new kernel)
    stats = _run_with_changes(_GaussKernel, [None, None, None, rebuild(5), rebuild(3), None],
                              lambda: t(1, 2, 6, 6), state=lambda m: m.kernel)
    expect(stats, compiles=4, fallbacks=0)


def test_arrays_of_the_same_bytes_stay_apart_in_the_entry_program():
    # (two constants of the same bytes, another shape or dtype: the guard and mock programs must not
    # merge them into one object)
    def fn(x):
        wide = torch.from_numpy(np.arange(6.0).reshape(2, 3))
        tall = torch.from_numpy(np.arange(6.0).reshape(3, 2))
        zero_f, zero_i = np.float64(0.0), np.int64(0)
        return x * wide.sum() + tall[2, 1], np.asarray([zero_f, zero_i]).dtype.name, type(zero_i).__name__

    stats = differential(plain(fn), fresh(lambda: (t(3),)))
    expect_one_graph(stats)


class _PackedByNumpyLengths(nn.Module):
    """A speech decoder: the lengths of a padded batch, as a numpy array, feed pack_padded_sequence."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(3, 4, batch_first=True)

    def forward(self, x):
        masks = x.abs().sum(-1).ne(0)
        lengths = masks.sum(-1).cpu().numpy()
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = nn.utils.rnn.pad_packed_sequence(self.rnn(packed)[0], batch_first=True,
                                                  total_length=x.shape[1])
        return out * masks[..., None]


def test_numpy_of_the_calls_data_feeding_torch_is_computed_in_the_graph():
    def padded(lengths):
        x = torch.randn(len(lengths), 5, 3)
        for row, n in enumerate(lengths):
            x[row, n:] = 0
        return (x,)

    stats = differential(twins(_PackedByNumpyLengths()), [padded([5, 2, 4]), padded([3, 5, 1]), padded([5, 5, 2])])
    expect_one_graph(stats)


def test_writing_into_an_array_of_tensor_data_falls_back():
    def fn(x):
        a = x.numpy()
        a[0] = 7.0        # (writes into x's memory)
        return torch.as_tensor(a) * 2

    stats = differential(plain(fn), fresh(lambda: (t(3),)))
    expect_not_one_graph(stats)


def test_tensor_data_written_into_a_numpy_array_falls_back():
    # (numpy reads the tensor's number: a later call must not reuse the first call's array)
    def fn(x):
        a = np.zeros(3)
        a[0] = x.sum()
        return torch.from_numpy(a) + 1

    stats = differential(plain(fn), fresh(lambda: (t(3),)))
    expect(stats, fallbacks=1)


def test_writes_into_an_array_argument_are_still_replayed():
    def fn(x, arr):
        arr[1:] = arr[:-1] * 2
        return x + float(arr[0])

    stats = differential(plain(fn), [(t(), np.arange(4.0)), (t(), np.ones(4)), (t(), np.arange(4.0))])
    expect(stats, fallbacks=0)


def test_an_array_argument_read_whole_after_the_call_wrote_it():
    # the sum is of what the call wrote, not of the array on entry: the same array on every call, so a
    # guard re-reading ``arr.sum()`` on entry would pass and replay a stale number
    def make():
        return fn, np.arange(4.0)

    def fn(x, arr):
        arr[1:] = arr[:-1] * 2
        return x + float(arr.sum())

    differential(make, fresh(lambda: (t(), FromEnv()), 4))


# ---- Python random: re-drawn on every call ---------------------------------------------------------------

def test_random_inside_forward_is_redrawn_each_call():
    def fn(x):
        if random.random() < 0.5:
            return x * 2
        return x - random.uniform(0, 1)

    stats = differential(plain(fn), fresh(lambda: (t(),), 6))
    expect(stats, fallbacks=0)


class LayerDrop(nn.Module):
    """BART's LayerDrop: each layer is skipped with probability p while training."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.p = 0.5

    def forward(self, x):
        for layer in self.layers:
            if self.training and random.uniform(0, 1) < self.p:
                continue
            x = layer(x)
        return x


def test_layerdrop_random_skips_match_eager():
    torch.manual_seed(0)
    stats = differential(twins(LayerDrop()), fresh(lambda: (t(2, 4),), 6))
    expect(stats, fallbacks=0)


def test_random_choice_and_shuffle_of_python_values():
    def fn(x, options):
        order = list(options)
        random.shuffle(order)
        return x * random.choice(options) + order[0]

    stats = differential(plain(fn), fresh(lambda: (t(), [1, 2, 3, 4]), 5))
    expect(stats, fallbacks=0)


class _RandomJitter(nn.Module):
    """ILSwiss's colour jitter: numpy picks which samples of the batch are transformed."""

    def forward(self, x):
        chosen = np.random.choice([True, False], len(x), p=[0.5, 0.5])
        if chosen.sum() > 0:
            x = x.clone()
            x[torch.tensor(chosen)] = x[torch.tensor(chosen)] * np.random.uniform(0.5, 1.5)
        return x


def test_numpy_random_draws_are_redrawn_each_call():
    stats = differential(twins(_RandomJitter()), fresh(lambda: (torch.randn(4, 2),), n=8))
    expect(stats, fallbacks=0)
    assert stats.cache_hits >= 1, stats   # later calls reuse entries (each drawing anew)


def test_a_numpy_generator_of_the_programs_own_falls_back():
    rng = np.random.RandomState(0)

    def fn(x):
        return x * rng.uniform()

    calls = [(torch.ones(2),), (torch.ones(2),)]
    stats = differential(plain(fn), calls, reset=lambda: rng.seed(0))
    expect_not_one_graph(stats)


def test_torch_random_ops_redrawn_each_call():
    def fn(x):
        return x + torch.rand_like(x), torch.randn(2) * 0 + torch.randint(0, 5, (2,))

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_dropout_in_training_draws_a_new_mask_each_call():
    m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    stats = differential(twins(m), fresh(lambda: (t(3, 4),)))
    expect_one_graph(stats)


# ---- scalars taken out of tensors -------------------------------------------------------------------------

def test_float_of_a_tensor_feeding_tensor_ops_only():
    # quantized ResNet: ``float(t)`` used as a scale of further tensor ops
    def fn(x):
        s = float(x.abs().max())
        return x / s * 127.0

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_item_feeding_tensor_ops_only():
    def fn(x, y):
        m = x.mean().item()
        return (y - m) * 2

    stats = differential(plain(fn), fresh(lambda: (t(), t())))
    expect_one_graph(stats)


def test_item_returned_to_the_caller():
    def fn(x):
        return x.sum().item(), x * 2

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class _Scaled(nn.Module):
    def __init__(self, branch=False):
        super().__init__()
        self.register_buffer("scale", torch.tensor(0.5))
        self.register_buffer("offset", torch.tensor(3.0))
        self.register_buffer("steps", torch.tensor(2))
        self.branch = branch

    def forward(self, x):
        s = self.scale.item()
        if self.branch and s > 1.0:
            return x - s
        return torch.relu(x * s) + s * float(self.scale) - self.offset.item() + int(self.steps)


def _set(scale, offset=3.0):
    def before(m):
        m.scale.fill_(scale)
        m.offset.fill_(offset)
    return before


def test_an_int_item_of_a_buffer_is_checked_by_the_guards_and_a_new_value_compiles_again():
    def steps(n):
        def before(m):
            m.steps.fill_(n)
        return before

    calls = [Call((t(4, 8),), before=steps(n)) for n in (2, 2, 5)]
    expect_recompile(differential(twins(_Scaled()), calls, backend="magpy"))


def test_item_of_a_buffer_is_read_before_the_graph_which_compiles_once_for_every_value():
    from magpy.codegen import mark, reports

    since = mark()
    calls = [Call((t(4, 8),), before=_set(v, n)) for v, n in ((0.5, 3), (0.25, 3), (2.0, 7), (-1.5, 0))]
    stats = differential(twins(_Scaled()), calls, backend="magpy")
    expect_one_graph(stats, calls=4)
    (report,) = reports(since=since)
    assert report.graph_fallback is None and report.kernels   # compiled, over the numbers as inputs


def test_a_branch_on_an_item_of_a_buffer_follows_the_value():
    calls = [Call((t(4, 8),), before=_set(v)) for v in (0.5, 0.75, 2.0, 0.5)]
    differential(twins(_Scaled(branch=True)), calls, backend="magpy")


def test_an_int_item_of_an_argument_as_a_loop_count_and_a_slice_bound_follows_the_value():
    def loop(x, n):
        out = x * 0
        for i in range(n.item()):
            out = out + x * i
        return out

    def bound(x, n):
        return x[: n.item()] * 2

    differential(plain(loop), [(t(3), torch.tensor(k)) for k in (2, 3, 2, 0, 5)], backend="magpy")
    differential(plain(bound), [(t(6), torch.tensor(k)) for k in (2, 4, 6, 0, 3)], backend="magpy")


def test_item_of_a_tensor_the_call_writes_first_is_read_after_the_write():
    def fn(x, n):
        n.add_(1)
        return x * n.item()

    calls = [(t(), torch.tensor(1.0)), (t(), torch.tensor(2.0)), (t(), torch.tensor(-3.0))]
    differential(plain(fn), calls, backend="magpy")


def test_branch_on_a_tensor_value_matches_eager():
    def fn(x):
        if x.sum() > 0:
            return x * 2
        return x - 1

    calls = [(torch.ones(3),), (torch.ones(3),), (-torch.ones(3),), (torch.ones(3) * 2,)]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0)


def test_int_of_a_tensor_used_as_a_size():
    def fn(x, n):
        k = int(n)
        return x[:k].sum()

    calls = [(t(5), torch.tensor(2)), (t(5), torch.tensor(2)), (t(5), torch.tensor(4))]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0)


def test_numpy_scalar_attribute_scales_a_tensor():
    class WScale(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = np.sqrt(2.0) / np.sqrt(3)      # a numpy float64, set in __init__
            self.gain = np.float32(0.5)

        def forward(self, x):
            return x * self.scale + x * self.gain

    def rescale(m):
        m.scale = np.float64(3.0)

    calls = [Call((t(),)), Call((t(),)), Call((t(),), before=rescale)]
    stats = differential(twins(WScale()), calls)
    expect_recompile(stats)


def test_scalar_of_a_tensor_stored_on_self_and_printed():
    class Meter:
        def __init__(self):
            self.last = None

    def fn(m, x):
        loss = (x * x).mean().item()
        m.last = loss * 0.5
        print(f"loss {loss:.3f}")
        return x - loss

    stats = differential(lambda: (fn, Meter()), fresh(lambda: (FromEnv(), t())))
    expect_one_graph(stats)


def test_scalar_of_a_tensor_used_as_a_list_index_is_pinned_by_the_guard():
    # a Python container indexed by tensor data: the index is pinned (the guard reruns ``int(n)``), so
    # each index gets its entry and a repeated one hits it
    def fn(x, n):
        options = [x * 2, x + 1, x - 1]
        return options[int(n)]

    calls = [(t(), torch.tensor(0)), (t(), torch.tensor(2)), (t(), torch.tensor(1)), (t(), torch.tensor(2))]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0, compiles=3, cache_hits=1)


def test_tolist_of_a_tensor():
    def fn(x):
        return [v * 2 for v in x.tolist()]

    stats = differential(plain(fn), fresh(lambda: (t(3),)))
    expect(stats, fallbacks=0)


def test_is_nonzero_reads_tensor_data():
    # a torch predicate that reads data (not types): its answer holds only while the guard that
    # reruns it agrees
    def fn(x):
        if torch.is_nonzero(x.sum()):
            return x * 2
        return x - 1

    calls = [(torch.ones(2),), (torch.zeros(2),), (torch.ones(2),)]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0, compiles=2, cache_hits=1)


def test_branch_on_data_after_an_inplace_update_is_checked_after_the_graph():
    # the condition reads a value an in-place op made: rerunning it in a guard would apply it twice, so
    # the graph computes it; where it goes the other way, the input's copy is put back and the call misses
    def fn(x, acc):
        acc.add_(x)
        if acc.sum() > 0:
            return x * 2
        return x - 1

    calls = [(torch.ones(3), torch.zeros(3)), (-torch.ones(3), torch.zeros(3)), (torch.ones(3), torch.zeros(3)),
             (-torch.ones(3), torch.zeros(3))]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0, graph_breaks=0, compiles=2)


def test_assert_on_random_data_is_checked_after_the_graph():
    # (pyGAT: the condition cannot be rerun in a guard — it would draw again — so the graph computes it)
    def fn(x):
        h = torch.nn.functional.dropout(x, 0.5, training=True)
        assert not torch.isnan(h).any()
        return h * 2

    stats = differential(plain(fn), fresh(lambda: (torch.randn(4, 3),)))
    expect_one_graph(stats)


def test_a_branch_on_random_data_takes_the_path_eager_takes():
    # the outcome changes from call to call: a check that fails puts the generator back and the call
    # finds (or captures) the entry of the other path, drawing the same numbers eager draws
    def fn(x):
        mask = torch.rand(2) > 0.5
        if mask.all():
            return x * 2, mask
        return x - 1, mask

    torch.manual_seed(0)
    stats = differential(plain(fn), [(torch.ones(2),) for _ in range(12)])
    expect(stats, fallbacks=0)
    assert stats.compiles >= 2, stats    # both paths were taken, each has its entry


def test_numbers_drawn_at_random_decide_shapes_as_in_eager():
    # (FixMatch's augmentation: a random quarter turn and random flips, undone after the model ran)
    def fn(x):
        k = torch.randint(0, 4, ()).item()
        dims = (torch.nonzero(torch.randint(0, 2, (2,)), as_tuple=False).squeeze(1) + 1).tolist()
        y = torch.rot90(x, k, (1, 2))
        if len(dims) > 0:
            y = torch.flip(y, dims)
        return torch.rot90(y.relu() * 2, -k, (1, 2)), y.shape

    stats = differential(plain(fn), [(torch.randn(2, 3, 5),) for _ in range(10)])
    expect(stats, fallbacks=0)
    assert 2 <= stats.compiles < 10, stats   # one entry per outcome seen, reused when drawn again


class _SavesRngState(nn.Module):
    """A reversible block keeps the generator's state of its forward, to redo it in backward."""

    def forward(self, x):
        before = torch.rand(2)
        self.cpu_state = torch.get_rng_state()
        return nn.functional.dropout(x, 0.5, training=True) + before.sum()


def test_the_generator_state_saved_in_forward_is_the_one_eager_saves():
    stats = differential(twins(_SavesRngState()), fresh(lambda: (t(2, 3),)),
                         observe=lambda m: m.cpu_state)
    expect_one_graph(stats)


def test_unpacking_with_a_star_keeps_provenance():
    # (``x0, x1, *back = inp`` over a tensor's rows, and over a module's list of sizes)
    class Split(nn.Module):
        def __init__(self):
            super().__init__()
            self.sizes = [3, 4, 5, 6]

        def forward(self, inp, *args):
            x0, x1, *back = inp
            first, *mid, last = self.sizes
            *init, end = args
            return x1 * first + x0 * last + sum(mid) + back[0] + end, len(back), init

    stats = differential(twins(Split()), [(t(4, 2), 1, 2), (t(4, 2), 1, 2), (t(4, 2), 3, 4)])
    expect(stats, fallbacks=0, compiles=2)   # (``end`` is a guarded number: 2, then 4)


def test_branch_on_random_data_with_an_inplace_update_is_undone_where_its_check_fails():
    # the graph writes into an input: a failed check puts the input's copy back (and the generators)
    def fn(x, acc):
        acc.add_(1)
        if torch.rand(()) > 0.5:          # (both ways over the calls)
            return x * 2
        return x

    calls = [(torch.ones(3), torch.zeros(3))] * 12
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0, graph_breaks=0)
    assert stats.compiles <= 2


def test_branch_on_an_item_comparison_is_guarded_by_rerunning_it():
    def fn(x):
        if x.abs().max().item() > 1.0:
            return x / x.abs().max()
        return x

    calls = [(torch.ones(3) * 3,), (torch.ones(3) * 4,), (torch.ones(3) * 0.5,), (torch.ones(3) * 0.25,)]
    stats = differential(plain(fn), calls)
    expect(stats, compiles=2, cache_hits=2, fallbacks=0)


class _Gate(nn.Module):
    """BlockDrop's policy: a small net decides whether the block runs."""

    def __init__(self):
        super().__init__()
        self.policy = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
        self.block = nn.Linear(4, 4)

    def forward(self, x):
        if self.policy(x).mean() > 0:
            return x + self.block(x)
        return x


def test_policy_branch_is_guarded_in_eval_and_checked_after_the_graph_in_training():
    # eval: the guard reruns the policy (pure); training: BatchNorm updates its running stats in place,
    # so the condition cannot be rerun: the graph computes it, and a check that fails puts the statistics
    # back from copies and misses
    torch.manual_seed(0)
    inputs = [(torch.randn(3, 4),) for _ in range(6)]
    stats = differential(twins(_Gate().eval()), inputs)
    expect(stats, fallbacks=0)
    stats = differential(twins(_Gate().train()), inputs)
    expect(stats, fallbacks=0, graph_breaks=0)
    assert stats.compiles <= 2


# ---- regular expressions (library code parses version strings in forward) -------------------------------

_VERSION = re.compile(r"^(\d+)\.(\d+)")


class _Version:
    _regex = _VERSION

    def __init__(self, text):
        match = self._regex.search(text)
        if not match:
            raise ValueError(f"invalid version {text!r}")
        self.major, self.minor = int(match.group(1)), int(match.group(2))


def test_a_regular_expression_on_a_string_argument_is_guarded_on_it():
    def fn(x, version):
        if _Version(version).major >= 2:
            return x + 1
        return x - 1

    stats = differential(plain(fn), [(t(), "2.1"), (t(), "2.1"), (t(), "1.9")])
    expect_recompile(stats)


_TABLE = np.arange(4, dtype=np.float32)


def test_two_tensors_made_from_one_array_stay_two():
    # (the entry computes ``torch.tensor(_TABLE)`` once for both: the graph copies it for the second)
    def fn(x):
        a = torch.tensor(_TABLE)
        b = torch.tensor(_TABLE)
        a.add_(x)
        return a, b

    stats = differential(plain(fn), fresh(lambda: (torch.randn(4),)))
    expect_one_graph(stats)


def test_a_branch_on_an_input_written_through_a_view_is_checked_after_the_write():
    # the condition reads x after a write through a view of it: a guard rerunning ``x.sum() > 0`` on
    # the entry's x would see it before the write (call 2 would take the wrong path); the graph computes
    # it instead, and a check that fails puts x back and misses
    def fn(x):
        x.view(-1).add_(-1)
        if x.sum() > 0:
            return x * 2
        return x - 1

    calls = [(torch.tensor([2.0, 2.0]),), (torch.tensor([0.6, 0.6]),)]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0, graph_breaks=0, compiles=2)


def test_a_branch_on_an_input_written_in_place_after_it():
    # (cogdl's MemoryMoCo: the condition reads the memory before the call updates it; the guard reruns
    # it on the entry's memory, which is what the program read)
    def fn(x, memory):
        if memory.sum() > 0:
            y = x + 1
        else:
            y = x - 1
        memory.add_(x.sum())
        return y

    calls = [(torch.ones(2), torch.full((2,), v)) for v in (1.0, -5.0, 1.0, 2.0)]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0, compiles=2, cache_hits=2)


def test_a_branch_on_a_tensor_the_graph_made_and_wrote_in_place():
    # (Lovász softmax: ``zeros_like(p).scatter_(…)`` — rerunning it in the guard makes and writes it again)
    def fn(p, label):
        one_hot = torch.zeros_like(p).scatter_(1, label.unsqueeze(1), 1.0)
        if (one_hot * p).sum() > 1.0:
            return p * 2
        return p - 1

    calls = [(torch.tensor([[0.9, 0.1], [0.2, 0.8]]), torch.tensor([0, 1])),
             (torch.tensor([[0.9, 0.1], [0.2, 0.8]]), torch.tensor([1, 0])),
             (torch.tensor([[0.7, 0.3], [0.1, 0.9]]), torch.tensor([0, 1]))]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0, compiles=2, cache_hits=1)


def test_a_method_of_a_numpy_argument_read_as_an_attribute():
    # (the bound method's array is the argument: each call's own array is transposed)
    def fn(x, a):
        flip = a.transpose
        return x * torch.from_numpy(flip(1, 0).copy())

    calls = [(torch.randn(3, 2), np.arange(6.0, dtype=np.float32).reshape(2, 3) + k) for k in range(3)]
    stats = differential(plain(fn), calls)
    expect_one_graph(stats)



def test_a_closure_made_by_the_call_is_not_the_first_calls():
    # (a wrong answer once: the first call's function came back, its cell holding the first n)
    def fn(x, n):
        g = lambda t: t * n
        return x + 1, g

    compiled = magpy.compile(fn)
    for n in (2, 3, 4):
        out, g = compiled(torch.ones(1), n)
        assert g(10) == 10 * n and torch.equal(out, torch.full((1,), 2.0))


class _RoundToGrid(torch.autograd.Function):
    """Quantization-aware training's fake quantization: bounds computed from the scale in the forward,
    gradients masked by them in the backward."""

    @staticmethod
    def forward(ctx, x, scale: float, qmax: int):
        ctx.save_for_backward(x)
        ctx.bounds = (-qmax * scale, qmax * scale)
        return torch.round(x / scale).clamp_(-qmax, qmax).mul_(scale)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        low, high = ctx.bounds
        return grad * ((x >= low) & (x <= high)), None, None


class _FakeQuantized(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.tensor(0.05))

    def forward(self, x):
        s = self.scale.item()
        return _RoundToGrid.apply(x, s, 127) + torch.clamp(x, -127 * s, 127 * s) * (1 / 255 + s)


def test_floats_the_forward_computes_from_an_item_reach_the_backward_graph_compiled():
    from magpy.codegen import mark, reports

    since = mark()
    eager, compiled_module = _FakeQuantized(), _FakeQuantized()
    compiled = magpy.compile(compiled_module, backend="magpy")
    for scale in (0.05, 0.02, 0.1):
        eager.scale.fill_(scale)
        compiled_module.scale.fill_(scale)
        x = torch.randn(4, 64) * 10
        xe, xc = x.clone().requires_grad_(), x.clone().requires_grad_()
        eager(xe).pow(2).sum().backward()
        out = compiled(xc)
        out.pow(2).sum().backward()
        torch.testing.assert_close(out, eager(x))
        torch.testing.assert_close(xc.grad, xe.grad)
    made = reports(since=since)
    assert len(made) == 2   # the forward and the backward, once for every scale
    assert all(r.graph_fallback is None and r.kernels for r in made), [r.graph_fallback for r in made]
