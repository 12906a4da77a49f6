"""Exceptions: try/except/else/finally, raise from, implicit chaining, bare raise, exceptions and returns in
finally, except*, ExceptionGroup, sys.exc_info in handlers, exception variable cleanup."""
import sys

from . import program


class AppError(Exception):
    def __init__(self, code, message="app failed"):
        super().__init__(message)
        self.code = code


@program(cases=[(0,), (1,), (2,), (3,)])
def try_except_else_finally(kind):
    log = []
    try:
        log.append("try")
        if kind == 1:
            raise ValueError("v")
        if kind == 2:
            raise KeyError("k")
        if kind == 3:
            raise AppError(7)
    except ValueError as e:
        log.append(("value", str(e)))
    except (KeyError, IndexError) as e:
        log.append(("lookup", repr(e)))
    except Exception as e:
        log.append(("other", type(e).__name__, e.code))
    else:
        log.append("else")
    finally:
        log.append("finally")
    return log


@program
def exception_propagates_through_calls():
    def inner():
        raise AppError(3, "deep")

    def middle():
        try:
            inner()
        finally:
            trail.append("middle-finally")
    trail = []
    try:
        middle()
    except AppError as e:
        trail.append((e.code, e.args))
    return trail


@program
def uncaught_user_exception():
    raise AppError(42, "bad thing")


@program
def raise_from_sets_cause():
    try:
        try:
            {}["missing"]
        except KeyError as e:
            raise ValueError("converted") from e
    except ValueError as outer:
        return (type(outer.__cause__).__name__, outer.__suppress_context__,
                type(outer.__context__).__name__)


@program
def uncaught_raise_from_none():
    try:
        1 / 0
    except ZeroDivisionError:
        raise LookupError("hidden") from None


@program
def uncaught_implicit_chaining():
    try:
        int("x")
    except ValueError:
        raise RuntimeError("while handling")


@program
def chained_context_three_deep():
    try:
        try:
            try:
                raise OSError("one")
            except OSError:
                raise KeyError("two")
        except KeyError:
            raise TypeError("three")
    except TypeError as e:
        chain = []
        while e is not None:
            chain.append(type(e).__name__)
            e = e.__context__
        return chain


@program
def bare_raise_reraises_current():
    try:
        try:
            raise ValueError("original")
        except ValueError:
            raise
    except ValueError as e:
        return str(e), e.__context__


@program
def bare_raise_without_active_exception():
    raise


@program
def reraise_after_handling_other_exception():
    try:
        raise ValueError("first")
    except ValueError:
        try:
            raise KeyError("second")
        except KeyError:
            pass
        raise


@program
def raise_exception_class_not_instance():
    try:
        raise IndexError
    except IndexError as e:
        caught = (type(e).__name__, e.args)
    raise StopAsyncIteration


@program
def raise_non_exception_is_type_error():
    raise 42


@program
def finally_runs_on_return():
    log = []

    def f():
        try:
            log.append("body")
            return "from-try"
        finally:
            log.append("finally")
    return f(), log


@program
def return_in_finally_overrides_exception():
    def f():
        try:
            raise ValueError("lost")
        finally:
            return "finally-wins"  # noqa: B012
    return f()


@program
def return_in_finally_overrides_return():
    def f():
        try:
            return 1
        finally:
            return 2  # noqa: B012
    return f()


@program
def exception_in_finally_replaces_original():
    try:
        try:
            raise ValueError("original")
        finally:
            raise KeyError("from-finally")
    except KeyError as e:
        return repr(e), repr(e.__context__)


@program
def break_and_continue_in_finally():
    out = []
    for i in range(4):
        try:
            if i == 1:
                continue
            if i == 3:
                raise ValueError(i)
            out.append(i)
        finally:
            out.append(f"f{i}")
            if i == 3:
                break  # noqa: B012 - swallows the ValueError
    return out


@program
def exception_variable_is_deleted_after_handler():
    e = "before"
    try:
        raise ValueError("x")
    except ValueError as e:  # noqa: F841
        pass
    try:
        return e
    except UnboundLocalError as err:
        return "unbound: " + str(err)


