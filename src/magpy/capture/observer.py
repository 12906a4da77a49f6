"""The capture observer: watches one call in the VM and produces a ``Capture``.

Provenance of each value (carried by the VM per slot):
    a Source / Expr   the value came from outside, by that path or pure computation over such paths
    None              a constant, or computed from constants and from tensors' static metadata
    UNKNOWN           capture lost track (an unknown native call on outside values): using such a
                      value where a guard is needed is unsupported
Tensors are tracked by identity: each outside tensor becomes a graph input (by its Source) and each
tensor operation a node. Consuming a derived Python value (a branch, a constant argument of a tensor
op, a returned value) adds the guard that makes the reuse safe. Writes to outside objects become
side effects replayed after the graph runs.

The rooms of capture are drawn in the package's docstring (``magpy.capture``).
"""
import functools
import operator
import os
import sys
import sysconfig
import types

import torch
import numpy as np

from . import predicates, rules
from ..errors import Unsupported
from ..interp import Observer, VM
from ..interp.lookaside import CALL_INSTEAD
from ..interp.tracebacks import in_users_terms
from .entry_state import aliasing_guard, autocast_state, global_state_guard, self_overlapping
from .graph_builder import _version
from .guards import IdGuard, NoneGuard, TruthGuard, TypeGuard, ValueGuard
from .places import Place
from .mutations import OutsideState
from .sources import ArgSource, AttrSource, Const, Expr, Source
from .values import (WeaklyHeld, Traced, UNKNOWN, _Abandon, _HEAPTYPE, _IDENTITY_TYPES, _MUTABLE_CONTAINERS, _NOT_WRITTEN, _SCALARS,
    _SILENT, _event, _fixed_by_construction, _held_state, _is_tensor, _library_global, _plain_data,
    _replayable_path, _same_array)
from .state import Capture, _Contents, _TensorNodes
from .iteration import _elements
from .lookasides import _register_bookkeeping
from .graph_builder import GraphBuilding
from .containers import Containers
from .lengths import Lengths
from .compiler_contract import CompilerContract, opaque_functions
from .reads import Reads
from .writes import Writes
from .exceptions import Raising
from .calls import Calls
from .lifetimes import Lifetimes
from .context_vars import ContextVars
from .locks import Locks
from .replays import Replays
from .conditions import Conditions
from .templates import Templates
from .breaks import Breaks, StopCapture
from .function_modes import FunctionModes
from .vmap import Vmaps
from . import higher_order  # noqa: F401 (its lookasides: torch's higher-order operators)


