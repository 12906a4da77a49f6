"""C++ for a scheduled ``Kernel``: an ``extern "C"`` function over raw pointers.

``render_kernel`` lays out the loops: OpenMP ``parallel for`` over rows, ``omp simd`` over the
innermost loop, reductions as OpenMP reduction clauses; ``handler.CppHandler`` prints the loop
bodies (with common subexpressions shared).

Symbolic sizes are ``int64_t`` arguments after the pointers (``ks0``, ``ks1``, ... in the order
the kernel first uses them), so the source names no size of any call; float inputs are ``double``
arguments among them (``kf0``: ``x * scale``), cast to the type each op computes in. Where a static kernel
decides by a size (run in parallel or not, full tiles or not, a row on the stack or not), a
symbolic one decides at run time: an OpenMP ``if(parallel: ...)`` clause, both loop forms
behind an ``if``, tail handling, or a row array on the heap once per thread.
"""
from __future__ import annotations

import os
import re

import sympy
import torch

from ..ir import is_static, prod
from ..loop_merge import merge_loops
from ..ops import set_handler
from ..scheduler import OUTER, ROW_BUFFER_MAX_BYTES, Kernel, KernelNames
from ..sizes import at_least, is_float_symbol
from .columns import render_columns, wants_columns
from .handler import CppHandler, CppValue, cpp_constant, ctype, print_index
from .hoist import hoist_columns, hoist_invariants
from .loops import PARALLEL_MIN_WORK, PointwiseNest, both, negate
from .prelude import PRELUDE
from .reductions import LONG_SUM, REDUCTION_COMBINE, accumulator_dtype, reduction_init
from .segments import LoopRanges

THREADS = os.cpu_count() or 1


# ----------------------------------------------------------------------------------------------
# Kernels


