"""While an observer handles an event, ``frame.lineno`` is the line of the instruction that reported it
(capture names that line when it gives up, and ``magpy.trace`` places its events there)."""
import inspect

import pytest

from magpy import interp
from magpy.interp import blocks

LIMIT = 10
table = {"k": 2}


class Box:
    size = 3


def reads(box):
    n = len([1, 2])
    a = LIMIT
    b = table["k"]
    c = box.size
    if a > n:
        box.size = a + b + c
    return box.size


class LineRecorder(interp.Observer):
    """Records ``(event, line of the innermost frame)`` of reads, writes and branches."""

    def __init__(self):
        self.seen = []
        self.vm = None

    def _at(self, event):
        self.seen.append((event, self.vm.frame.lineno))
        return event

    def read_global(self, frame, name, value):
        return self._at(f"global {name}")

    def read_item(self, obj, obj_prov, key, key_prov, value, computed=None):
        return self._at(f"item {key}") if obj_prov is not None else None

    def read_attr(self, obj, obj_prov, name, value, computed=None):
        return self._at(f"attr {name}") if obj_prov is not None else None

    def argument(self, frame, index, name, value):
        return f"arg {name}"

    def write_attr(self, obj, obj_prov, name, value, prov):
        self._at(f"store {name}")

    def operation(self, frame, opname, arg, inputs, input_provs, outputs):
        return ["computed"] * len(outputs)  # (so that the branch on ``a > n`` is reported)

    def branch(self, frame, kind, value, prov, taken):
        self._at("branch")


def _line(text):
    lines, start = inspect.getsourcelines(reads)
    return start + next(k for k, line in enumerate(lines) if text in line)


EXPECTED = [("global len", "len([1, 2])"), ("global LIMIT", "a = LIMIT"), ("global table", "table["),
            ("item k", "table["), ("attr size", "c = box.size"), ("branch", "if a > n"),
            ("store size", "box.size = a + b + c"), ("attr size", "return box.size")]


@pytest.mark.parametrize("compiled_blocks", [True, False], ids=["blocks", "handlers"])
def test_events_see_the_line_of_their_instruction(compiled_blocks, monkeypatch):
    from magpy.interp import decode
    monkeypatch.setattr(blocks, "ENABLED", compiled_blocks)
    monkeypatch.setattr(decode, "_cache", {})
    recorder = LineRecorder()
    vm = interp.VM(observer=recorder)
    recorder.vm = vm
    vm.call(reads, Box())
    assert recorder.seen == [(event, _line(text)) for event, text in EXPECTED]
