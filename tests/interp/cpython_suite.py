"""Runs CPython's own language tests (``Lib/test``) natively and through the MagPy VM.

Which tests (``MODULES``, and the CI subset: all but ``SLOW`` and ``HANGS``) and how they run.
Every test is run twice, in child processes (one module after another; a child that dies costs
only the module it was running):

1. natively, to find the tests that pass on this machine; tests that fail, error, are skipped or are
   expected failures natively are left out of every count;
2. again, with its body executed by ``magpy.interp.run``.

For a unittest test the *test method* goes through the VM; ``setUp``/``tearDown``, cleanups and
class/module fixtures run natively, through unittest's own machinery. A result then measures the
VM on the test body alone, and a fixture cannot hide or fake a VM result. For a doctest every
example (a ``"single"``-mode code object, wrapped as a function over the doctest's globals) goes
through the VM, and each example counts as one test. A test overrunning PER_TEST_SECONDS counts as
a timeout.

``run_modules`` returns, per module, one record per test: its id, its native outcome, its VM
outcome (``pass``, ``fail``, ``error``, ``vm_error`` for an InterpreterError, ``timeout``; None where
it does not pass natively), a detail and times. ``test_cpython_suite.py`` holds the checks and the
report. ``MAGPY_VM_NATIVE=1`` replaces the VM by a direct call, which checks this harness itself;
``MAGPY_SUITE_TRACE=1`` names each test on stderr as it starts.
"""
import argparse
import contextlib
import copy
import doctest
import importlib
import io
import json
import os
import signal
import subprocess
import sys
import time
import types
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

# Modules of Lib/test that exercise the language itself. All of them ship with 3.11, 3.12 and 3.13.
MODULES = (
    "test_grammar", "test_exceptions", "test_generators", "test_with", "test_scope", "test_class",
    "test_patma", "test_super", "test_contextlib", "test_unpack", "test_unpack_ex",
    "test_keywordonlyarg", "test_positional_only_arg", "test_listcomps", "test_setcomps",
    "test_dictcomps", "test_genexps", "test_exception_group", "test_except_star", "test_raise",
    "test_opcodes", "test_yield_from", "test_named_expressions", "test_generator_stop",
    "test_exception_variations", "test_extcall", "test_augassign", "test_compare", "test_unary",
    "test_binop", "test_contains", "test_richcmp", "test_global", "test_decorators",
    "test_baseexception", "test_int_literal", "test_bool", "test_property", "test_funcattrs",
)

