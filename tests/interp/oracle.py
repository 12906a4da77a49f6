"""Differential oracle for the VM: run a corpus program natively and in ``magpy.interp``, compare what is seen.

Compared, for each program: the return value (type and value; a returned iterator or generator is drained
to a list first; floats compare NaN-aware and by ``repr``, so ``-0.0 != 0.0``), the exception (type, message,
``__cause__``/``__context__`` chain, notes, sub-exceptions of groups), captured stdout, the state of the
arguments afterwards, and the module's globals afterwards. Values are compared through a *snapshot*: a plain
nested-tuple description that names types by module and qualname, so two fresh copies of a corpus module
(one per run) compare equal when they hold equal data, and that records aliasing (the second reference to a
mutable object is ``('ref', n)``).

Set ``MAGPY_ORACLE_NATIVE=1`` to make the "VM" side a plain native call: that validates the corpus itself.
"""
import contextlib
import enum
import importlib.util
import io
import math
import os
import pprint
import re
import signal
import sys
import threading
import traceback
import types
from dataclasses import dataclass, field
from pathlib import Path

CORPUS_DIR = Path(__file__).resolve().parent / "corpus"
PACKAGE = "magpy_corpus"
CALLS_ATTR = "__corpus_calls__"
TIME_LIMIT_S = 30.0  # per run; a VM stuck in a loop fails one program instead of hanging the suite
DRAIN_LIMIT = 10_000  # items taken from a returned iterator


# --------------------------------------------------------------------------------------------- the corpus

@dataclass(frozen=True)
class Program:
    """One call of one corpus program: ``module::name`` or ``module::name[case]``."""
    module: str
    name: str
    case: int = 0
    cases: int = 1

    @property
    def id(self):
        suffix = f"[{self.case}]" if self.cases > 1 else ""
        return f"{self.module}::{self.name}{suffix}"

    def __str__(self):
        return self.id


def corpus_module_names():
    """Names of the corpus modules, sorted (files in corpus/ not starting with an underscore)."""
    return sorted(p.stem for p in CORPUS_DIR.glob("*.py") if not p.name.startswith("_"))


def _corpus_package():
    package = sys.modules.get(PACKAGE)
    init = str(CORPUS_DIR / "__init__.py")
    if package is None or getattr(package, "__file__", None) != init:
        spec = importlib.util.spec_from_file_location(
            PACKAGE, init, submodule_search_locations=[str(CORPUS_DIR)])
        package = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = package
        spec.loader.exec_module(package)
    return package


