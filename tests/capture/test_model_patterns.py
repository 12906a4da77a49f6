"""Small models with the Python patterns of the original MagPy's model tests (ResNet, DenseNet,
LSTM cell loops, seq2seq, BERT's chunking with inspect.signature, TridentNet's shared-weight branches,
BlockDrop's policy, MonoDepth's attribute stores with numpy, quantized ResNet's float(tensor))."""
import inspect

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import magpy

try:
    from .twin import fresh, differential, expect, expect_one_graph, plain, twins, unsupported, \
        assert_same, stats_of
except ImportError:  # tests/capture is not a package: pytest put this folder on sys.path
    from twin import fresh, differential, expect, expect_one_graph, plain, twins, unsupported, \
        assert_same, stats_of


def built(cls, *args):
    torch.manual_seed(0)
    return cls(*args)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return F.relu(out)


class TinyResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(2, 4, 3, padding=1)
        self.layers = nn.Sequential(BasicBlock(4, 4), BasicBlock(4, 8, 2))
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def test_resnet_inference():
    m = built(TinyResNet).eval()
    stats = differential(twins(m), fresh(lambda: (torch.randn(1, 2, 6, 6),)))
    expect_one_graph(stats)


def test_resnet_training_mode_updates_batchnorm_stats():
    m = built(TinyResNet)
    stats = differential(twins(m), fresh(lambda: (torch.randn(2, 2, 6, 6),)))
    expect_one_graph(stats)


class DenseLayer(nn.Module):
    def __init__(self, cin, growth):
        super().__init__()
        self.norm = nn.BatchNorm2d(cin)
        self.conv = nn.Conv2d(cin, growth, 1)

    def bn_function(self, *inputs):
        return self.conv(F.relu(self.norm(torch.cat(inputs, 1))))

    def forward(self, *prev_features):
        return self.bn_function(*prev_features)


class DenseBlock(nn.ModuleDict):
    def __init__(self, layers=2, cin=2, growth=2):
        super().__init__()
        for k in range(layers):
            self.add_module(f"denselayer{k + 1}", DenseLayer(cin + k * growth, growth))

    def forward(self, x):
        features = [x]
        for name, layer in self.items():
            features.append(layer(*features))
        return torch.cat(features, 1)


def test_densenet_block_with_star_features():
    m = built(DenseBlock).eval()
    stats = differential(twins(m), fresh(lambda: (torch.randn(1, 2, 3, 3),)))
    expect_one_graph(stats)


class LSTMLoop(nn.Module):
    """An LSTM cell unrolled over time in Python, returning every hidden state."""

    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(3, 4)
        self.out = nn.Linear(4, 2)

    def forward(self, xs, state=None):
        outputs = []
        for x in xs.unbind(0):
            state = self.cell(x, state)
            outputs.append(self.out(state[0]))
        return torch.stack(outputs), state


def test_lstm_cell_loop_over_time():
    stats = differential(twins(built(LSTMLoop)), fresh(lambda: (torch.randn(3, 2, 3),)))
    expect_one_graph(stats)


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(6, 4)
        self.enc = nn.GRUCell(4, 4)
        self.dec = nn.GRUCell(4, 4)
        self.proj = nn.Linear(4, 6)

    def forward(self, src, steps=3):
        h = torch.zeros(src.shape[0], 4)
        for token in src.T:
            h = self.enc(self.emb(token), h)
        inp = self.emb(torch.zeros(src.shape[0], dtype=torch.long))
        logits = []
        for _ in range(steps):
            h = self.dec(inp, h)
            step_logits = self.proj(h)
            logits.append(step_logits)
            inp = self.emb(step_logits.argmax(-1))
        return torch.stack(logits, 1)


def test_seq2seq_greedy_decoding():
    src = lambda: (torch.randint(0, 6, (2, 3)),)  # noqa: E731
    stats = differential(twins(built(Seq2Seq)), fresh(src))
    expect_one_graph(stats)


