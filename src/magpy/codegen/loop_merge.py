"""Merging a kernel's adjacent loop dims where every address walks them as one.

The scheduler keeps a node's dims as its sizes give them (minus the size-1 ones): a batch norm's
per-channel sums over an NCHW tensor reduce over ``(N, H, W)``, and its pointwise pass runs over
``(N, C, H, W)``. Where every index the kernel computes steps through two neighbouring dims as through
one (the outer one's coefficient is the inner one's times the inner size: ``W*h + w``, and a
per-channel load's ``0*h + 0*w``), one loop over ``H*W`` does the same work with a longer innermost
loop to vectorise and no nest for the compiler to see through (gcc leaves a collapsed ``omp simd``
reduction nest scalar). Inductor calls this ``simplify_loops``.

``merge_loops`` returns a copy of the kernel whose ``outer``/``inner`` are the merged loops. Its
nodes still see their own dims: ``node_index`` gives them symbols of their own (``p0``.., ``q0``..), and
``Kernel.evaluate``/``store_index`` turn every index they compute into one over the loops' variables,
which is exact because a pair of dims is merged only when every index of the kernel is linear in
both with that relation between their coefficients (an index using one of them any other way, a mask
``h < 3``, a ``FloorDiv``, keeps them apart).
"""
from __future__ import annotations

import copy
from typing import Optional

import sympy

from .ir import index_vars, prod
from .ops import AnalysisHandler, set_handler
from .scheduler import Kernel


class IndexCollector(AnalysisHandler):
    """Records every index expression a body computes: loads' and ``index_expr``'s."""

    def __init__(self):
        super().__init__()
        self.indexes: list = []

    def load(self, name, index):
        self.indexes.append(sympy.expand(index))
        return super().load(name, index)

    def index_expr(self, expr, dtype):
        self.indexes.append(sympy.expand(expr))
        return super().index_expr(expr, dtype)


def kernel_indexes(kernel: Kernel) -> list:
    """Every index expression the kernel's nodes compute (over ``node_index``'s symbols), the
    addresses of the buffers it stores included."""
    found = []
    for node in kernel.nodes:
        handler = IndexCollector()
        with set_handler(handler):
            node.evaluate(*kernel.node_index(node))
        found += handler.indexes
        if kernel.storage.get(node.name) == "memory":
            found.append(kernel.store_index(node))
    return found


def _coefficient(expr, var) -> Optional[sympy.Expr]:
    """The coefficient of ``var`` in ``expr`` when ``expr`` is linear in it (else None)."""
    c = expr.coeff(var)
    if var in c.free_symbols:
        return None
    if var in sympy.expand(expr - c * var).free_symbols:
        return None
    return c


def merge_groups(variables, sizes, indexes) -> list[list[int]]:
    """Runs of adjacent dims (outermost first) that every index in ``indexes`` walks as one."""
    if not variables:
        return []
    coefficients = []
    for expr in indexes:
        coefficients.append([_coefficient(expr, v) for v in variables])
    groups = [[len(variables) - 1]]
    for d in range(len(variables) - 2, -1, -1):
        inner = groups[0][0]
        joins = all(c[d] is not None and c[inner] is not None
                    and sympy.expand(c[d] - sizes[inner] * c[inner]) == 0 for c in coefficients)
        if joins:
            groups[0].insert(0, d)
        else:
            groups.insert(0, [d])
    return groups


def merge_loops(kernel: Kernel) -> Kernel:
    """``kernel`` itself when no dims merge, else a copy looping over merged dims (see the module)."""
    indexes = kernel_indexes(kernel)
    outer = merge_groups(kernel.outer_vars, kernel.outer, indexes)
    inner = merge_groups(kernel.inner_vars, kernel.inner, indexes)
    if len(outer) == len(kernel.outer) and len(inner) == len(kernel.inner):
        return kernel
    merged = copy.copy(kernel)
    merged.outer = tuple(prod([kernel.outer[d] for d in g]) for g in outer)
    merged.inner = tuple(prod([kernel.inner[d] for d in g]) for g in inner)
    own_outer, own_inner = index_vars("p", len(kernel.outer)), index_vars("q", len(kernel.inner))
    merged.own_vars = (own_outer, own_inner)
    joins = {}
    for groups, own, loop in ((outer, own_outer, merged.outer_vars), (inner, own_inner, merged.inner_vars)):
        for g, dims in enumerate(groups):
            for d in dims[:-1]:
                joins[own[d]] = sympy.Integer(0)
            joins[own[dims[-1]]] = loop[g]
    merged.joins = joins
    return merged

