"""The rules table: what capture does with each callable and opcode class. Rules are data.

A native (not interpreted) call made by the program is classified here:

* ``PURE``      — the result depends only on the arguments: its provenance is the call itself, so a
                  later guard can re-evaluate it (``len(xs)``, ``isinstance(m, nn.Linear)``).
* ``MUTATES``   — mutates its first argument (a container method): replayed when the container is
                  outside state, tracked when it was made inside the call.
* ``GRAPH``     — a torch call with global effect and no tensor arguments: recorded into the graph.
* ``RANDOM``    — draws random numbers: recorded into the graph so each replay draws again.
* anything else with tensors among its arguments or results is a graph op; anything else at all is
  unknown: its result may be used only where no guard is needed.

Tables of callables are keyed by identity (``IdentitySet``): the program may hand any callable to a
lookup, and a user's own ``__hash__``/``__eq__`` must not run there.
"""
import builtins
import collections
import contextvars
import enum
import functools
import math
import operator
import re

import numpy as np
import torch

from ..interp.identity import IdentitySet
from ..markers import graph_break as GRAPH_BREAK  # noqa: F401  (a call of it is a graph break)

#: why a call of ``magpy.graph_break()`` / a ``print`` of tensors is a graph break
MARKER_BREAK = "magpy.graph_break() (graph break)"
PRINT_BREAK = "print() of a tensor (graph break)"
#: calls known to be graph breaks before they run: callable -> (why, only when an argument holds a tensor)
KNOWN_BREAKS = {GRAPH_BREAK: (MARKER_BREAK, False), print: (PRINT_BREAK, True)}

#: compiled TorchScript runs in torch's own interpreter, where MagPy cannot follow it (and where it may
#: change its module's attributes): a call of it is a graph break. (A ``ScriptFunction`` with a Python
#: original runs as that function instead: ``lookasides``.) The types' ``__call__`` are pybind11
#: ``instancemethod``s, which the VM may call with the method as first argument.
TORCHSCRIPT_TYPES = (torch._C.ScriptMethod, torch._C.ScriptFunction)
TORCHSCRIPT_CALLS = IdentitySet(vars(t)["__call__"] for t in TORCHSCRIPT_TYPES if "__call__" in vars(t))


def torchscript_callee(fn, args):
    """The TorchScript method or function a native call of ``fn`` runs, or None."""
    if isinstance(fn, TORCHSCRIPT_TYPES):
        return fn
    if fn in TORCHSCRIPT_CALLS and args and isinstance(args[0], TORCHSCRIPT_TYPES):
        return args[0]
    if isinstance(getattr(fn, "__self__", None), torch._C.ScriptModule):
        return fn  # (a traced module's ``_c.hasattr``, ``_c._get_method`` …: its compiled side)
    return None


#: torch's profiler annotations (the operators of its ``profiler`` namespace: ``record_function``'s enter and
#: exit, which mark a span of the profile): no effect on any value. They run natively while capturing and
#: stay out of the graph (a compiled call is not annotated), never a graph break.
PROFILER_OP_MODULES = ("torch._ops.profiler",)


def is_profiler_annotation(fn) -> bool:
    """Is ``fn`` an operator of torch's profiler namespace (its packet, overload, or the native function
    a packet calls)?"""
    module = getattr(fn, "__module__", None)
    return type(module) is str and module in PROFILER_OP_MODULES


#: context managers that only switch off ``__torch_function__`` of tensor subclasses (the profiler's exit runs
#: in one): for plain tensors nothing changes; a graph op on a subclass with its own ``__torch_function__``
#: inside one is refused (a replay would dispatch to it)
TORCH_FUNCTION_SWITCHES = (torch._C.DisableTorchFunctionSubclass, torch._C.DisableTorchFunction)


def overrides_torch_function(value) -> bool:
    """Is ``value`` a tensor of a subclass with its own ``__torch_function__``?"""
    tp = type(value)
    return issubclass(tp, torch.Tensor) and tp is not torch.Tensor and \
        getattr(tp, "__torch_function__", None) is not getattr(torch.Tensor, "__torch_function__")


