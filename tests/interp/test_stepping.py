"""An observer's ``step`` sees every instruction: programs run by single steps behave as CPython runs them,
and the lines they step through are the lines CPython's own tracer reports."""
import sys

import pytest

try:
    from . import oracle
    from .test_corpus import KNOWN_LIMITS
except ImportError:  # tests/interp is not a package: pytest put this folder on sys.path
    import oracle
    from test_corpus import KNOWN_LIMITS

from magpy import interp


class Stepper(interp.Observer):
    """Records ``(function name, line)`` of every instruction the VM runs."""

    def __init__(self):
        self.steps = []
        self.step = self._step

    def _step(self, frame, index):
        self.steps.append((frame.code.co_name, frame.lineno))


def stepped(fn, *args, **kwargs):
    return interp.VM(observer=Stepper()).call(fn, *args, **kwargs)


def _params():
    for p in oracle.discover():
        reason = KNOWN_LIMITS.get((p.module, p.name))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(p, marks=marks, id=str(p))


@pytest.mark.parametrize("program", list(_params()))
def test_stepped_program_matches_cpython(program):
    oracle.check(program, stepped)


def helper(v):
    return v * 2


def looping(n):
    total = 0
    for k in range(n):
        total += helper(k)
    if total > 3:
        total -= 1
    return total


def _lines_of(name, steps):
    """The lines of function ``name`` in the order a line tracer reports them (one per change of line)."""
    out = []
    for fn, line in steps:
        if fn == name and (not out or out[-1] != line):
            out.append(line)
    return out


def _settrace_steps(fn, *args):
    steps = []

    def tracer(frame, event, arg):
        if event == "line":
            steps.append((frame.f_code.co_name, frame.f_lineno))
        return tracer
    sys.settrace(tracer)
    try:
        fn(*args)
    finally:
        sys.settrace(None)
    return steps


@pytest.mark.parametrize("name", ["looping", "helper"])
def test_steps_go_through_the_lines_cpython_traces(name):
    stepper = Stepper()
    assert interp.VM(observer=stepper).call(looping, 3) == looping(3)
    assert _lines_of(name, stepper.steps) == _lines_of(name, _settrace_steps(looping, 3))


def test_without_step_no_instruction_is_reported():
    observer = interp.Observer()
    assert observer.step is None
    assert interp.VM(observer=observer).call(looping, 2) == looping(2)
