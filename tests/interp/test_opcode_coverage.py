"""Opcode coverage: (a) the VM has a handler for every real opcode of the running Python; (b) the corpus
exercises every opcode that the compiler can emit, so that (a) is backed by differential tests."""
import dis
import importlib
import inspect
import types

import pytest

try:
    from . import oracle
except ImportError:  # tests/interp is not a package: pytest put this folder on sys.path
    import oracle

# Opcodes that exist in dis.opmap but never appear in `dis.get_instructions` of compiled source.
INTERNAL_OPNAMES = {
    "CACHE": "inline cache entries after an instruction; dis hides them",
    "RESERVED": "a reserved number, never emitted",
    "INTERPRETER_EXIT": "ends CPython's C-level entry frame, never in a code object of user code",
    "ENTER_EXECUTOR": "written over a backward jump by the tier-2 optimizer at run time",
    "EXIT_INIT_CHECK": "only in the __init__ shim frame CPython builds for specialised class calls",
}
INTERNAL_PREFIXES = {
    "INSTRUMENTED_": "written over instructions by sys.monitoring at run time",
}
_CO_OPTIMIZED = inspect.CO_OPTIMIZED
_RUN_AT_DEFINITION = {"<listcomp>", "<setcomp>", "<dictcomp>", "<genexpr>"}  # 3.11 non-inlined comprehensions


def specialized_opnames():
    """Adaptive forms (LOAD_ATTR_INSTANCE_VALUE, ...) that CPython writes over instructions at run time."""
    names = set(getattr(dis, "_specialized_instructions", ()))  # 3.11, 3.12
    names.update(getattr(dis, "_specialized_opmap", {}))  # 3.13
    for family in getattr(dis, "_specializations", {}).values():
        names.update(family)
    return names


def is_internal(name):
    return (name in INTERNAL_OPNAMES or name in specialized_opnames()
            or any(name.startswith(prefix) for prefix in INTERNAL_PREFIXES))


def real_opnames():
    """Opcodes of the running Python that compiled source can contain (pseudo-ops >= 256 left out)."""
    return frozenset(name for name, number in dis.opmap.items() if number < 256 and not is_internal(name))


def _nested_code(code):
    return [const for const in code.co_consts if isinstance(const, types.CodeType)]


def vm_executed_code_objects(module):
    """Code objects of a loaded corpus module that run in the VM: every function (at any depth, including
    class bodies nested in functions) and every program's code, but not the module body or module-level
    class bodies, which run natively when the module is loaded."""
    found = []

    def walk(code, counted):
        counted = counted or bool(code.co_flags & _CO_OPTIMIZED) and code.co_name not in _RUN_AT_DEFINITION
        if counted:
            found.append(code)
        for child in _nested_code(code):
            walk(child, counted)

    source = inspect.getsource(module)
    walk(compile(source, module.__file__, "exec"), False)
    for fn in oracle.program_functions(module).values():
        walk(fn.__code__, True)  # source programs are module-like code objects run in the VM
    return found


def corpus_opnames():
    """``{opname: first program module that uses it}`` over the whole corpus."""
    seen = {}
    for name in oracle.corpus_module_names():
        module = oracle.load_module(name)
        for code in vm_executed_code_objects(module):
            for instruction in dis.get_instructions(code):
                seen.setdefault(instruction.opname, f"{name}: {code.co_qualname}")
    return seen


def test_excluded_opcodes_never_appear_in_compiled_source():
    used = corpus_opnames()
    assert not sorted(name for name in used if is_internal(name))


def test_vm_has_a_handler_for_every_real_opcode():
    try:
        importlib.import_module("magpy.interp")  # (its handler families register themselves)
        decode = importlib.import_module("magpy.interp.decode")
    except ImportError as error:
        pytest.skip(f"magpy.interp.decode is not importable yet: {error}")
    missing = sorted(real_opnames() - set(decode.handled_opnames()))
    assert not missing, f"opcodes without a VM handler: {missing}"


def test_corpus_exercises_every_real_opcode():
    used = corpus_opnames()
    missing = sorted(real_opnames() - set(used))
    assert not missing, f"opcodes no corpus program uses: {missing}"
