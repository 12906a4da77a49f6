"""Which code generator serves a graph, and what runs when none does: the graph as captured."""
import pytest
import torch
import torch.nn.functional as F

from magpy import backends, codegen
from magpy.codegen.devices import NotServed, select


def test_cpu_tensors_get_cpp_unless_triton_is_asked_for():
    x = torch.randn(3)
    assert select([x]) == "cpp"
    assert select([x, 2]) == "cpp"
    assert select([]) == "cpp"
    with pytest.raises(ValueError, match="unknown codegen"):
        select([x], "fortran")


def test_tensors_on_two_devices_are_not_served():
    with pytest.raises(NotServed, match="several devices"):
        select([torch.randn(2), torch.randn(2, device="meta")])


def test_a_device_without_a_generator_is_not_served():
    with pytest.raises(NotServed, match="device meta"):
        select([torch.randn(2, device="meta")])


def _layer_norm_gelu(x, w, b):
    return (F.gelu(F.layer_norm(x, x.shape[-1:], w, b)),)


def test_unserved_graph_runs_as_captured_not_decomposed():
    gm = torch.fx.symbolic_trace(_layer_norm_gelu)
    inputs = [torch.randn(4, 8, device="meta"), torch.randn(8, device="meta"), torch.randn(8, device="meta")]
    fn = backends.magpy_backend(gm, inputs)
    assert fn == gm.forward  # the original module's ops, not AOTAutograd's decomposition
    report = codegen.last_report()
    assert report.mode == "captured" and "device meta" in report.graph_fallback


def test_forward_graph_that_falls_back_runs_as_captured(monkeypatch):
    from magpy.codegen import graph

    def refuse(self):
        raise graph.GraphFallback("refused for the test")

    monkeypatch.setattr(graph.GraphLowering, "run", refuse)
    gm = torch.fx.symbolic_trace(_layer_norm_gelu)
    x, w, b = torch.randn(4, 8), torch.randn(8), torch.randn(8)
    with pytest.warns(UserWarning, match="refused for the test"):
        fn = backends.magpy_backend(gm, [x, w, b])
    assert fn == gm.forward
    torch.testing.assert_close(fn(x, w, b), _layer_norm_gelu(x, w, b))


def test_options_reach_the_magpy_backend():
    bound = backends.lookup_backend("magpy", {"codegen": "cpp"})
    assert bound.keywords == {"options": {"codegen": "cpp"}}
    mine = lambda gm, example_inputs: gm.forward  # noqa: E731
    assert backends.lookup_backend(mine, {"codegen": "cpp"}) is mine
