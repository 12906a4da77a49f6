"""Where a graph compiled under DDP is split (``backends.distributed``): one piece per gradient bucket, the
buckets filled from the graph's end as DDP's Reducer fills them. No process group needed."""
import torch
import torch.nn.functional as F
from torch import fx

from magpy.backends.distributed import _compiled_pieces, bucket_pieces, piece_count


def _three_layers(x, w1, b1, w2, b2, w3, b3):
    return F.linear(F.relu(F.linear(F.relu(F.linear(x, w1, b1)), w2, b2)), w3, b3)


def _scaled_first(x, w1, b1, w2, b2, w3, b3):
    return _three_layers(x * 2, w1, b1, w2, b2, w3, b3)


#: bytes of each input's gradient: x is no parameter; 16→32, 32→32, 32→4 float32 layers
SIZES = [0, 2048, 128, 4096, 128, 512, 16]


def _pieces(fn, caps):
    gm = fx.symbolic_trace(fn)
    assignment = bucket_pieces(gm, SIZES, caps)
    if assignment is None:
        return None
    pieces = [[] for _ in range(piece_count(assignment))]
    for node in gm.graph.nodes:
        if node in assignment:
            pieces[assignment[node]].append(node.name)
    return pieces


def test_a_bucket_closes_once_it_holds_its_cap():
    assert _pieces(_three_layers, (2097, 2097)) == [["linear", "relu"], ["linear_1", "relu_1", "linear_2"]]


def test_the_first_bucket_closes_at_its_own_cap():
    # (the last layer's gradients come first in backward: DDP's first bucket is the small one)
    assert _pieces(_three_layers, (500, 10**9)) == [["linear", "relu", "linear_1", "relu_1"], ["linear_2"]]


def test_ops_before_the_first_parameter_join_the_piece_after_them():
    assert _pieces(_scaled_first, (1, 1)) == [["mul", "linear", "relu"], ["linear_1", "relu_1"], ["linear_2"]]


def test_one_bucket_keeps_the_graph_whole():
    assert _pieces(_three_layers, (10**9, 10**9)) is None


def test_a_graph_changing_autocast_part_way_stays_whole():
    gm = fx.symbolic_trace(_three_layers)
    first = next(n for n in gm.graph.nodes if n.op == "call_function")
    with gm.graph.inserting_before(first):
        gm.graph.call_function(torch.set_autocast_enabled, ("cpu", True))
    assert bucket_pieces(gm, SIZES, (1, 1)) is None


def test_pieces_compute_the_graph_and_its_gradients():
    def graph(x, w1, b1, w2, b2, w3, b3):  # (a graph returns a tuple)
        return (_scaled_first(x, w1, b1, w2, b2, w3, b3),)

    gm = fx.symbolic_trace(graph)
    torch.manual_seed(0)
    inputs = [torch.randn(8, 16)] + [torch.randn(*s, requires_grad=True) for s in
                                     ((32, 16), (32,), (32, 32), (32,), (4, 32), (4,))]
    compiled = []

    def backend(piece, example_inputs):
        compiled.append([type(x).__name__ for x in example_inputs])
        return piece.forward

    pieces = _compiled_pieces(gm, inputs, bucket_pieces(gm, SIZES, (1, 1)), backend)
    assert pieces.pieces == len(compiled) == 3
    assert all(kind == "FakeTensor" for kinds in compiled for kind in kinds)  # (no op ran for real)
    (got,), (want,) = pieces(*inputs), gm(*inputs)
    assert torch.equal(got, want)
    got_grads = torch.autograd.grad(got.sum(), inputs[1:])
    want_grads = torch.autograd.grad(want.sum(), inputs[1:])
    assert all(torch.equal(a, b) for a, b in zip(got_grads, want_grads))