def apply_chunking_to_forward(forward_fn, chunk_size, chunk_dim, *input_tensors):
    """BERT's helper: checks the callee's arity with inspect.signature, then maybe chunks."""
    num_args = len(inspect.signature(forward_fn).parameters)
    if num_args != len(input_tensors):
        raise ValueError(f"forward_fn expects {num_args} arguments, got {len(input_tensors)}")
    if chunk_size > 0:
        chunks = zip(*(t.chunk(t.shape[chunk_dim] // chunk_size, dim=chunk_dim) for t in input_tensors))
        return torch.cat([forward_fn(*c) for c in chunks], dim=chunk_dim)
    return forward_fn(*input_tensors)


class BertLayer(nn.Module):
    def __init__(self, chunk_size=0):
        super().__init__()
        self.inter = nn.Linear(4, 8)
        self.out = nn.Linear(8, 4)
        self.chunk_size = chunk_size

    def feed_forward(self, hidden):
        return self.out(F.gelu(self.inter(hidden)))

    def forward(self, hidden):
        return apply_chunking_to_forward(self.feed_forward, self.chunk_size, 1, hidden) + hidden


def test_bert_chunking_with_inspect_signature():
    stats = differential(twins(built(BertLayer)), fresh(lambda: (torch.randn(2, 4, 4),)))
    expect_one_graph(stats)


def test_bert_chunking_in_chunks():
    stats = differential(twins(built(BertLayer, 2)), fresh(lambda: (torch.randn(2, 4, 4),)))
    expect_one_graph(stats)


class Trident(nn.Module):
    """TridentNet: one weight, several dilations, branches computed in a loop."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(2, 2, 3, 3) * 0.1)
        self.dilations = (1, 2, 3)

    def forward(self, x):
        return [F.conv2d(x, self.weight, padding=d, dilation=d) for d in self.dilations]


def test_tridentnet_shared_weight_branches():
    stats = differential(twins(built(Trident)), fresh(lambda: (torch.randn(1, 2, 5, 5),)))
    expect_one_graph(stats)


class BlockDrop(nn.Module):
    """BlockDrop: a policy vector (a Python list here) decides which residual blocks run."""

    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x, policy):
        for block, keep in zip(self.blocks, policy):
            if keep:
                x = x + block(x)
        return x


def test_blockdrop_policy_from_python_values():
    calls = [(torch.randn(2, 4), [1, 0, 1]), (torch.randn(2, 4), [1, 0, 1]), (torch.randn(2, 4), [0, 1, 1])]
    stats = differential(twins(built(BlockDrop)), calls)
    expect(stats, compiles=2, cache_hits=1, fallbacks=0)


class MonoDepthDecoder(nn.Module):
    """MonoDepth: numpy on Python values in forward, results stored on self (``self.disp = …``)."""

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(2, 1, 3, padding=1) for _ in range(2)])
        self.scales = np.array([1, 2])

    def forward(self, x):
        self.outputs = {}
        for k, conv in enumerate(self.convs):
            factor = float(np.power(2.0, self.scales[k]))
            self.outputs[("disp", k)] = torch.sigmoid(conv(x)) * factor
        self.disp = self.outputs[("disp", 0)]
        return self.outputs


def test_monodepth_attribute_stores_and_numpy():
    stats = differential(twins(built(MonoDepthDecoder)), fresh(lambda: (torch.randn(1, 2, 4, 4),)))
    expect_one_graph(stats)


class QuantReLU(nn.Module):
    """Quantized ResNet: the scale is a Python float taken from a tensor, then in-place chains."""

    def forward(self, x):
        scale = float(x.abs().max()) / 127.0
        q = x.div(scale).round_().clamp_(-128, 127)
        return q.mul_(scale).relu_()


def test_quantized_float_of_tensor_and_inplace_chain():
    stats = differential(twins(QuantReLU()), fresh(lambda: (torch.randn(2, 3),)))
    expect_one_graph(stats)


def test_a_policy_samples_actions_from_categorical_distributions():
    # (AutoDL's controller: validated distribution arguments, lazily computed probabilities, sampling)
    from torch.distributions import Categorical

    def fn(logits):
        by_logits = Categorical(logits=logits)
        by_probs = Categorical(probs=logits.softmax(-1))
        a, b = by_logits.sample(), by_probs.sample()
        return a, b, by_logits.log_prob(a) + by_probs.log_prob(b), by_logits.entropy()

    stats = differential(plain(fn), fresh(lambda: (torch.randn(2, 5),)))
    expect_one_graph(stats)


class _PackedEncoder(nn.Module):
    """A text encoder over padded batches (motion-diffusion's TextEncoderBiGRU): lengths from a tensor,
    a packed bidirectional GRU, and each sample's backward half flipped within its own length."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(4, 3, batch_first=True, bidirectional=True)

    def forward(self, x, lengths):
        lens = lengths.data.tolist()
        packed = nn.utils.rnn.pack_padded_sequence(x, lens, batch_first=True)
        seq, last = self.gru(packed)
        seq = nn.utils.rnn.pad_packed_sequence(seq, batch_first=True)[0]
        backward = seq[..., 3:].clone()
        for i, n in enumerate(lens):
            backward[i:i + 1, :n] = torch.flip(backward[i:i + 1, :n].clone(), dims=[1])
        return torch.cat([seq[..., :3], backward], dim=-1), torch.cat([last[0], last[1]], dim=-1)


def test_a_packed_gru_over_lengths_read_from_a_tensor():
    # the lengths decide shapes inside the graph: each call's own lengths are used, not the first's
    def args(*lengths):
        return torch.randn(3, 5, 4), torch.tensor(lengths)

    torch.manual_seed(0)
    calls = [args(5, 3, 2), args(4, 4, 1), args(5, 3, 2)]
    stats = differential(twins(_PackedEncoder()), calls)
    expect(stats, fallbacks=0)


class ChannelSelection(nn.Module):
    """Network slimming: the channels a pruning mask (module state) keeps, found with numpy."""

    def __init__(self, channels):
        super().__init__()
        self.indexes = nn.Parameter(torch.ones(channels))

    def forward(self, x):
        selected = np.squeeze(np.argwhere(self.indexes.data.cpu().numpy()))
        if selected.size == 1:
            selected = np.resize(selected, (1,))
        return x[:, selected, :, :]


def test_numpy_of_module_state_selects_channels_and_follows_pruning():
    eager, model = ChannelSelection(4), ChannelSelection(4)
    compiled = magpy.compile(model, backend="eager", fullgraph=True)
    for k, pruned in enumerate([[], [], [1], [1], [0, 1, 3], [0, 1, 3]]):
        for m in (eager, model):
            m.indexes.data.fill_(1)
            m.indexes.data[pruned] = 0
        x = torch.randn(2, 4, 3, 3)
        assert_same(compiled(x), eager(x), f"call {k}, channels {pruned} pruned")
    expect(stats_of(compiled), compiles=3, fallbacks=0)   # one per mask: the guard compares its numbers


def test_numpy_of_the_calls_data_computed_in_the_graph():
    # (numpy over the call's own data runs inside the graph; its result indexes a tensor)
    def fn(x):
        return x[:, np.argwhere(x[0].numpy() > 0)[:, 0]]

    stats = differential(plain(fn), fresh(lambda: (torch.randn(2, 5),), 4))
    expect_one_graph(stats, calls=4)


def test_a_branch_on_numpy_of_the_calls_data_is_guarded_by_rerunning_it():
    def fn(x):
        if x.numpy().sum() > 0:
            return x * 2
        return x

    calls = [(torch.tensor(v),) for v in ([1., 2.], [3., 1.], [-1., -2.], [-3., 1.])]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0, compiles=2, cache_hits=2)


def test_a_loop_over_the_unique_values_of_the_calls_data():
    # (pix2pixHD's Encoder: ``for i in np.unique(inst.numpy().astype(int))`` — as many iterations as
    # the data has values, each value computed in the graph; another count is another entry)
    def fn(x, inst):
        out = x.clone()
        for i in np.unique(inst.numpy().astype(int)):
            out = out + int(i) * (inst == int(i)).float()
        return out

    values = ([0., 1., 1., 0.], [1., 0., 0., 0.], [2., 0., 1., 0.], [3., 3., 3., 3.], [0., 2., 1., 0.])
    calls = [(torch.randn(4), torch.tensor(v)) for v in values]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0, compiles=3, cache_hits=2)


def test_a_loop_over_a_range_the_data_decides():
    # (allennlp's ElmoLstm: ``for timestep in range(total_timesteps)`` with a count from the batch's
    # lengths — the guard reruns the count, each step's index is computed in the graph)
    def fn(x, lengths):
        out = x.clone()
        for step in range(lengths.max().item()):
            out = out + step * x
        return out

    calls = [(torch.randn(3), torch.tensor(v)) for v in ([2, 3], [3, 1], [1, 1], [2, 1])]
    stats = differential(plain(fn), calls)
    expect(stats, fallbacks=0, compiles=3, cache_hits=1)