#: questions whose answer is a fact of capturing, the same in every call the entry runs
#: (``torch.compiler.is_compiling()``: True, as the library contract says of compiled code)
WHILE_COMPILING = IdentitySet([torch.compiler.is_compiling])

#: why a call of a ``torch.compiler.disable``d function is a graph break: it runs natively, as under
#: torch.compile (the library contract: such code is never traced)
DISABLED_BREAK = "a function torch.compiler.disable()d (runs natively: graph break)"
DISABLED_EAGER = "a function torch.compiler.disable()d (runs eagerly)"


#: (name, module prefix) of torch's own functions Dynamo disables for itself once it runs (its TorchPatcher
#: wraps every optimizer's ``_init_group``: Dynamo traces optimizers its own way). Not a library's word to
#: compilers: followed as the original, as before Dynamo ran.
DYNAMO_OWN_DISABLES = (("_init_group", "torch.optim"),)


def disabled(fn) -> bool:
    """Is ``fn`` (a function or bound method) marked by ``torch.compiler.disable`` (not by Dynamo for
    itself)?"""
    try:
        f = getattr(fn, "__func__", fn)
        if getattr(f, "_torchdynamo_disable", False) is not True:
            return False
        original = getattr(f, "_torchdynamo_orig_callable", None)
        original = getattr(original, "__func__", original)
        name, module = getattr(original, "__name__", None), getattr(original, "__module__", None) or ""
        return not any(name == n and module.startswith(m) for n, m in DYNAMO_OWN_DISABLES)
    except Exception:  # noqa: BLE001 - an object whose attribute lookup runs code: not marked
        return False


#: modules whose call is torch's distributed bookkeeping around the work of a module underneath, as torch
#: asks compilers to treat them: the bookkeeping runs natively (DDP's forward drives its C++ Reducer inside
#: ``_inside_ddp_forward``, which torch keeps its own compiler out of; FSDP2's hooks all-gather and free
#: parameters, ``_dynamo_disable``d) and the work is compiled. Class (qualified name, matched along the MRO:
#: torch.distributed need not be importable) -> the attribute holding the module whose calls are the work;
#: None where the work is the module's own ``forward`` (its bookkeeping is in its hooks).
DISTRIBUTED_WRAPPERS = {
    "torch.nn.parallel.distributed.DistributedDataParallel": "module",
    "torch.distributed.fsdp.FSDPModule": None,
    "torch.distributed._composable.fsdp.fully_shard.FSDPModule": None,  # (its home before torch 2.6)
    "torch.distributed._composable.fsdp.FSDPModule": None,
}
#: what each of them is, in the user's terms (reasons, ``explain``)
DISTRIBUTED_SAYS = {
    "DistributedDataParallel": "DistributedDataParallel's bookkeeping (its gradient Reducer) runs natively and "
                               "its module ({inner}) is compiled",
    "FSDPModule": "FSDP's hooks (all-gathering and freeing {cls}'s parameters) run natively and its forward "
                  "is compiled",
}

_WRAPPER_KINDS = {}  # class -> (name of the row that matched, the inner attribute) or None


def distributed_wrapper(obj):
    """(which wrapper: "DistributedDataParallel" or "FSDPModule", the attribute holding the inner module or
    None) when ``obj`` is a module whose call is torch's distributed bookkeeping; else None."""
    if not isinstance(obj, torch.nn.Module):
        return None
    cls = type(obj)
    try:
        return _WRAPPER_KINDS[cls]
    except KeyError:
        pass
    found = None
    for base in cls.__mro__:
        name = f"{base.__module__}.{base.__qualname__}"
        if name in DISTRIBUTED_WRAPPERS:
            found = (base.__qualname__, DISTRIBUTED_WRAPPERS[name])
            break
    _WRAPPER_KINDS[cls] = found
    return found


def distributed_says(obj) -> str:
    """What running ``obj`` (a distributed wrapper) natively with its work compiled is, in the user's terms."""
    kind, inner = distributed_wrapper(obj)
    inner_module = getattr(obj, inner, None) if inner is not None else None
    return DISTRIBUTED_SAYS[kind].format(inner=type(inner_module).__qualname__, cls=type(obj).__qualname__)


