"""GraphLowering: an aten-level fx graph -> buffers and schedulable IR nodes, in program order.

It walks the fx graph once, calls the lowering of each node (``lowering.LOWERINGS``), decides
which lazy values to realize into buffers (graph outputs, extern inputs, reductions, values
that are used often and expensive to recompute) and turns every op without a lowering — or
whose lowering refuses — into a counted ``ExternCall``.
"""
from __future__ import annotations

import operator
import re
from typing import Any, Optional

import sympy
import torch
import torch.fx

from .channels_last import DTYPES, OPERANDS, channels_last, is_channels_last, preferred_operands, result_layout
from .channels_last import wants_channels_last
from .ir import (
    BufferRef,
    BufferValue,
    ComputedBuffer,
    ExternCall,
    GetItem,
    Layout,
    Pointwise,
    Reduction,
    TensorValue,
    WrapperView,
    as_size,
    dense_layout_like,
    index_vars,
)
from .input_writes import COPY, lower_input_write
from .lowering import LoweringContext, Unsupported, lookup_lowering
from .lowering.pointwise import ELEMENTWISE
from .lowering.view import VIEW_OPS
from .ops import body_key, count_ops
from .sizes import SIZE_ASSERTIONS, GraphSizes, SizeRelation, made_sizes, shape_env_of

# A lazy value used more than once is realized when recomputing it would cost more than this.
INLINE_MAX_OPS = 8
INLINE_MAX_LOADS = 4
# Ops costly enough that a value using one is computed once, not once per user.
TRANSCENDENTAL = frozenset(
    "exp exp2 expm1 log log2 log10 log1p sin cos tan asin acos atan sinh cosh tanh asinh acosh "
    "atanh erf erfc pow lgamma atan2 sigmoid".split()
)
# Any lazy value is realized when its body grows past this many ops (bounds kernel size).
BODY_MAX_OPS = 96
# How many elementwise users ``_uses_meet`` follows looking for the node a value's uses meet in.
MEET_MAX_NODES = 16


class GraphFallback(Exception):
    """The whole graph cannot be compiled (e.g. a size it cannot express); it runs eagerly instead."""


