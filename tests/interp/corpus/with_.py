"""The with statement: __enter__/__exit__ order, suppression, exceptions in __enter__/__exit__, multiple
managers, contextlib helpers, return/break/continue through a with block."""
import contextlib
import io

from . import program


class Recorder:
    def __init__(self, name, log, suppress=False):
        self.name = name
        self.log = log
        self.suppress = suppress

    def __enter__(self):
        self.log.append(("enter", self.name))
        return self.name.upper()

    def __exit__(self, exc_type, exc, tb):
        self.log.append(("exit", self.name, exc_type.__name__ if exc_type else None,
                         str(exc) if exc else None))
        return self.suppress


@program
def with_enter_exit_order():
    log = []
    with Recorder("a", log) as a, Recorder("b", log) as b:
        log.append(("body", a, b))
    return log


@program
def with_suppresses_exception():
    log = []
    with Recorder("s", log, suppress=True):
        raise ValueError("swallowed")
    log.append("after")
    return log


@program
def with_does_not_suppress():
    log = []
    try:
        with Recorder("o", log):
            raise KeyError("escapes")
    except KeyError as e:
        log.append(("caught", repr(e)))
    return log


@program
def with_inner_suppresses_outer_sees_nothing():
    log = []
    with Recorder("outer", log):
        with Recorder("inner", log, suppress=True):
            1 / 0
    return log


@program
def return_break_continue_through_with():
    log = []

    def f():
        for i in range(4):
            with Recorder(f"r{i}", log):
                if i == 0:
                    continue
                if i == 2:
                    break
        with Recorder("ret", log):
            return "returned"
    return f(), log


@program
def exception_in_enter():
    class BadEnter:
        def __enter__(self):
            raise RuntimeError("enter failed")

        def __exit__(self, *a):
            raise AssertionError("exit must not run")
    with BadEnter():
        pass


@program
def exception_in_exit_replaces_body_exception():
    class BadExit:
        def __enter__(self):
            return self

        def __exit__(self, *a):
            raise KeyError("exit failed")
    try:
        with BadExit():
            raise ValueError("body")
    except KeyError as e:
        return repr(e), repr(e.__context__)


@program
def missing_context_manager_protocol():
    class NotACm:
        def __enter__(self):
            return self
    with NotACm():
        pass


@program
def contextmanager_decorator():
    log = []

    @contextlib.contextmanager
    def tag(name):
        log.append(f"<{name}>")
        try:
            yield name
        except ValueError:
            log.append("handled")
        finally:
            log.append(f"</{name}>")
    with tag("a") as t:
        log.append(t)
    with tag("b"):
        raise ValueError
    return log


@program
def contextlib_helpers():
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        print("captured")
    with contextlib.suppress(KeyError):
        {}["x"]
    with contextlib.ExitStack() as stack:
        log = []
        for n in range(3):
            stack.callback(log.append, n)
    with contextlib.nullcontext(5) as five:
        pass
    print("visible")
    return buf.getvalue(), log, five


@program
def with_statement_target_unpacking_and_attributes():
    class Holder:
        pass
    h = Holder()

    class Pair:
        def __enter__(self):
            return (1, [2, 3])

        def __exit__(self, *a):
            return None
    with Pair() as (a, [b, c]):
        pass
    with Pair() as h.value:
        pass
    return a, b, c, h.value


@program
def with_exit_receives_traceback_and_return_value_truthiness():
    seen = []

    class Cm:
        def __enter__(self):
            return self

        def __exit__(self, et, ev, tb):
            seen.append((et.__name__, tb is not None))
            return "truthy string"
    with Cm():
        raise OSError("x")
    return seen


@program
def file_like_with_stringio():
    with io.StringIO("line1\nline2\n") as f:
        lines = f.readlines()
    return lines, f.closed


@program
def generator_based_cm_reraises_different_exception():
    @contextlib.contextmanager
    def converting():
        try:
            yield
        except ZeroDivisionError as e:
            raise ArithmeticError("converted") from e
    with converting():
        1 / 0
