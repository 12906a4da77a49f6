"""nn.Module programs: nesting, containers, parameters(), named_children(), hooks, training branches,
buffers updated in place (BatchNorm), attribute stores on self. Each side owns its own copy of the model."""
import collections
import weakref

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import magpy

try:
    from .twin import expect_not_one_graph, fresh, differential, expect, expect_one_graph, expect_recompile, twins, unsupported, \
        Call, FromEnv, plain, stats_of
except ImportError:  # tests/capture is not a package: pytest put this folder on sys.path
    from twin import expect_not_one_graph, fresh, differential, expect, expect_one_graph, expect_recompile, twins, unsupported, \
        Call, FromEnv, plain, stats_of


def t(*shape):
    return torch.randn(*(shape or (2, 4)))


def model(cls, *args):
    torch.manual_seed(0)
    return cls(*args)


class Block(nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x):
        return F.relu(self.fc(x)) + x


class Nested(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Block()
        self.b = Block()
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.b(self.a(x)))


def test_nested_modules():
    stats = differential(twins(model(Nested)), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_input_shape_change_recompiles():
    stats = differential(twins(model(Nested)), [(t(),), (t(),), (t(3, 4),)])
    expect_recompile(stats)


def test_sequential():
    m = model(nn.Sequential, nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.0), nn.Linear(8, 3), nn.Tanh())
    stats = differential(twins(m), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class WithList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for k, layer in enumerate(self.layers):
            x = layer(x) * (k + 1)
        return x + self.layers[-1](x)


def test_module_list_iteration_and_indexing():
    stats = differential(twins(model(WithList)), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class SlicedList(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(Block() for _ in range(3))
        self.depth = 2

    def forward(self, x):
        for layer in self.layers[: self.depth]:     # (3.12: BINARY_SLICE; ModuleList.__getitem__ runs)
            x = layer(x)
        buf = [x, x * 2, x * 3]
        buf[1:] = [x + 1, x + 2]                    # (3.12: STORE_SLICE)
        return sum(buf) + len(self.layers[1:])


def test_module_list_sliced_by_an_attribute():
    """The slice reaching an interpreted ``__getitem__`` carries where its bounds came from, on every
    Python (3.12 builds it inside BINARY_SLICE): one graph, and a new depth recompiles."""
    expect_one_graph(differential(twins(model(SlicedList)), fresh(lambda: (t(),))))

    def shallower(m):
        m.depth = 1

    calls = [Call((t(),)), Call((t(),)), Call((t(),), before=shallower)]
    expect_recompile(differential(twins(model(SlicedList)), calls))


class WithDict(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads = nn.ModuleDict({"cls": nn.Linear(4, 2), "reg": nn.Linear(4, 1)})

    def forward(self, x, which=None):
        if which is not None:
            return self.heads[which](x)
        return {name: head(x) for name, head in self.heads.items()}


def test_module_dict_items():
    stats = differential(twins(model(WithDict)), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_module_dict_key_argument_recompiles():
    stats = differential(twins(model(WithDict)), [(t(), "cls"), (t(), "cls"), (t(), "reg")])
    expect_recompile(stats)


class ParamSum(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.scale = nn.Parameter(torch.tensor(0.5))

    def forward(self, x):
        reg = sum(p.pow(2).sum() for p in self.parameters())
        n = len(list(self.named_parameters()))
        return self.fc(x) * self.scale + reg / n


def test_parameters_iteration():
    stats = differential(twins(model(ParamSum)), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class Shared(nn.Module):
    """One Linear reached twice: ``modules()`` and ``parameters()`` dedupe it through memo sets."""
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = self.a

    def forward(self, x):
        n = len(list(self.modules()))
        return self.b(self.a(x)) * n + sum(p.sum() for p in self.parameters())


def test_shared_submodule_deduplicated_by_memo_sets():
    def untie(m):
        m.b = nn.Linear(4, 4)

    calls = [(t(),), (t(),), Call((t(),), before=untie), (t(),)]
    stats = differential(twins(model(Shared)), calls)
    expect(stats, compiles=2, cache_hits=2, fallbacks=0)


class WeakWeights(nn.Module):
    """nn.LSTM's pattern: weak references to the parameters, dereferenced in forward."""
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))
        self.refs = [weakref.ref(self.w)]
        self.start, self.end = 1, 3

    def forward(self, x):
        y = x @ self.refs[0]()
        y[:, self.start:self.end] = y[:, self.start:self.end].sigmoid()
        return y


def test_weak_references_and_sliced_item_store():
    def narrow(m):
        m.end = 2

    calls = [Call((t(),)), Call((t(),)), Call((t(),), before=narrow)]
    stats = differential(twins(model(WeakWeights)), calls)
    expect_recompile(stats)


class RunningRange(nn.Module):
    """Observers of quantized nets: buffers registered and reassigned in forward."""
    def __init__(self):
        super().__init__()
        self.register_buffer("low", torch.zeros(1))

    def forward(self, x):
        self.register_buffer("high", x.max().reshape(1), persistent=False)
        self.low = torch.minimum(self.low, x.min().reshape(1))
        return (x - self.low) / (self.high - self.low)


def test_buffers_registered_and_reassigned_in_forward():
    stats = differential(twins(model(RunningRange)), fresh(lambda: (t(),)))
    expect(stats, fallbacks=0)


class Children(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(4, 4)
        self.act = nn.GELU()
        self.second = nn.Linear(4, 4)

    def forward(self, x):
        outs = {}
        for name, child in self.named_children():
            x = child(x)
            outs[name] = x
        return x, outs


def test_named_children():
    stats = differential(twins(model(Children)), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class TrainBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if self.training:
            return y * 0.5
        return y.relu()


def test_training_flag_branch_recompiles_on_eval():
    calls = [(t(),), (t(),), Call((t(),), before=lambda m: m.eval())]
    stats = differential(twins(model(TrainBranch)), calls)
    expect_recompile(stats)


def test_training_flag_back_and_forth_reuses_both_entries():
    flip = [Call((t(),), before=lambda m, mode=mode: m.train(mode)) for mode in (True, False, True, False)]
    stats = differential(twins(model(TrainBranch)), flip)
    expect(stats, compiles=2, cache_hits=2, fallbacks=0)


class BN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.fc(x))


def test_batchnorm_training_updates_running_stats_identically():
    # three calls: each updates running_mean / running_var / num_batches_tracked in place
    stats = differential(twins(model(BN)), [(t(5, 4),), (t(5, 4),), (t(5, 4),)])
    expect_one_graph(stats)


def test_batchnorm_eval_after_training_recompiles():
    calls = [(t(5, 4),), (t(5, 4),), Call((t(5, 4),), before=lambda m: m.eval())]
    stats = differential(twins(model(BN)), calls)
    expect_recompile(stats)


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.register_buffer("ema", torch.zeros(4))

    def forward(self, x):
        self.steps += 1
        self.ema.mul_(0.9).add_(x.mean(0), alpha=0.1)
        return x - self.ema


def test_buffers_updated_in_place():
    stats = differential(twins(model(Counter)), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class Remember(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.calls = 0
        self.last = None

    def forward(self, x):
        self.calls += 1
        self.last = self.fc(x)
        self.note = "seen"
        return self.last * self.calls


def test_attribute_stores_on_self():
    # MonoDepth stores ``self.disp = ...`` in forward; a counter read back changes the next call
    stats = differential(twins(model(Remember)), fresh(lambda: (t(),)))
    expect(stats, fallbacks=0)
    assert stats.compiles + stats.cache_hits == 3


class ConfigFlag(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.use_skip = True
        self.depth = 2

    def forward(self, x):
        for _ in range(self.depth):
            y = self.fc(x)
            x = x + y if self.use_skip else y
        return x


def test_python_attribute_change_recompiles():
    calls = [(t(),), (t(),), Call((t(),), before=lambda m: setattr(m, "use_skip", False))]
    stats = differential(twins(model(ConfigFlag)), calls)
    expect_recompile(stats)


def test_python_int_attribute_change_recompiles():
    calls = [(t(),), (t(),), Call((t(),), before=lambda m: setattr(m, "depth", 3))]
    stats = differential(twins(model(ConfigFlag)), calls)
    expect_recompile(stats)


def test_parameter_updated_between_calls_is_read_afresh():
    def bump(m):
        with torch.no_grad():
            m.fc.weight.add_(1.0)
    calls = [(t(),), (t(),), Call((t(),), before=bump)]
    stats = differential(twins(model(ConfigFlag)), calls)
    expect_one_graph(stats)


def test_submodule_replaced_between_calls():
    calls = [(t(),), (t(),), Call((t(),), before=lambda m: setattr(m.a, "fc", nn.Linear(4, 4)))]
    stats = differential(twins(model(Nested)), calls)
    expect_recompile(stats)


def _double_input(module, args):
    return (args[0] * 2,)


def _add_one_output(module, args, output):
    return output + 1


def _record_call(module, args, output):
    module.hook_calls = getattr(module, "hook_calls", 0) + 1


def test_forward_pre_hook():
    m = model(Block)
    m.register_forward_pre_hook(_double_input)
    stats = differential(twins(m), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_forward_hook_changing_output():
    m = model(Nested)
    m.a.register_forward_hook(_add_one_output)
    stats = differential(twins(m), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_forward_hook_with_a_side_effect():
    # the first call creates ``hook_calls`` (a hasattr() that then changes: one recompile); from then on
    # the count is recomputed from the module on every call
    m = model(Block)
    m.register_forward_hook(_record_call)
    stats = differential(twins(m), fresh(lambda: (t(),), 4))
    expect_recompile(stats, calls=4)


def test_hook_added_after_compiling_is_run():
    calls = [(t(),), (t(),), Call((t(),), before=lambda m: m.a.register_forward_hook(_add_one_output))]
    stats = differential(twins(model(Nested)), calls)
    expect_recompile(stats)


def test_common_layers_in_one_model():
    m = model(nn.Sequential, nn.Conv2d(2, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU(), nn.MaxPool2d(2),
              nn.Flatten(), nn.LayerNorm(12), nn.Linear(12, 5), nn.Softmax(-1))
    stats = differential(twins(m), fresh(lambda: (t(2, 2, 4, 4),)))
    expect_one_graph(stats)


def test_embedding_and_layer_norm():
    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4)
            self.norm = nn.LayerNorm(4)

        def forward(self, ids):
            return self.norm(self.emb(ids)).mean(1)

    ids = torch.tensor([[1, 2, 3], [4, 5, 9]])
    stats = differential(twins(model(Tiny)), fresh(lambda: (ids,)))
    expect_one_graph(stats)


def test_module_passed_as_an_argument():
    def apply(layer, x):
        return layer(x).sum(-1)

    def make():
        m = model(Block)
        return apply, m

    stats = differential(make, fresh(lambda: (FromEnv(), t())))
    expect_one_graph(stats)



def test_forward_replaced_on_the_instance_is_called():
    def patch(m):
        m.forward = lambda x: x * 0 + 7
    calls = [(t(),), (t(),), Call((t(),), before=patch)]
    stats = differential(twins(model(Block)), calls, observe=lambda m: m.state_dict())
    expect_recompile(stats)


def test_dropout_follows_train_and_eval():
    m = model(nn.Sequential, nn.Linear(4, 4), nn.Dropout(0.5))
    calls = [(t(),), (t(),), Call((t(),), before=lambda m: m.eval()), Call((t(),), before=lambda m: m.train())]
    stats = differential(twins(m), calls)
    expect(stats, compiles=2, cache_hits=2, fallbacks=0)


def test_hook_removed_between_calls_is_not_run():
    def make():
        m = model(Block)
        m.handle = m.register_forward_hook(_add_one_output)
        return m, m
    calls = [(t(),), (t(),), Call((t(),), before=lambda m: m.handle.remove())]
    stats = differential(make, calls, observe=lambda m: m.state_dict())
    expect_recompile(stats)


def test_nested_modules_with_the_magpy_backend():
    try:
        from magpy import codegen  # noqa: F401 - the codegen backend is built separately
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"the magpy backend does not import: {exc}")
    stats = differential(twins(model(Nested).eval()), fresh(lambda: (t(),)), backend="magpy")
    expect_one_graph(stats)


class _MaskedConv(nn.Conv2d):
    """PixelCNN's masked convolution: masks its own weight in place on every call."""

    def __init__(self):
        super().__init__(2, 2, 3, padding=1)
        self.register_buffer("mask", torch.ones_like(self.weight.data))
        self.mask[:, :, 1, 2:] = 0
        self.mask[:, :, 2:] = 0

    def forward(self, x):
        self.weight.data *= self.mask
        return super().forward(x)


def test_weight_masked_in_place_through_data():
    torch.manual_seed(0)
    # (between calls the weight is reset unmasked: each later call must mask it again)
    calls = [Call((torch.randn(1, 2, 5, 5),), before=lambda m, v=float(k + 1): m.weight.data.fill_(v))
             for k in range(3)]
    stats = differential(twins(_MaskedConv()), calls,
                         observe=lambda m: {k: v.clone() for k, v in m.state_dict().items()})
    expect_one_graph(stats)


class _Reversed(nn.Module):
    """butterfly's factor stack, applied last to first through a slice of its ModuleList."""

    def __init__(self):
        super().__init__()
        self.factors = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])

    def forward(self, x):
        for factor in self.factors[::-1]:
            x = factor(x)
        return x


def test_a_slice_of_a_module_list_made_in_forward():
    # (the slice is a new ModuleList on every call: what it holds is guarded, not its identity)
    torch.manual_seed(0)
    stats = differential(twins(_Reversed()), fresh(lambda: (torch.randn(2, 3),)))
    expect_one_graph(stats)


class _Parts(nn.Module):
    """Hawkeye's MELayer: the i-th part of a Sequential (its __getitem__ goes through islice)."""

    def __init__(self):
        super().__init__()
        self.parts = nn.Sequential(*[nn.Sequential(nn.Linear(4, 4), nn.Sigmoid()) for _ in range(2)])

    def forward(self, x):
        return [x * self.parts[i](x) for i in range(2)]


def test_an_indexed_part_of_a_sequential():
    torch.manual_seed(0)
    stats = differential(twins(_Parts()), fresh(lambda: (torch.randn(2, 4),)))
    expect_one_graph(stats)


def test_a_convolution_made_in_forward():
    # (DCLGAN's strided conv: a new module — fresh random weights — on every call)
    def fn(x):
        conv = nn.Conv2d(2, 3, 3, stride=2, padding=1)
        return conv(x)

    stats = differential(plain(fn), fresh(lambda: (torch.randn(1, 2, 6, 6),)))
    expect_one_graph(stats)


class _Tail(nn.Module):
    """Runs all but its first child, from an OrderedDict of (name, module) pairs made in forward, and
    marks a one-hot map it builds as not needing grad (RecBole's decoder)."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 3)

    def forward(self, x, index):
        rest = collections.OrderedDict(list(self._modules.items())[1:])
        for name, m in rest.items():
            x = m(x) + len(name)
        onehot = torch.zeros(x.shape).scatter_(1, index, 1.0)
        onehot.requires_grad = False
        return x + onehot, onehot.requires_grad


def test_an_ordered_dict_of_children_made_in_forward_and_a_requires_grad_flag():
    stats = differential(twins(_Tail()), fresh(lambda: (torch.randn(2, 3), torch.tensor([[0], [2]]))))
    expect_one_graph(stats)


def _weight_dropped(module, dropout):
    """PyTorch-NLP's WeightDrop: ``weight`` moves to ``weight_raw``; each forward registers the dropped
    weight (in eval mode, ``weight_raw`` itself, a Parameter) under the old name."""
    w = module.weight
    del module._parameters["weight"]
    module.register_parameter("weight_raw", nn.Parameter(w))
    original_forward = module.forward

    def forward(*args, **kwargs):
        raw_w = getattr(module, "weight_raw")
        setattr(module, "weight", F.dropout(raw_w, p=dropout, training=module.training))
        return original_forward(*args, **kwargs)
    module.forward = forward
    return module


@pytest.mark.parametrize("training", [False, True])
def test_a_parameter_registered_in_forward(training):
    def make():  # (a deep copy would keep the closure's module: each side builds its own)
        torch.manual_seed(0)
        m = _weight_dropped(nn.Linear(3, 2), 0.5).train(training)
        return m, m
    stats = differential(make, fresh(lambda: (torch.randn(4, 3),)))
    expect_one_graph(stats)


def test_a_module_list_unpacked_into_names():
    # (vformer's CVTEmbedding: ``for conv, act, pool in self.layers`` over ModuleLists of three)
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.ModuleList([nn.Conv2d(2, 2, 3, padding=1), nn.ReLU(),
                                                        nn.MaxPool2d(2)]) for _ in range(2)])

        def forward(self, x):
            for conv, act, pool in self.layers:
                x = pool(act(conv(x)))
            return x

    stats = differential(twins(Net()), fresh(lambda: (torch.randn(1, 2, 8, 8),)))
    expect_one_graph(stats)


def test_a_checkpointed_block_runs_in_the_graph_with_the_same_gradients():
    # (torch.utils.checkpoint.checkpoint(f, *args) is f(*args) in values and gradients)
    from torch.utils.checkpoint import checkpoint

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))

        def forward(self, x):
            return checkpoint(self.block, x, use_reentrant=False) * 2

    expect(_trains_as_eager(Net, lambda: torch.randn(5, 3)), compiles=1, graphs=1, fallbacks=0)


def _trains_as_eager(make, make_x, steps=3):
    """A module and its compiled twin (same weights) take the same SGD steps: outputs, gradients and
    the parameters after each step are compared. Returns the compiled module's stats."""
    eager, model = make(), make()
    model.load_state_dict(eager.state_dict())
    compiled = magpy.compile(model, backend="eager", fullgraph=True)
    for _ in range(steps):
        x = make_x()
        want, got = eager(x), compiled(x)
        assert torch.allclose(got, want)
        want.sum().backward()
        got.sum().backward()
        for (name, p), q in zip(eager.named_parameters(), model.parameters()):
            assert torch.allclose(q.grad, p.grad), name
            with torch.no_grad():
                p -= 0.5 * p.grad
                q -= 0.5 * q.grad
            p.grad = q.grad = None
        assert all(torch.equal(p, q) for p, q in zip(eager.parameters(), model.parameters()))
    return stats_of(compiled)


class _ClampedActivation(nn.Module):
    """LBAM's GaussActivation: ``p.data = torch.clamp(p.data, lo, hi)`` on its parameters each forward."""

    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(torch.tensor(7.0))
        self.mu = nn.Parameter(torch.tensor([0.05, 0.5, 4.0]))

    def forward(self, x):
        self.a.data = torch.clamp(self.a.data, 1.01, 6.0)
        self.mu.data = torch.clamp(self.mu.data, 0.1, 3.0)
        return self.a * torch.exp(-(x - self.mu) ** 2)


def test_parameter_data_replaced_in_forward():
    stats = differential(twins(_ClampedActivation()), fresh(lambda: (torch.randn(2, 3),)))
    expect_one_graph(stats)


def test_parameter_data_replaced_in_forward_trains_as_eager():
    expect(_trains_as_eager(_ClampedActivation, lambda: torch.randn(2, 3)), compiles=1, fallbacks=0)


def test_parameter_data_replaced_after_it_was_used_falls_back():
    # (an op that saved the parameter for backward would see the copy; eager gave it new storage)
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.tensor([3.0, -2.0]))

        def forward(self, x):
            y = self.w * x
            self.w.data = torch.clamp(self.w.data, 0.0, 1.0)
            return y

    stats = differential(twins(Net()), fresh(lambda: (torch.randn(2),)))
    expect_not_one_graph(stats)
