"""C++ for a ``ScatterKernel``: one loop nest over the scatter's indices, updating its buffer in place.

How it runs in parallel, and why it is right:

* The leading loop dims along which indices update distinct elements (``Scatter.disjoint``: the
  batch and channel dims of ``x[:, :, idx_h, idx_w]``, every dim but ``dim`` of ``scatter_add``)
  run in parallel, each thread updating elements no other thread touches, with plain adds, in
  index order: no atomics, and each element's sum is added up in the same order whatever the
  number of threads (deterministic). The bilinear upsample's gradient runs this way.
* Where the outermost dim is not such a dim (``grad_weight[ids] += grad``: two ids may be the
  same), adds run in parallel as atomic adds (``#pragma omp atomic``: a compare-and-swap loop for
  floats), as eager's CPU ``index_put_`` does for float32 — but only with more than one thread
  and enough work: an atomic add costs several plain ones, so one thread runs plain adds. The
  order of a parallel sum then changes from run to run (last bits of floats); under
  ``torch.use_deterministic_algorithms(True)`` the lowering leaves such ops to eager.
* Stores ("store" mode) there run on one thread: where two indices name one element the last
  one wins, as in eager's serial loop.

Within a thread the innermost loop is vectorized (``omp simd``) when it is a disjoint dim:
its iterations then update distinct elements.
"""
from __future__ import annotations

from ..ir import is_static, prod
from ..ops import set_handler
from ..scheduler import ScatterKernel
from .handler import CppHandler
from .hoist import hoist_columns, hoist_invariants
from .kernel import KernelPrinter
from .loops import PARALLEL_MIN_WORK, both


class ScatterPrinter(KernelPrinter):
    """Prints a ``ScatterKernel`` (``render`` as ``cpp.KernelPrinter``'s)."""

    kernel: ScatterKernel

    def render(self, name: str) -> str:
        return "#include <omp.h>\n" + super().render(name)

    def _render_pointwise(self, lines):
        first = len(lines)
        self.prologue = []
        self._render_nests(lines)
        lines[first:first] = self.prologue

    def _render_nests(self, lines):
        k = self.kernel
        disjoint = k.disjoint()
        lead = next((i for i, d in enumerate(disjoint) if not d), len(disjoint))
        enough = self.at_least(prod(k.outer), PARALLEL_MIN_WORK) if k.outer else False
        if lead:
            condition = None if isinstance(enough, bool) else enough
            self._nest(lines, "    ", 0 if enough is False else lead, condition, atomic=False)
        elif k.node.data.mode == "store":
            self._nest(lines, "    ", 0, None, atomic=False)
        elif (threads := both(enough, "omp_get_max_threads() > 1")) is False:
            self._nest(lines, "    ", 0, None, atomic=False)
        else:
            lines.append(f"    if ({threads}) {{")
            self._nest(lines, "        ", len(k.outer), None, atomic=True)
            lines.append("    } else {")
            self._nest(lines, "        ", 0, None, atomic=False)
            lines.append("    }")

    def _nest(self, lines, indent, parallel: int, condition, atomic: bool):
        """The loops over the indices: the ``parallel`` outermost run in parallel (``condition``:
        C++ deciding that at run time), the innermost vectorized where it is a disjoint dim, the
        updates atomic or not."""
        k = self.kernel
        variables, sizes, disjoint = k.outer_vars, k.outer, k.disjoint()
        vector = bool(variables) and disjoint[-1] and not atomic
        single = vector and parallel == len(variables) == 1  # (one loop: parallel and vectorized)
        if vector and parallel == len(variables) > 1:
            parallel -= 1  # (the innermost loop is the vectorized one)
        loop = len(lines)
        for depth, (v, s) in enumerate(zip(variables, sizes)):
            loop = len(lines)
            if depth == 0 and parallel:
                pragma = "omp parallel for simd" if single else \
                    "omp parallel for" + (f" collapse({parallel})" if parallel > 1 else "")
                if condition:
                    pragma += f" if(parallel: {condition})"
                lines.append(f"{indent}#pragma {pragma}")
            elif depth == len(variables) - 1 and vector:
                lines.append(f"{indent}#pragma omp simd")
            lines.append(f"{indent}for (int64_t {v} = 0; {v} < {self.size(s)}; {v}++) {{")
            indent += "    "
        start = len(lines)
        self._updates(lines, indent, atomic)
        if len(variables) > 1 and is_static(sizes) and all(s > 0 for s in sizes):
            # (a bilinear gradient's source rows in front of the loop over columns, when that loop
            # is not one OpenMP collapses; its columns' positions and weights once per kernel)
            if parallel < len(variables):
                start += hoist_invariants(lines, start, loop, str(variables[-1]))
            hoist_columns(lines, start, str(variables[-1]), 0, sizes[-1], self.prologue)
        self._close(lines, len(variables), indent)

    def _updates(self, lines, indent, atomic: bool):
        node = self.kernel.node
        handler = CppHandler(self, lines, indent)
        with set_handler(handler):
            updates = node.evaluate(self.kernel.node_index(node)[0])
        for position, value in updates:
            value = handler.to_dtype(value, node.layout.dtype)
            index = node.layout.index(position)
            if node.data.mode == "store":
                lines.append(indent + self.store_text(node.name, index, value))
                continue
            if atomic:
                lines.append(f"{indent}#pragma omp atomic")
            lines.append(f"{indent}{self.param(node.name)}[{self.index(index)}] += {value};")


def render_scatter(kernel: ScatterKernel, layouts, graph_outputs):
    """As ``cpp.render_kernel``, for a scatter's kernel."""
    printer = ScatterPrinter(kernel, layouts, graph_outputs)
    printer.param(kernel.node.name)
    source = printer.render(kernel.name)
    return source, printer.params, printer.size_params, printer.checks
