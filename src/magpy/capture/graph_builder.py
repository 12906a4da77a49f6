"""The graph room: tensors from outside become graph inputs, tensor operations fx nodes; Python
numbers and shapes the graph computes (``t.item()``, data-dependent sizes) are graph values too.
"""
import collections
import functools
import operator
import types
import warnings

import torch
from torch import fx
import numpy as np

from . import predicates, rules, vf
from .. import markers
from .guards import TensorGuard, TruthGuard, TypeGuard, ValueGuard, dense_with_sizes
from .sources import ArgSource, AttrSource, Const, DrawSource, Expr, Source, mentions_draw, paths_in
from .values import (Traced, UNKNOWN, _ALL, _RUN_ITERATORS, _Row, _SCALARS, _SHAPE_TRACED, _flat_tensors, _is_tensor,
    _is_torch_callable, _replayable_path, _with_fixed)



def _graph_values(nodes, values):
    """(graph node, its value in this call) for each node among ``nodes`` (in lists too), beside ``values``."""
    for n, v in zip(nodes, values):
        if isinstance(n, fx.Node):
            yield n, v
        elif isinstance(n, (list, tuple)) and isinstance(v, (list, tuple)):
            yield from _graph_values(n, v)


def may_raise(name, fn, args, kwargs, result) -> bool:
    """Could this op raise when the graph runs it on other values (``rules.RAISES_ON_DATA``)?"""
    module = getattr(fn, "__module__", None) or ""
    if any(word in name for word in rules.RAISES_ANYWHERE_WORDS) or module.startswith(rules.RAISES_ANYWHERE_MODULES):
        return True
    tensors = _flat_tensors([*args, *(kwargs or {}).values(), result])
    if not any(t.device.type == "cpu" for t in tensors):
        return False
    if name in rules.RAISES_ON_DATA or any(word in name for word in rules.RAISES_ON_DATA_WORDS):
        return True
    if name in rules.RAISES_WITH_INDICES:
        return len(args) > 1 and any(not t.dtype.is_floating_point and t.dtype is not torch.bool
                                     for t in _flat_tensors(args[1]))
    if name in rules.RAISES_ON_INTEGERS:
        return any(not (t.dtype.is_floating_point or t.dtype.is_complex) for t in _flat_tensors(result))
    return False


#: words in the name of an op whose result is not the same on every run though its arguments are: random
#: draws, generator state, memory left as it was (``empty``)
_UNREPEATABLE = ("rand", "rng", "seed", "state", "empty", "normal", "uniform", "bernoulli", "multinomial",
                 "poisson", "exponential", "dropout", "rrelu", "gumbel")


def _index_dims(key, graph_key):
    """The result dims of ``t[key]`` whose size depends on data, for a ``t`` of fixed shape: the one a
    boolean mask makes (how many it selects) and those of slices whose bounds the graph computes
    (``graph_key`` holds a node there); every other dim is ``t``'s. None for keys not counted here
    (Ellipsis, index tensors, more than one mask)."""
    keys, graph_keys = (key, graph_key) if isinstance(key, tuple) else ((key,), (graph_key,))
    if not isinstance(graph_keys, tuple) or len(graph_keys) != len(keys):
        return None
    dims, position, masks = set(), 0, 0
    for k, g in zip(keys, graph_keys):
        if _is_tensor(k):
            if k.dtype not in (torch.bool, torch.uint8) or masks:
                return None
            masks += 1
            dims.add(position)
            position += 1
        elif isinstance(k, slice) or k is None:
            if isinstance(g, fx.Node) or isinstance(g, slice) and any(
                    isinstance(b, fx.Node) for b in (g.start, g.stop, g.step)):
                dims.add(position)  # (a slice the graph builds, or one with a bound it computes)
            position += 1
        elif type(k) is not int:
            return None
    return frozenset(dims)


def fits_int64(n):
    """Does Python int ``n`` fit a torch int64?"""
    return -0x8000000000000000 <= n <= 0x7FFFFFFFFFFFFFFF


fits_int64.spelling = "{0} fits int64"


def _version(tensor):
    """``tensor``'s version counter (None for an inference tensor, which keeps none)."""
    try:
        return tensor._version
    except RuntimeError:
        return None


def _from_argument(source) -> bool:
    """Is ``source`` an argument, or inside one (an item, an attribute), rather than state reached
    through ``self`` or a global?"""
    while isinstance(source, Source) and hasattr(source, "base"):
        source = source.base
    return type(source) is ArgSource and source.name != "self"