#: reads of state the arguments do not hold (the current context's value of a ``ContextVar``, as torch's
#: config modules keep their overrides): the result is re-read by the guard even when every argument
#: is a constant
STATE_READS = IdentitySet([contextvars.ContextVar.get,
                           torch._C._len_torch_function_stack,    # (how many TorchFunctionModes are on)
                           torch._C._len_torch_dispatch_stack])   # (how many TorchDispatchModes are on)
PURE = IdentitySet([
    *STATE_READS,
    len, isinstance, issubclass, type, abs, min, max, sum, round, divmod, pow, hash, repr, str, int,
    float, bool, tuple, frozenset, range, slice, sorted, any, all, zip, enumerate, reversed, getattr,
    hasattr, callable, id, chr, ord, format, list, dict, set, iter, next, object.__getattribute__,
    object.__new__, object.__init__, type.__call__, super, vars, dir,
    math.sqrt, math.exp, math.log, math.log2, math.log10, math.pow, math.floor, math.ceil, math.sin,
    math.cos, math.tan, math.tanh, math.prod, math.isclose, math.isfinite,
    math.isinf, math.isnan, math.gcd, math.fabs, math.trunc,
    operator.getitem, operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
    operator.mod, operator.neg, operator.pos, operator.not_, operator.eq, operator.ne, operator.lt,
    operator.le, operator.gt, operator.ge, operator.contains, operator.index,
    torch.is_tensor, torch.is_floating_point, torch.get_default_dtype, torch.is_grad_enabled,
    torch.jit.is_scripting, torch.jit.is_tracing, torch._C._get_tracing_state,
    torch.overrides.has_torch_function, torch.overrides.has_torch_function_unary,
    torch.overrides.has_torch_function_variadic, torch._C._has_torch_function,
    torch._C._has_torch_function_unary, torch._C._has_torch_function_variadic,
    torch._C._is_torch_function_mode_enabled, torch.cuda.is_available, torch.finfo, torch.iinfo,
    torch.Size, torch.device, torch.dtype, functools.partial,
    torch._C._nn._parse_to,  # (``Module.to``'s reading of its arguments: device, dtype, non_blocking, format)
    torch._C._infer_size,    # (the broadcast of two sizes: ``torch.broadcast_shapes`` in some versions)
])
#: memoizing wrappers (``functools.lru_cache``/``cache``): a call with arguments seen before returns the
#: remembered result and runs nothing (``is_torch_available()``, ``logger.warning_once(msg)``)
MEMOIZED = (functools._lru_cache_wrapper,)
#: methods of immutable built-in types are pure too (str.upper, tuple.index …)
PURE_METHOD_TYPES = (str, bytes, int, float, complex, tuple, frozenset, type(None), bool, range,
                     torch.Size, torch.dtype, torch.device, re.Pattern, re.Match)

#: container methods that mutate their first argument
MUTATES = IdentitySet([
    list.append, list.extend, list.insert, list.pop, list.remove, list.clear, list.sort,
    list.reverse, list.__setitem__, list.__delitem__, list.__iadd__,
    dict.update, dict.pop, dict.popitem, dict.setdefault, dict.clear, dict.__setitem__,
    dict.__delitem__, set.add, set.discard, set.remove, set.pop, set.clear, set.update,
    collections.OrderedDict.move_to_end, collections.OrderedDict.popitem,
])

#: the autocast state's setters (what ``torch.autocast``'s enter and exit call, and what a program may call
#: itself): they change how every later op of the region computes, so they are ops of the graph, in
#: program order (a backend tracing the graph sees the region as eager ran it)
AUTOCAST_STATE = [getattr(torch, name) for name in (
    "set_autocast_enabled", "set_autocast_dtype", "set_autocast_cache_enabled", "autocast_increment_nesting",
    "autocast_decrement_nesting", "clear_autocast_cache", "set_autocast_cpu_enabled", "set_autocast_cpu_dtype",
    "set_autocast_gpu_dtype") if hasattr(torch, name)]

