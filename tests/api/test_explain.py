"""``magpy.explain``: every segment of a call with graph breaks (graph, guards, replay, the break with its
reason and line), branches on tensor data as the user wrote them, the user's guards by default (torch's
machinery behind ``verbose=True``), and a raising program's own exception at the user's line."""
import contextlib
import io
import os
import re

import pytest
import torch
import torch.nn as nn

import magpy
from magpy.capture.user_files import raised_at

MAGPY_DIR = os.path.dirname(magpy.__file__)


def line_of(fn, text):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


def quietly(fn, *args, **kwargs):
    """``magpy.explain(fn, ...)`` with what the program prints kept: (explanation, printed text)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report = magpy.explain(fn, *args, **kwargs)
    return report, out.getvalue()


def shown_guards(text):
    """The guard lines of a report, over all its segments (not the line saying how many are hidden)."""
    found, inside = [], False
    for line in text.splitlines():
        if line == "  guards:":
            inside = True
        elif not line.startswith("    "):
            inside = False
        elif inside and not line.lstrip().startswith("(+"):
            found.append(line.strip())
    return found


# ---- every segment ------------------------------------------------------------------------------------

def one_break(x):
    y = x.sin()
    print("y", y.sum())
    return y.cos()


def test_a_break_shows_both_segments_with_graphs_and_guards():
    report, _ = quietly(one_break, torch.randn(3))
    first, second = report.segments
    assert "sin" in first.graph.code and "cos" in second.graph.code
    assert any(g.startswith("x: Tensor(float32") for g in first.users_guards)
    assert any(g.startswith("y: Tensor(float32") for g in second.users_guards)
    text = str(report)
    assert "segment 1: one_break" in text and "segment 2: one_break, resumed after" in text
    assert text.count("  graph:\n    def forward(") == 2


def test_a_break_says_what_runs_natively_why_and_where():
    report, _ = quietly(one_break, torch.randn(3))
    line = line_of(one_break, 'print("y"')
    [brk] = report.breaks
    assert (brk.reason, brk.filename, brk.lineno) == ("print() of a tensor (graph break)", __file__, line)
    assert re.search(rf'then: print\("y", y.sum\(\)\) runs natively \(\S*test_explain.py:{line}; graph break: '
                     r"print\(\) of a tensor", str(report))


class Noisy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        print("h", h.sum())
        return torch.relu(h)


def test_a_break_inside_a_modules_forward_shows_every_segment():
    # (found inside the call the module's wrapper makes: the call runs again, split there, as a
    # compiled module splits it from its second call)
    report, printed = quietly(Noisy(), torch.randn(2, 4))
    assert report.runs == 2 and printed.count("h tensor") == 2
    names = [s.function.split(" ")[0].rstrip(",") for s in report.segments]
    assert names == ["Module._wrapped_call_impl", "Noisy.forward", "Noisy.forward", "Module._wrapped_call_impl"]
    graphs = [s.graph.code for s in report.segments if s.graph is not None]
    assert len(graphs) == 2 and "linear" in graphs[0] and "relu" in graphs[1]
    [brk] = report.breaks
    assert (brk.filename, brk.lineno) == (__file__, line_of(Noisy.forward, 'print("h"'))
    assert "return ()" not in str(report)


def test_a_call_without_breaks_runs_once_in_one_segment():
    calls = []

    def fn(x):
        calls.append(1)
        return x * 2

    report = magpy.explain(fn, torch.randn(3))
    assert calls == [1] and report.runs == 1 and len(report.segments) == 1


def counted_then_broken(x, seen):
    torch.add(seen, 1, out=seen)        # (an ``out=`` write: a run of the graph cannot be undone)
    if seen.sum() > 0:
        x = x * 2
    print("x", x.sum())
    return x + 1


def test_a_segment_that_cannot_be_replayed_goes_on_eagerly_through_its_break():
    # (its branch reads what an ``out=`` op wrote: compiled calls run it eagerly, through the print)
    report, printed = quietly(counted_then_broken, torch.ones(3), torch.zeros(1))
    [segment] = report.segments
    assert segment.graph is None and "run the function eagerly, through the break at" in segment.mock
    [brk] = report.breaks
    assert brk.reason == "a branch on tensor data that depends on an in-place op (graph break): seen.sum() > 0"
    assert brk.lineno == line_of(counted_then_broken, "if seen.sum()") and printed.count("x tensor") == 1


# ---- branches on tensor data ----------------------------------------------------------------------------

def branchy(x, y):
    if x.sum() > 0:
        return x + y
    return x - y


def test_a_data_branch_shows_as_written_at_its_line():
    text = str(magpy.explain(branchy, -torch.ones(3), torch.ones(3)))
    line = line_of(branchy, "if x.sum() > 0")
    assert re.search(rf"^    x\.sum\(\) > 0 is False  \(\S*test_explain\.py:{line}\)$", text, re.M), text
    assert "holds(" not in text


def negated(x):
    if not (x > 0).any():
        return x - 1
    return x + 1


def test_a_negated_branch_shows_the_value_it_tests():
    # (``not`` is the jump's: what is tested, and found False, is ``(x > 0).any()``)
    text = str(magpy.explain(negated, -torch.ones(3)))
    assert re.search(rf"\(x > 0\)\.any\(\) is False  \(\S*test_explain\.py:{line_of(negated, 'if not')}\)", text)


# ---- the user's guards ----------------------------------------------------------------------------------

class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc(x.mean((2, 3)))


def test_a_small_cnn_shows_only_the_guards_of_its_forward():
    text = str(magpy.explain(SmallCNN(), torch.randn(2, 3, 8, 8)))
    guards = shown_guards(text)
    assert 5 <= len(guards) <= 20, guards
    for g in guards:  # (the inputs, the modules and globals forward reads: nothing read inside torch)
        assert re.match(r"(self\b|args\[0\]|tuple\(kwargs\)|len\(args\)|torch\b)", g), g
        assert set(re.findall(r"self\.\w+(?:\.\w+)*", g)) <= {"self.conv", "self.bn", "self.fc"}, g
    assert any(g.startswith("args[0]: Tensor(float32") for g in guards)
    assert any(g.startswith("self.conv is <Conv2d") for g in guards)
    assert re.search(r"\(\+\d+ of torch's machinery hidden: verbose=True shows every guard\)", text)


def test_verbose_shows_torchs_machinery_too():
    model, x = SmallCNN(), torch.randn(2, 3, 8, 8)
    default = shown_guards(str(magpy.explain(model, x)))
    every = shown_guards(str(magpy.explain(model, x, verbose=True)))
    assert len(every) > 3 * len(default) and set(default) <= set(every)
    assert "self._compiled_call_impl is None" in every and "self._compiled_call_impl is None" not in default
    assert any(g.startswith("self.conv.weight: Parameter(") for g in every)


# ---- a program that raises ------------------------------------------------------------------------------

def raising(x):
    y = x + 1
    raise ValueError(f"bad input of {y.numel()}")


def test_a_raising_program_raises_its_own_error_from_its_line():
    with pytest.raises(ValueError, match="bad input of 3") as info:
        magpy.explain(raising, torch.ones(3))
    line = line_of(raising, "raise ValueError")
    assert raised_at(info.value) == (__file__, line)
    last = info.traceback[-1]
    assert (str(last.path), last.lineno + 1) == (__file__, line)
    assert sum(str(e.path).startswith(MAGPY_DIR) for e in info.traceback) == 1   # (``explain`` itself)


def raising_after_a_break(x):
    y = x * 2
    print("y", y.sum())
    return y.view(5)


def test_an_error_after_a_break_is_told_at_the_users_line():
    with pytest.raises(RuntimeError) as info:
        quietly(raising_after_a_break, torch.ones(3))
    assert raised_at(info.value) == (__file__, line_of(raising_after_a_break, "y.view(5)"))


class WrongSize(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        return self.fc(x)


def test_an_error_of_torchs_is_told_at_the_users_line_that_called_it():
    with pytest.raises(RuntimeError, match="cannot be multiplied") as info:
        magpy.explain(WrongSize(), torch.randn(2, 5))
    assert raised_at(info.value) == (__file__, line_of(WrongSize.forward, "return self.fc(x)"))