class GraphLowering:
    """Lowers ``gm`` for ``example_inputs``; read the results from the public attributes.

    ``inputs``   placeholder buffer names (None for a non-tensor placeholder)
    ``outputs``  the output structure, buffer names in place of tensors
    ``nodes``    ScheduledNodes in program order
    ``layouts``  buffer name -> Layout of every buffer
    ``fallbacks`` [(op, reason)] of every counted ExternCall
    ``written``  inputs written in place by ``InputWrite`` nodes (``copy_`` into a placeholder)
    ``relaid``   buffers laid out unlike the fx graph says (channels-last convolutions, their operands and
                 the elementwise values that follow them)
    ``device``   where every tensor of the graph lives
    ``sizes``    the graph's sizes (``sizes.GraphSizes``): where each size symbol is read, what
                 the ShapeEnv knows of them

    Sizes of fake tensors are read through ``sizes``, never compared as SymInts (a comparison
    of SymInts would add a guard to the ShapeEnv).
    """

    def __init__(self, gm: torch.fx.GraphModule, example_inputs, device=torch.device("cpu")):
        self.gm = gm
        self.device = torch.device(device)
        self.example_inputs = list(example_inputs)
        self.nodes: list = []
        self.layouts: dict[str, Layout] = {}
        self.inputs: list[Optional[str]] = []
        self.outputs: Any = None
        self.fallbacks: list[tuple[str, str]] = []
        self.constants: dict[str, torch.Tensor] = {}  # buffer name -> tensor held by the graph
        self.env: dict[torch.fx.Node, Any] = {}
        self.owner: dict[str, torch.fx.Node] = {}
        self.extern_names: dict[torch.fx.Node, str] = {}
        self._counter = 0
        self._output_nodes: set = set()
        self._current: Optional[torch.fx.Node] = None
        self.preferred: set = set()  # (node, item) of values to store channels-last
        self.relaid: set[str] = set()
        self._order: Optional[dict] = None  # fx node -> position, for ``_uses_meet``
        self._channels_last_copies: dict[str, str] = {}
        self._reductions: dict = {}  # reduction_key -> buffer
        self.written: set[str] = set()  # inputs an ``InputWrite`` stores into (``input_writes``)
        metas = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
        self.sizes = GraphSizes(shape_env_of(metas + self.example_inputs))

    # ------------------------------------------------------------------------------------------
    # Names and buffers

    def new_name(self, prefix="buf") -> str:
        name = f"{prefix}{self._counter}"
        self._counter += 1
        return name

    def _meta_layout(self, node, size, item=None) -> Optional[Layout]:
        meta = node.meta.get("val") if node is not None else None
        if item is not None and isinstance(meta, (tuple, list)) and item < len(meta):
            meta = meta[item]
        if isinstance(meta, torch.Tensor) and self.sizes.shape(meta) == tuple(size):
            return dense_layout_like(self.sizes.shape(meta), self.sizes.strides(meta), meta.dtype,
                                     self.sizes.positive)
        return None

    def realize(self, value: TensorValue, node=None, item=None, layout=None) -> BufferValue:
        """A buffer holding ``value`` (``value`` itself if it is one).

        Its layout is ``layout`` if given, else channels-last for a convolution operand, else
        what the fx node's fake value has (``item``: the position in a tuple result).
        """
        if isinstance(value, BufferValue):
            return value
        node = node if node is not None else self._current
        relaid = False
        if layout is None:
            layout = self._meta_layout(node, value.size, item)
            if layout is None or layout.dtype != value.dtype:
                layout = self.sizes.contiguous(value.size, value.dtype)
            if ((node, item) in self.preferred or self._follows_channels_last(value)) and \
                    node not in self._output_nodes and value.ndim == 4 and value.dtype in DTYPES:
                relaid = not is_channels_last(layout)
                layout = channels_last(value.size, value.dtype)
        name = self.new_name()
        self.nodes.append(ComputedBuffer(name, layout, value))
        self.layouts[name] = layout
        self.owner[name] = node
        if relaid:
            self.relaid.add(name)
        return BufferValue(name, layout)

    def _follows_channels_last(self, value: TensorValue) -> bool:
        """True for an elementwise value over a channels-last buffer of its own size (batch norm, an
        activation, a residual add after a convolution): stored channels-last too, as eager's
        elementwise ops keep their input's memory format, so that neither it nor the convolution
        that may read it next walks a transpose."""
        if not self.channels_last or not isinstance(value, Pointwise) or value.ndim != 4:
            return False
        probe = ComputedBuffer("probe", self.sizes.contiguous(value.size, value.dtype), value)
        return any(not indirect and is_channels_last(self.layouts.get(name))
                   and tuple(self.layouts[name].size) == tuple(value.size)
                   for name, _, indirect in probe.reads())

    def realize_reduction(self, reduction: Reduction) -> BufferValue:
        """A buffer holding ``reduction`` — the buffer of an identical earlier one if any (a
        decomposed layer_norm sums its input twice), seen through a layout of its own size."""
        key = reduction_key(reduction)
        if key is not None and key in self._reductions:
            name = self._reductions[key]
            return BufferValue(name, relayout(self.layouts[name], reduction.size))
        layout = self._meta_layout(self._current, reduction.size)
        if layout is None or layout.dtype != reduction.dtype:
            layout = self.sizes.contiguous(reduction.size, reduction.dtype)
        name = self.new_name()
        self.nodes.append(ComputedBuffer(name, layout, reduction))
        self.layouts[name] = layout
        self.owner[name] = self._current
        if key is not None:
            self._reductions[key] = name
        return BufferValue(name, layout)

    def read_only_by(self, node, user) -> bool:
        """True when fx ``user`` is the only reader of fx ``node``'s value (not the graph's output either)."""
        return isinstance(node, torch.fx.Node) and set(node.users) == {user} and node not in self._output_nodes

    def owns_storage(self, node, value: BufferValue) -> bool:
        """True when ``value`` is laid out exactly like eager's tensor for ``node``, at offset 0."""
        meta = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
        if not isinstance(meta, torch.Tensor) or self.owner.get(value.name) is not node:
            return False
        if node.op == "placeholder" or node.target in VIEW_OPS:
            return False
        return (self.sizes.expr(meta.storage_offset()) == 0 and self.sizes.strides(meta) == value.layout.stride
                and value.layout.offset == 0)

    # ------------------------------------------------------------------------------------------
    # The walk

    def run(self):
        graph = self.gm.graph
        output_node = next(n for n in graph.nodes if n.op == "output")
        self._output_nodes = set(output_node.all_input_nodes)
        # oneDNN's and cuDNN's fast convolutions work in NHWC order, and both reorder NCHW operands
        # on every call: the convolutions' operands are stored channels-last (``channels_last.py``).
        self.channels_last_operands = OPERANDS.get(self.device.type, ())
        self.channels_last = bool(self.channels_last_operands)
        self.preferred = preferred_operands(graph, self.channels_last_operands)
        placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        if len(placeholders) != len(self.example_inputs):
            raise GraphFallback("example inputs do not match the placeholders")
        for position, (node, example) in enumerate(zip(placeholders, self.example_inputs)):
            self._placeholder(position, node, example)
        self.sizes.finish_inputs()
        for node in graph.nodes:
            self._current = node
            if node.op == "call_function":
                self._call_function(node)
            elif node.op == "get_attr":
                self._get_attr(node)
            elif node.op == "call_module" or node.op == "call_method":
                raise GraphFallback(f"{node.op} in an aten graph")
        self._current = None
        self.outputs = self._output(output_node.args[0])
        return self

    def _int_input(self, position, value):
        value = self.sizes.expr(value)
        self.sizes.add_int_input(position, value)
        return value

    def _placeholder(self, position, node, example):
        meta = node.meta.get("val")
        for kind, note in ((torch.SymInt, self._int_input), (torch.SymFloat, self.sizes.add_float_input)):
            if isinstance(meta, kind) or isinstance(example, kind):  # (a number the wrapper reads at call time)
                self.env[node] = note(position, meta if isinstance(meta, kind) else example)
                self.inputs.append(None)
                return
        if not isinstance(example, torch.Tensor):
            if isinstance(example, (int, float, bool)):
                self.env[node] = example
                self.inputs.append(None)
                return
            raise GraphFallback(f"non-tensor input {type(example).__name__}")
        if example.device != self.device:
            raise GraphFallback(f"device {example.device}")
        if example.layout != torch.strided or example.is_complex() or example.is_quantized:
            raise GraphFallback(f"input {example.dtype}/{example.layout}")
        # The traced sizes where they are symbolic (the example may be a real tensor), else the
        # example's.
        symbolic = isinstance(meta, torch.Tensor) and meta.layout == torch.strided and shape_env_of([meta])
        source = meta if symbolic else example
        name = re.sub(r"\W", "_", node.name)
        if not name.isidentifier() or name in self.layouts or re.fullmatch(r"[su]\d+", name):
            name = self.new_name("arg")
        layout = Layout(self.sizes.shape(source), self.sizes.strides(source), example.dtype)
        self.sizes.add_tensor_input(position, layout.size, layout.stride)
        self.layouts[name] = layout
        self.owner[name] = node
        self.inputs.append(name)
        self.env[node] = BufferValue(name, layout)

    def _get_attr(self, node):
        value = self.gm
        for part in node.target.split("."):
            value = getattr(value, part)
        if not isinstance(value, torch.Tensor) or value.device != self.device or value.is_complex():
            raise GraphFallback(f"constant {node.target} of type {type(value).__name__}")
        name = self.new_name("const")
        layout = Layout(tuple(value.shape), tuple(value.stride()), value.dtype)
        self.constants[name] = value
        self.layouts[name] = layout
        self.owner[name] = node
        self.env[node] = BufferValue(name, layout)

    def _lowered_args(self, node):
        def convert(a):
            if isinstance(a, torch.fx.Node):
                return self.env[a]
            if isinstance(a, (list, tuple)):
                return type(a)(convert(x) for x in a)
            return a

        return convert(node.args), {k: convert(v) for k, v in node.kwargs.items()}

    def _call_function(self, node):
        meta = node.meta.get("val")
        made = made_sizes(node, self.sizes.shape_env)  # (raises for a number from data: ``.item()``)
        if isinstance(meta, (torch.SymInt, torch.SymFloat)):
            # Size arithmetic (sym_size, s0 * s1, ...): its value is the expression torch traced.
            self.env[node] = self.sizes.scalar(meta)
            return
        if isinstance(meta, torch.SymBool):  # (a relation between sizes, for an assertion)
            self.env[node] = SizeRelation(self.sizes.torch_expr(meta))
            return
        if node.target in SIZE_ASSERTIONS:
            self.sizes.add_assertions_of(node)
            return
        self._check_sizes(meta)
        if node.target is operator.getitem:
            self._getitem(node)
            return
        if made:
            # A size from data (a mask's count): the op runs as a library call, the wrapper reads
            # the size from its result.
            self._extern(node, "makes sizes from data: " + ", ".join(map(str, made)), counted=False)
            call = self.nodes[-1]
            call.makes_sizes = tuple(made)
            for symbol, path in made.items():
                self.sizes.add_output_size(symbol, call.name, path)
            return
        if node.target is COPY and lower_input_write(self, node):
            return
        lowering = lookup_lowering(node.target)
        if lowering is None:
            self._extern(node, "no lowering")
            return
        args, kwargs = self._lowered_args(node)
        if not self._all_lowerable(args, kwargs):
            self._extern(node, "argument is not a lowered tensor")
            return
        marker = len(self.nodes)
        try:
            value = lowering(LoweringContext(self, node, meta), *args, **kwargs)
            self._check_result(value, meta)
        except Unsupported as e:
            del self.nodes[marker:]
            self._extern(node, f"unsupported: {e}")
            return
        self.env[node] = self._maybe_realize(node, value)

    def _check_sizes(self, meta):
        """Refuse results the compiler cannot express (symbolic floats and bools; sizes in
        another vocabulary raise UnsupportedSize when read)."""
        metas = meta if isinstance(meta, (list, tuple)) else [meta]
        for m in metas:
            if isinstance(m, torch.Tensor) and m.layout == torch.strided:
                self.sizes.shape(m)
                self.sizes.strides(m)
            if isinstance(m, (torch.SymInt, torch.SymFloat, torch.SymBool)):
                raise GraphFallback(f"symbolic {type(m).__name__} value")

    def _all_lowerable(self, args, kwargs) -> bool:
        ok = True

        def visit(a):
            nonlocal ok
            if isinstance(a, (list, tuple)):
                for x in a:
                    visit(x)
            elif isinstance(a, (torch.fx.Node, ExternResult, SizeRelation)):
                ok = False

        visit(args)
        visit(kwargs)
        return ok

    def _check_result(self, value, meta):
        values = value if isinstance(value, tuple) else (value,)
        metas = meta if isinstance(meta, (tuple, list)) else (meta,)
        if len(values) != len(metas):
            raise Unsupported("result arity differs from the node's")
        for v, m in zip(values, metas):
            if not isinstance(v, TensorValue) or not isinstance(m, torch.Tensor):
                raise Unsupported("non-tensor result")
            size = self.sizes.shape(m)
            same = len(v.size) == len(size) and all(self.sizes.equal(a, b) for a, b in zip(v.size, size))
            if not same or v.dtype != m.dtype:
                raise Unsupported(f"lowered to {v.size}/{v.dtype}, node has {size}/{m.dtype}")

    def _maybe_realize(self, node, value):
        if isinstance(value, tuple):
            if node.target in VIEW_OPS:
                return value
            return tuple(self.realize(v, node, item=i) if not isinstance(v, BufferValue) else v
                         for i, v in enumerate(value))
        if not isinstance(value, Pointwise):
            return value
        is_view = node.target in VIEW_OPS
        if node in self._output_nodes and not is_view:
            return self.realize(value, node)
        counts = count_ops(value.inner_fn, [0] * value.ndim)
        if counts.ops > BODY_MAX_OPS:
            return self.realize(value, node)
        users = len(node.users)
        expensive = any(op in TRANSCENDENTAL for op in counts.op_names)
        if users > 1 and not is_view and (expensive or counts.ops > INLINE_MAX_OPS
                                          or counts.loads > INLINE_MAX_LOADS) and not self._uses_meet(node):
            return self.realize(value, node)
        return value

    def _uses_meet(self, node) -> bool:
        """True when every use of ``node`` flows, through elementwise ops of its size that are
        used nowhere else, into one node (an ELU's three uses of its input meet in a ``where``):
        then all its uses are one kernel's, which computes it once (the kernel printers share
        common subexpressions), so it needs no buffer of its own."""
        order = {n: i for i, n in enumerate(node.graph.nodes)} if self._order is None else self._order
        self._order = order
        shape = node.meta["val"].shape
        frontier, seen = set(node.users), 0
        while len(frontier) > 1:
            user = min(frontier, key=order.__getitem__)
            meta = user.meta.get("val")
            if (seen >= MEET_MAX_NODES or user.op != "call_function" or user in self._output_nodes
                    or getattr(user.target, "overloadpacket", user.target) not in ELEMENTWISE
                    or not isinstance(meta, torch.Tensor) or meta.shape != shape):
                return False
            frontier.remove(user)
            frontier.update(user.users)
            seen += 1
        return len(frontier) == 1

    def _getitem(self, node):
        base, index = node.args
        value = self.env[base]
        if isinstance(value, ExternResult):
            name = self.new_name()
            layout = self._layout_of_meta(node.meta.get("val"))
            self.nodes.append(GetItem(name, value.name, index, layout))
            self.owner[name] = node
            if layout is not None:
                self.layouts[name] = layout
                self.env[node] = BufferValue(name, layout)
            else:
                self.env[node] = ExternResult(name)
            return
        self.env[node] = value[index]

    def _layout_of_meta(self, meta) -> Optional[Layout]:
        if isinstance(meta, torch.Tensor) and meta.layout == torch.strided:
            return Layout(self.sizes.shape(meta), self.sizes.strides(meta), meta.dtype)
        return None

    # ------------------------------------------------------------------------------------------
    # Extern calls and wrapper views

    def _view_offset(self, node, base: str) -> Optional[int]:
        """The storage offset of view ``node`` from its base buffer's, when its meta layout is all
        there is to it: same dtype, and the base buffer laid out as the fx graph's base (then the
        wrapper makes the view with one ``as_strided``-like call). None otherwise."""
        val, base_val = node.meta.get("val"), node.args[0].meta.get("val")
        if not isinstance(base_val, torch.Tensor) or val.dtype != base_val.dtype:
            return None
        if not getattr(node.target, "is_view", False):
            return None  # (``flip``: a view in our IR, a new tensor to torch — its meta layout is a copy's)
        if self.layouts.get(base) != self._layout_of_meta(base_val):
            return None
        offset = val.storage_offset() - base_val.storage_offset()
        layout = self._layout_of_meta(val)
        concrete = layout is not None and all(type(n) is int for n in (*layout.size, *layout.stride))
        return offset if type(offset) is int and concrete else None  # (symbolic: the view op itself)

    def buffer_for_extern(self, node) -> str:
        """The name of a buffer holding ``node``'s value as eager would (views stay views)."""
        value = self.env[node]
        if isinstance(value, ExternResult):
            return value.name
        if isinstance(value, BufferValue) and self.owner.get(value.name) is node:
            return value.name
        if node in self.extern_names:
            return self.extern_names[node]
        if (node.target in VIEW_OPS and node.args and isinstance(node.args[0], torch.fx.Node)
                and isinstance(node.meta.get("val"), torch.Tensor)):
            base = self.buffer_for_extern(node.args[0])
            if base not in self.relaid:
                name = self.new_name("view")
                layout = self._layout_of_meta(node.meta["val"])
                self.nodes.append(WrapperView(name, node.target, base, self._view_args(node), layout,
                                              self._view_offset(node, base)))
                self.layouts[name] = layout
                self.owner[name] = node
                self.extern_names[node] = name
                return name
        elif (node.target is operator.getitem and isinstance(node.args[0], torch.fx.Node)
                and node.args[0].target in VIEW_OPS and isinstance(node.meta.get("val"), torch.Tensor)
                and self.buffer_for_extern(node.args[0].args[0]) not in self.relaid):
            # An element of a multi-output view (split, unbind): a view in the wrapper too.
            base_node = node.args[0]
            if base_node not in self.extern_names:
                base = self.buffer_for_extern(base_node.args[0])
                name = self.new_name("views")
                self.nodes.append(WrapperView(name, base_node.target, base, self._view_args(base_node), None))
                self.owner[name] = base_node
                self.extern_names[base_node] = name
            name = self.new_name("view")
            layout = self._layout_of_meta(node.meta["val"])
            self.nodes.append(GetItem(name, self.extern_names[base_node], node.args[1], layout))
            self.layouts[name] = layout
            self.owner[name] = node
            self.extern_names[node] = name
            return name
        if isinstance(value, BufferValue):
            # An identity lowering of a non-view op: eager made a fresh tensor, so do we.
            value = Pointwise(value.size, value.dtype, value.make_loader())
        buffer = self.realize(value, node)
        self.extern_names[node] = buffer.name
        if self.env[node] is value or isinstance(self.env[node], Pointwise):
            self.env[node] = buffer
        return buffer.name

    def _view_args(self, node) -> tuple:
        """The arguments of view ``node`` after its base; sizes computed in the graph (SymInt
        nodes) are their expressions, which the wrapper evaluates."""
        def convert(a):
            if isinstance(a, torch.fx.Node):
                value = self.env[a]
                if isinstance(value, (TensorValue, ExternResult, tuple)):
                    raise GraphFallback(f"tensor argument to view {node.name}")
                return value
            if isinstance(a, (list, tuple)):
                return type(a)(convert(x) for x in a)
            return a

        return tuple(convert(a) for a in node.args[1:])

    def _extern(self, node, reason: str, counted: bool = True):
        target = node.target
        schema = getattr(target, "_schema", None)
        if schema is not None and schema.is_mutable:
            self._realize_pending(node)
            self._reductions.clear()  # what they read may change

        def convert(a):
            if isinstance(a, torch.fx.Node):
                value = self.env[a]
                if isinstance(value, (TensorValue, ExternResult)):
                    return BufferRef(self.buffer_for_extern(a))
                if isinstance(value, tuple):
                    raise GraphFallback("tuple argument to an extern call")
                if isinstance(value, SizeRelation):
                    raise GraphFallback(f"a relation between sizes as an argument of {node.name}")
                return value
            if isinstance(a, (list, tuple)):
                return type(a)(convert(x) for x in a)
            return a

        args = convert(node.args)
        kwargs = {k: convert(v) for k, v in node.kwargs.items()}
        meta = node.meta.get("val")
        layout = self._layout_of_meta(meta)
        if self.channels_last and wants_channels_last(node):
            args = tuple(BufferRef(self._channels_last_copy(a.name))
                         if i in self.channels_last_operands and isinstance(a, BufferRef) else a
                         for i, a in enumerate(args))
        if self.channels_last and (wants_channels_last(node) or any(
                isinstance(a, BufferRef) and a.name in self.relaid for a in args)):
            # (a library op given operands laid out unlike the graph says lays its result out from them)
            fake_mode = getattr(meta, "fake_mode", None)
            size = layout.size if layout is not None else None
            layout = result_layout(target, args, kwargs, self.layouts, fake_mode, size) or layout
        name = self.new_name()
        op_name = getattr(target, "__name__", str(target))
        if isinstance(target, torch._ops.OpOverload):
            op_name = f"{target.overloadpacket.__name__}.{target._overloadname}"
        expected = _expected_extern(target)
        if expected:
            reason = "library kernel"
        call = ExternCall(name, target, args, kwargs, meta, reason, counted=counted and not expected)
        self.nodes.append(call)
        self.owner[name] = node
        if call.counted:
            self.fallbacks.append((op_name, reason))
        if layout is not None:
            if layout != self._layout_of_meta(meta):
                self.relaid.add(name)
            self.layouts[name] = layout
            self.env[node] = BufferValue(name, layout)
        else:
            self.env[node] = ExternResult(name)

    def _channels_last_copy(self, name: str) -> str:
        """``name`` if its buffer is channels-last, else a channels-last copy of it."""
        layout = self.layouts.get(name)
        if layout is None or len(layout.size) != 4 or is_channels_last(layout) or layout.dtype not in DTYPES:
            return name
        if name not in self._channels_last_copies:
            source = BufferValue(name, layout)
            copy = Pointwise(layout.size, layout.dtype, source.make_loader())
            target = channels_last(layout.size, layout.dtype)
            self._channels_last_copies[name] = self.realize(copy, layout=target).name
        return self._channels_last_copies[name]

    def _realize_pending(self, before):
        """Realize every lazy value still needed after ``before`` (it may mutate their sources)."""
        order = {n: i for i, n in enumerate(self.gm.graph.nodes)}
        here = order[before]
        for node, value in list(self.env.items()):
            if isinstance(value, Pointwise) and any(order[u] > here for u in node.users):
                self.env[node] = self.realize(value, node)

    # ------------------------------------------------------------------------------------------
    # Outputs

    def _output(self, structure):
        if isinstance(structure, (list, tuple)):
            return type(structure)(self._output(x) for x in structure)
        if isinstance(structure, torch.fx.Node):
            value = self.env[structure]
            if not isinstance(value, (TensorValue, ExternResult)):
                return Constant(value)
            if structure.op in ("placeholder", "get_attr"):
                return value.name
            name = self.buffer_for_extern(structure)
            if name in self.relaid:
                # Leave the graph laid out as eager would have it.
                source = BufferValue(name, self.layouts[name])
                name = self.realize(Pointwise(source.size, source.dtype, source.make_loader()), structure).name
            return name
        return Constant(structure)