#: torch calls with no tensor arguments that still belong in the graph
GRAPH = IdentitySet([torch._C._set_grad_enabled, *AUTOCAST_STATE])

#: torch's error for operands whose shapes do not broadcast, and the instructions it may come from: the
#: shapes decide it (a program may catch it when they are all fixed by the guards)
SHAPE_ERROR = re.compile(r"The size of tensor a \(\d+\) must match the size of tensor b \(\d+\) at "
                         r"non-singleton dimension \d+")
SHAPE_ERROR_OPS = {"BINARY_OP"}

#: keywords of ``torch.utils.checkpoint.checkpoint`` that are its own (the rest go to the function)
CHECKPOINT_OPTIONS = {"use_reentrant", "context_fn", "determinism_check", "debug", "preserve_rng_state",
                      "early_stop"}

#: numpy calls making an array whose contents are whatever memory held (only its dtype and shape are
#: the program's)
UNDEFINED_CONTENTS = IdentitySet([np.empty, np.empty_like])

RANDOM_MODULES = ("random",)
#: numpy's global generator (``np.random.choice`` … are its bound methods) and the methods that only draw
#: from it: re-drawn by the entry program as Python's draws are
NUMPY_RANDOM = np.random.mtrand._rand
NUMPY_DRAWS = {"rand", "randn", "randint", "random_integers", "random_sample", "random", "ranf", "sample",
               "choice", "permutation", "uniform", "normal", "standard_normal", "beta", "binomial",
               "poisson", "exponential", "gamma", "laplace", "logistic", "lognormal", "multinomial",
               "dirichlet", "geometric", "gumbel", "pareto", "power", "rayleigh", "triangular",
               "vonmises", "wald", "weibull", "zipf", "chisquare", "standard_cauchy",
               "standard_exponential", "standard_gamma", "standard_t"}
#: the native primitives of Python's global random generator that the entry program re-draws (its
#: Python-level methods — uniform, randint, choice … — are interpreted down to these)
RANDOM_DRAWS = {"random", "getrandbits"}

import warnings as _warnings

#: native calls whose effect the mock replays (their arguments rebuilt like results);
#: ``_filters_mutated`` tells the warnings machinery its filters changed (``catch_warnings``,
#: ``simplefilter``): each call's change invalidates the registries of warnings already shown
REPLAY = IdentitySet([_warnings.warn, print, *(f for f in (getattr(_warnings, "_filters_mutated", None),)
                                                if f is not None)])

#: objects the call makes that a replay may hand out again: each holds only what the guards fix
#: (a module's backward hook wraps the hook function and a weak reference to the module), and
#: nothing reads its identity
REUSED_OBJECTS = {torch.nn.modules.module._WrappedHook}

#: calls on the autograd node of a tensor the graph makes that are replayed on the node each run makes
GRAD_FN_HOOKS = {"register_hook", "register_prehook"}
#: what of such a node the graph fixes: its kind, and which nodes it leads to (compared by identity
#: in torch's checks of old-style module backward hooks)
GRAD_FN_FIXED = {"name", "__class__", "next_functions"}

#: ndarray methods that change the array (or other state) in place
NUMPY_MUTATING = {"fill", "sort", "partition", "put", "resize", "itemset", "setfield", "setflags", "byteswap",
                  "dump", "tofile", "__setitem__", "__delitem__", "__setstate__"}
#: modules whose native functions only compute (on Python values)
PURE_MODULES = ("math", "cmath", "operator", "_operator", "itertools", "numpy", "string", "re",
                "inspect", "typing", "dataclasses", "collections", "keyword")
#: container methods that only read
PURE_CONTAINER_TYPES = (dict, list, set, frozenset, tuple, str, bytes)