class CaptureObserver(GraphBuilding, Containers, Lengths, Reads, Writes, Lifetimes, Raising, Calls, CompilerContract,
                      Replays, ContextVars, Locks, Conditions, Templates, Breaks, FunctionModes, Vmaps,
                      Observer):
    """The observer of one capture: the event methods of its rooms, and what they share (failure, guards)."""

    def __init__(self, fn_globals):
        self.cap = Capture()
        self.nodes = _TensorNodes()  # id(tensor) -> (tensor, node), weakly
        self.contents = _Contents(self)  # id(container made inside) -> (container, element provs)
        self.written = {}         # (id(obj), name) -> prov of the value the program stored there
        # id(container) -> container whose items the call wrote by key (``d[k] = v``, an attribute of the
        # object whose ``__dict__`` it is): a read of all of it is no longer a read of its entry state
        self.items_written = WeaklyHeld()
        self.objects_written = WeaklyHeld()  # id(obj) -> outside obj whose items or attributes the call wrote
        self.class_attrs_written = set()  # names of attributes the call set on classes
        self.dict_owners = {}     # id(an object's __dict__ the call read) -> (that dict, the object)
        self.input_paths = {}     # id(graph input tensor) -> the path it was first read by
        # outside reads already guarded: (id(globals), name) -> (value, prov) and
        # (id(obj), name) -> (obj, value, obj_prov, prov)
        self.reads = {}
        self.grad_fns = {}        # id(grad_fn of a tensor the graph makes) -> (grad_fn, tensor, prov)
        self.made_arrays = {}     # id(numpy array a pure call made from outside values) -> (array, prov, copy)
        self.frame = None         # the innermost frame an event came from (for messages)
        self.root = None
        self.outside_state = OutsideState(self)  # outside containers the call changes (``mutations``)

    # ---- failure ---------------------------------------------------------------------------------
    def unsupported(self, reason, frame=None, split=True):
        """Give up on replaying this call. The program itself runs on to its real end (its first call
        must still happen exactly once); observation stops here. ``split=False``: a graph break here would
        not help either (calls like this one run eagerly)."""
        frame = frame or self.frame
        if self.cap.unsupported is None:
            # (named at the innermost line of the user's own files; the library's line below it as detail)
            user = _users_frame(frame)
            inner = f"{frame.filename}:{frame.lineno}" if user is not frame else None
            self.cap.unsupported = Unsupported(reason, user.filename if user else None,
                                               user.lineno if user else None, inner)
            # (the root frame's instruction running now: a later capture may stop before it)
            self.cap.failed_at = self.root.index if split and self.root is not None and self.splittable() else None
        self.stop_observing()
        raise _Abandon

    def stop_observing(self):
        """Capture gave up (``cap.unsupported`` says why): the program runs on unobserved."""
        self.vm.observer = _SILENT

    # ---- guards ------------------------------------------------------------------------------------
    UNKNOWN = UNKNOWN

    def guard_value(self, expr, value):
        self.guard(ValueGuard(expr, value))

    def element_provenance(self, value, prov):
        return _elements(self, value, prov)

    @staticmethod
    def replayable(prov):
        return _replayable_path(prov)

    def guard_aliasing(self):
        """Objects from outside the call that it changed: see ``OutsideState.guard_aliasing``."""
        changed = {key[0] for key in self.written if type(key) is tuple and type(key[1]) in (str, tuple)}
        changed |= self.contents.outside | set(self.contents.grown) | set(self.outside_state.constant_sets)
        self.outside_state.guard_aliasing(changed)

    def made_here(self, obj):
        """Did the call make this container (whatever path it is reached by now)?"""
        entry = self.contents.get(id(obj))
        if entry is not None and entry[0] is obj and id(obj) not in self.contents.outside:
            return True
        return self.made.get(id(obj)) is obj

    def guard(self, g):
        if not _fixed_by_construction(g.expr):
            self.cap.guards.setdefault(g.key(), g)

    def need(self, value, prov, frame=None):
        """The program depends on ``value`` exactly (a branch, a graph constant, a stored value)."""
        if prov is None:
            prov = self.effective(value, None)
        if prov is None or _is_tensor(value):
            return
        if prov is UNKNOWN:
            self.unsupported("a value computed by a call MagPy has no rule for decides the program's "
                             "behaviour", frame)
        if type(prov) is Traced:
            self.pin(prov, value, frame)
            return
        if value is None:
            self.guard(NoneGuard(prov, True))
        elif value is Ellipsis or value is NotImplemented:
            self.guard(IdGuard(prov, value))  # (singletons: ``...`` in an index)
        elif isinstance(value, _SCALARS) or type(value) in (range, slice) or _plain_data(value):
            self.guard(ValueGuard(prov, value))
        elif isinstance(value, rules.IDENTITY_CONSTANTS):
            self.guard(IdGuard(prov, value))
        elif isinstance(value, _IDENTITY_TYPES) or isinstance(value, torch.nn.Module):
            if not _library_global(prov) and not self._fresh_binding(value, prov):
                self.guard(IdGuard(prov, value))
        elif isinstance(value, (torch.dtype, torch.device, torch.memory_format, torch.layout)) or (
                type(value).__module__ == "numpy" and getattr(value, "shape", None) == ()):
            self.guard(ValueGuard(prov, value))  # (numpy scalars: same type, equal value)
        elif type(value) is np.ndarray:
            self.guard(TruthGuard(Expr(_same_array, (prov, Const(value.copy()))), True))
        elif type(value) is tuple and isinstance(prov, (Source, Expr)):
            # ``d.setdefault((self, "pa"), …)``: each element, by value or identity
            for v, p in zip(value, self._element_provs(value, prov)):
                if type(p) is not Const:
                    self.need(v, p, frame)
        else:
            self.unsupported(f"the program depends on the exact value of a {type(value).__name__} "
                             "read from outside", frame)

    def pin(self, prov, value, frame=None):
        """A number the graph computes (``t.item()``, a size that depends on data) must be this exact
        value for the program to go the way it went: a condition the guard checks by rerunning its
        computation (``predicates``)."""
        if type(value) not in (int, float, bool):
            self.unsupported("a Python value computed from tensor data decides the program's behaviour "
                             "(graph break)", frame)
        # (a number drawn at random — ``torch.randint(0, 4, ()).item()`` rotations — is checked after
        # the graph runs instead, as a branch on random data is)
        self.data_branch(self.cap.graph.call_function(operator.eq, (prov.node, value)), True, frame or self.frame,
                         splits=False, form=f"{{text}} uses a number from tensor data: {value!r}")

    def numpy_of(self, tensor):
        """``t.numpy()``: of a small tensor the guards can recompute (a mask kept in a module's state), a
        constant while the guard's rerun of ``t`` gives the same numbers; else an array the graph computes."""
        node = self.node_of(tensor)
        small = tensor.numel() <= rules.PINNED_DATA_LIMIT and not tensor.is_complex() and \
            (not tensor.is_floating_point() or bool(torch.isfinite(tensor).all()))
        needed = predicates.ancestry([node]) if small else None
        # only state (``self.mask``), not the call's data: a guard on data would miss on every call
        if needed is None or not all(_held_state(self.cap.inputs[int(n.name[2:])][0])
                                     for n in needed if n.op == "placeholder"):
            # the call's own data: an array the graph computes, as ``t.item()``'s number is. It may
            # feed torch (``pack_padded_sequence(x, lengths.numpy())``) or pure numpy (computed in the
            # graph too); Python deciding anything from it, or writing into it, is a graph break
            self.cap.data_values = True
            return self.host_value(self.cap.graph.call_method("numpy", (node,)))
        values = tuple(tensor.detach().flatten().tolist())
        self.conditions.append((self.cap.graph.call_function(predicates.equals_values, (node, values)), True,
                                None, Place.of_frame(self.frame, "{text} gives the values it gave when captured")))
        return None

    def on_read(self, value, prov):
        """A value read from outside by path ``prov``: tensors become graph inputs; functions, classes,
        modules and nn.Modules are guarded by identity. Other objects get a type guard only when the
        program reads through them (``deref``); plain values only where the program depends on them."""
        if prov is None or prov is UNKNOWN:
            return
        if not isinstance(value, _SCALARS) and isinstance(prov, Source):
            self.sources_of.setdefault(id(value), (value, prov))
            if isinstance(value, _MUTABLE_CONTAINERS) or (type(value).__flags__ & _HEAPTYPE and not isinstance(
                    value, (torch.Tensor, torch.nn.Module, types.FunctionType, types.MethodType, type))):
                self.outside_state.saw(value, prov)  # (its paths; a container's state on entry)
        if _is_tensor(value):
            self.tensor_input(value, prov)
        elif isinstance(value, (_IDENTITY_TYPES, torch.nn.Module, functools.partial)) or \
                hasattr(type(value), "__vm_call_instead__") or type(value) in CALL_INSTEAD:
            # (a partial's stored arguments are then its first call's: it is immutable in practice)
            if not _library_global(prov) and not self._fresh_binding(value, prov):
                self.guard(IdGuard(prov, value))
        elif type(value) is types.MethodType and isinstance(prov, Source):
            # a method read by attribute: the same function (an instance attribute may replace it)
            self.guard(IdGuard(AttrSource(prov, "__func__"), value.__func__))

    def _fresh_binding(self, value, prov):
        """``obj.method`` of a native method: a new bound object on every read, fixed by ``obj``'s type
        guard (``deref``) rather than by identity."""
        if type(value) is not types.BuiltinMethodType:
            return False
        if type(prov) is Expr and (prov.fn is getattr or prov.fn is object.__getattribute__) and \
                not isinstance(value.__self__, types.ModuleType):
            # ``m.group`` of a value an expression recomputes (``PATTERN.search(s)``): its type decides
            self.guard(TypeGuard(prov.args[0], type(value.__self__)))
            return True
        if type(prov) is not AttrSource:
            return False
        known = self.sources_of.get(id(value.__self__))
        return known is not None and known[0] is value.__self__ and known[1] == prov.base \
            and not isinstance(value.__self__, types.ModuleType)

    def deref(self, obj, prov):
        """The program reads an attribute or item of ``obj``: its type decides how that read behaves."""
        if isinstance(prov, Source) and not isinstance(obj, (_IDENTITY_TYPES, torch.nn.Module)) \
                and not _is_tensor(obj) and type(obj) is not types.MethodType \
                and not (type(prov) is AttrSource and prov.name == "__dict__" and type(obj) is dict):
            self.guard(TypeGuard(prov, type(obj)))  # (an object's __dict__ is always a dict)

    # ---- frames ----------------------------------------------------------------------------------------
    @_event(None)
    def enter_frame(self, frame):
        if self.root is None:
            self.root = frame
        self.frame = frame

    @_event(None)
    def leave_frame(self, frame, value, exc):
        self.frame = frame.back
        for v in frame.locals if frame.decoded.code.co_cellvars else ():
            if type(v) is types.CellType and self.cells.get(id(v), (None,))[0] is v and sys.getrefcount(v) <= 4:
                # held by this frame, the table and this loop only: no closure outlives the frame with
                # it, so the table must not keep what it holds alive (``_call_impl``'s ``args``)
                del self.cells[id(v)]

    @_event(None)
    def argument(self, frame, index, name, value):
        prov = ArgSource(name, index)
        self.on_read(value, prov)
        return prov

    def follow_generator(self, generator):
        """Start following what a generator the VM runs yields (its steps' values, with provenance);
        False for a generator of native code."""
        driver = generator.gi_frame.f_locals.get("frame") if generator.gi_frame is not None else None
        if driver is None or getattr(driver, "vm", None) is not self.vm:
            return False
        yielded, values = [], []
        self.generator_yields[id(driver)] = (yielded, values)
        self.contents[id(generator)] = (generator, yielded)
        self.yielded_values[id(generator)] = values
        return True

    @_event(None)
    def yielded(self, frame, value, prov):
        out = self.generator_yields.get(id(frame))
        if out is not None:
            out[0].append(prov)
            out[1].append(value)

    @_event(None)
    def return_value(self, frame, value, prov):
        if frame is self.root:
            self.cap.result_template = self.template(value, prov)