class GraphBuilding:

    """Tensor operations recorded into the fx graph; Python values the graph computes."""



    def tensor_input(self, tensor, source):
        entry = self.nodes.get(id(tensor))
        if entry is not None:
            first = self.input_paths.get(id(tensor))
            if isinstance(source, Source) and first is not None and source != first:
                # the same tensor reached by a second path (``f(x, x)``, tied weights): the graph
                # reads it once, so a later call must pass the very same object there too
                self.guard(TruthGuard(Expr(operator.is_, (source, first)), True))
            return entry[1]
        if not _replayable_path(source) and not (type(source) is Expr and mentions_draw(source)):
            # (an expression over random draws is evaluated by the entry after it drew them)
            self.unsupported("a tensor reached the program by a path MagPy cannot replay")
        if type(source) is Expr and source in self.computed_inputs:
            # the same expression computed again (``torch.tensor(a)`` twice): the entry computes it once,
            # so the graph copies it first thing — two tensors, as eager has, whatever writes to either
            placeholder = self.computed_inputs[source]
            with self.cap.graph.inserting_after(placeholder):
                node = self.cap.graph.call_method("clone", (placeholder,))
            self.cap.op_count += 1
            self.nodes[id(tensor)] = (tensor, node)
            return node
        node = self.cap.graph.placeholder(f"in{len(self.cap.inputs)}")
        if type(source) is Expr:
            self.computed_inputs[source] = node
        node.meta["source"] = source.render()
        self.cap.inputs.append((source, tensor))
        symbolic = self._symbolic_dims(tensor, source)
        self.guard(TensorGuard(source, tensor, symbolic))
        if symbolic:
            # sizes the guard leaves open: read from the graph on every call, as sizes from data are
            self.dynamic[node] = symbolic
            self.cap.symbolic.append((source, symbolic))
            self.cap.host_values = True
        self.nodes[id(tensor)] = (tensor, node)
        self.input_paths[id(tensor)] = source
        self.input_versions[id(tensor)] = _version(tensor)
        self.input_shapes[id(tensor)] = tuple(tensor.shape)
        return node

    def may_be_symbolic(self, tensor) -> bool:
        return bool(self.dynamic_dims) or markers.has_marks(tensor)

    def _symbolic_dims(self, tensor, source):
        """The dims of an input tensor whose sizes the call takes as they come: those ``dynamic_dims`` names
        for its path (every dim of an argument's tensors, not a parameter's, for ``dynamic=True``) or
        ``magpy.mark_dynamic`` (or torch's) marked, less ``mark_static``'s; never a size 0 or 1 (they specialise),
        and only for a dense tensor (its strides follow from its sizes)."""
        wanted = self.dynamic_dims
        if wanted is True:
            dims = set() if isinstance(tensor, torch.nn.Parameter) or not _from_argument(source) else \
                set(range(tensor.dim()))
        else:
            dims = set(wanted.get(source, ()))
        marked, static = markers.marked_dims(tensor)
        dims = (dims | marked) - static
        dims = {k for k in dims if k < tensor.dim() and tensor.shape[k] > 1}
        if not dims or tensor.layout != torch.strided:
            return frozenset()
        order = sorted(range(tensor.dim()), key=lambda k: (tensor.stride(k), -k))
        return frozenset(dims) if dense_with_sizes(tensor, (), order) else frozenset()

    def pin_symbolic_sizes(self):
        """What happened depends on the exact sizes (a caught broadcast error): the symbolic sizes are
        guarded to be those of this call."""
        examples = dict(self.cap.inputs)
        for source, dims in self.cap.symbolic:
            for d in sorted(dims):
                size = Expr(torch.Tensor.size, (source, Const(d)))
                self.guard(TruthGuard(Expr(operator.eq, (size, Const(examples[source].shape[d]))), True))

    def node_of(self, tensor, prov=None):
        entry = self.nodes.get(id(tensor))
        if type(prov) is _Row and (entry is None or entry[0] is not tensor):
            node = self.cap.graph.call_function(operator.getitem, (prov.rows, prov.index))
            self.nodes[id(tensor)] = (tensor, node)
            return node
        if _replayable_path(prov) and (entry is None or entry[0] is not tensor or id(tensor) in self.input_paths):
            return self.tensor_input(tensor, prov)
        if entry is None or entry[0] is not tensor:
            self.unsupported("a tensor of unknown origin was used (made by a call MagPy did not record)")
        return entry[1]

    def to_graph_arg(self, value, prov):
        """``value`` as an fx argument: tensors as nodes, containers recursively, scalars as guarded
        constants."""
        if _is_tensor(value):
            return self.node_of(value, prov)
        if type(prov) is Traced:
            return prov.node
        if type(value) in _RUN_ITERATORS and id(value) in self.yielded_values:
            # a generator the VM ran, consumed by this op (``sum(p.sum() for p in ps)``): what it yielded
            entry = self.contents.get(id(value))
            if entry is not None and entry[0] is value:
                return [self.to_graph_arg(v, p) for v, p in zip(self.yielded_values[id(value)], entry[1])]
        if type(value) in (list, tuple, collections.deque) or (type(value) is torch.Size and id(value) in self.contents):
            items = self._element_provs(value, prov)
            mapped = [self.to_graph_arg(v, p) for v, p in zip(value, items)]
            if type(value) is torch.Size and any(isinstance(m, fx.Node) for m in mapped):
                # a shape the graph reads, a shape again (``x.shape.numel()``, ``str(x.shape)``)
                return self.cap.graph.call_function(torch.Size, (tuple(mapped),))
            # (a deque as the list of what it holds: the op ran on it, iterating it as it does a list)
            return tuple(mapped) if type(value) is tuple else mapped
        if type(value) is dict:
            provs = self._dict_provs(value, prov)
            return {k: self.to_graph_arg(v, provs[k]) for k, v in value.items()}
        if isinstance(value, slice):
            parts = (value.start, value.stop, value.step)
            if isinstance(prov, Expr) and prov.fn is slice:
                part_provs = [None if type(p) is Const else p for p in prov.args]
                part_provs += [None] * (3 - len(part_provs))
                if len(prov.args) < 3 and len(prov.args) == 2:
                    part_provs = [part_provs[0], part_provs[1], None]
            elif isinstance(prov, Source):
                part_provs = [AttrSource(prov, a) for a in ("start", "stop", "step")]
            else:
                part_provs = [prov] * 3 if prov is not None else [None] * 3
            return slice(*(self.to_graph_arg(v, p) for v, p in zip(parts, part_provs)))
        number = self._dynamic_number(value, prov)
        if number is not None:
            return number
        if type(value) in (int, float, bool) and isinstance(prov, (Source, Expr)) and mentions_draw(prov):
            return self.scalar_input(value, prov)  # a random number: an input of the graph, not a constant
        if type(value).__module__ == "numpy" and getattr(value, "shape", None) == () and hasattr(value, "item"):
            # a numpy scalar: torch treats it as the Python number it holds (and fx code would name it
            # ``np.float64(…)``, a name the graph's code does not have)
            self.need(value, prov)
            return value.item()
        if isinstance(value, _SCALARS + (torch.dtype, torch.device, torch.Size, torch.layout,
                                          torch.memory_format, type(Ellipsis), range)):
            self.need(value, prov)
            return value
        if type(value) is type and rules.PYTHON_DTYPES.get(value) is not None:
            self.need(value, prov)
            return rules.PYTHON_DTYPES[value]
        if type(value) is np.ndarray and value.dtype.kind in "biu" and value.size <= rules.PINNED_DATA_LIMIT:
            # an index array (``x[:, np.argwhere(mask)]``): torch reads it as the tensor of its numbers
            self.need(value, prov)
            try:
                dtype = torch.from_numpy(value[:0].copy()).dtype
            except TypeError:
                self.unsupported(f"an index array of {value.dtype} (torch has no such dtype)")
            return self.cap.graph.call_function(torch.tensor, (value.tolist(),), {"dtype": dtype})
        self.unsupported(f"a {type(value).__name__} was passed to a tensor operation")

    def record(self, fn, args, arg_provs, kwargs, kw_provs, result, method=None):
        """Add ``fn(*args, **kwargs)`` (a tensor op that already ran) to the graph."""
        if (method == "type" or getattr(fn, "__name__", None) == "type") and len(args) == 2 and \
                type(args[1]).__name__ == "tensortype":
            # ``t.type(torch.FloatTensor)``: the same as by name (fx code cannot spell the class)
            self.need(args[1], arg_provs[1])
            args, arg_provs = (args[0], f"{args[1].__module__}.{args[1].__name__}"), (arg_provs[0], None)
        out = (kwargs or {}).get("out")
        if _is_tensor(out) and id(out) in self.input_paths and (self.cap.symbolic or self.dynamic or
                                                                  tuple(out.shape) != self.input_shapes.get(id(out))):
            # eager resizes an ``out=`` tensor of another shape (with a warning); a graph writes into it as
            # it is, and over symbolic sizes cannot tell the two apart
            self.unsupported("out= into a tensor the call was given, whose shape the op may change (graph break)")
        if self.torch_function_off and any(map(rules.overrides_torch_function, (*args, *(kwargs or {}).values()))):
            self.unsupported("an op on a tensor subclass with __torch_function__ while it is switched off "
                             "(torch._C.DisableTorchFunctionSubclass)")
        gargs = tuple(self.to_graph_arg(a, p) for a, p in zip(args, arg_provs))
        gkwargs = {k: self.to_graph_arg(v, (kw_provs or {}).get(k)) for k, v in (kwargs or {}).items()}
        graph = self.cap.graph
        if method is not None:
            node = graph.call_method(method, gargs, gkwargs)
        else:
            node = graph.call_function(vf.exact(fn), gargs, gkwargs)
        if not self.cap.op_count:
            self.cap.pre_graph = len(self.cap.side_effects)
        self.cap.op_count += 1
        self.cap.may_raise = self.cap.may_raise or may_raise(method or getattr(fn, "__name__", ""), fn, args,
                                                             kwargs, result)
        dims = None
        if not (_is_tensor(result) and result.dim() == 0):
            # (before the result is bound: an op returning its input — ``contiguous``, ``add_`` — must
            # be rerun on that input as it was)
            dims = self._dynamic_dims(node, fn, method, args, kwargs, result)
        self.bind_result(result, node)
        if dims is not None:
            for tensor, d in zip(_flat_tensors(result), dims):
                if d:
                    self.dynamic[self.nodes.get(id(tensor))[1]] = d
            if not _is_tensor(result):
                self.dynamic.setdefault(node, _ALL)  # (the tuple node itself; its items are marked above)
            self.cap.host_values = True  # (compiling backends plan buffers from the first call's shapes)
        return node

    def number_changes(self, path) -> bool:
        """Is the number at ``path`` (or the length of the list there) taken as it comes?"""
        return path in self.dynamic_numbers

    def _dynamic_number(self, value, prov):
        """A Python number from outside that the call takes as it comes (``dynamic_numbers``: a miss showed
        it changes) as a graph input, or None. As an operand (``self.step * x``) it keeps the shapes; as a
        size or a bound (``x[:, :n]``, ``x.reshape(n, -1)``) the dims it decides are read from the graph."""
        if type(value) not in (int, float) or not self.dynamic_numbers or not isinstance(prov, (Source, Expr)) \
                or mentions_draw(prov):
            return None
        if not any(map(self.number_changes, paths_in(prov))):
            return None
        self.guard(TypeGuard(prov, type(value)))  # (an int and a float make different dtypes)
        if type(value) is int and value in (0, 1):
            self.need(value, prov)  # (0 and 1 specialise, as sizes do: emptiness, broadcasting, identity)
            return value
        return self.scalar_input(value, prov)

    def _dynamic_dims(self, node, fn, method, args, kwargs, result):
        """For each tensor ``node`` computes (flattened), the dims whose size depends on tensor data
        (a mask's count, a length the graph computes), which reading must happen in the graph on every
        call; None when no dim does. An op on such tensors is run again on meta tensors whose dynamic
        sizes are changed: the output dims that change with them are dynamic, the others are fixed by
        the guards (a sparse matrix built to a given size from as many edges as the data has)."""
        name = method or getattr(fn, "__name__", "")
        shape_from_data = self._shape_from_data(node, name, args, kwargs or {})
        if not shape_from_data:
            return None
        tensors = _flat_tensors(result)
        every = [frozenset(range(t.dim())) for t in tensors]
        if name == "unbind" and args and _is_tensor(args[0]):
            pinned = self._pinned_unbind(args, kwargs or {}, tensors)
            if pinned is not False:
                return pinned
        sized = self._sized_dims(node, name, tensors) if shape_from_data in ("inputs", "numbers") else False
        if sized is not False:
            return sized
        if name in rules.SPLITS:
            kept = self._split_across(node, name, args, kwargs or {}, tensors)
            if kept is not None:
                return kept
            every = None  # (``unbind``/``split``/``chunk``: how many tensors come out may be data)
        if shape_from_data != "inputs":
            if name in rules.DATA_DEPENDENT_DIMS and len(tensors) == 1:
                return [frozenset(rules.DATA_DEPENDENT_DIMS[name])]
            dims = _index_dims(args[1], node.args[1]) if name in ("getitem", "__getitem__") and \
                len(args) == 2 and len(node.args) == 2 and len(tensors) == 1 else None
            if dims:
                return [dims]  # (``t[mask, :n]``: as many as the mask and n say; the rest is t's)
            return self._every(every)
        if method is None and not _is_torch_callable(fn) and fn not in rules.TENSOR_BUILTINS:
            return self._every(every)  # (the program's own code, a custom autograd.Function: not run twice)
        found = [set() for _ in tensors]
        if self._takes_numbers(node):
            # numbers the graph computes size it too (``x[:, :n]`` of an x with dynamic dims): a rerun
            # cannot move them, so the dims they decide must be known another way
            dims = _index_dims(args[1], node.args[1]) if name in ("getitem", "__getitem__") and \
                len(args) == 2 and len(node.args) == 2 and len(tensors) == 1 else None
            if dims is None:
                return self._every(every)
            found[0].update(dims)
        for delta in (3, 11):
            try:
                meta_args = [self._meta(a, delta) for a in args]
                meta_kwargs = {k: self._meta(v, delta) for k, v in (kwargs or {}).items()}
                with torch.no_grad(), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = getattr(meta_args[0], method)(*meta_args[1:], **meta_kwargs) if method else \
                        fn(*meta_args, **meta_kwargs)
            except Exception:  # noqa: BLE001 - an op meta tensors cannot run: every dim may depend on data
                return self._every(every)
            outs = _flat_tensors(out)
            if len(outs) != len(tensors) or any(m.dim() != r.dim() for m, r in zip(outs, tensors)):
                return self._every(every)
            for dims, real, meta in zip(found, tensors, outs):
                dims.update(k for k, (a, b) in enumerate(zip(real.shape, meta.shape)) if a != b)
        return [frozenset(d) for d in found] if any(found) else None

    def _takes_numbers(self, node) -> bool:
        """Does ``node`` take a number the graph computes (directly, or inside a shape it builds)?"""
        return any(n in self.scalar_nodes or (n.target is torch.Size and
                                              any(m in self.scalar_nodes for m in n.all_input_nodes))
                   for n in node.all_input_nodes)

    def _sized_dims(self, node, name, tensors):
        """An op given its result's sizes (``x.view(b, t, 4, c // 4)``, ``x.new_zeros(size)``) where some are
        graph values: its dynamic dims are those (None: none); a ``-1`` is dynamic when the input has a
        dynamic dim. False when the sizes are not spelled out here."""
        if len(tensors) != 1 or node.kwargs or name not in rules.SIZED_OPS:
            return False
        method = node.op == "call_method"
        first = 1 if method or name in ("reshape", "broadcast_to") else 0
        # (one argument holding the sizes: ``t.new_full(size, v)``, ``torch.reshape(t, shape)``,
        # ``torch.full(size, v)``; the others take them spread out or as one tuple)
        single = name == "new_full" if method else name in ("full", "reshape", "broadcast_to")
        sizes = node.args[first:first + 1] if single else node.args[first:]
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list, fx.Node)):
            sizes = sizes[0]
            if isinstance(sizes, fx.Node):
                if sizes.target is not torch.Size:
                    return False
                sizes = sizes.args[0]
        if len(sizes) != tensors[0].dim():
            return False
        source = node.args[0] if first else None
        moving = isinstance(source, fx.Node) and bool(self.dynamic.get(source))
        dims = frozenset(k for k, n in enumerate(sizes) if isinstance(n, fx.Node) or (n == -1 and moving))
        if not all(isinstance(n, (int, fx.Node)) for n in sizes):
            return False
        return [dims] if dims else None

    def _split_across(self, node, name, args, kwargs, tensors):
        """``split``/``chunk`` of a tensor with dynamic dims by sizes the program gives: along a dim whose
        size the guards fix (GPT-2's ``qkv.split(768, dim=2)`` of a tensor whose sequence length is
        symbolic) as many tensors on every call, each with the input's dynamic dims; along a dynamic
        dim the same, once its size is pinned. None when the graph computes the split sizes (or the
        call is not read here)."""
        source = args[0] if args else None
        entry = self.nodes.get(id(source)) if _is_tensor(source) else None
        if entry is None or entry[0] is not source or name not in ("split", "chunk", "split_with_sizes",
                                                                     "unsafe_split", "unsafe_chunk"):
            return None
        dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
        if type(dim) is not int or not -source.dim() <= dim < max(source.dim(), 1):
            return None
        dims = self.dynamic.get(entry[1], frozenset())
        if dims is _ALL:
            return None
        given = node.args[1] if len(node.args) > 1 else None
        if name in ("split", "split_with_sizes") and isinstance(given, (list, tuple)) and len(given) == len(tensors):
            # one piece per size given (``x.split(sizes)`` with ``sizes = counts.tolist()``): how many is the
            # list's length, which the program fixed (a ``tolist()``'s by the tensor's shape), never data;
            # a piece's extent along ``dim`` is its size, data where the graph computes that size
            dim %= max(source.dim(), 1)
            rest = dims - {dim}
            return [rest | {dim} if isinstance(n, fx.Node) else rest for n in given]
        sizes = [n for n in node.all_input_nodes if n is not entry[1]]
        if not all(predicates.reads_sizes_only(n) for n in sizes):
            return None  # (a split size the graph computes from data: how many come out may change)
        for n, value in _graph_values(node.args[1:], args[1:]):
            # a split size from sizes (``q, k, v = qkv(h).split(C, -1)`` after ``B, T, C = x.shape``) is
            # pinned: a size the program splits by is a size (a backend given it specialises it alike)
            self.data_branch(self.cap.graph.call_function(operator.eq, (n, value)), True, self.frame,
                             splits=False, form=f"{{text}} splits by a size of {value!r}")
        dim %= max(source.dim(), 1)
        if dim in dims:
            # along a dim whose size moves: how many come out depends on it (``chunk(2)`` of a size 1
            # gives one), so that size is pinned — another size is another entry
            size = self.cap.graph.call_method("size", (entry[1], dim))
            self.pin(self.host_value(size), source.shape[dim])
        return [dims for _ in tensors]

    def _pinned_unbind(self, args, kwargs, tensors):
        """``unbind`` (a ``for`` over a tensor) along a dim whose size depends on data: that size is pinned
        (the guard reruns its computation: another count is another entry), so as many tensors come out
        on every call; their other dims keep whatever depends on data (None: none does). False when the
        dim's size does not depend on data."""
        source = args[0]
        dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
        entry = self.nodes.get(id(source))
        if type(dim) is not int or entry is None or entry[0] is not source:
            return False
        dim %= max(source.dim(), 1)
        dims = self.dynamic.get(entry[1], ())
        if dim not in dims:
            return False
        size = self.cap.graph.call_method("size", (entry[1], dim))
        self.pin(Traced(size), source.shape[dim])
        rest = frozenset(d - (d > dim) for d in dims if d != dim)
        return [rest for _ in tensors] if rest else None

    def _every(self, every):
        if every is None:
            self.unsupported("a number of tensors that depends on tensor data (graph break)")
        return every

    def _meta(self, value, delta):
        """``value`` for a meta rerun: tensors as meta tensors (sparse ones as dense) of the same shape,
        except that each size that depends on data grows by ``delta``."""
        if _is_tensor(value):
            entry = self.nodes.get(id(value))
            dims = self.dynamic.get(entry[1], ()) if entry is not None and entry[0] is value else ()
            shape = [n + delta if k in dims else n for k, n in enumerate(value.shape)]
            return torch.empty(shape, dtype=value.dtype, device="meta")
        if type(value) in (list, tuple):
            return type(value)(self._meta(v, delta) for v in value)
        return value

    def _shape_from_data(self, node, name, args, kwargs):
        """Does the shape of what ``node`` computes depend on tensor data (a mask's count, a length the
        graph computes), so that reading it must happen in the graph on every call? "inputs" when an input
        of it has such dims, "data" when the op itself makes one, "numbers" when a number the graph
        computes sizes it. (An op making a size from data, whatever its inputs, sets ``data_shapes``.)"""
        inputs = node.all_input_nodes
        data = self._makes_data_shape(name, args, kwargs)
        if data:
            self.cap.data_shapes = True
        if any(n in self.dynamic for n in inputs):
            return "inputs"
        if data:
            return "data"
        numbers = [n for n in inputs if n in self.scalar_nodes]
        # (a number the graph computes: from data — then ``scalar_of`` said so — or a symbolic size)
        return "numbers" if numbers and (name not in rules.NUMBER_OPERANDS and
                                         getattr(node.target, "__module__", None) != "_operator" or
                                         node.target in (operator.getitem, operator.setitem)) else False

    @staticmethod
    def _makes_data_shape(name, args, kwargs) -> bool:
        if name == "repeat_interleave":
            # (repeats as a number: the input's size times it; as a tensor: as many as its counts say)
            repeats = kwargs["repeats"] if "repeats" in kwargs else args[1] if len(args) > 1 else args[0]
            return _is_tensor(repeats) and "output_size" not in kwargs
        if name in rules.DATA_DEPENDENT_SHAPE and (name != "where" or len(args) == 1):
            return True
        if name in ("getitem", "__getitem__") and len(args) == 2:
            keys = args[1] if isinstance(args[1], tuple) else (args[1],)
            return any(_is_tensor(k) and k.dtype in (torch.bool, torch.uint8) for k in keys)  # (a mask's count)
        return False

    def dynamic_metadata(self, tensor, name, args, result):
        """``t.shape`` / ``t.size(k)`` / ``t.numel()`` of a tensor whose shape depends on data: computed by
        the graph on every call (None when the shape is fixed by the guards)."""
        entry = self.nodes.get(id(tensor))
        if entry is None or entry[0] is not tensor or entry[1] not in self.dynamic or \
                name not in rules.SHAPE_METADATA:
            return None
        dims = self.dynamic[entry[1]]
        if name == "size" and len(args) == 1 and type(args[0]) is int and args[0] % max(tensor.dim(), 1) not in dims:
            return None  # a dim the guards fix (the 3 of an (n, 3) list of points, n from data; a stride
            #              depends on the other dims: always read)
        graph = self.cap.graph
        if name == "shape":
            node = graph.call_function(getattr, (entry[1], "shape"))
        else:
            node = graph.call_method(name, (entry[1], *(self.to_graph_arg(a, None) for a in args)))
        traced = self.host_value(node)
        if isinstance(result, tuple):
            self._trace_list(result, node)  # (its elements, as ``t.tolist()``'s)
            if name in ("size", "shape"):
                provs = self.contents[id(result)][1]  # (the dims the guards fix are constants)
                self.contents[id(result)] = (result, [p if k in dims else None for k, p in enumerate(provs)])
            return _SHAPE_TRACED
        return traced

    def draw(self, fn, args, arg_provs, kwargs=None, kw_provs=None):
        """A draw of Python's or numpy's global random generator: re-drawn by the entry program on every
        call."""
        for a, p in zip(args, arg_provs):
            self.need(a, p)  # (``getrandbits(k)``: the same k)
        for k, v in (kwargs or {}).items():
            self.need(v, (kw_provs or {}).get(k))  # (``choice(xs, n, p=[…])``: the same probabilities)
        if kwargs:
            fn = functools.partial(fn, **kwargs)
        self.cap.draws.append((fn, tuple(args)))
        return DrawSource(len(self.cap.draws) - 1)

    def scalar_input(self, value, prov):
        """A Python number the graph takes as an input, computed by the entry program (a random draw)."""
        known = self.scalar_inputs.get(prov)
        if known is None:
            known = self.cap.graph.placeholder(f"in{len(self.cap.inputs)}")
            known.meta["source"] = prov.render()
            self.cap.inputs.append((prov, value))
            self.scalar_inputs[prov] = known
            self.scalar_nodes.add(known)  # (a size or bound it gives is read from the graph, as sizes are)
            self.cap.host_values = True
            # (a number from outside is a symbolic int or float to a compiling backend; a random draw
            # it would take as a constant)
            self.cap.data_values |= type(value) not in (int, float) or mentions_draw(prov)
            self.cap.float_inputs |= type(value) is float
            if type(value) is int:
                # the graph holds it as an int64 (torch raises OverflowError for one past it): a later
                # call's number past int64 misses, and its capture raises as eager does
                self.guard(TruthGuard(Expr(fits_int64, (prov,)), True))
        return known

    def scalar_of(self, fn, args, arg_provs, result, method=None):
        """``float(t)``, ``t.item()``, ``t.tolist()``: a graph node whose Python result is traced; a constant
        for a tensor the graph computes from constants alone (``torch.IntTensor([n])[0]`` as a slice bound)."""
        if args and _is_tensor(args[0]) and self._from_constants(args[0], arg_provs[0]):
            return None
        read = torch.Tensor.item if method == "item" else fn if fn in (float, int) else None
        source = self._unwritten_input(args[0]) if read is not None and len(args) == 1 and \
            type(result) in (int, float) else None
        if source is not None:
            if type(result) is float:  # read by the entry, passed as a number
                return Traced(self.scalar_input(result, Expr(read, (source,))))
            # an int (a zero point, a count): the entry checks it is this one, as an int argument's first
            # value is, since as a size or a loop count it would fix the trace to it anyway
            self.guard(ValueGuard(Expr(read, (source,)), result))
            return None
        node = self.record(fn, args, arg_provs, None, None, None, method=method)
        self.scalar_nodes.add(node)
        self.cap.host_values = self.cap.data_values = True
        if type(result) is list:
            entry = self.nodes.get(id(args[0])) if args else None
            if entry is not None and entry[1] in self.dynamic:
                # a list as long as tensor data says: this long, while the guard's rerun agrees
                self.pin(Traced(self.cap.graph.call_method("numel", (entry[1],))), entry[0].numel())
            self._trace_list(result, node)
            return None
        return Traced(node)

    def _unwritten_input(self, tensor):
        """The path of ``tensor`` if the call takes it as it came and the graph has not written to it yet (its
        node is still the placeholder, its version unchanged), else None. A float ``t.item()`` or ``float(t)``
        of it (a buffer holding a scale, a temperature) is then read by the entry before the graph runs, and
        a compiling backend takes it as a symbolic float; an int is checked by the entry's guards. (Of a
        tensor the graph computes, or wrote to first, the number is the graph's to compute.)"""
        entry = self.nodes.get(id(tensor))
        source = self.input_paths.get(id(tensor))
        if entry is None or entry[0] is not tensor or entry[1].op != "placeholder" or source is None:
            return None
        version = _version(tensor)
        if version is None or version != self.input_versions.get(id(tensor)):
            return None
        return source

    def _from_constants(self, tensor, prov):
        """Does the graph compute ``tensor`` from no input and no state (pure ops on constants, which the guards
        fix), so that its numbers are the same on every call?"""
        if _replayable_path(prov):
            return False
        entry = self.nodes.get(id(tensor))
        needed = predicates.ancestry([entry[1]]) if entry is not None and entry[0] is tensor else None
        return needed is not None and all(n.op in ("call_function", "call_method") and
                                          not any(w in predicates._name(n) for w in _UNREPEATABLE)
                                          for n in needed)

    def _trace_list(self, values, node):
        graph = self.cap.graph
        provs = []
        for k, v in enumerate(values):
            item = graph.call_function(operator.getitem, (node, k))
            self.scalar_nodes.add(item)
            if type(v) is list:
                self._trace_list(v, item)
                provs.append(None)
            else:
                provs.append(Traced(item))
        self.contents[id(values)] = (values, provs)

    def by_identity(self, values):
        """Provenance of values that came through code MagPy did not follow: the tensors the graph made
        are known by identity, anything else is of unknown origin."""
        return [None if _is_tensor(v) and id(v) in self.nodes else UNKNOWN for v in values]

    def holds(self, container, elements):
        """``container`` (made here) holds values of these provenances; False when they do not fit it."""
        if elements is None or len(elements) != len(container):
            return False
        if any(p is not None for p in elements):
            self.contents[id(container)] = (container, list(elements))
        return True

    def holds_traced(self, value):
        """A list, tuple (or shape) made here holding a number the graph computes."""
        if type(value) not in (list, tuple, torch.Size):
            return False
        entry = self.contents.get(id(value))
        return entry is not None and entry[0] is value and type(entry[1]) is list and \
            any(type(p) is Traced for p in entry[1])

    def yields_traced(self, value):
        """A list, tuple or shape made here, or a generator the VM ran, with numbers the graph computes
        among its items."""
        if type(value) in _RUN_ITERATORS and id(value) in self.yielded_values:
            entry = self.contents.get(id(value))
            return entry is not None and entry[0] is value and any(type(p) is Traced for p in entry[1] or ())
        return self.holds_traced(value)

    def traced_op(self, fn, inputs, provs):
        """``fn`` over Python values some of which the graph computes: one more graph node."""
        fixed = {k: v for k, (v, p) in enumerate(zip(inputs, provs)) if isinstance(v, type) and type(p) is not Traced}
        if fixed:  # (``a.astype(int)``: a class is part of the function, not an argument fx can write)
            for k, v in fixed.items():
                self.need(v, provs[k])
            fn = vf.calling(_with_fixed(fn, fixed, len(inputs)), f"call_{getattr(fn, '__name__', 'fn')}")
            inputs = [v for k, v in enumerate(inputs) if k not in fixed]
            provs = [p for k, p in enumerate(provs) if k not in fixed]
        args = tuple(p.node if type(p) is Traced else self.to_graph_arg(v, p) for v, p in zip(inputs, provs))
        if not predicates.size_arithmetic(fn):
            self.cap.data_values = True
        if type(fn) not in (types.FunctionType, types.BuiltinFunctionType) or not getattr(fn, "__module__", None):
            # (``ndarray.sum``, a method of a value: fx holds it by reference, not by an import path)
            fn = vf.calling(fn, f"call_{getattr(fn, '__name__', 'fn')}")
        return self.host_value(self.cap.graph.call_function(fn, args))

    def host_value(self, node):
        """``node`` (one more op) computes a Python value: the graph runs as captured (fx)."""
        self.cap.op_count += 1
        self.scalar_nodes.add(node)
        self.cap.host_values = True
        return Traced(node)

    def bind_result(self, result, node):
        if _is_tensor(result):
            self.nodes[id(result)] = (result, node)
        elif type(result) in (tuple, list) or isinstance(result, tuple):
            for k, item in enumerate(result):
                if _is_tensor(item) or isinstance(item, (tuple, list)):
                    self.bind_result(item, self.cap.graph.call_function(operator.getitem, (node, k)))

