"""Lookasides of Python's builtins: the entries of the lookaside table that the VM itself needs.

Two kinds. Frame-sensitive builtins (``super``, ``locals``, ``sys._getframe``, ``sys.exc_info``,
``eval`` …) must see the *interpreted* frame, which CPython knows nothing of. Callback-taking builtins
(``map``, ``sorted(key=)``, ``functools.reduce`` …) still run natively, but their Python callbacks are
wrapped so that each callback call comes back into the VM. Protocol builtins (``len``, ``iter``,
``getattr`` …) run the Python dunders they reach interpreted.
"""
import builtins
import functools
import inspect
import itertools
import sys
import types
import warnings
from collections.abc import MutableMapping
from types import FunctionType, GeneratorType, MethodType

from . import recursion
from .calls import call
from .decode import _PACKAGE_DIR
from .frame import NULL
from .lookaside import DELEGATES, lookaside, register_lookaside
from .mro import _HEAPTYPE, python_slot
from .protocols import delete_attr, get_iter, length, load_attr, store_attr


# ---- callbacks ----------------------------------------------------------------------------------

def _is_python_callable(fn):
    tp = type(fn)
    if tp is FunctionType or tp is functools.partial:
        return True
    if tp is MethodType:
        return type(fn.__func__) is FunctionType
    return not isinstance(fn, type) and python_slot(tp, "__call__") is not None


def reentrant(vm, fn):
    """``fn`` wrapped so that native code calling it re-enters the VM (or ``fn`` itself if native)."""
    if not _is_python_callable(fn):
        return fn

    def callback(*args, **kwargs):
        return call(vm, fn, args, kwargs)
    return callback


# ``map``/``filter``/``functools.reduce`` over Python code the VM interprets when an observer watches:
# each call of the function and each test of an item is then an event with provenance (a native map's
# items have none). A map or filter object stays a native one (its type, repr, and that it goes on
# after an exception), whose function runs one interpreted step per item: the step takes the next item
# from iterators made when the call was (Python ``__iter__`` interpreted), so a StopIteration ends the
# iteration as it ends a native one.
exec(compile("def _iterators(*iterables, iter=iter):\n"
             "    its = []\n"
             "    for iterable in iterables:\n"
             "        its.append(iter(iterable))\n"
             "    return its\n"
             "def _map_step(fn, its, single, next=next):\n"
             "    if single:\n"
             "        return fn(next(its[0]))\n"
             "    items = []\n"
             "    for it in its:\n"
             "        items.append(next(it))\n"
             "    return fn(*items)\n"
             "def _filter_step(fn, its, single, next=next):\n"
             "    while True:\n"
             "        item = next(its[0])\n"
             "        if fn is None:\n"
             "            if item:\n"
             "                return item\n"
             "        elif fn(item):\n"
             "            return item\n"
             "def _reduce_by_calls(fn, items, *initial):\n"
             "    empty = not initial\n"
             "    value = initial[0] if initial else None\n"
             "    for item in items:\n"
             "        if empty:\n"
             "            value, empty = item, False\n"
             "        else:\n"
             "            value = fn(value, item)\n"
             "    if empty:\n"
             "        raise TypeError('reduce() of empty iterable with no initial value')\n"
             "    return value\n", "<magpy: map/filter/reduce>", "exec"), globals())


def iterable(value):
    """Would ``iter(value)`` find a protocol (``__iter__``, or the ``__getitem__`` sequence one)?"""
    tp = type(value)
    return getattr(tp, "__iter__", None) is not None or hasattr(tp, "__getitem__")


#: builtin -> (the Python code the VM runs in its place, how many arguments it takes, whether that code
#: is one step of an iterator the builtin makes, the message when an argument after the first is not
#: iterable)
INTERPRETED_AS = {
    map: (_map_step, (2, None), True, None),
    filter: (_filter_step, (2, 2), True, None),
    functools.reduce: (_reduce_by_calls, (2, 3), False, "reduce() arg 2 must support iteration"),
}


class MadeIterator:
    """A map or filter object the VM made around interpreted steps, and what each step produced (the
    values and their provenance, in order) for the observer."""

    __slots__ = ("iterator", "values", "provs")

    def __init__(self, iterator):
        self.iterator, self.values, self.provs = iterator, [], []


