"""The differential corpus of the VM: small programs whose behaviour CPython defines.

Each corpus module is loaded afresh (as ``magpy_corpus.<name>``) for every run, so the programs and their
arguments are rebuilt each time and the native run and the VM run cannot share state. A module marks its
programs with :func:`program` (a function called with given arguments) or :func:`source_program` (a code
object compiled from text, for module-level opcodes and syntax newer than Python 3.11).

Programs must be deterministic, fast, and valid on Python 3.11, 3.12 and 3.13; a program that only makes
sense on some versions says so with ``when=``.
"""
import sys
import types

CALLS_ATTR = "__corpus_calls__"


class Call:
    """One way to call a program: ``call(1, 2, key=3)``."""
    __slots__ = ("args", "kwargs")

    def __init__(self, args, kwargs):
        self.args = args
        self.kwargs = kwargs


def call(*args, **kwargs):
    """One way to call a program: ``call(1, 2, key=3)``."""
    return Call(args, kwargs)


def program(fn=None, *, args=(), kwargs=None, cases=None, when=True):
    """Register ``fn`` as a program. Use bare, or with ``args=``/``kwargs=`` for one call, or with
    ``cases=[call(...), (positional, args), ...]`` for several. ``when=False`` leaves it out."""
    if cases is None:
        calls = [(tuple(args), dict(kwargs or {}))]
    else:
        calls = [(case.args, case.kwargs) if isinstance(case, Call) else (tuple(case), {}) for case in cases]

    def register(fn):
        if when:
            setattr(fn, CALLS_ATTR, calls)
        return fn

    return register(fn) if fn is not None else register


def source_program(namespace, text, *, mode="exec", when=True):
    """A program made of top-level code: ``text`` compiled in ``mode`` and run as a function whose globals
    (and locals, as for a module body) are ``namespace``. Returns None when ``when`` is false, without
    compiling, so the text may use syntax that this Python does not have."""
    if not when:
        return None
    code = compile(text, f"<corpus {namespace['__name__']}>", mode)
    fn = types.FunctionType(code, namespace)
    setattr(fn, CALLS_ATTR, [((), {})])
    return fn


PY312 = sys.version_info >= (3, 12)
PY313 = sys.version_info >= (3, 13)
