"""Differential fuzzing of argument binding: the VM's binding errors read exactly as CPython's.

Each example (drawn by ``signatures.bindings()``) defines a function ``f`` renamed after creation and
a ``caller()`` making one call of it, often a wrong one. ``caller()`` runs natively, through
``magpy.interp.run`` and through a VM carrying a do-nothing ``Observer``; each must return the same
bound parameters or raise the same exception, type and message. Budget: ``MAGPY_FUZZ_EXAMPLES``
(see ``prop_interp``).
"""
import pytest
from hypothesis import given, settings

from prop_interp import _interp, outcome, NATIVE
from signatures import bindings


def define(source):
    namespace = {"__name__": "fuzzed"}
    exec(compile(source, "<fuzzed>", "exec"), namespace)
    return namespace["caller"]


def check(source):
    """Asserts that ``caller()`` of ``source`` binds (or fails to) the same natively and in the VM."""
    expected = outcome(define(source))
    ways = {"run": lambda fn: fn(), "observed": lambda fn: fn()}
    if not NATIVE:
        interp = _interp()
        ways = {"run": interp.run, "observed": lambda fn: interp.VM(observer=interp.Observer()).call(fn)}
    for name, way in ways.items():
        got = outcome(lambda: way(define(source)))
        assert got == expected, (
            f"VM ({name}) binds differently from CPython\n--- program\n{source}--- CPython\n"
            f"{expected}\n--- VM\n{got}")


# Cases the fuzzer once found binding differently, kept as tests of their own.
FOUND = {
    # collections.namedtuple's __new__: a lambda made by eval, renamed after creation
    "namedtuple_new_missing_argument": """f = eval('lambda _cls, x, y: (_cls, x, y)')
f.__qualname__ = 'P.__new__'
f.__name__ = '__new__'
def caller():
    return f(1, 2)
""",
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_found_binding_matches_cpython(name):
    check(FOUND[name])


@settings(settings.get_profile("magpy-fuzz"))
@given(source=bindings())
def test_binding_matches_cpython(source):
    check(source)