def _interpreted(native, code, arity, stepwise, not_iterable):
    def handler(vm, args, kwargs):
        if vm.observer is None or kwargs or not arity[0] <= len(args) <= (arity[1] or len(args)) or \
                not callable(args[0]) and not (native is filter and args[0] is None):
            if args and args[0] is not None:
                args = (reentrant(vm, args[0]), *args[1:])
            return native(*args, **kwargs)
        for a in args[1:] if stepwise else args[1:2]:
            if not iterable(a):  # (checked when the call is made, as the native one does)
                raise TypeError(not_iterable or f"'{type(a).__name__}' object is not iterable")
        provs, vm.lookaside_provs = vm.lookaside_provs, None
        if not stepwise:
            vm.call_provs = provs
            return vm.call_function(code, args, None)
        fn_prov = provs[0][0] if provs is not None else None
        vm.call_provs = (provs[0][1:], {}, None) if provs is not None else None
        its = vm.call_function(_iterators, args[1:], None)
        made = None

        def step(_):
            watched = vm.observer is not None
            if watched:
                vm.call_provs = ((fn_prov, None, None), {}, None)
            value = vm.call_function(code, (args[0], its, len(its) == 1), None)
            if watched:
                r = vm.returned
                made.values.append(value)
                made.provs.append(r[2] if r is not None and r[1] is value and r[0].code is code.__code__
                                  else vm.observer.opaque(value))
            return value

        steps = map(step, itertools.repeat(None))
        made = MadeIterator(steps if native is map else filter(id, steps))  # (an id is never 0)
        vm.made_iterator = made  # (for the observer: what the steps produce)
        return made.iterator
    return handler


for _fn, _rule in INTERPRETED_AS.items():
    register_lookaside(_fn, _interpreted(_fn, *_rule), delegates=not _rule[2])
#: code the VM runs in place of a native builtin: no program sees its frames (natively there are none)
HIDDEN_CODE = {_iterators.__code__, _map_step.__code__, _filter_step.__code__, _reduce_by_calls.__code__}


def _with_key(native):
    def handler(vm, args, kwargs):
        key = kwargs.get("key")
        if key is not None:
            kwargs = {**kwargs, "key": reentrant(vm, key)}
        return native(*args, **kwargs)
    return handler


for _fn in (sorted, min, max, list.sort):
    register_lookaside(_fn, _with_key(_fn))


# ``zip`` over an iterable whose ``__iter__`` is a Python generator (a ``Sequence`` view): natively, zip would run
# that ``__iter__`` (and the generator it returns) unobserved. With an observer the iterators are taken in
# interpreted code first, then the native zip is made over them: the same zip object, whose items come
# from steps the VM runs.
exec(compile("def _zip_of(*iterables, **options):\n"
             "    its = []\n"
             "    for iterable in iterables:\n"
             "        its.append(iter(iterable))\n"
             "    return zip(*its, **options)\n", "<magpy: zip>", "exec"), globals())
HIDDEN_CODE.add(_zip_of.__code__)


def _python_iter(value):
    """Is ``value``'s ``__iter__`` a generator function (its items come from yields the VM can report)?"""
    f = getattr(type(value), "__iter__", None)
    return isinstance(f, FunctionType) and bool(f.__code__.co_flags & inspect.CO_GENERATOR)


@lookaside(zip)
def _zip(vm, args, kwargs):
    if vm.observer is None or not any(map(_python_iter, args)):
        return zip(*args, **kwargs)
    provs, vm.lookaside_provs = vm.lookaside_provs, None
    if provs is not None:
        vm.call_provs = provs
    return vm.call_function(_zip_of, args, kwargs)


DELEGATES.add(zip)


# ``list.extend`` as Python code the VM interprets (its file is not the package's, whose code the VM
# runs natively): each append is one the observer sees
exec(compile("def _extend_by_appends(target, items):\n"
             "    for item in items:\n"
             "        target.append(item)\n", "<magpy: list.extend>", "exec"), globals())
HIDDEN_CODE.add(_extend_by_appends.__code__)


@lookaside(list.extend)
def _extend(vm, args, kwargs):
    # ``xs.extend(v for v in range(n) if v not in xs)``: the generator (Python code) reads the list as
    # it grows, so the appends run one by one where an observer sees each (as list.extend does them)
    if vm.observer is None or len(args) != 2 or kwargs or type(args[0]) is not list or \
            type(args[1]) is not GeneratorType:
        return list.extend(*args, **kwargs)  # (no one watches: the same appends, natively)
    provs, vm.lookaside_provs = vm.lookaside_provs, None
    if provs is not None:
        vm.call_provs = provs
    return vm.call_function(_extend_by_appends, args, None)


# ---- protocol builtins whose dunders may be Python code --------------------------------------------

