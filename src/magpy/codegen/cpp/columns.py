"""Reductions whose rows lie side by side in memory, vectorised across the rows.

A batch norm's per-channel sums over a channels-last tensor reduce each channel over ``N*H*W``
elements ``C`` apart: a row at a time, the innermost loop gathers one element per channel stride.
Here the rows' innermost dim is the one memory walks, so the kernel runs a tile of ``COLUMN_TILE``
neighbouring rows at once: every stage loops over the reduction with the tile's rows innermost
(``omp simd``, contiguous loads), each reduction keeping one accumulator per row of the tile, and
each per-row value is an array over the tile. Inductor's C++ backend calls these "outer
reductions" (its tiling index among the kept dims).

``wants_columns`` decides from the kernel's loads (after ``loop_merge``); ``render_columns``
prints the kernel through ``KernelPrinter``'s pieces. Static sizes only: a symbolic kernel keeps
the row layout, which decides its parallelism at run time.
"""
from __future__ import annotations

import torch

from ..ir import is_static, prod
from ..ops import set_handler
from ..scheduler import INNER, OUTER, Kernel
from .handler import CppHandler, ctype
from .loops import PARALLEL_MIN_WORK, direct_reads
from .reductions import LONG_SUM, REDUCTION_COMBINE, accumulator_dtype, reduction_init

COLUMN_TILE = 16
# Fewer neighbouring rows than a vector holds: the row layout's lanes along the reduction do as well.
MIN_ROWS = 8
SERIAL_REDUCTIONS = ("argmax", "argmin")


def wants_columns(kernel: Kernel) -> bool:
    """True for a static reduction kernel of at least ``MIN_ROWS`` neighbouring rows whose loads
    walk its rows' innermost dim contiguously and none its reduction's innermost dim."""
    if not kernel.inner or not kernel.outer or not is_static(kernel.outer + kernel.inner):
        return False
    if kernel.outer[-1] < MIN_ROWS:
        return False
    if any(kernel.storage[n.name] == "row_array" for n in kernel.nodes):
        return False
    if any(n.is_reduction and n.data.reduction_type in SERIAL_REDUCTIONS for n in kernel.nodes):
        return False
    row, column = kernel.outer_vars[-1], kernel.inner_vars[-1]
    across = along = 0
    for node in kernel.nodes:
        if kernel.levels[node.name] != INNER:
            continue
        for _, index in direct_reads(kernel, node):
            step = index.coeff(column)
            if step == 1:
                along += 1
            elif step != 0 and index.coeff(row) == 1:
                across += 1
    return across > 0 and along == 0


def render_columns(printer, lines, threads: int) -> None:
    """The body of ``printer``'s kernel laid out as tiles of rows (see the module)."""
    Columns(printer, threads).render(lines)