def is_pure(fn):
    """May a native call of ``fn`` be re-run (or skipped) freely: no effect beyond its result?"""
    if fn in PURE:
        return True
    if type(getattr(fn, "__func__", fn)) in MEMOIZED:
        return True  # (by its contract a memoized call depends only on its arguments; repeating it is a hit)
    self_obj = getattr(fn, "__self__", None)
    if self_obj is not None and isinstance(self_obj, PURE_METHOD_TYPES):
        return True
    owner = getattr(fn, "__objclass__", None)
    if owner is None and type(self_obj).__module__ == "numpy" and type(fn).__name__ == "builtin_function_or_method":
        owner = type(self_obj)  # ``a.transpose`` bound to an array: as ``ndarray.transpose``
    if isinstance(owner, type) and owner.__module__ == "numpy":
        name = getattr(fn, "__name__", "")  # ndarray methods read, except these
        return name not in NUMPY_MUTATING and not (name.startswith("__i") and name != "__init__")
    if isinstance(owner, type) and issubclass(owner, PURE_CONTAINER_TYPES + PURE_METHOD_TYPES):
        return fn not in MUTATES and getattr(fn, "__name__", "") not in MUTATING_NAMES
    if self_obj is not None and isinstance(self_obj, PURE_CONTAINER_TYPES):
        name = getattr(fn, "__name__", "")
        return getattr(type(self_obj), name, None) not in MUTATES and name not in MUTATING_NAMES
    if isinstance(fn, type) and fn.__module__ == "builtins":
        return True  # constructors of built-in values
    module = getattr(fn, "__module__", None) or ""
    if module.startswith("numpy.random"):
        return False
    if type(fn).__name__ == "builtin_function_or_method" and "pybind11" in type(getattr(fn, "__self__", None)).__name__:
        module = "torch._C"  # a pybind11 function of torch's C++ core (its __module__ is not set)
    if module == "torch" or module.startswith("torch."):
        # torch's own queries of its global configuration (``_get_cudnn_enabled``, ``is_grad_enabled``)
        name = getattr(fn, "__name__", "")
        return name.startswith(("_get", "get_", "is_", "_is", "_has", "has_", "_are_")) or name in TORCH_NOOPS
    return module.split(".")[0] in PURE_MODULES

#: builtins that compute on tensors through their operators (recorded into the graph as they are)
_NOT_ON_TENSORS = ("truth", "not_", "is_", "is_not", "contains", "countOf", "indexOf", "length_hint",
                   "attrgetter", "itemgetter", "methodcaller", "index", "call")
TENSOR_BUILTINS = IdentitySet([sum, abs, pow, divmod, *(v for k, v in vars(operator).items() if callable(v)
                                                     and not k.startswith("_") and k not in _NOT_ON_TENSORS)])

#: builtins that may see tensors without computing on them: handled by the provenance rules
TENSOR_NEUTRAL = IdentitySet([len, isinstance, issubclass, type, id, enumerate, zip, reversed, iter, next,
                              getattr, hasattr, setattr, callable, hash, dict, set, frozenset, map, filter])

#: name prefixes of torch predicates over tensors' types (``has_torch_function``, ``is_tensor`` …)
TENSOR_TYPE_PREDICATES = ("is_", "_is", "_has", "has_")
#: ... except these, which read tensor data or storage
TENSOR_DATA_PREDICATES = {"is_nonzero", "is_set_to", "_is_all_true", "_is_any_true"}


def is_type_predicate(fn):
    name = getattr(fn, "__name__", "")
    return name.startswith(TENSOR_TYPE_PREDICATES) and name not in TENSOR_DATA_PREDICATES

#: attributes whose assignment changes what a tensor is (its data, autograd state): not replayed
TENSOR_STATE_ATTRS = {"data", "requires_grad", "grad_fn", "shape", "dtype", "device", "layout"}

#: the most elements a tensor turned into a numpy array may have: the guard compares them all
PINNED_DATA_LIMIT = 4096

#: the longest outside list whose slice is followed element by element (``filters[:]``)
COPIED_ELEMENTS_LIMIT = 256

#: Python-level attributes of a tensor that are tensors computed from it (views), not outside state
TENSOR_VIEW_ATTRS = {"T", "mT", "H", "mH", "real", "imag", "data"}

#: tensor methods converting to a dtype or device, which return the tensor itself when it already is one
#: (a read of it then): not ``contiguous`` (that depends on strides, which are not always guarded)
TENSOR_CONVERSIONS = {"to", "type", "type_as", "float", "double", "half", "bfloat16", "int", "long", "short",
                      "bool", "byte", "char", "cpu", "cuda"}