def _first_prov(vm):
    """Provenance of the first argument of the lookaside call being made (observer on), or None."""
    provs, vm.lookaside_provs = vm.lookaside_provs, None
    if vm.observer is None or provs is None or not provs[0]:
        return None
    return provs[0][0]


@lookaside(len)
def _len(vm, args, kwargs):
    prov = _first_prov(vm)
    if len(args) != 1 or kwargs:
        return len(*args, **kwargs)
    if not type(args[0]).__flags__ & _HEAPTYPE:
        return len(args[0])
    return length(vm, args[0], prov)


@lookaside(iter)
def _iter(vm, args, kwargs):
    if kwargs:
        return iter(*args, **kwargs)
    if len(args) == 2:
        return iter(reentrant(vm, args[0]), args[1])
    if len(args) == 1:
        return get_iter(vm, args[0], _first_prov(vm))
    return iter(*args)


@lookaside(next)
def _next(vm, args, kwargs):
    if kwargs or not 1 <= len(args) <= 2:
        return next(*args, **kwargs)
    f = python_slot(type(args[0]), "__next__")
    if f is None:
        return next(*args)
    prov = _first_prov(vm)
    if prov is not None:
        vm.call_provs = ((prov,), {})
    if len(args) == 1:
        return vm.call_function(f, args, None)
    try:
        return vm.call_function(f, args[:1], None)
    except StopIteration:
        pass
    return args[1]


@lookaside(getattr)
def _getattr(vm, args, kwargs):
    if kwargs or not 2 <= len(args) <= 3 or type(args[1]) is not str:
        return getattr(*args, **kwargs)
    prov = _first_prov(vm)
    if len(args) == 2:
        return load_attr(vm, args[0], args[1], prov)
    try:
        return load_attr(vm, args[0], args[1], prov)
    except AttributeError:
        pass
    return args[2]


@lookaside(hasattr)
def _hasattr(vm, args, kwargs):
    if kwargs or len(args) != 2 or type(args[1]) is not str:
        return hasattr(*args, **kwargs)
    try:
        load_attr(vm, args[0], args[1])
    except AttributeError:
        return False
    return True


@lookaside(setattr)
def _setattr(vm, args, kwargs):
    if kwargs or len(args) != 3 or type(args[1]) is not str:
        return setattr(*args, **kwargs)
    store_attr(vm, *args)


@lookaside(delattr)
def _delattr(vm, args, kwargs):
    if kwargs or len(args) != 2 or type(args[1]) is not str:
        return delattr(*args, **kwargs)
    delete_attr(vm, *args)


# ---- frame-sensitive builtins --------------------------------------------------------------------

@lookaside(super)
def _super(vm, args, kwargs):
    if args or kwargs:
        return super(*args, **kwargs)
    frame = vm.frame
    code = frame.code
    if code.co_argcount == 0 and not code.co_flags & 0x04:
        raise RuntimeError("super(): no arguments")
    first = frame.locals[0]
    if first is NULL:
        raise RuntimeError("super(): arg[0] deleted")
    if code.co_varnames[0] in code.co_cellvars and type(first).__name__ == "cell":
        first = first.cell_contents
    names = frame.decoded.localsplus_names
    if "__class__" not in code.co_freevars:
        raise RuntimeError("super(): __class__ cell not found")
    cell = frame.locals[names.index("__class__")]
    try:
        cls = cell.cell_contents
    except ValueError:
        cls = None
    if cls is None:
        raise RuntimeError("super(): empty __class__ cell")
    return super(cls, first)


@lookaside(locals)
def _locals(vm, args, kwargs):
    if args or kwargs:
        return locals(*args, **kwargs)
    return vm.frame.local_dict()


@lookaside(globals)
def _globals(vm, args, kwargs):
    if args or kwargs:
        return globals(*args, **kwargs)
    return vm.frame.globals


@lookaside(vars)
def _vars(vm, args, kwargs):
    if args or kwargs:
        return vars(*args, **kwargs)
    return vm.frame.local_dict()


def warning_location(vm, stacklevel):
    """Where ``warnings.warn(..., stacklevel)`` called from the current interpreted frame points:
    keyword arguments for ``warnings.warn_explicit``."""
    frame = _shown(vm.frame)
    for _ in range(max(stacklevel, 1) - 1):
        if frame is None or _caller(frame) is None:
            break
        frame = _caller(frame)
    if frame is None:
        return {"filename": "sys", "lineno": 1, "module": "sys", "registry": None}
    g = frame.globals
    module = g.get("__name__", "<string>")
    registry = g.setdefault("__warningregistry__", {})
    return {"filename": frame.filename, "lineno": frame.lineno, "module": module, "registry": registry,
            "module_globals": g}