def capture(fn, args, kwargs, make_observer=None, dynamic_numbers=frozenset(), stop_at=None, dynamic_dims=None):
    """Run ``fn(*args, **kwargs)`` in the VM under observation (by a ``CaptureObserver``, or by the one
    ``make_observer(fn_globals)`` makes of a class derived from it: ``magpy.trace``'s).
    ``dynamic_numbers``: the paths of Python numbers the graph takes as inputs where they are operands of
    tensor ops (rather than guarding their values), or True for every number read from outside.
    ``dynamic_dims``: {path of an input tensor: dims whose sizes are symbolic} (any size >= 2 passes the
    guard; the graph reads them), or True for every dim of the arguments' tensors.
    ``stop_at``: indices of root-frame instructions capture stops before, when it reaches one (a graph
    break: ``capture.stopped`` then holds the live values, and the result is ``STOPPED``); it also stops
    before a root-frame instruction known to break before it runs (a ``print`` of tensors). None: the
    call is not to be split (``fullgraph``, ``explain``'s first look, tracing).

    Returns ``(result, exception, capture)``: exactly one of result/exception is meaningful, and
    ``capture.unsupported`` says why the call cannot be replayed (None when it can).
    """
    _register_bookkeeping()
    obs = (make_observer or CaptureObserver)(getattr(fn, "__globals__", {}))
    obs.iterators = {}
    obs.zips = {}             # id(zip over a generator the VM runs) -> (zip, its steps: see ``zip_steps``)
    obs.iterables = {}
    obs.cells = {}
    obs.templates = {}
    obs.sources_of = {}
    obs.made = WeaklyHeld()
    obs.attribute_tables = {}  # id(the __dict__ of an object the call made) -> (that dict, the object)
    obs.generator_yields = {}
    obs.yielded_values = {}
    obs.consumed = {}         # id(run iterator) -> (iterator, how many of its items were taken so far)
    obs.pending_objects = []
    obs.conditions = []
    obs.made_classes = {}
    obs.grad_mode = _NOT_WRITTEN  # the provenance of the grad mode the program set, once it does
    obs.torch_function_off = 0  # how deep in ``DisableTorchFunctionSubclass`` blocks the program is
    obs.entry_grad_mode = obs.cap.entry_grad_mode = torch.is_grad_enabled()
    obs.entry_autocast = autocast_state()  # (the graph may change it inside, as long as it puts it back)
    obs.context_values = {}   # id(ContextVar) -> (var, provenance of the value the call set)
    obs.context_tokens = {}   # id(Token) -> (token, var, what the var held for the call before that set)
    obs.locks_held = {}       # id(native lock) -> (lock, how many times the call holds it now)
    obs.set_changes = {}
    obs.scalar_inputs = {}
    obs.dynamic_numbers = dynamic_numbers
    obs.dynamic_dims = dynamic_dims or {}
    obs.stop_at = stop_at
    obs.snapshot = False
    obs.sets = {}
    obs.raises = {}
    obs.call_fn_prov = None
    obs.bound_from = {}       # id(bound builtin method) -> (method, provenance of the object it is bound to)
    obs.raising = None
    obs.checks = []           # (node, truth, places.Place) of branches on random data
    obs.dynamic = {}          # graph node whose shape depends on tensor data -> those dims
    obs.input_versions = {}  # id(tensor) -> its version when it became a graph input
    obs.input_shapes = {}    # id(tensor) -> its shape when it became a graph input
    obs.computed_inputs = {}  # Expr -> the placeholder of the tensor the entry computes with it
    obs.scalar_nodes = set()  # graph nodes computing Python numbers (``t.item()``, a dynamic size)
    # (read now, the state the call enters with; a fact of the entry, not a read of the program's: no event)
    state_guard = global_state_guard()
    obs.cap.guards[state_guard.key()] = state_guard
    vm = VM(observer=obs)
    vm.opaque = opaque_functions()
    obs.vm = vm
    try:
        result = vm.call(fn, *args, **kwargs)
    except StopCapture:
        result = STOPPED
    except BaseException as exc:  # noqa: BLE001 - the user's exception, re-raised by the caller
        in_users_terms(exc)  # (its traceback: the user's frames it left, not the VM's)
        if obs.cap.unsupported is None:
            obs.cap.unsupported = Unsupported(f"the call raised {type(exc).__name__}: {exc}")
        vm.observer = vm.returned = None  # (see below)
        cap = obs.cap
        # (the frames its user traceback is made in hold this one: neither holds the observer nor the VM,
        # which would keep the call's objects alive as long as the program keeps the exception)
        obs = vm = None
        return None, exc, cap
    for step in (obs.finish_function_modes, obs.finish_objects, obs.finish_context_vars, obs.finish_grad_mode,
                 obs.finish_autocast, obs.finish_locks, obs.guard_conditions, obs.guard_aliasing):
        try:
            step()
        except _Abandon:
            pass
        except Exception as exc:  # noqa: BLE001 - a bug of ours must not become the user's error
            obs.cap.unsupported = obs.cap.unsupported or Unsupported(
                f"internal capture error in {step.__name__}: {type(exc).__name__}: {exc}")
    _drop_implied(obs.cap.guards)
    inputs = [(source, value) for source, value in obs.cap.inputs if _is_tensor(value)]
    in_place = {node.name for node in predicates.written_placeholders(obs.cap.graph)}
    placeholders = [node.name for node in obs.cap.graph.nodes if node.op == "placeholder"]
    obs.cap.written = tuple(k for k, ((_, t), name) in enumerate(zip(obs.cap.inputs, placeholders))
                            if _is_tensor(t) and (_version(t) != obs.input_versions.get(id(t)) or name in in_place))
    written_tensors = {id(obs.cap.inputs[k][1]) for k in obs.cap.written}
    written = tuple(k for k, (_, t) in enumerate(inputs) if id(t) in written_tensors)
    if any(self_overlapping(inputs[k][1]) for k in written) and obs.cap.unsupported is None:
        # (eager writes such a view element by element; a graph's write back of its result cannot)
        obs.cap.unsupported = Unsupported("an input tensor whose elements share memory (an expanded view) is "
                                          "written in place (runs eagerly)")
    aliasing = aliasing_guard(tuple(source for source, _ in inputs), [t for _, t in inputs], written)
    if aliasing is not None:
        obs.guard(aliasing)
    # (no cycle left: what the observer holds of the call's objects dies with it, when eager's would)
    vm.observer = vm.returned = None
    return result, None, obs.cap


