"""The observation interface: what the VM reports while it runs a program.

Install an observer with ``VM(observer=obj)``. Every method has a no-op default here, so a subclass
overrides only what it needs. With an observer installed each frame also carries *provenance*: an
opaque value per stack slot (``frame.pstack``) and per local slot (``frame.plocals``), parallel to
``frame.stack`` and ``frame.locals``. The VM moves provenance along with values (loads, stores, stack
shuffles, argument binding) and asks the observer for the provenance of every new value. Constants
and values the observer says nothing about carry ``None``. Provenance is per slot, not per object:
two equal ints that came from two places keep two provenances.

Events (``prov`` arguments are the provenance of the value next to them):

Frames
    ``enter_frame(frame)`` — an interpreted frame starts (its arguments are bound).
    ``argument(frame, index, name, value) -> prov`` — provenance of an argument of a frame entered
        from outside the VM (the root call); interpreted callers pass their own provenance instead.
    ``leave_frame(frame, value, exc)`` — the frame returned ``value`` or raised ``exc``.
Reads from outside the frame
    ``read_global(frame, name, value) -> prov``
    ``read_cell(frame, cell, name, value) -> prov`` — a closure cell (free or cell variable).
    ``read_attr(obj, obj_prov, name, value, computed) -> prov`` — ``computed``: the provenance Python
        code (a property, ``__getattr__``) returned the value with, else ``tracking.NOT_RETURNED``.
    ``read_method(obj, obj_prov, name, function)`` — ``obj.name(...)`` found ``function`` on the class.
    ``read_item(obj, obj_prov, key, key_prov, value, computed) -> prov`` — ``computed``: as for
        ``read_attr`` (a Python ``__getitem__`` returned the value with it).
Writes
    ``write_global(frame, name, value, prov)``, ``write_cell(frame, cell, name, value, prov)``
    ``delete_global(frame, namespace, name)``, ``delete_cell(frame, cell, name)`` — ``del name`` of a
        global (or of a name in a class body or exec namespace) and of a closure variable
    ``new_cell(frame, cell, name, prov)`` — MAKE_CELL made ``cell`` holding a value of provenance ``prov``.
    ``write_attr(obj, obj_prov, name, value, prov)``, ``write_item(obj, obj_prov, key, key_prov, value, prov)``
    ``delete_attr(obj, obj_prov, name)``, ``delete_item(obj, obj_prov, key, key_prov)``
Computation
    ``native_call(fn, args, kwargs, result)`` — a callable ran natively (not interpreted).
    ``created(obj)`` — ``cls(...)`` made ``obj`` and is about to run its interpreted ``__init__``
        (so the object is known as new while its own constructor writes to it).
    ``call_result(frame, fn, fn_prov, args, arg_provs, kwargs, kw_provs, result, returned) -> prov`` —
        any call made by a CALL instruction returned ``result``; ``returned`` is the provenance the
        interpreted callee returned it with, or ``tracking.NOT_RETURNED`` when no interpreted frame of
        the callee did (a native call).
    ``operation(frame, opname, arg, inputs, input_provs, outputs) -> list of provs`` — any other
        instruction that produced values (operators, container builds, iteration …); ``arg`` is the
        decoded argument (e.g. BINARY_OP's operator index into ``protocols.NATIVE_BINARY``). A loop's
        iterator with provenance that is exhausted reports ``FOR_ITER_END`` (no outputs): the end of a
        loop is a decision on the iterator's state too.
    ``opaque(value) -> prov`` — provenance for a value the VM could not follow (an argument of a call
        made by the VM's own protocol code, a value sent into a generator).
    ``packed(container, element_provs) -> prov`` — a call packed arguments into the ``*args`` tuple
        or ``**kwargs`` dict of the callee (``element_provs``: a list, or a dict by keyword).
    ``bound_self(method, method_prov) -> prov`` — provenance of a bound method's ``__self__``.
    ``unpacked(iterable, prov, values=None) -> provs`` / ``unpacked_mapping(mapping, prov) -> {key: prov}``
        — the provenance of the arguments a ``f(*args, **kwargs)`` call unpacks (one per element;
        ``values``: what was taken from an iterable that is not a tuple or list, already consumed).
Calls through wrappers
    An object whose class defines ``__vm_call_instead__(self)`` is called as the callable that returns
    (``magpy.compile``'s functions return their original function, so an enclosing capture sees inside).
Control
    ``branch(frame, kind, value, prov, taken)`` — a conditional jump decided on ``value``; ``kind`` is
        the canonical jump (``POP_JUMP_IF_TRUE``, ``POP_JUMP_IF_NONE`` …).
    ``return_value(frame, value, prov)`` — the frame returns ``value``.
    ``yielded(frame, value, prov)`` — a generator frame yields ``value``.
Exceptions
    ``call_raised(frame, fn, fn_prov, args, arg_provs, kwargs, kw_provs, exc)`` — a call made by a CALL
        instruction raised ``exc`` (from the callee's own frames, if interpreted, or natively).
    ``item_raised(obj, obj_prov, key, key_prov, exc)`` — ``obj[key]`` (or ``del obj[key]``) raised ``exc``.
    ``raise_statement(frame, value, prov)`` — a ``raise`` statement is about to raise ``value``.
    ``raised(frame, exc, opname, caught) -> prov`` — ``exc`` passes through an interpreted frame, raised
        by its instruction ``opname`` (the canonical name: ``CALL`` for one raised by a callee);
        ``caught``: a handler of this frame takes it, with the returned provenance.

Instructions
    ``step`` — an attribute, None by default: a callable ``step(frame, index)`` that the VM then calls
        before each instruction of each frame it starts or resumes (``frame.lineno`` is that
        instruction's line). Such frames run one handler per instruction (no compiled blocks), so an
        observer sets it only while something wants every instruction (a line tracer).
    ``root_step`` — the same, for the root frame only (the frame the VM entered from outside): capture
        follows where the call is, to split it there at a graph break.

Constants stay quiet: an operator (``QUIET_OPS``) or a branch whose operands are all constant scalars
(exact ``CONSTANT_SCALARS`` types) without provenance, and a ``FOR_ITER`` step of a ``range`` or ``str``
iterator without provenance, report no event: what they make is a constant scalar again, with
provenance ``None``. (Most of a program's arithmetic is on such values; an observer that wanted them
would learn nothing it could not compute itself.)
"""

