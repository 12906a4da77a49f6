"""The runner's parts on their own: output comparison, stand-in modules, the state file, failure reasons."""
from __future__ import annotations

import json
import math

import pytest
import torch

from magpy.measure.harness import reasons
from magpy.measure.harness.compare import Tolerance, difference, freeze
from magpy.measure.paritybench.standins import StandInModule, StandInUsed, placeholder
from magpy.measure.harness.state import State


def test_equal_nested_outputs_have_no_difference():
    out = {"a": [torch.ones(2), (1, 2.0)], "b": None}
    assert difference(out, freeze(out)) is None


def test_difference_names_the_path_and_the_kind():
    assert difference([torch.zeros(2), torch.ones(2)], [torch.zeros(2), torch.zeros(2)]).startswith(
        "out[1]: max abs diff 1")
    assert difference((torch.ones(2),), (torch.ones(3),)) == "out[0]: shape (2,) vs (3,)"
    assert difference([1], (1,)) == "out: list vs tuple"


def test_nan_matches_nan_and_tolerance_is_respected():
    assert difference(torch.tensor([math.nan, 1.0]), torch.tensor([math.nan, 1.00001])) is None
    assert difference(torch.tensor([1.0]), torch.tensor([1.01]), Tolerance(1e-4, 1e-4)) is not None


def test_structure_only_comparison_ignores_values():
    assert difference(torch.rand(3), torch.rand(3), None) is None
    assert difference(torch.rand(3), torch.rand(3).double(), None) == "out: dtype torch.float32 vs torch.float64"


def test_freeze_is_not_changed_by_later_in_place_updates():
    value = torch.zeros(2)
    frozen = freeze([value])
    value.add_(1)
    assert frozen[0].sum().item() == 0


def test_standin_imports_subclasses_and_fails_only_when_used():
    module = StandInModule("fakeflow")
    layer = module.keras.layers.Dense
    assert layer is placeholder("fakeflow.keras.layers.Dense")

    class Mine(layer):
        pass

    assert not isinstance(3, layer)
    with pytest.raises(StandInUsed, match="fakeflow.keras.layers.Dense"):
        layer(3)
    with pytest.raises(StandInUsed):
        Mine()
    with pytest.raises(AttributeError):
        module.__wrapped__


def test_state_drops_unfinished_files_and_torn_lines(tmp_path):
    path = tmp_path / "state.jsonl"
    records = [{"kind": "case", "file": "test_a.py", "index": 0, "name": "A"},
               {"kind": "file", "file": "test_a.py", "status": "done", "compilers": ["dynamo"], "unavailable": []},
               {"kind": "case", "file": "test_b.py", "index": 0, "name": "B"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + '{"kind": "fi')
    state = State(str(path))
    assert state.todo("test_a.py", ["dynamo"]) == [] and state.todo("test_b.py", ["dynamo"]) == ["dynamo"]
    assert [c["name"] for c in state.files["test_a.py"].cases] == ["A"]
    state.close()


def _case(index, **compiled):
    return {"file": "test_a.py", "index": index, "name": f"M{index}", "eager": {"status": "ok"},
            "compiled": {name: {"status": status} for name, status in compiled.items()}}


def test_a_compiler_unavailable_before_runs_once_it_is_available_keeping_the_others(tmp_path):
    path = tmp_path / "state.jsonl"
    state = State(str(path))
    state.add_case(_case(0, dynamo="pass", magpy="unavailable"))
    state.add_file({"file": "test_a.py", "status": "done", "compilers": ["dynamo", "magpy"],
                    "unavailable": ["magpy"]})
    assert state.todo("test_a.py", ["dynamo"]) == []                 # magpy still unavailable: nothing to do
    assert state.todo("test_a.py", ["dynamo", "magpy"]) == ["magpy"]  # available now: magpy alone
    assert state.todo("test_a.py", ["dynamo", "magpy"], redo=("dynamo",)) == ["dynamo", "magpy"]
    state.add_case(_case(0, magpy="break"))
    state.add_file({"file": "test_a.py", "status": "done", "compilers": ["magpy"], "unavailable": [],
                    "merge": True})
    state.close()
    for reloaded in (state, State(str(path))):
        result = reloaded.files["test_a.py"]
        assert result.cases[0]["compiled"] == {"dynamo": {"status": "pass"}, "magpy": {"status": "break"}}
        assert result.record["unavailable"] == [] and reloaded.todo("test_a.py", ["dynamo", "magpy"]) == []


def test_reasons_drop_what_differs_between_instances():
    first = reasons.normalise("RuntimeError: size (4, 3, 64) at 0x7f00ab in /a/b/model.py")
    second = reasons.normalise("RuntimeError: size (8, 3, 32) at 0x7f11cd in /c/model.py")
    assert first == second == "RuntimeError: size (N, N, N) at 0x… in FILE.py"


class _ScriptedInner(torch.jit.ScriptModule):
    """A ScriptModule subclass whose forward is plain Python around a script method."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(2, 2)

    @torch.jit.script_method
    def inner(self, x):
        return self.linear(x) + 1

    def forward(self, x):
        return self.inner(x) * 2


def test_a_copy_that_would_lose_the_module_class_is_refused():
    from magpy.measure.paritybench.case import _deep_copy
    assert _deep_copy(_ScriptedInner()) is None          # (it would be a RecursiveScriptModule: no forward)
    assert type(_deep_copy(torch.nn.Linear(2, 2))) is torch.nn.Linear