#: builtins giving a value's text or identity: of a tensor, neither is fixed by its guards (new values, a new
#: object on every call), so the graph formats the text again, and an identity is re-read by path or unknown
TEXT_OF_VALUES = IdentitySet([str, repr, format, ascii])
IDENTITY_OF_VALUES = IdentitySet([id, hash])

#: native reads of a container that see only its own level (by key, its length, its type): state the call
#: wrote inside its elements does not change what they answer
SHALLOW_READS = IdentitySet([len, isinstance, issubclass, type, id, hash, callable, hasattr, getattr, iter, next,
                             operator.getitem, operator.contains, dict.get, dict.__getitem__, dict.__contains__,
                             dict.keys, dict.__len__, list.__getitem__, list.__len__, tuple.__getitem__,
                             tuple.__len__, list.index, tuple.index, list.count, tuple.count])

#: tensor methods that change the autograd state of the very tensor object they are called on: a compiling
#: backend's graph makes new output tensors, so the mock calls them again on the tensors the graph returned
TENSOR_AUTOGRAD_MARKS = {"retain_grad"}

#: tensor ops whose success depends on the values in their tensor operands (an index past the end, a class
#: target past the classes, an integer divisor 0, a matrix that is not positive definite): a graph holding
#: one may raise partway, after it wrote inputs or drew random numbers; its entry then undoes those and
#: runs the call eagerly, so that eager's effects and exception come out. On a GPU eager asserts on the
#: device for the index kinds (nothing to undo: the process cannot go on); only ``RAISES_ANYWHERE`` raise.
RAISES_ON_DATA_WORDS = ("index", "gather", "scatter", "take", "embedding", "one_hot", "nll_loss",
                        "cross_entropy", "margin_loss", "ctc_loss", "bincount", "multinomial", "unpool",
                        "repeat_interleave", "masked_scatter", "assert", "bernoulli", "poisson", "binomial")
RAISES_ON_DATA = {"put", "put_", "normal", "normal_", "binary_cross_entropy"}
#: ... only with an integer tensor among the indices
RAISES_WITH_INDICES = {"getitem", "__getitem__", "setitem", "__setitem__"}
#: ... only where the result is an integer tensor (float division by 0 is inf, as eager's)
RAISES_ON_INTEGERS = {"div", "div_", "divide", "divide_", "floor_divide", "floor_divide_", "remainder",
                      "remainder_", "fmod", "fmod_", "floordiv", "mod", "ifloordiv", "imod", "__floordiv__",
                      "__rfloordiv__", "__mod__", "__rmod__", "__ifloordiv__", "__imod__", "pow", "pow_",
                      "__pow__", "__rpow__", "ipow", "__ipow__"}
#: ... on every device: linear algebra (its errors are checked on the host), the program's own autograd
#: Functions (any code), and everything of ``torch.linalg``
RAISES_ANYWHERE_WORDS = ("cholesky", "inverse", "solve", "lstsq", "apply")
RAISES_ANYWHERE_MODULES = ("torch.linalg", "torch._C._linalg")

#: a tensor's text (its values printed): a Python value of unknown origin, usable only where nothing depends
#: on it (the message of a check the guards decide)
TENSOR_TEXT = {"__format__", "__str__", "__repr__"}

#: calls that turn tensor data into Python values: the graph must break there
TENSOR_TO_PYTHON = {"item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__",
                    "__len__"}
#: of those, the ones whose Python result can stay inside the graph (as long as it only feeds tensor
#: ops, arithmetic, or the result): the graph computes it again on every call
TENSOR_TO_SCALAR = {"item", "tolist", "__int__", "__float__", "__index__", "equal", "allclose",
                    "is_nonzero"}
#: builtins that turn a tensor into a Python scalar the graph can compute
SCALAR_OF_TENSOR = IdentitySet([float, int])
#: torch functions answering a question about tensor data with a Python bool the graph can compute
TENSOR_PREDICATES = IdentitySet([torch.equal, torch.allclose, torch.is_nonzero])

