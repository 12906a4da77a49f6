"""A scheduled ``Kernel`` as one ``@triton.jit`` function: block layout, masks, stages, reductions.

Three shapes of kernel, chosen by ``plan.plan_launch``:

* pointwise — a 1-D block of ``XBLOCK`` elements of the flattened iteration space;
* tiled pointwise — where a load walks memory along another dim than the store does (a
  transpose): a 2-D ``[XBLOCK, RBLOCK]`` tile, its rows the dims up to the load's contiguous one,
  its columns the rest, so both the load and the store touch memory contiguously (Triton moves
  the tile between the two orders through shared memory);
* persistent reduction — a ``[XBLOCK, RBLOCK]`` block holding whole rows (``RBLOCK >= rnumel``):
  every stage works on values kept in registers, so each input is read once;
* looped reduction — rows too long to hold: each stage with per-element work loops over the row
  in ``RBLOCK`` chunks; an element value of an earlier loop that a later loop reads is computed
  again there (from its inputs) rather than kept.

The scheduler's stages carry over unchanged (the C++ printer reads the same ones): a row value
(a reduction, per-row arithmetic) is a ``[XBLOCK, 1]`` tensor visible to every later stage.

Before printing, adjacent dims that every index walks as one are merged (a contiguous
``[N, C]`` is walked as ``N*C`` elements), so contiguous kernels index with one variable and
divide nothing. Every load and store is masked by the block axes it varies along.

Symbolic sizes are kernel arguments (``ks0``, ... before ``xnumel``); a kernel over a symbolic
iteration space indexes in int64 and is never tiled. A symbolic reduction is printed in both
forms, persistent and looped, and each launch takes the one its rows fit (see
``runtime.SymbolicLauncher``) with a block config from the sizes of that call
(``launch_configs``), so the sources depend on the graph alone.
"""
from __future__ import annotations

from collections import Counter, defaultdict

import sympy
import torch

from ..cpp.loops import PointwiseNest, linear_coefficients
from ..cpp.reductions import accumulator_dtype
from ..input_writes import InputWrite
from ..ir import is_static, prod
from ..ops import DependencyHandler, set_handler
from ..scheduler import INNER, Kernel, KernelNames
from ..sizes import is_float_symbol
from .dtypes import HALF_TYPES, TritonUnsupported, compute_type
from .handler import TritonHandler, TritonValue, print_index, stored
from .plan import TILE_ROWS_MIN, plan_launch

INT32_MAX = 2**31 - 1

# Stands for a load's eviction policy until the kernel is printed (``KernelPrinter._evictions``).
EVICTION_MARK = "@evict:{}@"

PRELUDE = '''import triton
import triton.language as tl


@triton.jit
def magpy_prod(a, b):
    return a * b


@triton.jit
def magpy_max(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def magpy_min(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def magpy_round_bf16(x):
    # float32 -> the nearest bfloat16, ties to even, kept in float32
    bits = x.to(tl.int32, bitcast=True)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) & -65536
    return tl.where(x != x, x, rounded.to(tl.float32, bitcast=True))
'''


class _IndexCollector(DependencyHandler):
    """Records every index a body uses: loads (``reads``) and ``index_expr`` (``exprs``)."""

    def __init__(self):
        super().__init__()
        self.exprs = []

    def index_expr(self, expr, dtype):
        self.exprs.append(sympy.expand(sympy.sympify(expr)))
        return super().index_expr(expr, dtype)


def merge_dims(groups, exprs):
    """Merge adjacent dims (outer, inner) of each group that every expr walks as one dim.

    ``groups`` are lists of ``[symbol, size]``, outermost first. Returns the merged groups and
    the renames that apply the merge to an expression (the outer symbol becomes 0; the inner
    one then stands for the merged dim).
    """
    renames = {}
    merged = []
    for group in groups:
        group = [list(g) for g in group]
        changed = True
        while changed:
            changed = False
            for i in range(len(group) - 1):
                (outer, _), (inner, inner_size) = group[i], group[i + 1]
                if all(_walks_as_one(e, outer, inner, inner_size) for e in exprs):
                    exprs = [e.xreplace({outer: 0}) for e in exprs]
                    renames = {k: v.xreplace({outer: 0}) if isinstance(v, sympy.Expr) else v
                               for k, v in renames.items()}
                    renames[outer] = sympy.Integer(0)
                    group[i + 1][1] = group[i][1] * inner_size
                    del group[i]
                    changed = True
                    break
        merged.append(group)
    return merged, renames


