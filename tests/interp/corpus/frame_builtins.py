"""Builtins that look at the calling frame: locals(), globals(), vars(), dir(), sys._getframe() (f_locals,
f_code, f_back, f_globals), sys.exc_info(), eval/exec in the caller's scope, inspect.currentframe."""
import inspect
import sys

from . import PY313, program

module_value = "module-level"


def caller_name():
    return sys._getframe(1).f_code.co_name


def caller_locals():
    return dict(sys._getframe(1).f_locals)


@program
def locals_in_function():
    a = 1
    b = [2]
    snapshot = locals()
    return sorted(snapshot.items())


@program
def locals_sees_later_assignments_per_version():
    a = 1
    snap = locals()
    b = 2  # noqa: F841
    # Up to 3.12 snap is the frame's dict refreshed by the next locals() call; from 3.13 each call is a copy.
    again = locals()
    return sorted(snap), sorted(again), snap is again


@program
def locals_includes_cells_and_free_variables():
    outer = "free"

    def inner():
        own = 1
        return sorted(locals().items()), outer
    cellvar = "cell"

    def uses():
        return cellvar
    return inner(), sorted(k for k in locals() if k != "inner" and k != "uses")


@program
def globals_is_module_namespace():
    g = globals()
    g["created_by_program"] = 5
    return g["module_value"], created_by_program, g is sys.modules[__name__].__dict__  # noqa: F821


@program
def vars_and_dir_without_arguments():
    x = 1
    y = 2
    return sorted(vars()), dir()


@program
def getframe_code_name_and_caller():
    me = sys._getframe().f_code.co_name

    def nested():
        return caller_name()
    return me, caller_name(), nested()


@program
def getframe_f_locals_of_caller():
    secret = "s3"
    numbers = [1, 2]
    seen = caller_locals()
    return sorted(seen.items(), key=lambda kv: kv[0])


@program
def getframe_f_back_chain_and_globals():
    def depth2():
        f = sys._getframe()
        return (f.f_code.co_name, f.f_back.f_code.co_name,
                f.f_back.f_back.f_code.co_name == "getframe_f_back_chain_and_globals",
                f.f_globals is globals(), f.f_back.f_locals["marker"])

    def depth1():
        marker = "depth1-local"
        return depth2()
    return depth1()


@program
def getframe_lineno_is_an_int():
    f = sys._getframe()
    first = f.f_lineno
    second = sys._getframe().f_lineno
    return isinstance(first, int), second - first


@program
def inspect_currentframe_and_stack_names():
    def inner():
        frame = inspect.currentframe()
        return frame.f_code.co_name, frame.f_back.f_code.co_name
    return inner()


@program
def exc_info_inside_and_outside_handlers():
    before = sys.exc_info()
    try:
        raise KeyError("k")
    except KeyError:
        etype, value, tb = sys.exc_info()
        inside = (etype.__name__, repr(value), tb is not None)

        def helper():
            return sys.exc_info()[0].__name__
        from_callee = helper()
    after = sys.exc_info()
    return before, inside, from_callee, after


@program
def exc_info_in_finally_and_generator():
    def gen():
        yield sys.exc_info()[0]
    try:
        raise ValueError
    except ValueError:
        g = gen()
        during = next(g)
    finally:
        in_finally = sys.exc_info()
    return during.__name__, in_finally


@program
def eval_uses_caller_locals_and_globals():
    a = 10
    b = 5
    return eval("a * b + len(module_value)"), eval("a + c", {"c": 1}, {"a": 100}), eval("[x for x in range(a // 5)]")


@program
def exec_writes_into_given_namespace():
    ns = {}
    exec("y = 3\ndef f():\n    return y * 2\nz = f()", ns)
    return ns["y"], ns["z"], sorted(k for k in ns if k != "__builtins__")


@program
def exec_in_function_locals_per_version():
    x = 1
    exec("x = 2; new_name = 3")
    snap = locals()
    return x, snap.get("x"), snap.get("new_name")


@program
def exec_reads_caller_locals():
    base = 7
    out = []
    exec("out.append(base * 2)")
    return out


@program
def eval_syntax_error():
    return eval("1 +")


@program
def compile_and_eval_code_object():
    code = compile("p ** 2", "<expr>", "eval")
    p = 4
    return eval(code), eval(code, {"p": 3}), code.co_names


@program
def globals_write_from_nested_scope_via_dict():
    def writer():
        globals()["written_from_nested"] = [1, 2]
    writer()
    return written_from_nested  # noqa: F821


@program
def locals_in_class_body():
    class C:
        a = 1
        b = a + 1
        names = sorted(k for k in locals() if not k.startswith("__"))
    return C.names


@program
def frame_locals_reflect_current_values():
    counter = 0
    readings = []
    for counter in range(3):
        readings.append(sys._getframe().f_locals["counter"])
    return readings


@program(when=PY313)
def frame_locals_proxy_writes_on_313():
    value = 1
    sys._getframe().f_locals["value"] = 42
    return value


@program
def locals_inside_generator_and_comprehension():
    def gen(start):
        current = start
        yield sorted(locals())
        current += 1
        yield sorted(locals().items())
    return list(gen(5))


@program
def getframe_inside_generator_and_method():
    class C:
        def where(self):
            return sys._getframe().f_code.co_name, sys._getframe(1).f_code.co_name

    def gen():
        yield sys._getframe().f_code.co_name
        yield sys._getframe(1).f_code.co_name
    return C().where(), list(gen())


@program
def eval_with_closure_variable_and_nested_scope():
    factor = 3

    def inner(v):
        # factor is free in inner only because eval needs it: referenced explicitly to make it a cell.
        factor
        return eval("v * factor")
    return inner(5)
