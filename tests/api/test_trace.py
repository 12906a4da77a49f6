"""``magpy.trace``: every call runs in the VM and keeps a Trace — events (calls, ops, reads, writes, guards,
where capture gave up, lines on request), the fx graph, guards and the RefGraph as text and dot — with
filters, an ``on_event`` callback, and ``breakpoint()`` stopping at the user's line."""
import inspect
import io
import re
import sys

import numpy as np
import pytest
import torch
import torch.nn as nn

import magpy

SCALE = 2.0
cfg = {"act": "relu", 'say "hi"': 1}


def line_of(fn, text):
    lines, start = inspect.getsourcelines(fn)
    return start + next(k for k, line in enumerate(lines) if text in line)


def scaled(x):
    y = x * SCALE
    if cfg["act"] == "relu":
        y = torch.relu(y)
    return y + cfg['say "hi"']


def data_into_numpy(x):
    total = np.zeros(1)
    total[0] = x.sum()  # tensor data written into a numpy array: capture gives up
    return x - float(total[0])


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 3)
        self.count = 0

    def forward(self, x):
        self.count += 1
        return self.l(x)


def traced_call(fn, *args, **options):
    traced = magpy.trace(fn, **options)
    traced(*args)
    return traced.trace


def details(trace, kind):
    return [e.detail() for e in trace.select(kind)]


# ---- running ----------------------------------------------------------------------------------------

def test_every_call_runs_and_keeps_its_own_trace():
    traced = magpy.trace(scaled)
    x = torch.randn(3)
    assert torch.equal(traced(x), scaled(x))
    first = traced.trace
    assert torch.equal(traced(x), scaled(x))
    assert traced.last is traced.trace and traced.trace is not first


def test_the_programs_exception_is_raised_and_the_trace_kept():
    def fails(x):
        raise ValueError("nope")
    traced = magpy.trace(fails)
    with pytest.raises(ValueError, match="nope"):
        traced(torch.ones(1))
    assert traced.trace.select("return")[-1].raised == "ValueError"


def test_a_module_is_traced_through_its_call():
    m = Counter()
    traced = magpy.trace(m)
    x = torch.randn(2, 3)
    assert torch.equal(traced(x), m.l(x)) and m.count == 1


# ---- events -----------------------------------------------------------------------------------------

def test_calls_are_reported_with_their_def_line():
    trace = traced_call(scaled, torch.randn(3))
    call = trace.events[0]
    assert (call.kind, call.function, call.filename, call.lineno) == ("call", "scaled", __file__,
                                                                      line_of(scaled, "def scaled"))
    assert trace.select("return")[-1].function == "scaled"


def test_ops_are_reported_with_their_node_and_line():
    trace = traced_call(scaled, torch.randn(3))
    ops = [(e.op, e.node, e.lineno) for e in trace.select("op")]
    assert ops == [("operator.mul", "mul", line_of(scaled, "x * SCALE")),
                   ("torch.relu", "relu", line_of(scaled, "torch.relu")),
                   ("operator.add", "add", line_of(scaled, "return y"))]


def test_reads_name_paths_as_the_user_writes_them():
    trace = traced_call(scaled, torch.randn(3))
    reads = details(trace, "read")
    assert "SCALE = 2.0" in reads and "cfg['act'] = 'relu'" in reads
    read = next(e for e in trace.select("read") if e.path == "cfg['act']")
    assert read.lineno == line_of(scaled, 'cfg["act"] ==')


def test_a_modules_parameters_are_inputs_by_their_attribute_path():
    trace = traced_call(Counter(), torch.randn(2, 3))
    assert {"self.l.weight -> in0", "self.l.bias -> in1"} <= set(details(trace, "input"))


def test_writes_to_outside_objects_are_reported():
    trace = traced_call(Counter(), torch.randn(2, 3))
    write = next(e for e in trace.select("write") if e.filename == __file__)  # (then Module.__setattr__'s)
    assert (write.path, write.value, write.lineno) == ("self.count", "1", line_of(Counter.forward, "+= 1"))


def test_guards_are_reported_as_they_are_added():
    trace = traced_call(scaled, torch.randn(3))
    assert "SCALE == 2.0" in details(trace, "guard")
    # (what capture adds once the call is over: the inputs' aliasing, torch's global state on entry)
    assert set(details(trace, "guard")) >= set(trace.guards) - {g for g in trace.guards if "distinct" in g or
                                                                 "global state" in g}


def test_where_capture_gave_up_is_reported_with_its_reason():
    trace = traced_call(data_into_numpy, torch.ones(3))
    gave_up = trace.select("break")
    assert len(gave_up) == 1
    assert (gave_up[0].filename, gave_up[0].lineno) == (__file__, line_of(data_into_numpy, "total[0] ="))
    assert "numpy" in gave_up[0].reason and trace.unsupported.reason == gave_up[0].reason