class Columns:
    def __init__(self, printer, threads: int):
        self.printer = printer
        self.kernel = printer.kernel
        k = self.kernel
        self.row = str(k.outer_vars[-1])
        self.size = k.outer[-1]
        tiles = -(-self.size // COLUMN_TILE)
        work = prod(k.outer) * prod(k.inner)
        enough_work = work >= PARALLEL_MIN_WORK
        self.parallel_rows = enough_work and prod(k.outer[:-1]) * tiles >= 2 * threads
        self.parallel_inner = enough_work and not self.parallel_rows
        self.lane = f"({self.row} - {self.row}_tile)"

    def render(self, lines):
        k, row = self.kernel, self.row
        indent = "    "
        if self.parallel_rows:
            lines.append(f"{indent}#pragma omp parallel for collapse({len(k.outer)})")
        for v, s in zip(k.outer_vars[:-1], k.outer[:-1]):
            lines.append(f"{indent}for (int64_t {v} = 0; {v} < {s}; {v}++) {{")
            indent += "    "
        lines.append(f"{indent}for (int64_t {row}_tile = 0; {row}_tile < {self.size}; {row}_tile += {COLUMN_TILE}) {{")
        indent += "    "
        for stage in k.stages:
            if stage.level == OUTER:
                self._outer_stage(stage, lines, indent)
            else:
                self._inner_stage(stage, lines, indent)
        for _ in range(len(k.outer)):
            indent = indent[:-4]
            lines.append(f"{indent}}}")

    def _lanes(self, lines, indent) -> str:
        """Open the loop over the tile's rows; returns the indent of its body."""
        row = self.row
        end = f"{row}_tile + {COLUMN_TILE}"
        if self.size % COLUMN_TILE:
            end = f"({end} < {self.size} ? {end} : {self.size})"
        lines.append(f"{indent}#pragma omp simd")
        lines.append(f"{indent}for (int64_t {row} = {row}_tile; {row} < {end}; {row}++) {{")
        return indent + "    "

    def _outer_stage(self, stage, lines, indent):
        printer, k = self.printer, self.kernel
        arrays = {}
        for node in stage.nodes:
            arrays[node.name] = printer.new_var(f"row_{node.name}_")
            lines.append(f"{indent}{ctype(node.layout.dtype)} {arrays[node.name]}[{COLUMN_TILE}];")
        body = self._lanes(lines, indent)
        handler = CppHandler(printer, lines, body)
        printer.stage_locals = {}
        for node in stage.nodes:
            with set_handler(handler):
                value = k.evaluate(node)
            value = handler.to_dtype(value, node.layout.dtype)
            if k.storage[node.name] == "memory":
                lines.append(body + printer.store_text(node.name, k.store_index(node), value))
            lines.append(f"{body}{arrays[node.name]}[{self.lane}] = {value};")
            printer.stage_locals[node.name] = value.text
        lines.append(f"{indent}}}")
        printer.stage_locals = {}
        for node in stage.nodes:
            printer.locals[node.name] = f"{arrays[node.name]}[{self.lane}]"

    def _inner_stage(self, stage, lines, indent):
        printer, k = self.printer, self.kernel
        reductions = [n for n in stage.nodes if n.is_reduction]
        accs, clauses = {}, []
        for node in reductions:
            red = node.data
            acc_dtype = accumulator_dtype(red.reduction_type, red.src_dtype, red.dtype)
            if red.reduction_type == "sum" and acc_dtype == torch.float32 and prod(k.inner) >= LONG_SUM:
                # (below that, float32 rows added one after another: eager's channels-last batch
                # norm sums its channels in that order)
                acc_dtype = torch.float64
            acc = printer.new_var("acc")
            nan = f"{acc}_nan" if red.reduction_type in ("max", "min") and acc_dtype.is_floating_point else None
            accs[node.name] = (acc, acc_dtype, nan)
            lines.append(f"{indent}{ctype(acc_dtype)} {acc}[{COLUMN_TILE}];")
            init = reduction_init(red.reduction_type, acc_dtype)
            lines.append(f"{indent}for (int64_t i = 0; i < {COLUMN_TILE}; i++) {acc}[i] = {init};")
            clauses.append(f"reduction({REDUCTION_COMBINE[red.reduction_type]}:{acc}[:{COLUMN_TILE}])")
            if nan:
                lines.append(f"{indent}int32_t {nan}[{COLUMN_TILE}] = {{0}};")
                clauses.append(f"reduction(+:{nan}[:{COLUMN_TILE}])")
        loop_indent = indent
        for d, (v, s) in enumerate(zip(k.inner_vars, k.inner)):
            if d == 0 and self.parallel_inner:
                collapse = f" collapse({len(k.inner)})" if len(k.inner) > 1 else ""
                lines.append(f"{loop_indent}#pragma omp parallel for{''.join(' ' + c for c in clauses)}{collapse}")
            lines.append(f"{loop_indent}for (int64_t {v} = 0; {v} < {s}; {v}++) {{")
            loop_indent += "    "
        body = self._lanes(lines, loop_indent)

        def update(node, handler, value):
            acc, acc_dtype, nan = accs[node.name]
            value = handler.to_dtype(value, acc_dtype) if value.dtype != acc_dtype else value
            return printer._update(node.data.reduction_type, f"{acc}[{self.lane}]", acc_dtype, value, body,
                                   nan and f"{nan}[{self.lane}]")

        printer.stage_body(stage, lines, body, update)
        lines.append(f"{loop_indent}}}")
        for _ in range(len(k.inner)):
            loop_indent = loop_indent[:-4]
            lines.append(f"{loop_indent}}}")
        printer.stage_locals = {}
        if not reductions:
            return
        results = {}
        for node in reductions:
            results[node.name] = printer.new_var("red")
            lines.append(f"{indent}{ctype(node.layout.dtype)} {results[node.name]}[{COLUMN_TILE}];")
        body = self._lanes(lines, indent)
        for node in reductions:
            acc, acc_dtype, nan = accs[node.name]
            value = f"{acc}[{self.lane}]"
            if nan:
                value = f"({nan}[{self.lane}] ? std::numeric_limits<{ctype(acc_dtype)}>::quiet_NaN() : {value})"
            out = ctype(node.layout.dtype)
            element = f"{results[node.name]}[{self.lane}]"
            lines.append(f"{body}{element} = static_cast<{out}>({value});")
            if k.storage[node.name] == "memory":
                from .handler import CppValue

                lines.append(body + printer.store_text(node.name, k.store_index(node), CppValue(element, node.layout.dtype)))
        lines.append(f"{indent}}}")
        for node in reductions:
            printer.locals[node.name] = f"{results[node.name]}[{self.lane}]"