def _walks_as_one(expr, outer, inner, inner_size) -> bool:
    if outer not in expr.free_symbols and inner not in expr.free_symbols:
        return True
    coeffs = linear_coefficients(expr, [outer, inner])
    return coeffs is not None and sympy.expand(coeffs[0] - coeffs[1] * inner_size) == 0


class KernelPrinter(KernelNames):
    """Prints one Triton kernel; ``params`` is the buffer order of its pointer arguments."""

    def __init__(self, kernel: Kernel, layouts, interpret: bool = False, kind=None, wide=None):
        super().__init__(kernel)
        self.kind = kind
        self.force_wide = wide
        self.kernel = kernel
        self.layouts = layouts
        self.interpret = interpret
        self.produced = {n.name: n for n in kernel.nodes}
        self.indirect_axes: dict = {}
        self.values: dict[str, TritonValue] = {}  # buffer -> value of this row (or block)
        self.loop_values = None  # buffer -> value, inside a loop of a looped reduction
        self.stores_rows = False
        self.load_sites: Counter = Counter()  # buffer -> loads of it printed (reduction kernels)
        self.shared_loads: dict = defaultdict(bool)  # buffer -> whether a load of it is the same for every row
        self._plan_dims()

    # ------------------------------------------------------------------------------------------
    # Axes and masks

    def _plan_dims(self):
        """Group the kernel's dims into the block's axes (merging those walked as one), and
        choose the plan: a pointwise kernel is tiled when a load is transposed to its store."""
        k = self.kernel
        collector = _IndexCollector()
        with set_handler(collector):
            for node in k.nodes:
                node.evaluate(*k.node_index(node))
        exprs = [sympy.expand(e) for _, e, _ in collector.reads] + collector.exprs
        exprs += [k.store_index(n) for n in k.nodes if n.name in self.stored]
        outer, inner = list(zip(k.outer_vars, k.outer)), list(zip(k.inner_vars, k.inner))
        tile = None
        if not k.inner and len(outer) > 1:
            nest = PointwiseNest.plan(k, set(self.produced))
            outer = [outer[i] for i in nest.order]
            cut = nest.order.index(nest.tile) + 1 if nest.tile is not None else 0
            # Rows of tiles run along grid axis 1, which takes at most 65535 blocks (symbolic sizes:
            # each launch checks, and takes the untiled form past it).
            rows = prod([size for _, size in outer[:cut]])
            if cut and self.kind != "pointwise" and (not is_static([rows]) or rows <= 65535 * TILE_ROWS_MIN):
                outer, inner = outer[:cut], outer[cut:]
                tile = ([size for _, size in outer], [size for _, size in inner])
        groups, self.renames = merge_dims([outer, inner], exprs)
        self.x_dims, self.r_dims = groups
        self.axis_of = {s: "x" for s, _ in outer}
        self.axis_of.update({s: "r" for s, _ in inner})
        self.plan = plan_launch(k, self.interpret, tile, self.kind)
        self.wide = self._needs_int64(self.buffers(collector)) if self.force_wide is None else self.force_wide

    def buffers(self, collector) -> list:
        """The layouts of the buffers the kernel reads (as ``collector`` saw its loads) and stores."""
        names = dict.fromkeys([name for name, _, _ in collector.reads] + [n.name for n in self.kernel.nodes])
        return [self.layouts[name] for name in names if name in self.layouts]

    def _needs_int64(self, layouts) -> bool:
        """Do the kernel's indexes need int64: its sizes unknown, or a buffer it reaches past int32?"""
        if self.plan.symbolic or not all(layout.is_static for layout in layouts):
            return True  # sizes of unknown magnitude
        if self.plan.xnumel * max(self.plan.rnumel, 1) > INT32_MAX:
            return True
        for layout in layouts:
            extent = layout.offset + 1 + sum((int(s) - 1) * abs(int(st))
                                             for s, st in zip(layout.size, layout.stride) if int(s) > 0)
            if extent > INT32_MAX:
                return True
        return False

    def rename(self, expr):
        return sympy.expand(expr.xreplace(self.renames)) if self.renames else expr

    def index(self, expr) -> str:
        """Triton text of an index or size expression, size symbols read from the arguments."""
        return print_index(self.sized(expr))

    def size(self, size) -> str:
        return str(size) if isinstance(size, int) else self.index(size)

    def axes_of(self, expr) -> frozenset:
        axes = set()
        for s in expr.free_symbols:
            if s in self.axis_of:
                axes.add(self.axis_of[s])
            else:
                axes |= self.indirect_axes.get(s, frozenset())
        return frozenset(axes)

    @staticmethod
    def mask_text(axes, extra=None) -> str:
        parts = [m for axis, m in (("x", "xmask"), ("r", "rmask")) if axis in axes]
        if extra is not None:
            parts.append(extra.text)
        return " & ".join(parts)

    @staticmethod
    def spread(text: str, missing) -> str:
        """``text`` made to vary (by adding 0) along the block axes it does not: a pointer block
        must have the shape of its mask."""
        for axis in sorted(missing):
            text += f" + 0 * {axis}index"
        return text

    def _decompose(self, lines, indent, dims, flat):
        """Each dim's variable from the flat index: innermost is ``flat % size``, and so on."""
        stride = 1
        for symbol, size in reversed(dims):
            text = flat if stride == 1 else f"({flat} // {self.size(stride)})"
            if symbol is not dims[0][0]:
                text = f"{text} % {self.size(size)}"
            lines.append(f"{indent}{symbol.name} = {text}")
            stride = stride * size if isinstance(size, int) and isinstance(stride, int) else sympy.expand(stride * size)

    # ------------------------------------------------------------------------------------------
    # Loads and stores

    def load(self, handler: TritonHandler, name: str, index) -> TritonValue:
        node = self.produced.get(name)
        if node is not None and not isinstance(node, InputWrite):  # (an input's old values: from memory)
            return self._produced(handler, node)
        layout = self.layouts[name]
        index = self.rename(index)
        axes = self.axes_of(index)
        extra = handler.mask
        # A load of one element still loads a block (Triton's interpreter mishandles 0-d values).
        ptr_axes = axes | (extra.axes if extra is not None else frozenset()) or frozenset("x")
        offset = self.spread(self.index(index), ptr_axes - axes)
        mask = self.mask_text(ptr_axes, extra)
        ptr = self.param(name)
        rows = self.plan.kind in ("persistent", "looped")
        hint = f", eviction_policy={EVICTION_MARK.format(name)}" if rows else ""
        text = f"tl.load({ptr} + ({offset}), {mask}, other=0{hint})" if mask else \
            f"tl.load({ptr} + ({offset}){hint})"
        if layout.dtype in HALF_TYPES:
            text += ".to(tl.float32)"
        printed = len(handler.lines)
        value = handler.emit(text, layout.dtype, ptr_axes, exact=True)
        if rows and len(handler.lines) > printed:  # (not an earlier load of this scope)
            self.load_sites[name] += 1
            self.shared_loads[name] |= "x" not in axes
        return value

    def _produced(self, handler, node) -> TritonValue:
        if self.loop_values is not None and node.name in self.loop_values:
            return self.loop_values[node.name]
        if node.name in self.values:
            return self.values[node.name]
        if self.loop_values is None or node.is_reduction:
            raise TritonUnsupported(f"{node.name} read before it is computed")
        # An element value of an earlier loop: computed again here, not kept.
        value = self.evaluate(handler, node)
        self.loop_values[node.name] = value
        return value

    def evaluate(self, handler, node) -> TritonValue:
        """The value of pointwise ``node`` at this block, in the node's dtype."""
        with set_handler(handler):
            value = node.evaluate(*self.kernel.node_index(node))
            return handler.to_dtype(value, node.layout.dtype)

    def store(self, handler, node, value: TritonValue, level_axes) -> None:
        index = self.rename(self.kernel.store_index(node))
        axes = self.axes_of(index)
        offset = self.spread(self.index(index), level_axes - axes)
        value = handler.as_tensor(value)
        dtype = node.layout.dtype
        text = stored(value, dtype, self.interpret)
        mask = self.mask_text(level_axes | axes)
        self.stores_rows |= "r" in level_axes | axes
        handler.lines.append(f"{handler.indent}tl.store({self.param(node.name)} + ({offset}), {text}, {mask})")

    # ------------------------------------------------------------------------------------------
    # The kernel

    def render(self, name: str) -> str:
        for node in self.kernel.nodes:  # stored buffers are parameters even if nothing reads them
            if node.name in self.stored:
                self.param(node.name)
        body: list[str] = []
        if self.plan.kind == "pointwise":
            self._pointwise(body)
        elif self.plan.kind in ("persistent", "tiled"):
            self._persistent(body)
        else:
            self._looped(body)
        # The sizes of the launch are computed from the size arguments: every symbol of them is one.
        self.sized(self.plan.xnumel)
        self.sized(self.plan.rnumel)
        # (a float input is a float64 argument: Triton would take a Python float as a float32)
        args = [self.param_names[b] for b in self.params] + \
            [f'{self.size_names[s]}: "fp64"' if is_float_symbol(s) else str(self.size_names[s]) for s in self.size_params]
        args.append("xnumel")
        if self.plan.kind != "pointwise":
            args.append("rnumel")
        args.append("XBLOCK: tl.constexpr")
        if self.plan.kind != "pointwise":
            args.append("RBLOCK: tl.constexpr")
        head = ["@triton.jit", f"def {name}({', '.join(args)}):"]
        return self._evictions("\n".join(head + self._prologue() + body) + "\n")

    def _evictions(self, source: str) -> str:
        """The loads of a kernel that reduces rows and stores nothing row-sized, marked for L2: what one
        program reads once goes first ("evict_first"), what every program reads (a weight) or a later
        pass reads again stays ("evict_last"). Where the kernel also writes whole rows the marks cost
        more than they gain. (H200, TB/s unmarked -> marked: sum and amax of 8192 x 4096 rows
        3.2 -> 3.6; softmax over 8192^2 4.0 -> 3.85, layer norm 3.75 -> 3.63.)"""
        for name, sites in self.load_sites.items():
            again = sites > 1 or self.shared_loads[name]
            policy = "" if self.stores_rows else ", eviction_policy='evict_last'" if again else \
                ", eviction_policy='evict_first'"
            source = source.replace(f", eviction_policy={EVICTION_MARK.format(name)}", policy)
        return source

    def _prologue(self) -> list[str]:
        tiled = self.plan.kind == "tiled"
        pid = f"tl.program_id({1 if tiled else 0})"
        if self.wide:
            pid += ".to(tl.int64)"
        rows = self.plan.kind != "pointwise"
        lines = [f"    xoffset = {pid} * XBLOCK",
                 f"    xindex = xoffset + tl.arange(0, XBLOCK){'[:, None]' if rows else ''}",
                 "    xmask = xindex < xnumel"]
        self._decompose(lines, "    ", self.x_dims, "xindex")
        if rows:
            lines.append("    rbase = tl.arange(0, RBLOCK)[None, :]")
        if tiled:
            lines += [f"    rindex = tl.program_id(0){'.to(tl.int64)' if self.wide else ''} * RBLOCK + rbase",
                      "    rmask = rindex < rnumel"]
            self._decompose(lines, "    ", self.r_dims, "rindex")
        if self.plan.kind == "persistent":
            lines += ["    rindex = rbase", "    rmask = rindex < rnumel"]
            self._decompose(lines, "    ", self.r_dims, "rindex")
        return lines

    def _pointwise(self, lines):
        handler = TritonHandler(self, lines, "    ")
        for stage in self.kernel.stages:
            for node in stage.nodes:
                value = self.values[node.name] = self.evaluate(handler, node)
                if node.name in self.stored:
                    self.store(handler, node, value, frozenset("x"))

    def _persistent(self, lines):
        """Whole rows (or a whole tile) in registers: every stage in one scope."""
        handler = TritonHandler(self, lines, "    ")
        for stage in self.kernel.stages:
            for node in stage.nodes:
                if node.is_reduction:
                    value = self._reduce_block(handler, node)
                    axes = frozenset("x")
                else:
                    value = self.evaluate(handler, node)
                    tiled = self.plan.kind == "tiled"
                    axes = frozenset("xr") if stage.level == INNER or tiled else frozenset("x")
                self.values[node.name] = value
                if node.name in self.stored:
                    self.store(handler, node, value, axes)

    def _looped(self, lines):
        outer = TritonHandler(self, lines, "    ")
        for stage in self.kernel.stages:
            if stage.level != INNER:
                for node in stage.nodes:
                    value = self.values[node.name] = self.evaluate(outer, node)
                    if node.name in self.stored:
                        self.store(outer, node, value, frozenset("x"))
                continue
            reductions = [n for n in stage.nodes if n.is_reduction]
            accumulators = {n.name: Accumulator(self, outer, n) for n in reductions}
            lines.append("    for roffset in range(0, rnumel, RBLOCK):")
            lines += ["        rindex = roffset + rbase", "        rmask = rindex < rnumel"]
            self._decompose(lines, "        ", self.r_dims, "rindex")
            inner = TritonHandler(self, lines, "        ", dict(outer.cse))
            self.loop_values = {}
            for node in stage.nodes:
                if node.is_reduction:
                    accumulators[node.name].update(inner, self.reduced_value(inner, node))
                    continue
                value = self.loop_values[node.name] = self.evaluate(inner, node)
                if node.name in self.stored:
                    self.store(inner, node, value, frozenset("xr"))
            self.loop_values = None
            for node in reductions:
                value = self.values[node.name] = accumulators[node.name].result(outer)
                if node.name in self.stored:
                    self.store(outer, node, value, frozenset("x"))

    # ------------------------------------------------------------------------------------------
    # Reductions

    def reduced_value(self, handler, node) -> TritonValue:
        """The elements ``node`` reduces, in its accumulator's dtype (bools as int32)."""
        red = node.data
        with set_handler(handler):
            value = node.evaluate(*self.kernel.node_index(node))
            if red.reduction_type in ("any", "all"):
                return handler.emit(f"({handler.as_tensor(value)} != 0).to(tl.int32)", torch.int32, value.axes)
            acc = accumulator_dtype(red.reduction_type, red.src_dtype, red.dtype)
            if red.reduction_type not in ("argmax", "argmin") and value.dtype != acc:
                value = handler.to_dtype(value, acc)
            if value.dtype == torch.bool:
                value = handler.emit(f"{handler.as_tensor(value)}.to(tl.int32)", torch.int32, value.axes)
            return value

    def _reduce_block(self, handler, node) -> TritonValue:
        value = self.reduced_value(handler, node)
        rtype = node.data.reduction_type
        block = handler.emit(f"tl.where(xmask & rmask, {handler.as_tensor(value)}, {identity(rtype, value.dtype)})",
                             value.dtype, frozenset("xr"))
        if rtype in ("argmax", "argmin"):
            return finish_arg(handler, node, block, "rindex", "xmask & rmask")
        return finish(handler, node, block)


