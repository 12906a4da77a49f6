"""A ``ScatterKernel`` as a Triton kernel: a pointwise block over the scatter's indices whose
updates go to positions from data — ``tl.atomic_add`` for adds (two lanes, or two programs, may
name one element: the hardware adds both, in an order that may change from run to run, as
Inductor's and eager's CUDA kernels do), ``tl.store`` for stores (one of the lanes naming an
element wins, as in eager on a GPU).
"""
from __future__ import annotations

import sympy

from ..ops import set_handler
from ..scheduler import ScatterKernel
from .handler import TritonHandler, stored
from .kernel import KernelPrinter, _IndexCollector, merge_dims
from .plan import plan_launch


class ScatterPrinter(KernelPrinter):
    """Prints a ``ScatterKernel`` (``render`` as ``kernel.KernelPrinter``'s)."""

    kernel: ScatterKernel

    def _plan_dims(self):
        k = self.kernel
        collector = _IndexCollector()
        with set_handler(collector):
            updates = k.node.evaluate(k.node_index(k.node)[0])
        exprs = [sympy.expand(e) for _, e, _ in collector.reads] + collector.exprs
        exprs += [sympy.expand(k.node.layout.index(position)) for position, _ in updates]
        outer = list(zip(k.outer_vars, k.outer))
        (self.x_dims, self.r_dims), self.renames = merge_dims([outer, []], exprs)
        self.axis_of = {s: "x" for s, _ in outer}
        self.plan = plan_launch(k, self.interpret, None, "pointwise")
        self.wide = self._needs_int64(self.buffers(collector)) if self.force_wide is None else self.force_wide

    def _pointwise(self, lines):
        node = self.kernel.node
        handler = TritonHandler(self, lines, "    ")
        with set_handler(handler):
            updates = node.evaluate(self.kernel.node_index(node)[0])
        dtype = node.layout.dtype
        for position, value in updates:
            value = handler.as_tensor(handler.to_dtype(value, dtype))
            index = self.rename(sympy.expand(node.layout.index(position)))
            offset = self.spread(self.index(index), frozenset("x") - self.axes_of(index))
            pointer = f"{self.param(node.name)} + ({offset})"
            if node.data.mode == "add":
                lines.append(f"    tl.atomic_add({pointer}, {value}, xmask)")
            else:
                lines.append(f"    tl.store({pointer}, {stored(value, dtype, self.interpret)}, xmask)")


def render_scatter(kernel: ScatterKernel, layouts, interpret: bool = False, kind=None, wide=None):
    """As ``kernel.render_kernel``, for a scatter's kernel."""
    printer = ScatterPrinter(kernel, layouts, interpret, kind, wide)
    source = printer.render(kernel.name)
    return source, printer.params, printer.plan, printer.size_params
