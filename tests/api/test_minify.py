"""``magpy.minify`` and ``python -m magpy minify``: a call that a backend gets wrong, shrunk to the fewest graph
ops that still show the fault, and the repro script written for it (run here with the same Python).

The faults are planted: backends that wrap "eager" and compute one op wrongly or refuse it, and a wrong
C++ rendering of one op in our own code generator."""
import copy
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import magpy
from magpy.backends import lookup_backend
from magpy.minifier.search import smallest
from magpy.testing import difference

SRC = os.path.dirname(os.path.dirname(magpy.__file__))


# ---- planted faults --------------------------------------------------------------------------------

def wrong_sigmoid(x):
    return torch.sigmoid(x) + 1e-2


def is_sigmoid(node):
    return node.target in (torch.sigmoid, "sigmoid", wrong_sigmoid)


def wrong_sigmoid_backend(gm, example_inputs):
    """The "eager" backend with one wrong lowering: every sigmoid is off by 1e-2."""
    for node in gm.graph.nodes:
        if is_sigmoid(node):
            node.op, node.target = "call_function", wrong_sigmoid
    gm.recompile()
    return lookup_backend("eager")(gm, example_inputs)


def no_tanh_backend(gm, example_inputs):
    """The "eager" backend with no lowering for tanh."""
    if any(node.target in (torch.tanh, "tanh") for node in gm.graph.nodes):
        raise NotImplementedError("planted: no lowering for tanh")
    return lookup_backend("eager")(gm, example_inputs)


class WrongOnFirstCompile:
    """Right on every graph but the first it compiles: the call differs, yet no graph compiled alone does."""

    def __init__(self):
        self.compiles = 0

    def __call__(self, gm, example_inputs):
        self.compiles += 1
        if self.compiles > 1:
            return gm.forward
        return lambda *args: tuple(out + 1 for out in gm(*args))


def model(x, w):
    """16 ops, one sigmoid and one tanh."""
    h = x @ w
    h = h * 2 + 1
    g = torch.tanh(h)
    s = torch.sigmoid(g - 0.5)
    t = s * h
    u = t.relu().sum(dim=1, keepdim=True)
    v = u / (h.abs() + 1)
    return v.exp().mean(0) - g.max()


def model_inputs(rows=8):
    generator = torch.Generator().manual_seed(0)
    return torch.randn(rows, 16, generator=generator), torch.randn(16, 12, generator=generator)


def ops(gm):
    return [n for n in gm.graph.nodes if n.op in ("call_function", "call_method")]


def run_python(*argv, cwd):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, *map(str, argv)], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300)


def script_namespace(script):
    namespace = {"__name__": "repro_under_test"}
    exec(compile(script, "repro", "exec"), namespace)
    return namespace


# ---- accuracy --------------------------------------------------------------------------------------