def identity(rtype: str, dtype: torch.dtype) -> str:
    """What masked-out lanes hold: the value that changes no reduction of ``rtype``."""
    if rtype in ("sum", "any"):
        return "0"
    if rtype in ("prod", "all"):
        return "1"
    low = rtype in ("max", "argmax")
    if dtype.is_floating_point:
        return 'float("-inf")' if low else 'float("inf")'
    info = torch.iinfo(dtype)
    return str(info.min if low else info.max)


def _out(handler, node, text: str, dtype) -> TritonValue:
    value = handler.emit(text, dtype, frozenset("x"))
    return handler.to_dtype(value, node.layout.dtype)


def finish(handler, node, block: TritonValue) -> TritonValue:
    """The row result of a ``[XBLOCK, RBLOCK]`` block of partial values (masked lanes hold the
    identity), as a ``[XBLOCK, 1]`` value."""
    rtype = node.data.reduction_type
    if rtype in ("max", "min") and block.dtype.is_floating_point and not handler.printer.interpret:
        # NaN wins, as in eager; tl.max/tl.min skip it.
        return _out(handler, node, f"tl.reduce({block}, 1, magpy_{rtype})[:, None]", block.dtype)
    if rtype in ("max", "min") and block.dtype.is_floating_point:
        # The same as two plain reductions: a custom combine function runs element by element
        # in Triton's interpreter.
        extreme = handler.emit(f"tl.{rtype}({block}, 1)[:, None]", block.dtype, frozenset("x"))
        any_nan = f"(tl.max(({block} != {block}).to(tl.int32), 1)[:, None] != 0)"
        return _out(handler, node, f"tl.where({any_nan}, float('nan'), {extreme})", block.dtype)
    reduce = {
        "sum": f"tl.sum({block}, 1)",
        "prod": f"tl.reduce({block}, 1, magpy_prod)",
        "max": f"tl.max({block}, 1)",
        "min": f"tl.min({block}, 1)",
        "any": f"(tl.max({block}, 1) != 0)",
        "all": f"(tl.min({block}, 1) != 0)",
    }[rtype]
    dtype = torch.bool if rtype in ("any", "all") else block.dtype
    if node.data.dtype == torch.bool and rtype in ("max", "min"):
        reduce, dtype = f"({reduce} != 0)", torch.bool
    return _out(handler, node, f"{reduce}[:, None]", dtype)