def test_calls_are_still_reported_after_capture_gave_up():
    trace = traced_call(data_into_numpy, torch.ones(3))
    kinds = [e.kind for e in trace.events]
    assert kinds.index("break") < len(kinds) - 1 and kinds[-1] == "return"


def test_lines_are_reported_only_when_asked():
    assert traced_call(scaled, torch.randn(3)).select("line") == []
    lines = [e.lineno for e in traced_call(scaled, torch.randn(3), lines=True, only="user").select("line")]
    assert lines == [line_of(scaled, text) for text in ("x * SCALE", "if cfg", "torch.relu", "return y")]


# ---- the graph, guards, RefGraph ----------------------------------------------------------------------

def test_the_graph_holds_the_reported_ops():
    trace = traced_call(scaled, torch.randn(3))
    assert isinstance(trace.graph, torch.fx.GraphModule)
    nodes = [n.name for n in trace.graph.graph.nodes if n.op in ("call_function", "call_method")]
    assert nodes == [e.node for e in trace.select("op")]


def test_guards_are_readable_strings():
    trace = traced_call(scaled, torch.randn(3))
    assert "SCALE == 2.0" in trace.guards and "bool(cfg['act'] == 'relu') is True" in trace.guards


def test_the_refgraph_text_shows_paths_and_writes():
    text = traced_call(Counter(), torch.randn(2, 3)).refgraph_text()
    assert "self.l.weight: Parameter(float32, shape=[3, 3])" in text
    assert "writes:\n  self.count = 1" in text


def test_the_refgraph_dot_is_well_formed():
    dot = traced_call(scaled, torch.randn(3)).to_dot()
    lines = dot.strip().splitlines()
    assert lines[0] == "digraph refgraph {" and lines[-1] == "}"
    assert dot.count("{") == dot.count("}") == 1
    quoted = r'"(?:[^"\\]|\\.)*"'
    node = re.compile(rf"^  (entry|n\d+) \[label={quoted}(, shape=ellipse|, color=red)?\];$")
    edge = re.compile(rf"^  (entry|n\d+) -> n\d+ \[label={quoted}\];$")
    body = lines[1:-1]
    assert body[:2] == ["  rankdir=LR;", '  node [shape=box, fontname="monospace"];']
    assert all(node.match(line) or edge.match(line) for line in body[2:]), body
    assert any(edge.match(line) for line in body) and '\\"hi\\"' in dot  # (quotes in a key, escaped)


# ---- filters and the callback -------------------------------------------------------------------------

def test_on_event_sees_each_kept_event_as_it_happens():
    seen = []
    trace = traced_call(scaled, torch.randn(3), on_event=seen.append)
    assert seen == trace.events and seen


def test_only_user_keeps_events_of_user_files_with_library_ops_at_the_users_line():
    trace = traced_call(Counter(), torch.randn(2, 3), only="user")
    assert all(e.filename == __file__ for e in trace.events)
    linear = trace.select("op")[0]
    assert (linear.op, linear.lineno) == ("torch._C._nn.linear", line_of(Counter.forward, "self.l(x)"))


def test_only_ops_keeps_graph_nodes():
    trace = traced_call(scaled, torch.randn(3), only="ops")
    assert {e.kind for e in trace.events} == {"op", "input"}


def test_only_takes_a_predicate():
    trace = traced_call(scaled, torch.randn(3), only=lambda e: e.kind == "guard")
    assert trace.events and {e.kind for e in trace.events} == {"guard"}


def test_an_unknown_filter_is_refused():
    with pytest.raises(ValueError, match="only="):
        magpy.trace(scaled, only="everything")


def test_a_failing_callback_is_raised_after_the_call_completes():
    def boom(event):
        raise RuntimeError("callback")
    m = Counter()
    with pytest.raises(RuntimeError, match="callback"):
        magpy.trace(m, on_event=boom)(torch.randn(2, 3))
    assert m.count == 1


# ---- breakpoint() ----------------------------------------------------------------------------------

def with_breakpoint(x):
    doubled = x * 2
    breakpoint()
    return doubled + 1


def test_breakpoint_stops_at_the_users_line_with_the_users_locals(monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdin", io.StringIO("p doubled.tolist()\nl\nc\n"))
    result = magpy.trace(with_breakpoint)(torch.ones(2))
    out = capsys.readouterr().out
    assert torch.equal(result, torch.full((2,), 3.0))
    assert f"> {__file__}({line_of(with_breakpoint, 'breakpoint()')})with_breakpoint()" in out
    assert "(Pdb) [2.0, 2.0]" in out and "->\t    breakpoint()" in out