#: exact types of the values the VM treats as constants when they carry no provenance
CONSTANT_SCALARS = frozenset({int, float, bool, str, bytes, complex, type(None)})
#: iterators whose items are constant scalars when the iterator carries no provenance
CONSTANT_ITERATORS = frozenset({type(iter(range(0))), type(iter(range(1 << 64))), type(iter(""))})
#: instructions whose event is left out when all their operands are provenance-free constant scalars
QUIET_OPS = frozenset({"BINARY_OP", "COMPARE_OP", "COMPARE_OP_BOOL", "IS_OP", "CONTAINS_OP",
                       "UNARY_NEGATIVE", "UNARY_INVERT", "UNARY_POSITIVE", "UNARY_NOT", "TO_BOOL",
                       "FORMAT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "CONVERT_VALUE",
                       "BUILD_STRING"})


class Observer:
    """Base class: every event is a no-op; provenance-returning events return None."""

    step = None  # (see "Instructions" above)
    root_step = None  # as ``step``, for the instructions of the root frame only

    def enter_frame(self, frame):
        pass

    def argument(self, frame, index, name, value):
        return None

    def leave_frame(self, frame, value, exc):
        pass

    def read_global(self, frame, name, value):
        return None

    def read_cell(self, frame, cell, name, value):
        return None

    def read_attr(self, obj, obj_prov, name, value, computed=None):
        return None

    def read_method(self, obj, obj_prov, name, function):
        pass

    def read_item(self, obj, obj_prov, key, key_prov, value, computed=None):
        return None

    def write_global(self, frame, name, value, prov):
        pass

    def write_cell(self, frame, cell, name, value, prov):
        pass

    def new_cell(self, frame, cell, name, prov):
        pass

    def delete_global(self, frame, namespace, name):
        pass

    def delete_cell(self, frame, cell, name):
        pass

    def write_attr(self, obj, obj_prov, name, value, prov):
        pass

    def write_item(self, obj, obj_prov, key, key_prov, value, prov):
        pass

    def delete_attr(self, obj, obj_prov, name):
        pass

    def delete_item(self, obj, obj_prov, key, key_prov):
        pass

    def native_call(self, fn, args, kwargs, result):
        pass

    def created(self, obj):
        pass

    def call_result(self, frame, fn, fn_prov, args, arg_provs, kwargs, kw_provs, result, returned=None):
        return None

    def operation(self, frame, opname, arg, inputs, input_provs, outputs):
        return None

    def opaque(self, value):
        return None

    def bound_self(self, method, method_prov):
        return None

    def packed(self, container, element_provs):
        return None

    def unpacked(self, iterable, prov, values=None):
        return [None] * len(iterable if values is None else values)

    def unpacked_mapping(self, mapping, prov):
        return dict.fromkeys(mapping)

    def branch(self, frame, kind, value, prov, taken):
        pass

    def return_value(self, frame, value, prov):
        pass

    def yielded(self, frame, value, prov):
        pass

    def call_raised(self, frame, fn, fn_prov, args, arg_provs, kwargs, kw_provs, exc):
        pass

    def item_raised(self, obj, obj_prov, key, key_prov, exc):
        pass

    def raise_statement(self, frame, value, prov):
        pass

    def raised(self, frame, exc, opname, caught):
        return None