def finish_arg(handler, node, block: TritonValue, index: str, lanes: str) -> TritonValue:
    """argmax/argmin of a block whose lanes came from positions ``index``: the first position
    of the extreme value (of the first NaN, if any, as eager). ``lanes`` masks the lanes that
    hold values."""
    rtype = node.data.reduction_type
    pick = "max" if rtype == "argmax" else "min"
    axes = frozenset("xr")
    if block.dtype.is_floating_point:
        nan = handler.emit(f"({block} != {block})", torch.bool, axes)
        extreme = handler.emit(f"tl.{pick}(tl.where({nan}, {identity(rtype, block.dtype)}, {block}), 1)[:, None]",
                               block.dtype, frozenset("x"))
        any_nan = handler.emit(f"(tl.max({nan}.to(tl.int32), 1)[:, None] != 0)", torch.bool, frozenset("x"))
        chosen = handler.emit(f"tl.where({any_nan}, {nan}, {block} == {extreme})", torch.bool, axes)
    else:
        extreme = handler.emit(f"tl.{pick}({block}, 1)[:, None]", block.dtype, frozenset("x"))
        chosen = handler.emit(f"({block} == {extreme})", torch.bool, axes)
    text = f"tl.min(tl.where({chosen} & {lanes}, {index}, {INT32_MAX}), 1)[:, None]"
    return _out(handler, node, text, torch.int32)