#: where installed libraries and Python's own modules live (torch's among them): not the user's files
_LIBRARY_DIRS = tuple({os.path.join(path, "") for key in ("stdlib", "platstdlib", "purelib", "platlib")
                       if (path := sysconfig.get_paths().get(key))} |
                      {os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "")})


def _users_frame(frame):
    """The innermost interpreted frame (from ``frame`` out) running a file of the user's, else ``frame``."""
    found = frame
    while found is not None and found.filename.startswith(_LIBRARY_DIRS):
        found = found.back
    return found if found is not None else frame


class _Stopped:
    def __repr__(self):
        return "STOPPED"


STOPPED = _Stopped()  # what ``capture`` returns for a call it stopped at a graph break


def _drop_implied(guards):
    """Drop guards on pure expressions whose every path is already pinned to one exact value (``p < 0.0``
    after ``p == 0.0``): they cannot fail when the others pass."""
    # (an identity guard does not pin a value: ``hasattr(self, 'n')`` changes while ``self`` stays)
    pinned = {g.expr for g in guards.values() if type(g) is ValueGuard or
              (type(g) is NoneGuard and g.is_none)}

    def fixed(e):
        if type(e) is Const:
            return True
        if type(e) is Expr:
            return all(fixed(a) for a in e.args)
        return e in pinned

    for key, g in list(guards.items()):
        if type(g.expr) is Expr and type(g) in (ValueGuard, TruthGuard, NoneGuard) and \
                all(fixed(a) for a in g.expr.args) and g.expr.args:
            del guards[key]