def load_module(name):
    """A fresh copy of corpus module ``name``: every corpus submodule imported earlier is forgotten first,
    so that imports made by a program run again too."""
    package = _corpus_package()
    for key in [k for k in sys.modules if k.startswith(PACKAGE + ".")]:
        del sys.modules[key]
        with contextlib.suppress(AttributeError):
            delattr(package, key[len(PACKAGE) + 1:])
    full_name = f"{PACKAGE}.{name}"
    path = CORPUS_DIR / f"{name}.py"
    spec = importlib.util.spec_from_file_location(full_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[full_name] = module
    exec(_compiled(path), module.__dict__)
    return module


_COMPILED = {}


def _compiled(path):
    # Compiling is most of the cost of a fresh load; code objects are immutable, so runs may share them.
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    code = _COMPILED.get(key)
    if code is None:
        code = _COMPILED[key] = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
    return code


def program_functions(module):
    """``{attribute name: function}`` of the programs a loaded corpus module registers, in source order."""
    return {name: value for name, value in vars(module).items()
            if callable(value) and CALLS_ATTR in getattr(value, "__dict__", {})}


def discover(modules=None):
    """Every ``Program`` of the corpus (or of the named modules)."""
    programs = []
    for module_name in modules or corpus_module_names():
        module = load_module(module_name)
        for name, fn in program_functions(module).items():
            calls = getattr(fn, CALLS_ATTR)
            programs.extend(Program(module_name, name, i, len(calls)) for i in range(len(calls)))
    return programs


# --------------------------------------------------------------------------------------------- runners

def native_runner(fn, *args, **kwargs):
    return fn(*args, **kwargs)


def vm_runner():
    """The callable that runs a function in the VM: ``magpy.interp.run``, or a native call when
    ``MAGPY_ORACLE_NATIVE=1``."""
    if os.environ.get("MAGPY_ORACLE_NATIVE") == "1":
        return native_runner
    from magpy.interp import run
    return run


class ProgramTimeout(BaseException):
    """A run went past TIME_LIMIT_S. A BaseException so that a program's ``except Exception`` cannot eat it."""


@contextlib.contextmanager
def _time_limit(seconds):
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def expire(signum, frame):
        raise ProgramTimeout(f"run took longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --------------------------------------------------------------------------------------------- snapshots

_PLAIN = (type(None), bool, int, str, bytes, type(Ellipsis), type(NotImplemented))
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: classes made by `class` statements (and type(...))
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_CALLABLES = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, types.BuiltinMethodType,
              types.WrapperDescriptorType, types.MethodWrapperType, types.MethodDescriptorType,
              types.ClassMethodDescriptorType)


def _slots(cls):
    """Names of the slots a class and its bases declare (``__dict__``/``__weakref__`` left out)."""
    names = []
    for klass in cls.__mro__:
        declared = klass.__dict__.get("__slots__", ())
        for name in (declared,) if isinstance(declared, str) else declared:
            if name not in ("__dict__", "__weakref__") and name not in names:
                names.append(name)
    return names


def type_name(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def _callable_name(fn):
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return _ADDRESS.sub("", str(name))


class Snapshotter:
    """Turns values into comparable nested tuples. One instance per outcome, so that aliasing between the
    result, the arguments and the globals is recorded too."""

    def __init__(self):
        self._seen = {}
        self._alive = []  # keeps snapshotted objects alive so their ids stay unique

    def take(self, value, depth=0):
        if depth > 60:
            return ("too-deep", type_name(type(value)))
        cls = type(value)
        if cls in _PLAIN:
            return (cls.__name__, value)
        if cls is float:
            return ("float", "nan" if math.isnan(value) else repr(value))
        if cls is complex:
            return ("complex", repr(value))
        if isinstance(value, type):
            return ("type", type_name(value))
        if isinstance(value, types.ModuleType):
            return ("module", value.__name__)
        if isinstance(value, _CALLABLES):
            return ("callable", type(value).__name__, _callable_name(value))
        if isinstance(value, (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)):
            return ("generator", cls.__name__)
        if isinstance(value, enum.Enum):
            return ("enum", type_name(cls), value.name)
        if cls in (tuple, frozenset, range, slice):
            return self._container(value, depth)
        marker = self._seen.get(id(value))
        if marker is not None:
            return ("ref", marker)
        self._seen[id(value)] = len(self._seen)
        self._alive.append(value)
        if isinstance(value, BaseException):
            return self._exception(value, depth)
        if cls in (list, dict, set, bytearray):
            return self._container(value, depth)
        if cls.__flags__ & _HEAP_TYPE:
            return self._object(value, depth)
        return ("repr", type_name(cls), _ADDRESS.sub("", repr(value)))

    def _container(self, value, depth):
        take = self.take
        cls = type(value)
        if isinstance(value, dict):
            return (cls.__name__, tuple((take(k, depth + 1), take(v, depth + 1)) for k, v in value.items()))
        if isinstance(value, (set, frozenset)):
            return (cls.__name__, tuple(sorted((take(v, depth + 1) for v in value), key=repr)))
        if isinstance(value, (range, slice, bytearray)):
            return (cls.__name__, repr(value))
        return (cls.__name__, tuple(take(v, depth + 1) for v in value))

    def _object(self, value, depth):
        # A user class: the content of its builtin base (list, dict, tuple, ... subclasses) and its attributes.
        attributes = {}
        with contextlib.suppress(TypeError, AttributeError):
            attributes.update(object.__getattribute__(value, "__dict__"))
        for slot in _slots(type(value)):
            with contextlib.suppress(AttributeError):
                attributes.setdefault(slot, object.__getattribute__(value, slot))
        attrs = tuple((k, self.take(v, depth + 1)) for k, v in sorted(attributes.items()))
        return ("object", type_name(type(value)), self._base_content(value, depth), attrs)

    def _base_content(self, value, depth):
        def take(v):
            return self.take(v, depth + 1)
        if isinstance(value, dict):
            return ("dict", tuple((take(k), take(v)) for k, v in dict.items(value)))
        if isinstance(value, list):
            return ("list", tuple(take(v) for v in list.__iter__(value)))
        if isinstance(value, tuple):
            return ("tuple", tuple(take(v) for v in tuple.__iter__(value)))
        if isinstance(value, (set, frozenset)):
            return ("set", tuple(sorted((take(v) for v in set(value)), key=repr)))
        for base, convert in ((str, str.__str__), (int, int.__index__), (float, float.__float__),
                              (bytes, bytes)):
            if isinstance(value, base):
                return take(convert(value))
        return None

    def _exception(self, exc, depth):
        take = self.take
        try:
            message = str(exc)
        except Exception as error:  # noqa: BLE001 - a broken __str__ is still an observable
            message = f"<str() raised {type(error).__name__}>"
        group = tuple(take(e, depth + 1) for e in exc.exceptions) if isinstance(exc, BaseExceptionGroup) else ()
        return ("exception", type_name(type(exc)), _ADDRESS.sub("", message),
                take(getattr(exc, "__notes__", None), depth + 1),
                take(exc.__cause__, depth + 1), take(exc.__context__, depth + 1),
                exc.__suppress_context__, group)

    def globals_of(self, module):
        """The module's global names and what they hold; classes defined in the module also show their
        non-callable class attributes (so that ``Counter.count += 1`` is seen)."""
        state = []
        for name, value in sorted(vars(module).items()):
            if name.startswith("__") and name.endswith("__"):
                continue
            entry = self.take(value)
            if isinstance(value, type) and value.__module__ == module.__name__:
                entry = entry + (self._class_state(value),)
            state.append((name, entry))
        return tuple(state)

    def _class_state(self, cls):
        items = []
        for name, value in sorted(vars(cls).items()):
            if name.startswith("__") or callable(value) or isinstance(
                    value, (staticmethod, classmethod, property, types.MemberDescriptorType,
                            types.GetSetDescriptorType)) or hasattr(type(value), "__get__"):
                continue
            items.append((name, self.take(value)))
        return ("class-state", tuple(items))


# --------------------------------------------------------------------------------------------- outcomes

@dataclass
class Outcome:
    """What one run showed. ``error`` (the raw exception) and ``traceback`` are for reports only."""
    result: object = None
    exception: object = None
    stdout: str = ""
    arguments: object = None
    globals: object = None
    error: BaseException = field(default=None, repr=False, compare=False)
    traceback: str = field(default="", repr=False, compare=False)
    native_frames: int = field(default=0, compare=False)  # native executions of the program's own code

    FIELDS = ("exception", "result", "stdout", "arguments", "globals")


def _is_iterator(value):
    return (isinstance(value, types.GeneratorType) or
            (hasattr(type(value), "__next__") and hasattr(type(value), "__iter__")
             and not isinstance(value, (str, bytes, dict, list, tuple, set, frozenset))))


@contextlib.contextmanager
def _counting_native_frames(code, outcome):
    """Counts, in ``outcome.native_frames``, the frames in which CPython itself runs ``code``: a VM must
    interpret the program, not hand it back to CPython."""
    def profile(frame, event, arg):
        if event == "call" and frame.f_code is code:
            outcome.native_frames += 1

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        yield
    finally:
        sys.setprofile(previous)


def execute(program, runner, interpreted=False):
    """Run ``program`` once through ``runner(fn, *args, **kwargs)`` on a fresh copy of its module. With
    ``interpreted``, also count the frames in which CPython ran the program's code itself."""
    module = load_module(program.module)
    fn = getattr(module, program.name)
    args, kwargs = getattr(fn, CALLS_ATTR)[program.case]
    outcome = Outcome()
    buffer = io.StringIO()
    result = drained = None
    watch = _counting_native_frames(fn.__code__, outcome) if interpreted else contextlib.nullcontext()
    with contextlib.redirect_stdout(buffer), watch:
        try:
            with _time_limit(TIME_LIMIT_S):
                result = runner(fn, *args, **kwargs)
                if _is_iterator(result):
                    drained = []
                    for item in result:  # drained inside the limit: a returned generator runs now
                        drained.append(item)
                        if len(drained) >= DRAIN_LIMIT:
                            break
                elif isinstance(result, types.CoroutineType):
                    result.close()
        except BaseException as error:  # noqa: BLE001 - every exception is an observable of the program
            if isinstance(error, (KeyboardInterrupt, SystemExit)) and not isinstance(error, ProgramTimeout):
                raise
            outcome.error = error
            outcome.traceback = "".join(traceback.format_exception(error))
    outcome.stdout = buffer.getvalue()
    snap = Snapshotter()
    outcome.result = ("drained", snap.take(drained)) if drained is not None else snap.take(result)
    outcome.exception = snap.take(outcome.error) if outcome.error is not None else None
    outcome.arguments = snap.take((args, kwargs))
    outcome.globals = snap.globals_of(module)
    return outcome


# --------------------------------------------------------------------------------------------- comparison

_EXCEPTION_FIELDS = ("<type>", "<message>", "__notes__", "__cause__", "__context__", "__suppress_context__",
                     "exceptions")
_SEQUENCES = ("list", "tuple", "set", "frozenset")


def _short(key):
    if isinstance(key, tuple) and len(key) == 2 and key[0] in ("str", "int", "bool", "NoneType"):
        return repr(key[1])
    return _show(key, 60)


def _parts(snapshot):
    """The parts of a snapshot, each with the path step a reader would write; None for a leaf."""
    if not (isinstance(snapshot, tuple) and snapshot and isinstance(snapshot[0], str)):
        return None
    tag = snapshot[0]
    if tag == "exception":
        return [(f".{name}", part) for name, part in zip(_EXCEPTION_FIELDS, snapshot[1:])]
    if tag == "object":
        return [(".<type>", snapshot[1]), (".<content>", snapshot[2])] + [(f".{k}", v) for k, v in snapshot[3]]
    if tag == "drained":
        return [(".<drained>", snapshot[1])]
    if len(snapshot) == 2 and isinstance(snapshot[1], tuple):
        if tag in _SEQUENCES:
            return [(f"[{i}]", part) for i, part in enumerate(snapshot[1])]
        if all(isinstance(pair, tuple) and len(pair) == 2 for pair in snapshot[1]):
            return [(f"[{_short(k)}]", v) for k, v in snapshot[1]]  # dicts and their subclasses
    return None


def first_difference(a, b, path="@"):
    """``(path, a_part, b_part)`` where two snapshots first differ, or None when equal. The path reads like
    the Python expression of the part (``@[2].attr.__context__``), ``@`` being the whole value."""
    if a == b:
        return None
    parts_a, parts_b = _parts(a), _parts(b)
    if parts_a is None or parts_b is None or a[0] != b[0]:
        return (path, a, b)
    for (step_a, x), (step_b, y) in zip(parts_a, parts_b):
        if step_a != step_b:
            return (path, a, b)
        found = first_difference(x, y, path + step_a)
        if found:
            return found
    return (f"{path} (length {len(parts_a)} vs {len(parts_b)})", a, b)


def _show(value, limit=1500):
    text = pprint.pformat(value, width=110, compact=True)
    return text if len(text) <= limit else text[:limit] + " ..."


def _describe_value(name, left, right):
    path, part_native, part_vm = first_difference(left, right)
    return [f"    first difference at {path}:",
            f"      native: {_show(part_native, 600)}",
            f"      vm:     {_show(part_vm, 600)}",
            f"    native {name}: {_show(left)}",
            f"    vm     {name}: {_show(right)}"]


def _describe_globals(left, right):
    left, right = dict(left), dict(right)
    lines = []
    for side, names in (("native", left.keys() - right.keys()), ("vm", right.keys() - left.keys())):
        if names:
            lines.append(f"    only in the {side} run: {sorted(names)}")
    for name in sorted(left.keys() & right.keys()):
        if left[name] != right[name]:
            path, part_native, part_vm = first_difference(left[name], right[name], name)
            lines.append(f"    {path}: native {_show(part_native, 300)} | vm {_show(part_vm, 300)}")
    return lines


def describe_differences(native, vm):
    """A readable report of how the VM's outcome differs from the native one ('' when it does not)."""
    lines = []
    if vm.native_frames:
        lines.append(f"--- the VM did not interpret the program: CPython ran its code in {vm.native_frames} frame(s)")
    for name in Outcome.FIELDS:
        left, right = getattr(native, name), getattr(vm, name)
        if left == right:
            continue
        lines.append(f"--- {name} differs")
        if name == "stdout":
            lines.append(f"    native: {left!r}")
            lines.append(f"    vm:     {right!r}")
        elif name == "globals":
            lines.extend(_describe_globals(left, right))
        else:
            lines.extend(_describe_value(name, left, right))
    if lines and vm.exception != native.exception:
        if native.traceback:
            lines.append("--- native exception: " + native.traceback.splitlines()[-1])
        if vm.traceback:
            lines.append("--- traceback of the VM side:")
            lines.extend("    " + line for line in vm.traceback.splitlines()[-40:])
    return "\n".join(lines)


def check(program, runner=None):
    """Run ``program`` natively and in the VM (or ``runner``); raise AssertionError describing every
    difference, and whether the VM let CPython run the program's own code. Returns the native outcome."""
    native = execute(program, native_runner)
    if runner is None:
        runner = vm_runner()
        vm = execute(program, runner, interpreted=runner is not native_runner)
    else:
        vm = execute(program, runner)
    report = describe_differences(native, vm)
    if report:
        raise AssertionError(f"{program.id}: the VM run differs from CPython\n{report}")
    return native