class Accumulator:
    """The partial values of one reduction in a looped kernel: a ``[XBLOCK, RBLOCK]`` tensor
    declared before the loop, updated in it, reduced after it."""

    def __init__(self, printer: KernelPrinter, handler, node):
        self.node = node
        red = node.data
        self.rtype = red.reduction_type
        if self.rtype in ("any", "all"):
            self.dtype = torch.int32
        else:
            self.dtype = accumulator_dtype(self.rtype, red.src_dtype, red.dtype)
            if self.dtype == torch.bool:
                self.dtype = torch.int32
        self.name = printer.new_var("acc")
        init = identity(self.rtype, self.dtype)
        handler.lines.append(f"{handler.indent}{self.name} = tl.full([XBLOCK, RBLOCK], {init}, "
                             f"{compute_type(self.dtype)})")
        if self.rtype in ("argmax", "argmin"):
            handler.lines.append(f"{handler.indent}{self.name}_index = tl.full([XBLOCK, RBLOCK], 0, tl.int32)")

    def update(self, handler, value: TritonValue) -> None:
        acc, v, rtype = self.name, handler.as_tensor(value), self.rtype
        floating = self.dtype.is_floating_point
        indent = handler.indent
        if rtype in ("argmax", "argmin"):
            op = ">" if rtype == "argmax" else "<"
            better = f"({v} {op} {acc})"
            if floating:
                better = f"({better} | (({v} != {v}) & ({acc} == {acc})))"
            flag = handler.printer.new_var("better")
            handler.lines.append(f"{indent}{flag} = {better} & xmask & rmask")
            handler.lines.append(f"{indent}{acc} = tl.where({flag}, {v}, {acc})")
            handler.lines.append(f"{indent}{acc}_index = tl.where({flag}, rindex, {acc}_index)")
            return
        nan = ", propagate_nan=tl.PropagateNan.ALL" if floating else ""
        combined = {
            "sum": f"{acc} + {v}",
            "prod": f"{acc} * {v}",
            "max": f"tl.maximum({acc}, {v}{nan})",
            "min": f"tl.minimum({acc}, {v}{nan})",
            "any": f"{acc} | {v}",
            "all": f"{acc} & {v}",
        }[rtype]
        handler.lines.append(f"{indent}{acc} = tl.where(xmask & rmask, {combined}, {acc})")

    def result(self, handler) -> TritonValue:
        block = TritonValue(self.name, self.dtype, frozenset("xr"))
        if self.rtype in ("argmax", "argmin"):
            # Lanes no element reached hold the identity at position 0: harmless (see finish_arg).
            return finish_arg(handler, self.node, block, f"{self.name}_index", "xmask")
        return finish(handler, self.node, block)


def render_kernel(kernel: Kernel, layouts, interpret: bool = False, kind=None, wide=None):
    """(Triton source of the kernel without the prelude, buffer names of its pointer arguments,
    its LaunchPlan, graph size symbols of its size arguments). ``kind`` chooses the form of a
    symbolic reduction: "looped" (the default) or "persistent"; ``wide`` whether it indexes in
    int64 (by default where its sizes are symbolic or large)."""
    printer = KernelPrinter(kernel, layouts, interpret, kind, wide)
    source = printer.render(kernel.name)
    return source, printer.params, printer.plan, printer.size_params
