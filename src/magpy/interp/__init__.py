"""magpy.interp — a bytecode interpreter for CPython 3.11–3.13, written in Python.

It imports neither torch nor the rest of magpy, and can be used on its own::

    from magpy import interp
    interp.run(fn, *args, **kwargs)      # returns what fn returns, raises what fn raises

Public names:
    run(fn, *args, **kwargs)             run one call in a fresh VM (no observer)
    VM(observer=None)                    a reusable interpreter; ``vm.call(fn, *args, **kwargs)``
    Observer                             base class of the observation interface (see observer.py)
    register_lookaside(target, handler)  make calls to ``target`` run ``handler(vm, args, kwargs)`` instead
    register_call_instead(cls, unwrap)   calls of ``cls`` instances run ``unwrap(instance)`` (when not None)
    register_type_lookaside(cls, handler)  calls of ``cls`` instances run ``handler(vm, fn, args, kwargs)``
    register_native_code(rule)           functions whose code ``rule(code)`` accepts run natively
    InterpreterError                     an internal failure of the VM; names the user's file and line

The house, bottom up (a module imports only modules above it in this list, inside functions too):
    errors, frame, identity, recursion, observer  the core: frames, the observation interface
    decode, binding, tracebacks                   the canonical instruction set and its handler table
    mro, lookaside                                a type's attributes along its MRO; the lookaside table
    calls                                         the single call decision point
    protocols                                     Python's object protocols (attributes, operators, …)
    builtin_lookasides                            the table's entries for Python's own builtins
    generators, ops_*                             generator objects over VM frames; handlers by family
    tracking                                      the provenance forms of the handlers (with an observer)
    block_templates, block_ops, block_tracking    compiled blocks: the template table and its entries
    blocks                                        compiled blocks' one entry point (``compile_blocks``,
                                                  which it installs in decode: the one hook upward)
    vm                                            the dispatch loop and function entry
    debugger, logs                                pdb and logging aware of interpreted frames
(``tests/package/test_house.py`` checks there is no cycle.)

Calling and the object protocols recurse into each other by nature (a call may run ``__init__``, an
attribute read may run a property): they meet only through the VM object every function is handed.
``calls.call`` runs Python code by ``vm.call_function``; the frames it runs reach ``protocols``, which
call back into ``calls.call``. Imports point one way: ``mro`` < ``calls`` < ``protocols``.

``breakpoint()`` and ``pdb.set_trace()`` in interpreted code open pdb at the user's line (see debugger.py); log
records of interpreted code name its line (see logs.py).
"""
from .errors import InterpreterError
from .observer import Observer
from .vm import VM, run
from .decode import register_native_code
from .lookaside import register_lookaside, register_call_instead, register_type_lookaside
from . import debugger  # noqa: F401  (breakpoint() and pdb.set_trace() stop in the interpreted frame)
from . import logs  # noqa: F401  (log records name the interpreted caller's line)

__all__ = ["run", "VM", "Observer", "register_lookaside", "register_call_instead", "register_type_lookaside",
           "register_native_code", "InterpreterError"]