# The CI subset is every test but these (``module:Class.method``), so that pytest stays within
# its time budget. SLOW: over 0.1 s natively or 1 s through the VM on 3.11, 3.12 or 3.13 (most
# spend it in gc.collect(), a child interpreter or deep recursion, which the VM does not run).
SLOW = frozenset("""
    test_baseexception:ExceptionClassTests.test_setstate_refcount_no_crash
    test_class:TestInlineValues.test_detach_materialized_dict_no_memory
    test_contextlib:ContextManagerTestCase.test_nokeepref
    test_contextlib:TestExitStack.test_excessive_nesting
    test_exceptions:AssertionErrorTests.test_assertion_error_location
    test_exceptions:AssertionErrorTests.test_multiline_not_highlighted
    test_exceptions:ExceptionTests.testExceptionCleanupState
    test_exceptions:ExceptionTests.test_3114
    test_exceptions:ExceptionTests.test_generator_close_cleanup_exc_state
    test_exceptions:ExceptionTests.test_generator_del_cleanup_exc_state
    test_exceptions:ExceptionTests.test_generator_finalizing_and_exc_info
    test_exceptions:ExceptionTests.test_generator_finalizing_and_sys_exception
    test_exceptions:ExceptionTests.test_generator_next_cleanup_exc_state
    test_exceptions:ExceptionTests.test_generator_send_cleanup_exc_state
    test_exceptions:ExceptionTests.test_generator_throw_cleanup_exc_state
    test_exceptions:ExceptionTests.test_memory_error_cleanup
    test_exceptions:ExceptionTests.test_memory_error_in_PyErr_PrintEx
    test_exceptions:ExceptionTests.test_memory_error_in_subinterp
    test_exceptions:ExceptionTests.test_memory_error_subclasses
    test_exceptions:ExceptionTests.test_recursion_error_cleanup
    test_exceptions:ExceptionTests.test_recursion_in_except_handler
    test_exceptions:ExceptionTests.test_recursion_normalizing_exception
    test_exceptions:ExceptionTests.test_recursion_normalizing_infinite_exception
    test_exceptions:ExceptionTests.test_recursion_normalizing_with_no_memory
    test_exceptions:ExceptionTests.test_trashcan_recursion
    test_exceptions:ExceptionTests.test_unraisable
    test_exceptions:SyntaxErrorTests.test_encodings
    test_exceptions:SyntaxErrorTests.test_non_utf8
    test_generators:FinalizationTest.test_frame_resurrect
    test_generators:FinalizationTest.test_refcycle
    test_generators:GeneratorCloseTest.test_close_releases_frame_locals
    test_generators:GeneratorTest.test_handle_frame_object_in_creation
    test_patma:TestCompiler.test_refleaks
    test_raise:TestContext.test_3611
    test_scope:ScopeTests.testCellLeak
    test_scope:ScopeTests.testLeaks
    test_yield_from:TestPEP380Operation.test_close_with_cleared_frame
""".split())
# HANGS: the VM loops forever on these (a cycle in a __context__ chain), each costing the full
# per-test limit. Move them back into the subset once the VM passes them.
HANGS = frozenset("""
    test_exceptions:ExceptionTests.test_no_hang_on_context_chain_cycle1
    test_exceptions:ExceptionTests.test_no_hang_on_context_chain_cycle2
    test_exceptions:ExceptionTests.test_no_hang_on_context_chain_cycle3
""".split())

TRACE = os.environ.get("MAGPY_SUITE_TRACE") == "1"    # each test's start, on stderr
PER_TEST_SECONDS = 30.0      # a test running longer than this through the VM counts as a timeout
CHILD_SECONDS = 600.0        # one child process, all the modules given to it


# ---------------------------------------------------------------------------------------------
# The VM entry point


def _vm_runner():
    """What runs a test body: ``magpy.interp.run``, or a direct call under MAGPY_VM_NATIVE=1."""
    if os.environ.get("MAGPY_VM_NATIVE") == "1":
        return (lambda fn, *args, **kwargs: fn(*args, **kwargs)), ()
    try:
        import magpy.interp
    except ImportError:
        sys.path.insert(0, str(SRC))
        import magpy.interp
    return magpy.interp.run, (magpy.interp.InterpreterError,)


class SuiteTimeout(BaseException):
    """Raised by SIGALRM into a test that overran PER_TEST_SECONDS (a BaseException, so that the
    tests' own ``except Exception`` handlers do not swallow it)."""


def _on_alarm(signum, frame):
    raise SuiteTimeout(f"over {PER_TEST_SECONDS:.0f} s")