def test_a_wrong_lowering_is_reduced_to_its_op_and_the_script_shows_it(tmp_path):
    out = tmp_path / "repro.py"
    found = magpy.minify(model, *model_inputs(), backend=wrong_sigmoid_backend, out=out)
    assert found.in_graph and found.verified
    assert found.ops_before == len(ops(magpy.explain(model, *model_inputs()).graphs[0])) >= 10
    assert found.ops_after == len(ops(found.graph)) <= 3
    assert any(is_sigmoid(n) for n in ops(found.graph))
    assert "values differ" in found.symptom
    # the minimal graph and its inputs show the fault on their own
    eager = found.graph(*found.inputs)
    compiled = wrong_sigmoid_backend(copy.deepcopy(found.graph), found.inputs)(*found.inputs)
    assert difference(tuple(eager), tuple(compiled)) is not None
    text = str(found)
    assert f"{found.ops_before} op(s) -> {found.ops_after} op(s)" in text and "sigmoid" in text
    assert found.path == str(out) and out.read_text() == found.script
    done = run_python(out, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "compiled differs from eager: output[0]: values differ" in done.stdout


def test_the_script_rebuilds_inputs_with_their_shapes_strides_dtypes_and_values(tmp_path):
    def transposed(x):
        return torch.sigmoid((x * 2).t()).sum(0) + x.mean()

    x = torch.randn(4, 6, dtype=torch.float64)
    found = magpy.minify(transposed, x, backend=wrong_sigmoid_backend, out=None)
    assert found.path is None and found.ops_after <= 2
    assert any(not t.is_contiguous() for t in found.inputs)   # (the transposed value, as sigmoid read it)
    rebuilt = script_namespace(found.script)["make_inputs"]()
    assert len(rebuilt) == len(found.inputs)
    for made, original in zip(rebuilt, found.inputs):
        assert (made.shape, made.stride(), made.dtype) == (original.shape, original.stride(), original.dtype)
        assert torch.equal(made, original)   # (small: written out value by value)


def test_large_inputs_are_drawn_from_a_seed_and_still_show_the_fault():
    found = magpy.minify(model, *model_inputs(rows=64), backend=wrong_sigmoid_backend, out=None)
    inputs_source = found.script[found.script.index("def make_inputs"):found.script.index("class Repro")]
    assert "seed=" in inputs_source and "values=" not in inputs_source
    assert script_namespace(found.script)["main"]() == 1   # (what ``verified`` says, run here)
    assert found.verified and found.ops_after <= 3


def test_a_wrong_lowering_of_our_codegen_is_found_and_its_script_passes_once_fixed(tmp_path, monkeypatch):
    from magpy.codegen.cpp import handler

    right = handler._SPECIAL["sigmoid"]
    monkeypatch.setitem(handler._SPECIAL, "sigmoid", lambda d, f, a: f"({right(d, f, a)} + 0.01f)")
    found = magpy.minify(model, *model_inputs(), backend="magpy", out=tmp_path / "repro.py")
    assert found.verified and found.ops_after <= 3
    assert any(is_sigmoid(n) for n in ops(found.graph))
    assert "lookup_backend('magpy')" in found.script
    # the script's own process has the right lowering: compiled and eager agree there
    done = run_python(tmp_path / "repro.py", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "compiled and eager agree" in done.stdout


# ---- error -----------------------------------------------------------------------------------------

def test_a_backend_that_raises_on_one_op_is_reduced_to_that_op(tmp_path):
    found = magpy.minify(model, *model_inputs(), backend=no_tanh_backend, check="error", out=tmp_path / "r.py")
    assert found.verified and found.check == "error"
    assert [n.target for n in ops(found.graph)] == [torch.tanh]
    assert "NotImplementedError: planted: no lowering for tanh" in found.symptom
    assert (tmp_path / "r.py").read_text() == found.script and "CHECK = 'error'" in found.script


def test_each_check_names_the_other_when_the_call_shows_only_that_kind():
    with pytest.raises(ValueError, match="use check='error'"):
        magpy.minify(model, *model_inputs(), backend=no_tanh_backend, out=None)
    with pytest.raises(ValueError, match="use check='accuracy'"):
        magpy.minify(model, *model_inputs(), backend=wrong_sigmoid_backend, check="error", out=None)


# ---- no fault, or none in the graph -------------------------------------------------------------------

def test_a_call_compiled_right_has_nothing_to_minify(tmp_path):
    with pytest.raises(ValueError, match="nothing to minify: compiled and eager agree on this call"):
        magpy.minify(model, *model_inputs(), backend="eager", out=tmp_path / "repro.py")
    assert not (tmp_path / "repro.py").exists()


def test_a_fault_no_graph_shows_alone_is_reported_outside_the_graph(tmp_path):
    found = magpy.minify(model, *model_inputs(), backend=WrongOnFirstCompile(), out=tmp_path / "repro.py")
    assert not found.in_graph
    assert found.graph is None and found.script is None and found.path is None
    assert not (tmp_path / "repro.py").exists()
    assert "the fault is outside the graph" in str(found) and "values differ" in str(found)


def test_an_unknown_check_is_refused():
    with pytest.raises(ValueError, match="check must be one of"):
        magpy.minify(model, *model_inputs(), check="speed")


# ---- delta debugging ---------------------------------------------------------------------------------

def test_smallest_keeps_exactly_the_items_the_failure_needs():
    calls = []

    def fails(items):
        calls.append(items)
        return {3, 11} <= set(items)

    assert smallest(range(16), fails) == [3, 11]
    assert [] not in calls and len(calls) < 64   # (not the 2**16 subsets)


def test_smallest_of_a_failure_needing_every_item_is_all_of_them():
    assert smallest("abcd", lambda items: len(items) == 4) == list("abcd")


# ---- the command line --------------------------------------------------------------------------------

PROGRAM = """
import torch
import magpy


def wrong_sigmoid(x):
    return torch.sigmoid(x) + 1e-2


@magpy.register_backend("planted_sigmoid")
def planted_sigmoid(gm, example_inputs):
    for node in gm.graph.nodes:
        if node.target in (torch.sigmoid, "sigmoid"):
            node.op, node.target = "call_function", wrong_sigmoid
    gm.recompile()
    return gm.forward


def fn(x, scale=1.0):
    h = torch.tanh(x * scale) + 1
    return torch.sigmoid(h).sum(1) * h.mean()


def example_inputs():
    return (torch.randn(3, 5),), {"scale": 2.0}
"""


def test_cli_minify_writes_the_repro_script_in_the_current_folder(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM))
    done = run_python("-m", "magpy", "minify", "prog.py:fn", "--backend", "planted_sigmoid", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "-> 1 op(s)" in done.stdout and "sigmoid" in done.stdout
    assert "repro script written to repro.py" in done.stdout
    repro = run_python("repro.py", cwd=tmp_path)
    assert repro.returncode == 1, repro.stdout + repro.stderr
    assert "values differ" in repro.stdout


def test_cli_minify_of_a_call_compiled_right_says_so_and_fails(tmp_path, monkeypatch, capsys):
    from magpy.cli import main

    (tmp_path / "right.py").write_text(textwrap.dedent(PROGRAM))
    monkeypatch.chdir(tmp_path)
    assert main(["minify", "right.py:fn", "--backend", "eager"]) == 1
    assert "nothing to minify: compiled and eager agree on this call" in capsys.readouterr().err
    assert not (tmp_path / "repro.py").exists()