@program
def nested_handlers_and_exc_info():
    seen = []
    try:
        raise KeyError("outer")
    except KeyError:
        seen.append(sys.exc_info()[0].__name__)
        try:
            raise ValueError("inner")
        except ValueError:
            seen.append(sys.exc_info()[0].__name__)
        seen.append(sys.exc_info()[0].__name__)
    seen.append(sys.exc_info())
    return seen


@program
def sys_exception_in_handler():
    try:
        raise IndexError(5)
    except IndexError:
        if sys.version_info >= (3, 11):
            return repr(sys.exception())


@program
def except_star_splits_group():
    caught = []
    try:
        raise ExceptionGroup("many", [ValueError(1), TypeError(2), ValueError(3), KeyError(4)])
    except* ValueError as eg:
        caught.append(("value", [str(e) for e in eg.exceptions]))
    except* (TypeError, KeyError) as eg:
        caught.append(("other", sorted(type(e).__name__ for e in eg.exceptions)))
    return caught


@program
def except_star_unhandled_remainder():
    try:
        raise ExceptionGroup("g", [ValueError("handled"), OSError("left")])
    except* ValueError:
        pass


@program
def except_star_with_naked_exception():
    seen = []
    try:
        raise ValueError("naked")
    except* ValueError as eg:
        seen.append((type(eg).__name__, [str(e) for e in eg.exceptions]))
    return seen


@program
def except_star_raises_new_exception():
    try:
        raise ExceptionGroup("g", [ValueError("a")])
    except* ValueError:
        raise RuntimeError("in handler")


@program
def exception_group_api():
    eg = ExceptionGroup("top", [ValueError("a"), ExceptionGroup("sub", [TypeError("b"), ValueError("c")])])
    match, rest = eg.split(ValueError)
    sub = eg.subgroup(lambda e: isinstance(e, TypeError))
    return str(match), str(rest), repr(sub.exceptions), eg.message, len(eg.exceptions)


@program
def exception_notes():
    try:
        try:
            raise ValueError("base")
        except ValueError as e:
            e.add_note("first note")
            e.add_note("second note")
            raise
    except ValueError as e:
        return e.__notes__


@program
def uncaught_exception_with_notes():
    err = KeyError("k")
    err.add_note("context")
    raise err


@program
def custom_exception_hierarchy():
    class Base(Exception):
        pass

    class Specific(Base):
        def __str__(self):
            return f"Specific<{self.args[0]}>"
    out = []
    for exc in (Specific("x"), Base("y"), AppError(1)):
        try:
            raise exc
        except Specific as e:
            out.append(("specific", str(e)))
        except Base as e:
            out.append(("base", str(e)))
        except Exception as e:
            out.append(("exception", str(e)))
    return out


@program
def exception_in_except_clause_expression():
    def pick():
        raise RuntimeError("evaluating the clause")
    try:
        raise ValueError("v")
    except pick():
        return "never"


@program
def catching_non_exception_class_is_type_error():
    try:
        raise ValueError("v")
    except 42:  # noqa: TRY302
        pass


@program
def try_finally_in_loop_with_return():
    log = []

    def f():
        for i in range(3):
            try:
                if i == 1:
                    return i
            finally:
                log.append(i)
    return f(), log


@program
def stop_iteration_raised_by_user():
    try:
        raise StopIteration(5)
    except StopIteration as e:
        return e.value, e.args


@program
def exception_attributes_and_args():
    e = OSError(2, "No such file")
    k = KeyError("key")
    u = UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    return e.errno, e.strerror, str(e), str(k), str(u), u.start, type(e).__mro__[1].__name__


@program
def assertion_and_index_errors_from_builtins():
    out = []
    for thunk in (lambda: [][0], lambda: {}["k"], lambda: "abc".index("z"), lambda: int("q"),
                  lambda: [].pop(), lambda: next(iter([])), lambda: (1, 2).index(5)):
        try:
            thunk()
        except Exception as e:
            out.append((type(e).__name__, str(e)))
    return out


