"""Differential fuzzing of the VM: a generated program behaves the same natively and through it.

Each example is a program drawn by ``strategies.programs()``, compiled with ``compile()`` and
executed to define ``program()``. It is then called three ways — natively, through
``magpy.interp.run``, and through a ``VM`` carrying a do-nothing ``Observer`` — and each run must
give the same outcome: the same returned value (compared by ``repr``) or the same exception (type
and message, along its ``__cause__``/``__context__`` chain), and the same stdout.

Programs the fuzzer once found running differently are kept in ``FOUND`` and run as tests of
their own. Budget: ``MAGPY_FUZZ_EXAMPLES`` examples (default 50), no deadline, no shrinking unless
``MAGPY_FUZZ_SHRINK=1``. ``MAGPY_VM_NATIVE=1`` replaces the VM by direct calls, which checks the
strategies and this harness alone.
"""
import contextlib
import io
import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from strategies import programs

# Shrinking a failing program can take Hypothesis minutes: only on request (the unshrunk
# program is printed either way, and the example database replays it first next time).
_PHASES = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target]
if os.environ.get("MAGPY_FUZZ_SHRINK") == "1":
    _PHASES.append(Phase.shrink)

settings.register_profile(
    "magpy-fuzz",
    max_examples=int(os.environ.get("MAGPY_FUZZ_EXAMPLES", "50")),
    deadline=None,
    phases=_PHASES,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)

NATIVE = os.environ.get("MAGPY_VM_NATIVE") == "1"


def _interp():
    try:
        import magpy.interp
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
        import magpy.interp
    return magpy.interp


def define(source):
    """A fresh ``program`` function compiled from ``source`` in its own globals."""
    namespace = {"__name__": "fuzzed"}
    exec(compile(source, "<fuzzed>", "exec"), namespace)
    return namespace["program"]


def _chain(error):
    """(type, message) of an exception and of those it was raised from or during."""
    links = []
    while error is not None and len(links) < 8:
        links.append((type(error).__name__, str(error)))
        error = error.__cause__ if error.__cause__ is not None else (
            None if error.__suppress_context__ else error.__context__)
    return links


def outcome(call):
    """What a call did: ('returned', repr) or ('raised', chain), and what it printed."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        try:
            result = ("returned", repr(call()))
        except Exception as error:      # noqa: BLE001 -- any exception is an outcome
            result = ("raised", _chain(error))
    return result, printed.getvalue()


def _ways():
    """The ways of running ``fn`` besides the native call, by name."""
    if NATIVE:
        return {"run": lambda fn: fn(), "observed": lambda fn: fn()}
    interp = _interp()
    return {"run": interp.run, "observed": lambda fn: interp.VM(observer=interp.Observer()).call(fn)}


# Programs the fuzzer once found the VM running differently, each cut down to the smallest form
# of what was found, kept as tests of their own.
FOUND = {
    # A comparison whose left operand is None and whose right operand defines the method.
    "none_compared_with_object": """def program():
    class K:
        def __eq__(self, other):
            return True
    return (None == K(), None != K())
""",
    # except* inside an except block: the group it re-raises must not get __context__.
    "except_star_reraise_context": """def program():
    try:
        try:
            int('x')
        except ValueError:
            try:
                raise ExceptionGroup('g', [IndexError(1), KeyError(2)])
            except* IndexError:
                raise TypeError('t')
    except ExceptionGroup as e:
        return repr(e.__context__)
""",
}


def check(source):
    """Asserts that ``program()`` of ``source`` behaves the same natively and through the VM."""
    expected = outcome(define(source))
    kind, detail = expected[0]
    # A program that trips over its own names is a bug of the strategies, not of the VM.
    assert not (kind == "raised" and detail[0][0] in ("NameError", "UnboundLocalError")), (
        f"generated program is ill-scoped:\n{source}\n{detail}")
    for name, way in _ways().items():
        got = outcome(lambda: way(define(source)))
        assert got == expected, (
            f"VM ({name}) differs from CPython\n--- program\n{source}--- CPython\n{expected}\n"
            f"--- VM\n{got}")


@pytest.mark.parametrize("name", sorted(FOUND))
def test_found_program_matches_cpython(name):
    check(FOUND[name])


@settings(settings.get_profile("magpy-fuzz"))
@given(source=programs())
def test_vm_matches_cpython(source):
    check(source)
