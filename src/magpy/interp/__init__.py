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

The house, bottom up (a module imports only modules above it in this list, at module level):
    frame, decode, errors, observer, protocols    the core: frames, the canonical instruction set,
                                                  the observation interface, Python's protocols
    lookaside, calls, binding                     the single call decision point and its table
    ops_*                                         opcode handlers by family
    tracking                                      the provenance forms of the handlers (with an observer)
    block_templates, block_ops, block_tracking    compiled blocks: the template table and its entries
    blocks                                        compiled blocks' one entry point (``compile_blocks``)
    vm, generators                                the dispatch loop; generator objects over VM frames
(``tests/package/test_house.py`` checks there is no cycle.)

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
