"""Every corpus program behaves the same in the VM as in CPython (see oracle.py for what is compared)."""
import pytest

try:
    from . import oracle
except ImportError:  # tests/interp is not a package: pytest put this folder on sys.path
    import oracle

PROGRAMS = oracle.discover()

#: Known limitations, not bugs to hide: a generator made by the VM is a real generator whose frame is the
#: VM's driver, so introspecting that frame (gi_frame, gi_yieldfrom, cr_await) shows the driver.
KNOWN_LIMITS = {
    ("async_", "coroutine_introspection"): "cr_await shows the VM's driver, not the awaited coroutine",
    ("generators", "generator_frame_and_yieldfrom_introspection"):
        "gi_frame / gi_yieldfrom show the VM's driver frame",
}


def _params():
    for p in PROGRAMS:
        reason = KNOWN_LIMITS.get((p.module, p.name))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(p, marks=marks, id=str(p))


def test_corpus_is_large():
    assert len({(p.module, p.name) for p in PROGRAMS}) >= 330


@pytest.mark.parametrize("program", list(_params()))
def test_program_matches_cpython(program):
    oracle.check(program)


# The oracle itself: it must see each kind of difference, and only differences.

def _differences(program, runner):
    with pytest.raises(AssertionError) as failure:
        oracle.check(program, runner)
    return str(failure.value)


def test_oracle_sees_a_different_result():
    def wrong(fn, *args, **kwargs):
        return [fn(*args, **kwargs), "extra"]
    assert "--- result differs" in _differences(oracle.Program("misc", "slicing_reads"), wrong)


def test_oracle_sees_different_stdout():
    def chatty(fn, *args, **kwargs):
        print("noise")
        return fn(*args, **kwargs)
    assert "--- stdout differs" in _differences(oracle.Program("misc", "slicing_reads"), chatty)


def test_oracle_sees_a_different_argument_state():
    def mutating(fn, *args, **kwargs):
        args[0].append("spurious")
        return fn(*args, **kwargs)
    report = _differences(oracle.Program("misc", "mutate_arguments_in_place"), mutating)
    assert "--- arguments differs" in report and "--- result differs" not in report


def test_oracle_sees_a_different_global_state():
    def writer(fn, *args, **kwargs):
        fn.__globals__["history"].append("spurious")
        return fn(*args, **kwargs)
    assert "--- globals differs" in _differences(oracle.Program("misc", "global_writes_and_reads"), writer)


def test_oracle_sees_a_different_exception_message():
    def rewording(fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TypeError as error:
            raise TypeError(str(error) + " (reworded)") from None
    program = oracle.Program("functions_args", "missing_positional_argument")
    assert "--- exception differs" in _differences(program, rewording)


def test_oracle_sees_a_lost_exception_context():
    def unchaining(fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BaseException as error:
            error.__context__ = None
            raise
    program = oracle.Program("exceptions", "uncaught_implicit_chaining")
    assert "--- exception differs" in _differences(program, unchaining)


def test_oracle_drains_returned_generators():
    program = oracle.Program("generators", "generator_returned_to_caller")
    outcome = oracle.check(program, oracle.native_runner)
    assert outcome.result == ("drained", ("list", tuple(("int", i * i) for i in range(5))))


def test_oracle_runs_get_fresh_module_state():
    program = oracle.Program("misc", "global_writes_and_reads")
    first = oracle.execute(program, oracle.native_runner)
    second = oracle.execute(program, oracle.native_runner)
    assert first == second


def test_oracle_sees_a_program_that_cpython_ran_itself():
    program = oracle.Program("generators", "generator_returned_to_caller")
    native = oracle.execute(program, oracle.native_runner)
    delegating = oracle.execute(program, oracle.native_runner, interpreted=True)
    assert delegating.native_frames >= 1
    assert "the VM did not interpret the program" in oracle.describe_differences(native, delegating)