# any/all accumulate in int32 with |/&: gcc vectorizes those, not bool ||/&& (10x slower).
class KernelPrinter(KernelNames):
    """Prints one kernel; ``params`` is the buffer order of its pointer arguments, ``size_params``
    the size symbols of its ``int64_t`` arguments after them."""

    def __init__(self, kernel: Kernel, layouts, graph_outputs):
        super().__init__(kernel)
        self.kernel = kernel
        self.layouts = layouts
        self.produced = {n.name for n in kernel.nodes}
        self.locals: dict[str, str] = {}  # buffer -> C++ variable holding this row's value
        self.stage_locals: dict[str, str] = {}  # buffer -> variable of the current loop body
        self.row_arrays: dict[str, str] = {}
        self.staged: dict = {}  # (buffer, index) -> element of a transposed tile buffer
        self.checks = False  # the body has an ``ops.check``: the kernel returns an error code

    # ------------------------------------------------------------------------------------------
    # Sizes

    def index(self, expr) -> str:
        """C++ text of an index or size expression, size symbols read from the kernel's arguments."""
        return print_index(self.sized(expr))

    def size(self, size) -> str:
        return str(size) if isinstance(size, int) else self.index(size)

    def at_least(self, size, bound: int):
        """``size >= bound``: a bool where that is known, else C++ text deciding it at run time."""
        decided = at_least(size, bound)
        return decided if decided is not None else f"{self.size(size)} >= {bound}"

    def is_row_value(self, text: str) -> bool:
        """True when ``text`` names a value computed once per row (a reduction, a row scalar)."""
        return text in self.locals.values()

    def inner_linear(self) -> str:
        expr = sympy.Integer(0)
        for var, size in zip(self.kernel.inner_vars, self.kernel.inner):
            expr = expr * size + var
        return self.index(expr)

    def load(self, handler: CppHandler, name: str, index) -> CppValue:
        layout = self.layouts[name]
        if name in self.stage_locals:
            return CppValue(self.stage_locals[name], layout.dtype)
        if name in self.locals:
            return CppValue(self.locals[name], layout.dtype)
        if name in self.row_arrays:
            text = f"{self.row_arrays[name]}[{self.inner_linear()}]"
            return handler._emit(text, layout.dtype)
        raw = self.staged.get((name, index))
        if raw is None:
            raw = f"{self.param(name)}[{self.index(index)}]"
        if layout.dtype == torch.bfloat16:
            return handler._emit(f"magpy_bf16_to_float({raw})", layout.dtype)
        if layout.dtype == torch.float16:
            return handler._emit(f"static_cast<float>({raw})", layout.dtype)
        return handler._emit(raw, layout.dtype)

    def store_text(self, name: str, index, value: CppValue) -> str:
        dtype = self.layouts[name].dtype
        if dtype == torch.bfloat16:
            text = f"magpy_float_to_bf16({value})"
        elif dtype == torch.float16:
            text = f"static_cast<_Float16>({value})"
        else:
            text = f"static_cast<{ctype(dtype, storage=True)}>({value})"
        return f"{self.param(name)}[{self.index(index)}] = {text};"

    # ------------------------------------------------------------------------------------------

    def render(self, name: str) -> str:
        k = self.kernel
        body: list[str] = []
        if not k.inner:
            self._render_pointwise(body)
        elif wants_columns(k):
            render_columns(self, body, THREADS)
        else:
            self._render_rows(body)
        args = []
        for buf in self.params:
            t = ctype(self.layouts[buf].dtype, storage=True)
            const = "" if buf in self.stored else "const "
            args.append(f"{const}{t}* __restrict__ {self.param_names[buf]}")
        args += [f"{'double' if is_float_symbol(s) else 'int64_t'} {self.size_names[s]}" for s in self.size_params]
        if self.checks:
            # The code of a failed ``ops.check`` (``checks.py``), 0 when none failed.
            signature = f'extern "C" int32_t {name}({", ".join(args)})'
            body = ["    int32_t magpy_error = 0;"] + body + ["    return magpy_error;"]
        else:
            signature = f'extern "C" void {name}({", ".join(args)})'
        return "\n".join([signature, "{"] + body + ["}"]) + "\n"

    def _loops(self, lines, variables, sizes, indent, pragma=None, collapse=True):
        """Open nested for-loops; returns the indent of the body."""
        if pragma and len(variables) > 1 and collapse:
            pragma += f" collapse({len(variables)})"
        if pragma and variables:
            lines.append(f"{indent}#pragma {pragma}")
        for v, s in zip(variables, sizes):
            lines.append(f"{indent}for (int64_t {v} = 0; {v} < {self.size(s)}; {v}++) {{")
            indent += "    "
        return indent

    @staticmethod
    def _close(lines, count, indent):
        for i in range(count):
            lines.append(indent[: len(indent) - 4 * (i + 1)] + "}")

    def _render_pointwise(self, lines):
        k = self.kernel
        nest = PointwiseNest.plan(k, self.produced, self.layouts)
        parts = self._plan_parts(nest)
        first, prologue = len(lines), []  # (column arrays, filled in front of every loop)

        def body(lines, indent, ranges=None):
            # (each part of split loops prints the body anew: a value stored in one part is no local of
            # the next, where an input written in place still holds its old values)
            self.stage_locals = {}
            start = len(lines)
            handler = CppHandler(self, lines, indent, None if ranges is None else LoopRanges(ranges))
            for stage in k.stages:
                for node in stage.nodes:
                    self._pointwise_node(handler, node, indent, lines)
            if ranges is not None:
                _drop_unused(lines, start)
            if nest.variables:  # (in front of the innermost loop, inside the others)
                loop = start - 1
                while loop > 0 and lines[loop - 1].strip().startswith("#pragma"):
                    loop -= 1
                # (a 0-dim input read in front of a loop that may run no iteration: only where none is empty)
                inner = nest.variables[nest.order[-1]]
                if ranges is None:
                    nonempty = all(isinstance(size, int) and size > 0 for size in nest.sizes)
                else:
                    nonempty = all(hi > lo for lo, hi in ranges.values())
                start += hoist_invariants(lines, start, loop, str(inner), loads=nonempty)
                if ranges is not None and nonempty and \
                        prod(hi - lo for v, (lo, hi) in ranges.items() if v != inner) > 1:
                    hoist_columns(lines, start, str(inner), *ranges[inner], prologue)

        def after(lines, loop_line, start, variable, ranges, in_front, inside):
            # (the same one loop up: in front of a loop around the innermost, or in a column array)
            nonempty = all(hi > lo for lo, hi in ranges.values())
            if in_front:
                start += hoist_invariants(lines, start, loop_line, str(variable), loads=nonempty,
                                          nested_loops=True)
            if inside and nonempty and prod(hi - lo for v, (lo, hi) in ranges.items() if v != variable) > 1:
                hoist_columns(lines, start, str(variable), *ranges[variable], prologue)

        if parts is None:
            nest.render(self, lines, "    ", body)
        else:
            nest.render_parts(self, lines, "    ", parts, body, after)
        lines[first:first] = prologue

    def _plan_parts(self, nest):
        """Where to split the loops of a pointwise kernel (``segments.py``): variable -> its parts
        (none: the loops whole, their bodies still knowing the ranges), or None for a nest with
        symbolic sizes or tiles, printed as before. The body is printed once, into nothing, to find
        where its comparisons of indices change."""
        if nest.tile is not None or not nest.variables or not is_static(nest.sizes):
            return None
        ranges = LoopRanges({v: (0, size) for v, size in zip(nest.variables, nest.sizes)}, planning=True)
        handler = CppHandler(self, [], "", ranges)
        for stage in self.kernel.stages:
            for node in stage.nodes:
                with set_handler(handler):
                    value = self.kernel.evaluate(node)
                self.stage_locals[node.name] = value.text
        self.stage_locals = {}
        return ranges.split([nest.variables[i] for i in nest.order])

    def _pointwise_node(self, handler, node, indent, lines):
        with set_handler(handler):
            value = self.kernel.evaluate(node)
        value = handler.to_dtype(value, node.layout.dtype) if value.dtype != node.layout.dtype else value
        storage = self.kernel.storage[node.name]
        if storage == "memory":
            lines.append(indent + self.store_text(node.name, self.kernel.store_index(node), value))
        elif storage == "row_array":
            lines.append(f"{indent}{self.row_arrays[node.name]}[{self.inner_linear()}] = {value};")
        self.stage_locals[node.name] = value.text

    def _render_rows(self, lines):
        k = self.kernel
        outer_work = prod(k.outer)
        work = outer_work * prod(k.inner)
        enough_work = self.at_least(work, PARALLEL_MIN_WORK)
        enough_rows = self.at_least(outer_work, 2 * THREADS)
        parallel_rows = both(enough_work, enough_rows)
        parallel_inner = both(enough_work, negate(enough_rows))
        indent = "    "
        arrays = [n for n in k.nodes if k.storage[n.name] == "row_array"]
        if arrays and not is_static(k.inner):
            self._render_rows_with_heap_arrays(lines, arrays, parallel_rows, parallel_inner)
            return
        row_indent = self._loops(lines, k.outer_vars, k.outer, indent, _parallel_pragma("omp parallel for", parallel_rows))
        for node in arrays:
            name = self.new_var(f"row_{node.name}_")
            self.row_arrays[node.name] = name
            lines.append(f"{row_indent}{ctype(node.layout.dtype)} {name}[{prod(k.inner)}];")
        self._render_stages(lines, row_indent, parallel_inner)
        self._close(lines, len(k.outer_vars), row_indent)

    def _render_rows_with_heap_arrays(self, lines, arrays, parallel_rows, parallel_inner):
        """Rows of symbolic length whose values are kept for a later stage: each thread keeps
        one array per such value for all of its rows — on its stack where a row fits in
        ``ROW_BUFFER_MAX_BYTES`` (as a static kernel would), else on the heap."""
        k = self.kernel
        indent = "    "
        region = _parallel_pragma("omp parallel", parallel_rows)
        if region:
            lines.append(f"{indent}#pragma {region}")
        lines.append(f"{indent}{{")
        inner = indent + "    "
        length = self.size(prod(k.inner))
        for node in arrays:
            name = self.new_var(f"row_{node.name}_")
            self.row_arrays[node.name] = name
            t = ctype(node.layout.dtype)
            fits = ROW_BUFFER_MAX_BYTES // node.layout.dtype.itemsize
            lines.append(f"{inner}alignas(64) {t} {name}_stack[{fits}];")
            lines.append(f"{inner}{t}* {name} = {length} <= {fits} ? {name}_stack : "
                         f"static_cast<{t}*>(__builtin_malloc(sizeof({t}) * {length}));")
        row_indent = self._loops(lines, k.outer_vars, k.outer, inner, "omp for" if parallel_rows is not False else None)
        self._render_stages(lines, row_indent, parallel_inner)
        self._close(lines, len(k.outer_vars), row_indent)
        for node in arrays:
            name = self.row_arrays[node.name]
            lines.append(f"{inner}if ({name} != {name}_stack) __builtin_free({name});")
        lines.append(f"{indent}}}")

    def _render_stages(self, lines, row_indent, parallel_inner):
        k = self.kernel
        for stage in k.stages:
            if stage.level == OUTER:
                handler = CppHandler(self, lines, row_indent)
                for node in stage.nodes:
                    self._row_scalar_node(handler, node, row_indent, lines)
            else:
                self._render_inner_stage(stage, row_indent, lines, parallel_inner)

    def _row_scalar_node(self, handler, node, indent, lines):
        with set_handler(handler):
            value = self.kernel.evaluate(node)
        value = handler.to_dtype(value, node.layout.dtype)
        if self.kernel.storage[node.name] == "memory":
            lines.append(indent + self.store_text(node.name, self.kernel.store_index(node), value))
        self.locals[node.name] = value.text

    def _render_inner_stage(self, stage, indent, lines, parallel):
        k = self.kernel
        reductions = [n for n in stage.nodes if n.is_reduction]
        clauses, finals = [], []
        serial = False
        accs = {}
        for node in reductions:
            red = node.data
            acc_dtype = accumulator_dtype(red.reduction_type, red.src_dtype, red.dtype)
            if red.reduction_type == "sum" and acc_dtype == torch.float32 and \
                    at_least(prod(k.inner), LONG_SUM) is True:
                acc_dtype = torch.float64
            acc = self.new_var("acc")
            accs[node.name] = (acc, acc_dtype)
            t = ctype(acc_dtype)
            lines.append(f"{indent}{t} {acc} = {reduction_init(red.reduction_type, acc_dtype)};")
            if red.reduction_type in ("argmax", "argmin"):
                lines.append(f"{indent}int64_t {acc}_index = 0;")
                serial = True
                continue
            clauses.append(f"reduction({REDUCTION_COMBINE[red.reduction_type]}:{acc})")
            if red.reduction_type in ("max", "min") and acc_dtype.is_floating_point:
                # NaN propagates: count NaNs alongside (an int sum vectorizes well).
                lines.append(f"{indent}int32_t {acc}_nan = 0;")
                clauses.append(f"reduction(+:{acc}_nan)")
        if serial:
            choices = [None]
        elif isinstance(parallel, bool):
            choices = [parallel]
        else:  # decided at run time: both loops, behind an if
            choices = [True, False]
        outer_lines = lines
        loop_indent = indent if len(choices) == 1 else indent + "    "
        body_indent = loop_indent + "    " * len(k.inner_vars)
        def update(node, handler, value):
            acc, acc_dtype = accs[node.name]
            value = handler.to_dtype(value, acc_dtype) if value.dtype != acc_dtype and \
                node.data.reduction_type not in ("argmax", "argmin") else value
            return self._update(node.data.reduction_type, acc, acc_dtype, value, body_indent)

        body = []
        self.stage_body(stage, body, body_indent, update)
        if len(choices) == 2:
            outer_lines.append(f"{indent}if ({parallel}) {{")
        for n, choice in enumerate(choices):
            if n == 1:
                outer_lines.append(f"{indent}}} else {{")
            self._reduction_loops(outer_lines, loop_indent, choice, clauses)
            outer_lines.extend(body)
            self._close(outer_lines, len(k.inner_vars), body_indent)
        if len(choices) == 2:
            outer_lines.append(f"{indent}}}")
        lines = outer_lines
        self.stage_locals = {}
        for node in reductions:
            acc, acc_dtype = accs[node.name]
            rtype = node.data.reduction_type
            if rtype in ("argmax", "argmin"):
                result = f"{acc}_index"
            elif rtype in ("max", "min") and acc_dtype.is_floating_point:
                result = f"({acc}_nan ? std::numeric_limits<{ctype(acc_dtype)}>::quiet_NaN() : {acc})"
            else:
                result = acc
            var = self.new_var("red")
            out_dtype = node.layout.dtype
            lines.append(f"{indent}{ctype(out_dtype)} {var} = static_cast<{ctype(out_dtype)}>({result});")
            value = CppValue(var, out_dtype)
            if k.storage[node.name] == "memory":
                lines.append(indent + self.store_text(node.name, k.store_index(node), value))
            self.locals[node.name] = var

    def stage_body(self, stage, lines, indent, update):
        """Print the loop body of an inner stage: its pointwise nodes, and for each reduction the
        lines ``update(node, handler, value)`` gives to fold ``value`` into its accumulator."""
        handler = CppHandler(self, lines, indent)
        self.stage_locals = {}
        for node in stage.nodes:
            if not node.is_reduction:
                self._pointwise_node(handler, node, indent, lines)
                continue
            with set_handler(handler):
                value = self.kernel.evaluate(node)
            lines.extend(update(node, handler, value))

    def _reduction_loops(self, lines, indent, parallel, clauses):
        """Open the loops of an inner stage: ``omp simd`` with the reduction clauses on the
        innermost (a collapsed ``simd`` nest is left scalar by gcc), the others spread over threads
        where ``parallel``; ``parallel`` None: a plain serial nest (an argmax's first index)."""
        k = self.kernel
        clause = "".join(" " + c for c in clauses)
        variables = k.inner_vars
        for d, (v, size) in enumerate(zip(variables, k.inner)):
            innermost = d == len(variables) - 1
            if parallel is not None and innermost:
                pragma = "omp parallel for simd" if parallel and len(variables) == 1 else "omp simd"
                lines.append(f"{indent}#pragma {pragma}{clause}")
            elif parallel and d == 0:
                collapse = f" collapse({len(variables) - 1})" if len(variables) > 2 else ""
                lines.append(f"{indent}#pragma omp parallel for{clause}{collapse}")
            lines.append(f"{indent}for (int64_t {v} = 0; {v} < {self.size(size)}; {v}++) {{")
            indent += "    "

    def _update(self, rtype, acc, dtype, value, indent, nan=None):
        """The lines folding ``value`` into the accumulator ``acc`` (and a float max/min's NaN
        count into ``nan``, by default ``acc``'s own ``_nan``)."""
        v = value.text
        if rtype == "sum":
            return [f"{indent}{acc} = {acc} + {v};"]
        if rtype == "prod":
            return [f"{indent}{acc} = {acc} * {v};"]
        if rtype == "any":
            return [f"{indent}{acc} |= static_cast<int32_t>({v} != 0);"]
        if rtype == "all":
            return [f"{indent}{acc} &= static_cast<int32_t>({v} != 0);"]
        if rtype in ("max", "min"):
            op = ">" if rtype == "max" else "<"
            lines = [f"{indent}{acc} = ({v} {op} {acc}) ? {v} : {acc};"]
            if dtype.is_floating_point:
                lines.append(f"{indent}{nan or acc + '_nan'} += static_cast<int32_t>({v} != {v});")
            return lines
        op = ">" if rtype == "argmax" else "<"
        better = f"({v} {op} {acc})"
        if value.dtype.is_floating_point:
            better = f"({better} || ({v} != {v} && {acc} == {acc}))"
        return [
            f"{indent}if ({better}) {{",
            f"{indent}    {acc} = {v};",
            f"{indent}    {acc}_index = {self.inner_linear()};",
            f"{indent}}}",
        ]