def _warn_parameters(message, category=None, stacklevel=1, source=None, *, skip_file_prefixes=()):
    """(``warnings.warn``'s parameters: 3.12's C ``warn`` has a text signature ``inspect`` cannot read)"""


#: how ``warnings.warn`` binds its arguments, on every Python
WARN_SIGNATURE = inspect.signature(_warn_parameters)


@lookaside(warnings.warn)
def _warn(vm, args, kwargs):
    """``warnings.warn`` attributed to the interpreted caller's line (not to the VM's own frames)."""
    try:
        bound = WARN_SIGNATURE.bind(*args, **kwargs)
    except TypeError:
        return warnings.warn(*args, **kwargs)
    message = bound.arguments["message"]
    category = bound.arguments.get("category")
    if isinstance(message, Warning):
        category = type(message)
    if category is None:
        category = UserWarning
    where = warning_location(vm, bound.arguments.get("stacklevel", 1))
    warnings.warn_explicit(message, category, **where)


@lookaside(dir)
def _dir(vm, args, kwargs):
    if args or kwargs:
        return dir(*args, **kwargs)
    return sorted(vm.frame.local_dict())


class LocalsProxy(MutableMapping):
    """PEP 667's ``frame.f_locals`` of an optimized frame (3.13+): reads and writes go to the frame."""

    __slots__ = ("_frame",)

    def __init__(self, frame):
        self._frame = frame

    def _slot(self, name):
        names = self._frame.decoded.localsplus_names
        for k in range(len(names) - 1, -1, -1):
            if names[k] == name:
                return k
        return -1

    def __getitem__(self, name):
        value = self._frame.local_dict().get(name, NULL)
        if value is NULL:
            raise KeyError(name)
        return value

    def __setitem__(self, name, value):
        k = self._slot(name)
        if k < 0:
            raise KeyError(name)  # extra variables are not supported on interpreted frames
        slot = self._frame.locals[k]
        if name in self._frame.code.co_cellvars + self._frame.code.co_freevars and \
                type(slot).__name__ == "cell":
            slot.cell_contents = value
        else:
            self._frame.locals[k] = value

    def __delitem__(self, name):
        raise ValueError("cannot remove local variables from FrameLocalsProxy")

    def __iter__(self):
        return iter(self._frame.local_dict())

    def __len__(self):
        return len(self._frame.local_dict())

    def __repr__(self):
        return repr(self._frame.local_dict())  # (as FrameLocalsProxy's: the variables, like a dict)


class FrameProxy:
    """What ``sys._getframe()`` returns for an interpreted frame: the attributes programs read."""

    __slots__ = ("_frame", "_vm_depth")

    def __init__(self, frame):
        self._frame = frame

    @property
    def f_locals(self):
        if sys.version_info >= (3, 13) and self._frame.names is None:
            return LocalsProxy(self._frame)
        return self._frame.local_dict()

    @property
    def f_globals(self):
        return self._frame.globals

    @property
    def f_builtins(self):
        return self._frame.builtins

    @property
    def f_code(self):
        return self._frame.code

    @property
    def f_lineno(self):
        return self._frame.lineno

    @property
    def f_lasti(self):
        f = self._frame
        offsets = f.decoded.offsets
        return offsets[min(f.index, len(offsets) - 1)] if offsets else -1

    @property
    def f_back(self):
        back = _caller(self._frame)
        if back is not None:
            return FrameProxy(back)
        return _outside_frame(0)

    def __repr__(self):
        f = self._frame
        return f"<frame at vm, file '{f.filename}', line {f.lineno}, code {f.code.co_name}>"


def _shown(frame):
    """``frame``, or the first frame below it that a program may see (not the VM's stand-in code)."""
    while frame is not None and frame.code in HIDDEN_CODE:
        frame = frame.back
    return frame


def _caller(frame):
    return _shown(frame.back)


def _frame_at(vm, depth):
    frame = _shown(vm.frame)
    while depth > 0 and frame is not None:
        frame = _caller(frame)
        depth -= 1
    if frame is not None:
        return FrameProxy(frame)
    return _outside_frame(depth)


def _outside_frame(depth):
    """The real frame ``depth`` levels above the code that called into the VM."""
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIR):
        f = f.f_back
    for _ in range(depth):
        if f is None:
            break
        f = f.f_back
    if f is None:
        raise ValueError("call stack is not deep enough")
    return f


@lookaside(sys.getrecursionlimit)
def _getrecursionlimit(vm, args, kwargs):
    """The limit the program set (the VM itself runs under a higher one)."""
    if args or kwargs:
        return sys.getrecursionlimit(*args, **kwargs)
    return vm.user_limit