@contextlib.contextmanager
def _time_limit(seconds):
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    # Fires again every 2 s: code that swallows the first one (a VM handler routing it as the
    # program's own exception, say) is interrupted again.
    signal.setitimer(signal.ITIMER_REAL, seconds, 2.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------------------------------------
# Loading


def _flatten(suite):
    for item in suite:
        if isinstance(item, unittest.TestSuite):
            yield from _flatten(item)
        else:
            yield item


def load_units(module_name):
    """The module's tests in load order: unittest cases and doctest cases."""
    module = importlib.import_module("test." + module_name)
    return list(_flatten(unittest.TestLoader().loadTestsFromModule(module)))


def unit_id(case):
    if isinstance(case, doctest.DocTestCase):
        return "doctest:" + case._dt_test.name
    return f"{type(case).__name__}.{case._testMethodName}"


def in_subset(module_name, test_id):
    key = f"{module_name}:{test_id}"
    return key not in SLOW and key not in HANGS


# ---------------------------------------------------------------------------------------------
# Running unittest cases


_RANK = {"pass": 0, "skip": 1, "xfail": 1, "xpass": 2, "fail": 3, "error": 4, "vm_error": 5,
         "timeout": 6}


def _describe(err):
    etype, value, _ = err
    text = f"{etype.__name__}: {value}".replace("\n", " | ")
    return text[:400]


class Recorder(unittest.TestResult):
    """Keeps the worst outcome of each test (subtests included) and its time."""

    def __init__(self, vm_errors=(), on_stop=None):
        super().__init__()
        self.vm_errors = vm_errors
        self.on_stop = on_stop      # called with each test id once its outcome is known
        self.outcomes = {}      # test id -> (status, detail)
        self.seconds = {}
        self._started = {}

    def _note(self, test, status, detail=""):
        key = unit_id(test) if isinstance(test, unittest.TestCase) else str(test)
        old = self.outcomes.get(key)
        if old is None or _RANK[status] > _RANK[old[0]]:
            self.outcomes[key] = (status, detail)

    def _classify(self, err):
        etype = err[0]
        if issubclass(etype, SuiteTimeout):
            return "timeout"
        if self.vm_errors and issubclass(etype, self.vm_errors):
            return "vm_error"
        if issubclass(etype, AssertionError):
            return "fail"
        return "error"

    def startTest(self, test):
        super().startTest(test)
        if TRACE:
            print("start", unit_id(test), file=sys.__stderr__, flush=True)
        self._started[unit_id(test)] = time.perf_counter()

    def stopTest(self, test):
        super().stopTest(test)
        key = unit_id(test)
        now = time.perf_counter()
        self.seconds[key] = now - self._started.pop(key, now)   # skipped tests may not start
        if self.on_stop is not None:
            self.on_stop(key)

    def addSuccess(self, test):
        self._note(test, "pass")

    def addFailure(self, test, err):
        self._note(test, self._classify(err), _describe(err))

    def addError(self, test, err):
        self._note(test, self._classify(err), _describe(err))

    def addSubTest(self, test, subtest, err):
        if err is not None:
            self._note(test, self._classify(err), f"{subtest._subDescription()} {_describe(err)}")

    def addSkip(self, test, reason):
        self._note(test, "skip", reason)

    def addExpectedFailure(self, test, err):
        self._note(test, "xfail")

    def addUnexpectedSuccess(self, test):
        self._note(test, "xpass")


def _through_vm(case, vm_run):
    """A fresh copy of ``case`` whose test method runs its body through the VM."""
    name = case._testMethodName
    fresh = type(case)(name)
    body = getattr(fresh, name)
    fresh.__dict__[name] = lambda: vm_run(body)
    return fresh


def _run_cases(cases, recorder, limit=None):
    """Runs cases as one suite (so class and module fixtures run as usual), each under a limit."""
    suite = unittest.TestSuite()
    for case in cases:
        suite.addTest(_Limited(case, limit) if limit else case)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        suite.run(recorder)      # the top-level run also tears down class and module fixtures


class _Limited:
    """Wraps a case so that its run (fixtures included) is cut off after ``limit`` seconds, while
    the suite still sees the case itself for class and module fixtures."""

    def __init__(self, case, limit):
        self.case, self.limit = case, limit

    def __getattr__(self, name):
        return getattr(self.case, name)

    @property
    def __class__(self):
        return type(self.case)

    def __call__(self, result):
        with _time_limit(self.limit):
            return self.case(result)


# ---------------------------------------------------------------------------------------------
# Running doctest cases, one example at a time


class ExampleRecorder(doctest.DocTestRunner):
    """A doctest runner that records the outcome of every example, by its index."""

    def __init__(self, case, vm_errors=()):
        flags = case._dt_optionflags & ~(doctest.REPORT_ONLY_FIRST_FAILURE | doctest.FAIL_FAST)
        super().__init__(checker=case._dt_checker, verbose=False, optionflags=flags)
        self.vm_errors = vm_errors
        self.outcomes = {}

    def _index(self, test, example):
        return next(i for i, e in enumerate(test.examples) if e is example)

    def report_start(self, out, test, example):
        pass

    def report_success(self, out, test, example, got):
        self.outcomes[self._index(test, example)] = ("pass", "")

    def report_failure(self, out, test, example, got):
        detail = f"expected {example.want[-150:]!r}, got {got[-250:]!r}"
        self.outcomes[self._index(test, example)] = ("fail", detail)

    def report_unexpected_exception(self, out, test, example, exc_info):
        etype = exc_info[0]
        if issubclass(etype, SuiteTimeout):
            status = "timeout"
        elif self.vm_errors and issubclass(etype, self.vm_errors):
            status = "vm_error"
        else:
            status = "error"
        self.outcomes[self._index(test, example)] = (status, _describe(exc_info))


@contextlib.contextmanager
def _doctest_exec_through(vm_run):
    """Makes doctest run each example's code object through ``vm_run``: its runner calls the
    builtin ``exec`` by name, so a module global of that name takes its place."""

    def exec_through_vm(code, globs, *rest):
        vm_run(types.FunctionType(code, globs))

    doctest.exec = exec_through_vm
    try:
        yield
    finally:
        del doctest.exec


def _run_doctest(case, globs, vm_errors=(), vm_run=None, limit=None):
    test = copy.copy(case._dt_test)
    test.globs = dict(globs)
    runner = ExampleRecorder(case, vm_errors)
    if case._dt_setUp is not None:
        case._dt_setUp(test)
    try:
        with contextlib.ExitStack() as stack:
            if vm_run is not None:
                stack.enter_context(_doctest_exec_through(vm_run))
            if limit:
                stack.enter_context(_time_limit(limit))
            runner.run(test, out=lambda text: None, clear_globs=False)
    except SuiteTimeout as timeout:
        for index in range(len(test.examples)):
            runner.outcomes.setdefault(index, ("timeout", str(timeout)))
    finally:
        if case._dt_tearDown is not None:
            case._dt_tearDown(test)
    return runner.outcomes


# ---------------------------------------------------------------------------------------------
# One module, in a child process


def run_module(module_name, subset, emit):
    """Runs one module both ways and calls ``emit(record)`` for every test (record keys: id,
    native and vm — the outcomes, vm None where the test does not pass natively —, detail,
    native_s, vm_s)."""
    vm_run, vm_errors = _vm_runner()
    units = load_units(module_name)
    cases = [u for u in units if not isinstance(u, doctest.DocTestCase)]
    doc_cases = [u for u in units if isinstance(u, doctest.DocTestCase)]
    if subset:
        cases = [c for c in cases if in_subset(module_name, unit_id(c))]

    native = Recorder()
    _run_cases(cases, native)
    eligible = []
    for case in cases:
        status, detail = native.outcomes.get(unit_id(case), ("missing", ""))
        if status == "pass":
            eligible.append(case)
        else:
            emit({"id": unit_id(case), "native": status, "vm": None, "detail": detail,
                  "native_s": native.seconds.get(unit_id(case), 0.0), "vm_s": 0.0})

    def emit_vm_outcome(key):
        # Written as each test ends, so that a child that dies keeps what it has learnt.
        status, detail = through.outcomes.get(key, ("error", "no outcome recorded"))
        emit({"id": key, "native": "pass", "vm": status, "detail": detail,
              "native_s": native.seconds.get(key, 0.0), "vm_s": through.seconds.get(key, 0.0)})

    through = Recorder(vm_errors, on_stop=emit_vm_outcome)
    _run_cases([_through_vm(c, vm_run) for c in eligible], through, limit=PER_TEST_SECONDS)

    for case in doc_cases:
        globs = dict(case._dt_test.globs)
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            native_outcomes = _run_doctest(case, globs)
        native_s = time.perf_counter() - started
        passing = sorted(i for i, (status, _) in native_outcomes.items() if status == "pass")
        ids = [f"{unit_id(case)}#{i}" for i in passing]
        if subset:
            passing = [i for i, key in zip(passing, ids) if in_subset(module_name, key)]
        if not passing:
            continue
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            vm_outcomes = _run_doctest(case, globs, vm_errors, vm_run, limit=PER_TEST_SECONDS)
        vm_s = time.perf_counter() - started
        for index in passing:
            status, detail = vm_outcomes.get(index, ("error", "example not reached"))
            emit({"id": f"{unit_id(case)}#{index}", "native": "pass", "vm": status, "detail": detail,
                  "native_s": native_s / len(native_outcomes), "vm_s": vm_s / len(passing)})


def _child_main(module_names, subset):
    """Runs modules one after the other, writing one JSON line per event to stdout: a start and
    an end line per module, and a line per test between them."""

    def emit(record):
        sys.__stdout__.write(json.dumps(record) + "\n")
        sys.__stdout__.flush()

    for module_name in module_names:
        emit({"module": module_name, "event": "start"})
        run_module(module_name, subset, lambda record: emit({"module": module_name, **record}))
        emit({"module": module_name, "event": "end"})


def _run_child(module_names, subset, timeout):
    """Runs one child over ``module_names``; returns (records by module, modules it finished)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    command = [sys.executable, __file__, "--child", *module_names] + ["--subset"] * subset
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
        out, err, code = done.stdout, done.stderr, done.returncode
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout or ""
        err, code = f"killed after {timeout:.0f} s", "timeout"
    records, finished, current = {}, [], None
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        record = json.loads(line)
        event = record.pop("event", None)
        if event == "start":
            current = record["module"]
            records[current] = []
        elif event == "end":
            finished.append(current)
            current = None
        else:
            records[record.pop("module")].append(record)
    if current is not None:     # the child died inside this module
        records[current].append({"id": "<child>", "native": None, "vm": "crash", "native_s": 0,
                                 "vm_s": 0, "detail": f"exit {code}: {err.strip()[-2000:]}"})
        finished.append(current)
    elif code != 0 and len(finished) < len(module_names):
        # Died before starting the next module (while importing it, say): blame that module.
        culprit = module_names[len(finished)]
        records[culprit] = [{"id": "<child>", "native": None, "vm": "crash", "native_s": 0,
                             "vm_s": 0, "detail": f"exit {code}: {err.strip()[-2000:]}"}]
        finished.append(culprit)
    return records, finished


def run_modules(module_names, subset, jobs):
    """Runs modules in ``jobs`` child processes; returns {module: records}. A child that dies
    costs only the module it was running: a fresh child takes over the rest of its share."""
    shares = [list(module_names[i::jobs]) for i in range(jobs)]

    def work(share):
        results = {}
        while share:
            records, finished = _run_child(share, subset, CHILD_SECONDS)
            results.update(records)
            share = [m for m in share if m not in finished]
        return results

    results = {}
    with ThreadPoolExecutor(jobs) as pool:
        for part in pool.map(work, [share for share in shares if share]):
            results.update(part)
    return {m: results.get(m, []) for m in module_names}


def summarise(records):
    tests = [r for r in records if r["native"] == "pass"]
    passed = sum(r["vm"] == "pass" for r in tests)
    return passed, len(tests)


def main(argv=None):
    """The child's entry point: ``cpython_suite.py --child MODULE... [--subset]``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", nargs="+", required=True, metavar="MODULE")
    parser.add_argument("--subset", action="store_true", help="only the CI subset")
    args = parser.parse_args(argv)
    _child_main(args.child, args.subset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