@program
def generator_close_runs_its_finally():
    def gen():
        try:
            yield 1
        finally:
            log.append("closed")
    log = []
    g = gen()
    next(g)
    g.close()
    return log


@program
def traceback_object_is_present():
    try:
        raise ValueError("tb")
    except ValueError as e:
        tb = e.__traceback__
        return tb is not None, type(tb).__name__, e.with_traceback(None).__traceback__ is None


@program
def raise_in_else_clause():
    try:
        pass
    except Exception:
        return "handler"
    else:
        raise KeyError("from else")


@program
def keyboard_interrupt_like_base_exceptions_not_caught_by_exception():
    class Stop(BaseException):
        pass
    try:
        try:
            raise Stop("base")
        except Exception:
            return "wrong"
    except BaseException as e:
        return type(e).__name__, isinstance(e, Exception)


@program
def continue_and_break_inside_except_in_loop():
    out = []
    for v in ["1", "x", "3", "stop", "5"]:
        try:
            n = int(v)
        except ValueError:
            if v == "stop":
                break
            out.append("bad")
            continue
        else:
            out.append(n)
        finally:
            out.append("|")
    return out


@program
def except_clause_with_tuple_from_variable_and_subclass_order():
    errors = (KeyError, ZeroDivisionError)
    out = []
    for thunk in (lambda: {}["k"], lambda: 1 / 0, lambda: [][1]):
        try:
            thunk()
        except errors as e:
            out.append(("listed", type(e).__name__))
        except LookupError as e:
            out.append(("lookup", type(e).__name__))
    return out


@program
def nested_try_in_finally_and_handler():
    log = []
    try:
        try:
            raise ValueError("a")
        finally:
            try:
                raise KeyError("b")
            except KeyError:
                log.append("inner handled")
    except ValueError as e:
        log.append(("outer", str(e), e.__context__))
    return log


@program
def exception_raised_in_nested_call_inside_handler_keeps_context():
    def helper():
        raise RuntimeError("from helper")
    try:
        try:
            raise OSError("first")
        except OSError:
            helper()
    except RuntimeError as e:
        return repr(e.__context__), e.__suppress_context__


@program
def return_inside_except_skips_else_runs_finally():
    log = []

    def f():
        try:
            raise ValueError
        except ValueError:
            log.append("except")
            return "from-except"
        else:
            log.append("else")
        finally:
            log.append("finally")
    return f(), log


@program
def raise_from_cause_that_is_a_class_and_from_non_exception_error():
    out = []
    try:
        raise ValueError("v") from KeyError
    except ValueError as e:
        out.append(type(e.__cause__).__name__)
    try:
        raise ValueError("v") from 5
    except TypeError as e:
        out.append(str(e))
    return out


@program
def exception_with_custom_init_and_args():
    class Rich(Exception):
        def __init__(self, a, b=2):
            super().__init__(a, b)
            self.total = a + b
    try:
        raise Rich(1, b=5)
    except Rich as e:
        return e.args, e.total, str(e), repr(e)


@program
def deeply_nested_finally_order():
    log = []

    def f(depth):
        try:
            if depth == 0:
                raise KeyError("bottom")
            f(depth - 1)
        finally:
            log.append(depth)
    try:
        f(3)
    except KeyError:
        log.append("caught")
    return log


@program
def except_star_nested_groups_and_ordering():
    seen = []
    try:
        raise ExceptionGroup("outer", [ValueError(1), ExceptionGroup("inner", [TypeError(2), ValueError(3)])])
    except* TypeError as eg:
        seen.append(("type", repr(eg.exceptions)))
    except* ValueError as eg:
        seen.append(("value", str(eg), len(eg.exceptions)))
    return seen


@program
def exception_group_uncaught_with_nested_notes():
    inner = ValueError("x")
    inner.add_note("detail")
    raise ExceptionGroup("several", [inner, KeyError("y")])
