"""The fusion scheduler: groups ComputedBuffers into kernels.

A kernel iterates an outer space ``outer`` (rows, run in parallel) and, per row, a sequence of
*stages*: an inner loop over ``inner`` (reductions and row-sized pointwise work) or a block of
per-row statements. A node joins a kernel when its iteration space fits the kernel's
(``fit``), every value it reads from the kernel is read at exactly the index it was stored
(``legal``), and the fusion saves memory traffic (``score``: bytes no longer written and read
back, or read twice). That covers pointwise→pointwise, pointwise→reduction, reduction→pointwise
epilogues and sibling reductions over the same rows. A write into a graph input (``InputWrite``)
joins a kernel only where the graph's order holds (``input_writes``: nothing after the kernel reads
the old values, nothing in it or before it the new ones), and always stays in memory.

After grouping, ``plan_storage`` decides where each buffer lives: memory (needed outside the
kernel), a per-row scalar, a per-row array, or a loop-local variable.

Symbolic sizes are compared structurally (two spaces fit when their sizes are the same
expressions); scores and buffer limits count a symbolic size as ``sizes.estimate`` says, so the
grouping depends on the graph, never on the sizes of the call that traced it.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import sympy

from .input_writes import InputWrite, last_old_reader, write_fits
from .ir import ComputedBuffer, ExternCall, ScatterBuffer, index_vars, is_static, prod
from .ops import DependencyHandler, IndexMap, current_handler, set_handler
from .sizes import estimate, is_float_symbol, is_size_symbol, is_unbacked

INNER, OUTER = "inner", "outer"
# Per-row arrays larger than this go to memory instead of the stack.
ROW_BUFFER_MAX_BYTES = 64 * 1024


def nonone(size) -> tuple:
    return tuple(s for s in size if s != 1)


def _dims_to_vars(size, variables):
    """Index over ``size``: size-1 dims get 0, the others take ``variables`` in order."""
    out, it = [], iter(variables)
    for s in size:
        out.append(sympy.Integer(0) if s == 1 else next(it))
    return out


@dataclasses.dataclass
class Stage:
    level: str  # INNER: a loop over the kernel's inner space; OUTER: once per row
    nodes: list


class Kernel:
    """ComputedBuffers run together: ``outer`` rows, each running ``stages`` in order."""

    def __init__(self, outer, inner):
        self.outer = tuple(outer)
        self.inner = tuple(inner)
        self.nodes: list[ComputedBuffer] = []
        self.levels: dict[str, str] = {}
        self.stages: list[Stage] = []
        self.name = ""
        # filled by plan_storage: buffer -> "memory" | "row_scalar" | "row_array" | "local"
        self.storage: dict[str, str] = {}
        # set by ``loop_merge.merge_loops``: the symbols of the nodes' own (outer, inner) dims,
        # and what each becomes over the loops' variables
        self.own_vars: Optional[tuple] = None
        self.joins: dict = {}
        # pointwise nodes whose dims are the rows' and the reduction's interleaved (batch norm's
        # NCHW pass after its per-channel sums): node -> the position in outer + inner of each of
        # its dims of size > 1
        self.orders: dict[str, tuple] = {}

    @property
    def outer_vars(self):
        return index_vars("x", len(self.outer))

    @property
    def inner_vars(self):
        return index_vars("r", len(self.inner))

    def node_index(self, node: ComputedBuffer, level: Optional[str] = None):
        """(index, rindex) to evaluate ``node``'s body with: over the kernel's loop variables, or
        over its nodes' own dims in a kernel of merged loops (``evaluate`` then maps what the body
        computes onto the loops)."""
        level = level or self.levels[node.name]
        outer_vars, inner_vars = self.own_vars or (self.outer_vars, self.inner_vars)
        if node.is_reduction:
            return (_dims_to_vars(node.data.size, outer_vars),
                    _dims_to_vars(node.data.reduction_size, inner_vars))
        variables = outer_vars + (inner_vars if level == INNER else [])
        order = self.orders.get(node.name)
        if order is not None and level == INNER:
            variables = [variables[i] for i in order]
        return _dims_to_vars(node.data.size, variables), []

    def join(self, expr):
        """``expr`` (an index over ``node_index``'s symbols) over the loops' variables."""
        expr = sympy.expand(expr)
        return sympy.expand(expr.xreplace(self.joins)) if self.joins else expr

    def evaluate(self, node: ComputedBuffer, level: Optional[str] = None):
        """Run ``node``'s body on the installed ``ops`` handler, its indexes over the loops' variables."""
        index, rindex = self.node_index(node, level)
        if not self.joins:
            return node.evaluate(index, rindex)
        with set_handler(IndexMap(current_handler(), self.join)):
            return node.evaluate(index, rindex)

    def store_index(self, node: ComputedBuffer, level: Optional[str] = None):
        index, _ = self.node_index(node, level)
        return self.join(node.layout.index(index))

    def reads(self, node: ComputedBuffer, level: Optional[str] = None):
        handler = DependencyHandler()
        with set_handler(handler):
            self.evaluate(node, level)
        return [(name, sympy.expand(expr), indirect) for name, expr, indirect in handler.reads]

    def produced(self) -> dict[str, ComputedBuffer]:
        return {n.name: n for n in self.nodes}


class ScatterKernel(Kernel):
    """A ``ScatterBuffer``'s kernel: one loop over its indices, fused with nothing (its updates
    read no element they write; what they write, only what runs after them reads)."""

    def __init__(self, node):
        super().__init__(nonone(node.data.size), ())
        self.nodes = [node]
        self.levels = {node.name: OUTER}
        self.stages = [Stage(OUTER, [node])]
        self.storage = {node.name: "memory"}

    @property
    def node(self):
        return self.nodes[0]

    def disjoint(self) -> list[bool]:
        """Per loop dim (``outer``): whether indices apart along it update distinct elements."""
        return [d for s, d in zip(self.node.data.size, self.node.data.disjoint) if s != 1]


class KernelNames:
    """Names in a kernel's source: fresh variables, one pointer parameter per buffer (``params``
    in argument order; ``out_ptr`` for the buffers the kernel stores), and one size parameter
    per size symbol (``size_params``: the graph's symbols, named ``ks0``, ``ks1``, ... in the
    kernel in the order it first uses them, so the source is the same whatever they are called
    in the graph). A float input's symbol (``index_expr`` of ``zf0``: ``x * scale``) is a
    parameter too, named ``kf0``, ``kf1``, ... (a ``double``)."""

    def __init__(self, kernel: Kernel):
        self.counter = 0
        self.params: list[str] = []
        self.param_names: dict[str, str] = {}
        self.stored = {n.name for n in kernel.nodes if kernel.storage[n.name] == "memory"}
        self.size_params: list[sympy.Symbol] = []
        self.size_names: dict[sympy.Symbol, sympy.Symbol] = {}

    def sized(self, expr):
        """``expr`` with the graph's size symbols replaced by the kernel's size parameters."""
        expr = sympy.sympify(expr)
        symbols = sorted((s for s in expr.free_symbols if is_size_symbol(s) or is_float_symbol(s)), key=str)
        for symbol in symbols:
            if symbol not in self.size_names:
                floats = sum(map(is_float_symbol, self.size_params))
                # (a size from data may be 0)
                sign = {"nonnegative": True} if is_unbacked(symbol) else {"positive": True}
                self.size_names[symbol] = sympy.Symbol(f"kf{floats}", real=True) if is_float_symbol(symbol) else \
                    sympy.Symbol(f"ks{len(self.size_params) - floats}", integer=True, **sign)
                self.size_params.append(symbol)
        return expr.xreplace({s: self.size_names[s] for s in symbols}) if symbols else expr

    def new_var(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def param(self, name: str) -> str:
        if name not in self.param_names:
            prefix = "out_ptr" if name in self.stored else "in_ptr"
            self.param_names[name] = f"{prefix}{len(self.params)}"
            self.params.append(name)
        return self.param_names[name]


def fit(kernel: Kernel, node: ComputedBuffer):
    """How ``node`` joins ``kernel``: (outer, inner, node level, existing nodes' new level) or None.

    ``existing`` is None when the kernel keeps its grouping, else the level all of its current
    nodes take under the new grouping (a pure pointwise kernel gaining a reduction).
    """
    O, I = kernel.outer, kernel.inner
    if node.is_reduction:
        S, R = nonone(node.data.size), nonone(node.data.reduction_size)
        if I:
            return (O, I, INNER, None) if (S, R) == (O, I) else None
        if S + R == O:
            return S, R, INNER, INNER
        if S == O:
            return S, R, INNER, OUTER
        return None
    P = nonone(node.data.size)
    if not I:
        return (O, I, OUTER, None) if P == O else None
    if P == O + I:
        return O, I, INNER, None
    if P == O:
        return O, I, OUTER, None
    return None


def interleavings(dims, outer, inner) -> list[tuple]:
    """The ways ``dims`` (a pointwise node's, size-1 ones left out) are ``outer`` and ``inner``
    interleaved, each in its own order: for each way, the position in ``outer + inner`` of each
    of ``dims``. A reduction over dims 0, 2, 3 of NCHW keeps C and reduces (N, H, W); the
    pointwise pass over (N, C, H, W) after it is C and (N, H, W) interleaved."""
    if len(dims) != len(outer) + len(inner) or not outer or not inner:
        return []
    found = []

    def walk(d, o, i, order):
        if d == len(dims):
            found.append(tuple(order))
            return
        if o < len(outer) and dims[d] == outer[o]:
            walk(d + 1, o + 1, i, order + [o])
        if i < len(inner) and dims[d] == inner[i]:
            walk(d + 1, o, i + 1, order + [len(outer) + i])

    walk(0, 0, 0, [])
    identity = tuple(range(len(dims)))
    return [order for order in found if order != identity]


class Scheduler:
    """Orders and groups the graph's nodes; read ``items`` (Kernels and wrapper-level nodes)."""

    def __init__(self, nodes, layouts, graph_outputs: set[str], fuse: bool = True):
        self.layouts = layouts
        self.graph_outputs = graph_outputs
        self.fuse = fuse
        self.items: list = []
        self.producer: dict[str, int] = {}  # buffer -> index of its item
        self.barrier = -1
        # (node, loop depths, level, order) -> what the node reads, over a trial kernel's variables: a
        # node is tried against many kernels of the same depths (``_legal``)
        self._reads: dict = {}
        for node in self._live(nodes):
            self._add(node)
        self.items = [it for it in self.items if not (isinstance(it, Kernel) and not it.nodes)]
        for i, item in enumerate(self.items):
            if isinstance(item, Kernel):
                if not isinstance(item, ScatterKernel):
                    plan_storage(item, self)
                item.name = kernel_name(item, i)

    # ------------------------------------------------------------------------------------------

    def _live(self, nodes):
        """Drop computed buffers nobody reads (extern calls always run)."""
        needed = set(self.graph_outputs)
        live = []
        for node in reversed(nodes):
            if isinstance(node, (ComputedBuffer, ScatterBuffer)) and node.name not in needed and \
                    not isinstance(node, InputWrite):
                continue
            live.append(node)
            needed |= node.buffer_reads()
        return list(reversed(live))

    def _add(self, node):
        if isinstance(node, ScatterBuffer):
            self.items.append(ScatterKernel(node))
            self.producer[node.name] = len(self.items) - 1
            return
        if not isinstance(node, ComputedBuffer):
            self.items.append(node)
            self.producer[node.name] = len(self.items) - 1
            # (nothing moves before an op that may change what it reads, nor before one making
            # sizes: a later node of such a size may read nothing of it)
            if isinstance(node, ExternCall) and (node.is_mutating or node.makes_sizes):
                self.barrier = len(self.items) - 1
            return
        best, best_score, best_fit = None, 0, None
        # (a write into an input joins no kernel before the last reader of the old values)
        floor, views = last_old_reader(self.items, node.name) if isinstance(node, InputWrite) else (-1, set())
        if self.fuse:
            for k in range(len(self.items) - 1, max(self.barrier, floor - 1), -1):
                kernel = self.items[k]
                if not isinstance(kernel, Kernel) or isinstance(kernel, ScatterKernel):
                    continue
                for how in self._fits(kernel, node):
                    if not self._legal(kernel, k, node, how):
                        continue
                    if isinstance(node, InputWrite) and not write_fits(self._trial(kernel, node, how), kernel, node,
                                                                         how[2], views):
                        continue
                    score = self._score(kernel, node)
                    if score > best_score:
                        best, best_score, best_fit = k, score, how
                    break
        if best is None:
            if node.is_reduction:
                kernel = Kernel(nonone(node.data.size), nonone(node.data.reduction_size))
            else:
                kernel = Kernel(nonone(node.data.size), ())
            self.items.append(kernel)
            best = len(self.items) - 1
            best_fit = (kernel.outer, kernel.inner, INNER if node.is_reduction else OUTER, None, None)
        self._place(self.items[best], node, best_fit)
        self.producer[node.name] = best
        for view in views:  # (what reads the new values through a view runs after the write too)
            self.producer[view] = max(self.producer.get(view, -1), best)

    def _fits(self, kernel: Kernel, node: ComputedBuffer) -> list:
        """How ``node`` may join ``kernel``: ``fit``'s way, else (a pointwise node over the rows' and
        the reduction's dims interleaved) one way per interleaving: (outer, inner, level, existing, order)."""
        how = fit(kernel, node)
        if how is not None:
            return [how + (None,)]
        if node.is_reduction or not kernel.inner:
            return []
        return [(kernel.outer, kernel.inner, INNER, None, order)
                for order in interleavings(nonone(node.data.size), kernel.outer, kernel.inner)]

    @staticmethod
    def _trial(kernel: Kernel, node: ComputedBuffer, how) -> Kernel:
        """``kernel`` laid out as it would be with ``node`` joined ``how``, without it."""
        outer, inner, level, existing, order = how
        trial = Kernel(outer, inner)
        trial.levels = {n: (existing or lv) for n, lv in kernel.levels.items()}
        trial.orders = dict(kernel.orders)
        if order is not None:
            trial.orders[node.name] = order
        return trial

    def _legal(self, kernel: Kernel, k: int, node: ComputedBuffer, how) -> bool:
        outer, inner, level, existing, order = how
        trial = self._trial(kernel, node, how)
        produced = kernel.produced()
        matched = False
        key = (node.name, len(outer), len(inner), level, order)
        reads = self._reads.get(key)
        if reads is None:
            reads = self._reads[key] = trial.reads(node, level)
        for name, index, indirect in reads:
            if name in produced:
                # (an input's new values are read after the kernel writing them)
                if indirect or isinstance(produced[name], InputWrite):
                    return False
                producer = produced[name]
                if index != trial.store_index(producer):
                    return False
                if not producer.is_reduction and trial.levels[name] == INNER and level == OUTER:
                    return False
                matched = True
            elif name in self.producer and self.producer[name] >= k:
                return False
        if order is not None:
            # Interleaved dims join only where a value of the kernel read at its own index says
            # which dim is which, and where what the node stores and reads lies along the innermost
            # loop (a channels-last pass would walk across the rows' stride: it runs on its own, in
            # its memory order).
            if not matched:
                return False
            last = trial.inner_vars[-1]
            if trial.store_index(node, level).coeff(last) != 1:
                return False
            if any(not indirect and index.coeff(last) not in (0, 1) for _, index, indirect in reads):
                return False
        return True

    def _score(self, kernel: Kernel, node: ComputedBuffer) -> int:
        produced = kernel.produced()
        kernel_reads = set()
        for n in kernel.nodes:
            kernel_reads |= n.buffer_reads()
        score = 0
        for name in node.buffer_reads():
            if name in produced or name in kernel_reads:
                layout = self.layouts.get(name)
                if layout is not None:
                    score += max(estimate(layout.numel), 1) * layout.dtype.itemsize
        return score

    def _place(self, kernel: Kernel, node: ComputedBuffer, how):
        outer, inner, level, existing, order = how
        if order is not None:
            kernel.orders[node.name] = order
        if existing is not None:
            for name in kernel.levels:
                kernel.levels[name] = existing
            for stage in kernel.stages:
                stage.level = existing
        kernel.outer, kernel.inner = outer, inner
        kernel.levels[node.name] = level
        reads = {name for name, _, _ in kernel.reads(node, level)}
        last = kernel.stages[-1] if kernel.stages else None
        joinable = (
            last is not None
            and last.level == level
            and not any(n.is_reduction and n.name in reads for n in last.nodes)
        )
        if joinable:
            last.nodes.append(node)
        else:
            kernel.stages.append(Stage(level, [node]))
        kernel.nodes.append(node)

    # ------------------------------------------------------------------------------------------

    def readers(self) -> dict[str, set[int]]:
        """buffer -> indexes of the items that read it."""
        found: dict[str, set[int]] = {}
        for i, item in enumerate(self.items):
            names = set()
            if isinstance(item, Kernel):
                for n in item.nodes:
                    names |= n.buffer_reads()
            else:
                names = item.buffer_reads()
            for name in names:
                found.setdefault(name, set()).add(i)
        return found


def plan_storage(kernel: Kernel, scheduler: Scheduler) -> None:
    """Decide where each buffer ``kernel`` produces lives (see ``Kernel.storage``)."""
    me = scheduler.items.index(kernel)
    readers = scheduler.readers()
    stage_of = {n.name: i for i, st in enumerate(kernel.stages) for n in st.nodes}
    readers_in_kernel: dict[str, set[int]] = {}
    for node in kernel.nodes:
        for name in node.buffer_reads():
            readers_in_kernel.setdefault(name, set()).add(stage_of[node.name])
    for node in kernel.nodes:
        name = node.name
        outside = readers.get(name, set()) - {me}
        if name in scheduler.graph_outputs or outside or isinstance(node, InputWrite):
            kernel.storage[name] = "memory"
        elif kernel.levels[name] == OUTER or node.is_reduction:
            kernel.storage[name] = "row_scalar"
        elif readers_in_kernel.get(name, set()) <= {stage_of[name]}:
            kernel.storage[name] = "local"
        elif not is_static(kernel.inner):
            # A row of unknown length: the C++ kernel keeps it in one heap array per thread.
            kernel.storage[name] = "row_array"
        elif prod(kernel.inner) * node.layout.dtype.itemsize <= ROW_BUFFER_MAX_BYTES:
            kernel.storage[name] = "row_array"
        else:
            kernel.storage[name] = "memory"


def kernel_name(kernel: Kernel, index: int) -> str:
    names = []
    for node in kernel.nodes:
        for op in node.op_names():
            if op not in names and op not in ("where",):
                names.append(op)
    if not names:
        names = ["copy"]
    if isinstance(kernel, ScatterKernel):  # (named for what it puts; the positions' checks go unnamed)
        values = [op for op in dict.fromkeys(kernel.node.value_op_names()) if op != "where"]
        return f"cpp_scatter_{kernel.node.data.mode}_" + "".join(f"{op}_" for op in values[:4]) + str(index)
    return "cpp_fused_" + "_".join(names[:6]) + f"_{index}"