BUILTIN_IDS = {id(v) for v in vars(builtins).values()}

#: ops whose result's shape depends on tensor data, not only on their inputs' shapes (``where`` with
#: one argument only)
DATA_DEPENDENT_SHAPE = {"nonzero", "masked_select", "unique", "unique_consecutive", "_unique", "_unique2",
                        "argwhere", "_pack_padded_sequence", "repeat_interleave", "bincount", "where"}
#: of those, the ones whose result has dims fixed by the input's shape: only these depend on data
#: (``nonzero``: (how many, x.dim()))
DATA_DEPENDENT_DIMS = {"nonzero": (0,), "argwhere": (0,)}
#: ops taking Python numbers as operands, not as sizes: a number the graph computes does not make
#: their result's shape depend on data
NUMBER_OPERANDS = {"add", "sub", "mul", "div", "true_divide", "floor_divide", "pow", "rsub", "fmod",
                   "remainder", "clamp", "clip", "clamp_min", "clamp_max", "masked_fill", "fill_",
                   "lerp", "maximum", "minimum", "add_", "sub_", "mul_", "div_", "pow_", "clamp_",
                   "masked_fill_", "full_like", "addcmul", "addcdiv", "threshold", "leaky_relu", "hardtanh",
                   "softplus", "elu", "celu", "selu", "gelu", "dropout", "scalar_tensor", "tensor",
                   "as_tensor", "eq", "ne", "lt", "le", "gt", "ge"}
#: ops splitting a tensor into as many tensors as its size says
SPLITS = {"unbind", "split", "chunk", "tensor_split", "split_with_sizes", "unsafe_split", "unsafe_chunk",
          "unsafe_split_with_sizes", "hsplit", "vsplit", "dsplit"}
#: ops given the sizes of their result (as arguments, or one tuple of them)
SIZED_OPS = {"view", "reshape", "expand", "broadcast_to", "new_zeros", "new_ones", "new_empty", "new_full",
             "zeros", "ones", "empty", "full", "rand", "randn"}
#: metadata that follows a tensor's shape (a graph value when the shape depends on data)
SHAPE_METADATA = {"size", "shape", "numel", "nelement", "stride", "is_contiguous"}

#: tensor methods answering static metadata (covered by the tensor guard: dtype, device, shape, strides)
TENSOR_METADATA = {"dim", "ndimension", "size", "stride", "numel", "nelement", "is_contiguous",
                   "element_size", "is_floating_point", "is_complex", "get_device", "storage_offset",
                   "is_signed", "type"}  # (``t.type()`` names dtype and device; with an argument it converts)

#: torch functions that are a tensor's metadata method taking the tensor first (``torch.numel(t)``)
SIZE_FUNCTIONS = IdentitySet([torch.numel])

#: tensor attributes answering static metadata
TENSOR_METADATA_ATTRS = {"shape", "dtype", "device", "requires_grad", "ndim", "layout", "is_cuda",
                         "is_sparse", "is_quantized", "is_meta", "names", "is_mps", "is_cpu",
                         "is_nested", "itemsize", "nbytes"}

#: values that are constants told apart by identity: an Enum's members are its only instances, made once
#: with the class (a dict keyed by one, a branch on one): a program depending on one is guarded ``is`` it
IDENTITY_CONSTANTS = (enum.Enum,)

#: Python types torch's argument parser reads as dtypes wherever it takes one (``torch.eye(n, dtype=bool)``,
#: ``x.to(float)``): the graph holds the dtype they stand for
PYTHON_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float64, complex: torch.complex128}

#: torch calls with no effect on results (usage logging): skipped on replay
TORCH_NOOPS = {"_log_api_usage_once"}

#: method names that mutate a container whatever its class (OrderedDict.move_to_end, deque.append …)
MUTATING_NAMES = {"append", "extend", "insert", "pop", "popitem", "remove", "clear", "sort", "reverse",
                  "update", "setdefault", "add", "discard", "move_to_end", "appendleft", "popleft",
                  "extendleft", "rotate", "__setitem__", "__delitem__", "__iadd__", "__ior__"}