@lookaside(sys.setrecursionlimit)
def _setrecursionlimit(vm, args, kwargs):
    if kwargs or len(args) != 1 or type(args[0]) is not int or args[0] < 1:
        return sys.setrecursionlimit(*args, **kwargs)  # CPython's own errors
    vm.user_limit = args[0]
    recursion.set_program_limit(args[0])


@lookaside(sys._getframe)
def _getframe(vm, args, kwargs):
    depth = args[0] if args else kwargs.get("depth", 0)
    return _frame_at(vm, depth)


if hasattr(sys, "_getframemodulename"):
    @lookaside(sys._getframemodulename)
    def _getframemodulename(vm, args, kwargs):
        depth = args[0] if args else kwargs.get("depth", 0)
        frame = _frame_at(vm, depth)
        return frame.f_globals.get("__name__")


@lookaside(inspect.getframeinfo)
def _getframeinfo(vm, args, kwargs):
    frame = args[0] if args else kwargs.get("frame")
    if not isinstance(frame, FrameProxy):
        return inspect.getframeinfo(*args, **kwargs)
    f = frame._frame
    return inspect.Traceback(f.filename, f.lineno, f.code.co_name, None, None)


@lookaside(inspect.stack)
def _stack(vm, args, kwargs):
    """``inspect.stack()`` seen from an interpreted frame: the VM's frames, then the real ones."""
    context = args[0] if args else kwargs.get("context", 1)
    out = []
    frame = _shown(vm.frame)
    while frame is not None:
        out.append(inspect.FrameInfo(FrameProxy(frame), frame.filename, frame.lineno, frame.code.co_name,
                                     None, None))
        frame = _caller(frame)
    return out + inspect.getouterframes(_outside_frame(0), context)


@lookaside(inspect.currentframe)
def _currentframe(vm, args, kwargs):
    return _frame_at(vm, 0)


@lookaside(sys.exc_info)
def _exc_info(vm, args, kwargs):
    exc = vm.current_exception()
    if exc is None:
        return (None, None, None)
    return (type(exc), exc, exc.__traceback__)


if hasattr(sys, "exception"):
    @lookaside(sys.exception)
    def _exception(vm, args, kwargs):
        return vm.current_exception()


def _run_source(vm, mode, args, kwargs):
    native = eval if mode == "eval" else exec
    if kwargs or not args or len(args) > 3:
        return native(*args, **kwargs)
    source = args[0]
    frame = vm.frame
    globals_ = args[1] if len(args) > 1 and args[1] is not None else None
    locals_ = args[2] if len(args) > 2 else None
    if globals_ is None:
        globals_ = frame.globals
        if locals_ is None:
            locals_ = frame.local_dict()
    elif locals_ is None:
        locals_ = globals_
    if not isinstance(globals_, dict):
        return native(*args)
    if isinstance(source, str):
        try:
            code = compile(source, "<string>", mode)
        except SyntaxError:
            code = None
        if code is None:
            return native(*args)  # the same SyntaxError, raised by CPython itself
    elif type(source).__name__ == "code":
        code = source
    else:
        return native(*args)
    if code.co_freevars:
        return native(source, globals_, locals_)
    globals_.setdefault("__builtins__", builtins)
    return vm.run_code(code, globals_, locals_)


@lookaside(eval)
def _eval(vm, args, kwargs):
    return _run_source(vm, "eval", args, kwargs)


@lookaside(exec)
def _exec(vm, args, kwargs):
    _run_source(vm, "exec", args, kwargs)


@lookaside(builtins.__build_class__)
def _build_class(vm, args, kwargs):
    """``__build_class__`` with the class body interpreted."""
    if len(args) < 2 or type(args[0]) is not FunctionType:
        return builtins.__build_class__(*args, **kwargs)
    body, name, *bases = args
    orig_bases = tuple(bases)
    bases = types.resolve_bases(orig_bases)
    meta, ns, kwds = types.prepare_class(name, bases, kwargs)
    cell = vm.run_body(body, ns)
    if bases is not orig_bases and bases != orig_bases:
        ns["__orig_bases__"] = orig_bases
    cls = call(vm, meta, (name, bases, ns), kwds)
    if type(cell).__name__ == "cell" and isinstance(cls, type):
        try:
            contents = cell.cell_contents
        except ValueError:
            contents = None
        if contents is not cls:
            raise TypeError(f"__class__ set to {contents!r} defining {name!r} as {cls!r}")
    return cls