def reduction_key(reduction: Reduction):
    """Equal for reductions computing the same values (None when the body cannot say)."""
    def over(size, prefix):
        variables = iter(index_vars(prefix, len(size)))
        return [sympy.Integer(0) if s == 1 else next(variables) for s in size]

    body = body_key(reduction.inner_fn, over(reduction.size, "x"), over(reduction.reduction_size, "r"))
    if body is None:
        return None
    nonone = lambda size: tuple(s for s in size if s != 1)  # noqa: E731
    return (reduction.reduction_type, reduction.dtype, reduction.src_dtype, nonone(reduction.size),
            nonone(reduction.reduction_size), body)


def relayout(layout: Layout, size) -> Layout:
    """``layout``'s elements seen with ``size``: the same dims of size > 1, in order."""
    strides = iter(st for sz, st in zip(layout.size, layout.stride) if sz != 1)
    stride = tuple(1 if s == 1 else next(strides) for s in size)
    return Layout(tuple(as_size(s) for s in size), stride, layout.dtype, layout.offset)


class ExternResult:
    """A non-tensor (e.g. tuple) result of an ExternCall, named in the wrapper."""

    def __init__(self, name: str):
        self.name = name


class Constant:
    """A non-tensor graph output (e.g. None)."""

    def __init__(self, value):
        self.value = value


# Ops we never intend to compile ourselves (matmul, convolution, attention, randomness):
# still ExternCalls, but not counted as fallbacks.
_EXPECTED = {
    "mm", "bmm", "addmm", "baddbmm", "convolution", "convolution_backward", "_convolution",
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_attention_math", "scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention_for_cpu_backward", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_backward", "_scaled_dot_product_efficient_attention_backward",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_cudnn_attention_backward",
    "native_dropout", "rand", "randn", "rand_like", "randn_like", "bernoulli", "randint",
    "addmv", "mv", "dot", "cudnn_convolution", "mkldnn_convolution", "_fused_sdp_choice",
}


def _expected_extern(target) -> bool:
    packet = getattr(target, "overloadpacket", None)
    return packet is not None and packet.__name__ in _EXPECTED