_DECLARATION = re.compile(r"^\s*[A-Za-z_][\w:]*(?:<[\w:, ]*>)?\s+([A-Za-z_]\w*) = .*;$")
_NAME = re.compile(r"[A-Za-z_]\w*")


def _drop_unused(lines: list, start: int) -> None:
    """Drop the declarations of ``lines[start:]`` (a loop body: every statement is a declaration
    of a value, a store or a masked block) whose names nothing else there uses: the index
    arithmetic of comparisons the loop ranges decided."""
    while True:
        counts: dict[str, int] = {}
        for line in lines[start:]:
            for name in _NAME.findall(line):
                counts[name] = counts.get(name, 0) + 1
        unused = [k for k in range(start, len(lines))
                  if (m := _DECLARATION.match(lines[k])) and counts.get(m.group(1)) == 1]
        if not unused:
            return
        for k in reversed(unused):
            del lines[k]


def _parallel_pragma(pragma: str, parallel):
    """``pragma`` when ``parallel`` is True, None when False, else ``pragma`` with an ``if``
    clause deciding at run time (on ``parallel`` only: an ``if`` without the modifier would also
    turn a combined ``simd`` off)."""
    if isinstance(parallel, bool):
        return pragma if parallel else None
    return f"{pragma} if(parallel: {parallel})"


def render_kernel(kernel: Kernel, layouts, graph_outputs) -> tuple[str, list[str], list, bool]:
    """(C++ source of the kernel function without the prelude, buffer names of its pointer
    arguments, graph symbols of its ``int64_t`` and ``double`` arguments, whether it returns the
    code of a failed check)."""
    kernel = merge_loops(kernel)
    printer = KernelPrinter(kernel, layouts, graph_outputs)
    # Stored buffers are parameters even if nothing in the kernel reads them back.
    for node in kernel.nodes:
        if kernel.storage[node.name] == "memory":
            printer.param(node.name)
    source = printer.render(kernel.name)
    return source, printer.params, printer.size_params, printer.checks


def kernel_source(body: str) -> str:
    return PRELUDE + "\n" + body
