"""Loop nests of pointwise kernels: the loop order, and tiles across a transpose.

A pointwise kernel walks its dims in the order its first stored buffer lies in memory, so the
innermost loop writes contiguously (a channels-last output is walked N, H, W, C) — unless that
dim is too short to vectorize and a load walks a longer one contiguously. When a load
walks another dim ``d`` contiguously while the innermost dim ``l`` strides through memory (a
transpose), ``d`` and ``l`` are cut into ``TILE`` x ``TILE`` tiles and each such load is first
copied, tile by tile, into a small transposed buffer: then the inner loop reads every operand
contiguously. Full tiles of 4-byte elements are transposed in registers
(``magpy_transpose16_b32`` in the prelude); other tiles by a plain loop.

With symbolic sizes the same plan is made without their values: a symbolic dim counts as long
enough to tile and vectorize (tiles have tail handling, so any size is right), strides are
ordered by ``sizes.estimate``, and whether to run in parallel is decided at run time (both
nests behind an ``if``, or an OpenMP ``if`` clause for tiles; ``both``/``negate`` build such
conditions, True and False where known).
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import sympy

from ..ir import as_size, is_static, prod
from ..ops import DependencyHandler, set_handler
from ..sizes import at_least, estimate, is_size_symbol

TILE = 16
# Work (elements) below which a kernel runs on one thread: spawning costs more than it saves.
PARALLEL_MIN_WORK = 32768
# The same for pointwise kernels, whose one parallel loop is cheap to spread.
POINTWISE_PARALLEL_MIN_WORK = 16384


def both(a, b):
    """The conjunction of two conditions, each a bool or C++ text decided at run time."""
    if a is False or b is False:
        return False
    if a is True or b is True:
        return b if a is True else a
    return f"({a}) && ({b})"


def negate(a):
    return (not a) if isinstance(a, bool) else f"!({a})"


def linear_coefficients(expr, variables) -> Optional[list]:
    """The coefficient of each of ``variables`` in ``expr`` (an int, or a size expression), or
    None when ``expr`` is not ``sum(c_i * v_i) + rest`` with ``rest`` free of them."""
    expr = sympy.expand(expr)
    coeffs = []
    rest = expr
    for v in variables:
        c = expr.coeff(v)
        if not (c.is_Integer or c.free_symbols and all(is_size_symbol(s) for s in c.free_symbols)):
            return None
        coeffs.append(as_size(c))
        rest = rest - c * v
    if sympy.expand(rest).free_symbols & set(variables):
        return None
    return coeffs


def direct_reads(kernel, node) -> list[tuple[str, sympy.Expr]]:
    """(buffer, index) of the loads of ``node`` that are neither indirect nor only under a mask."""
    handler = DependencyHandler()
    with set_handler(handler):
        kernel.evaluate(node)
    return [(name, sympy.expand(expr)) for name, expr, indirect in handler.reads
            if not indirect and (name, expr) in handler.unmasked]


@dataclasses.dataclass
class StagedLoad:
    """A load read through a transposed tile buffer: ``index`` has coefficient 1 on the tile dim
    and ``stride`` on the innermost dim."""

    name: str
    index: sympy.Expr
    stride: object  # an int, or a size expression
    buffer: str = ""  # the tile buffer's name, once declared


@dataclasses.dataclass
class PointwiseNest:
    """How a pointwise kernel's loops are laid out.

    ``order``  the kernel's dims, outermost first
    ``tile``   the dim tiled together with the innermost one (None: no tiles)
    ``staged`` loads read through transposed tile buffers
    """

    variables: list
    sizes: list
    order: list[int]
    tile: Optional[int] = None
    staged: list = dataclasses.field(default_factory=list)

    def parallel(self, printer):
        """Whether to run in parallel: a bool, or C++ text deciding it at run time."""
        return printer.at_least(prod(self.sizes), POINTWISE_PARALLEL_MIN_WORK)

    @staticmethod
    def plan(kernel, produced: set[str], layouts=None) -> "PointwiseNest":
        variables, sizes = kernel.outer_vars, list(kernel.outer)
        nest = PointwiseNest(variables, sizes, loop_order(kernel, produced, layouts))
        if len(variables) >= 2:
            nest._plan_tile(kernel, produced)
        return nest

    def _plan_tile(self, kernel, produced):
        inner = self.order[-1]
        if at_least(self.sizes[inner], TILE) is False:
            return
        candidates = []
        for node in kernel.nodes:
            for name, index in direct_reads(kernel, node):
                if name in produced:
                    continue
                coeffs = linear_coefficients(index, self.variables)
                if coeffs is None or coeffs[inner] in (0, 1):
                    continue
                for d in self.order[:-1]:
                    if coeffs[d] == 1 and at_least(self.sizes[d], TILE) is not False:
                        candidates.append((d, StagedLoad(name, index, coeffs[inner])))
                        break
        if not candidates:
            return
        self.tile = candidates[0][0]
        # One tile buffer per distinct (buffer, index) read across the same pair of dims.
        seen = set()
        for d, load in candidates:
            if d == self.tile and (load.name, load.index) not in seen:
                seen.add((load.name, load.index))
                self.staged.append(load)

    # ------------------------------------------------------------------------------------------

    def render(self, printer, lines, indent: str, body) -> None:
        """Emit the loops with ``body(lines, indent)`` inside (called twice where tiles of
        symbolic dims run full tiles and tails apart)."""
        if self.tile is not None and not is_static([self.sizes[self.tile], self.sizes[self.order[-1]]]):
            self._render_split_tiles(printer, lines, indent, body)
            return
        parallel = self.parallel(printer)
        if self.tile is None and self.variables and not isinstance(parallel, bool):
            # Parallel or not, decided at run time: both nests behind an if (an OpenMP if
            # clause would cost a call into the runtime on every call, a third of a microsecond).
            variables = [self.variables[i] for i in self.order]
            sizes = [self.sizes[i] for i in self.order]
            lines.append(f"{indent}if ({parallel}) {{")
            for choice in (True, False):
                inner = self._plain_loops(printer, lines, variables, sizes, indent + "    ", choice)
                body(lines, inner)
                self.close(lines, inner)
                lines.append(f"{indent}}} else {{" if choice else f"{indent}}}")
            return
        inner = self.open(printer, lines, indent)
        body(lines, inner)
        self.close(lines, inner)

    def render_parts(self, printer, lines, indent: str, parts: dict, body, after=None) -> None:
        """Emit the loops with each variable of ``parts`` looping over its parts one after the
        other (``segments.py``), and ``body(lines, indent, ranges)`` inside each combination,
        ``ranges`` giving every variable's range there. For static sizes without tiles only. Threads
        share the outermost loops that are not split (collapsed), or each part of the outermost.

        ``after(lines, loop_line, body_start, variable, ranges, lines_in_front, lines_inside)``
        runs once each loop around the innermost is printed but for its closing brace (its body
        ``lines[body_start:]``, opened at ``lines[loop_line]``, ``ranges`` those of it and the
        loops around it); ``lines_in_front``/``lines_inside``: whether lines may go in front of the
        loop or at the start of its body (not between loops OpenMP collapses)."""
        variables = [self.variables[i] for i in self.order]
        sizes = {v: s for v, s in zip(self.variables, self.sizes)}
        parallel = self.parallel(printer)
        whole = 0  # (the outer loops not split, collapsed into one parallel loop)
        while whole < len(variables) - 1 and variables[whole] not in parts:
            whole += 1

        def pragma(level):
            if level == len(variables) - 1:
                if parallel and len(variables) == 1:
                    return "omp parallel for simd schedule(static)"
                return "omp simd"
            if not parallel:
                return None
            if level == 0 and whole:
                return "omp parallel for" + (f" collapse({whole})" if whole > 1 else "")
            if level == 0:
                return "omp parallel for"
            return None

        def emit(level, indent, ranges):
            if level == len(variables):
                body(lines, indent, ranges)
                return
            v = variables[level]
            collapsed = whole if parallel and whole > 1 else 0
            for lo, hi in parts.get(v, [(0, sizes[v])]):
                loop_line = len(lines)
                if (p := pragma(level)) is not None:
                    lines.append(f"{indent}#pragma {p}")
                lines.append(f"{indent}for (int64_t {v} = {lo}; {v} < {hi}; {v}++) {{")
                emit(level + 1, indent + "    ", {**ranges, v: (lo, hi)})
                if after is not None and level < len(variables) - 1:
                    after(lines, loop_line, loop_line + 1 + (p is not None), v, {**ranges, v: (lo, hi)},
                          level == 0 or level >= collapsed, level >= collapsed - 1)
                lines.append(f"{indent}}}")

        emit(0, indent, {})

    def _render_split_tiles(self, printer, lines, indent, body):
        """Tiles of symbolic dims: a full tile (all but the last along each dim) loops over
        constant bounds, as a static kernel's do; the tails loop to the end of the dims."""
        indent = self._open_tiles(printer, lines, indent)
        for load in self.staged:
            self._declare_tile(printer, lines, indent, load)
        d, l = (self.variables[i] for i in (self.tile, self.order[-1]))
        sizes = [printer.size(self.sizes[i]) for i in (self.tile, self.order[-1])]
        lines.append(f"{indent}if ({d}_tile + {TILE} <= {sizes[0]} && {l}_tile + {TILE} <= {sizes[1]}) {{")
        for full in (True, False):
            branch = indent + "    "
            for load in self.staged:
                self._fill_tile(printer, lines, branch, load, full)
            for i in (self.tile, self.order[-1]):
                v = self.variables[i]
                if i == self.order[-1]:
                    lines.append(f"{branch}#pragma omp simd")
                end = f"{v}_tile + {TILE}" if full else self._end(printer, i)
                lines.append(f"{branch}for (int64_t {v} = {v}_tile; {v} < {end}; {v}++) {{")
                branch += "    "
            body(lines, branch)
            for i in range(2):
                lines.append(branch[: len(branch) - 4 * (i + 1)] + "}")
            lines.append(f"{indent}}} else {{" if full else f"{indent}}}")
        for i in range(len(self.variables)):
            lines.append(indent[: len(indent) - 4 * (i + 1)] + "}")

    def open(self, printer, lines, indent: str) -> str:
        """Emit the loops (and tile staging); returns the indent of the loop body."""
        variables = [self.variables[i] for i in self.order]
        sizes = [self.sizes[i] for i in self.order]
        if self.tile is None:
            return self._plain_loops(printer, lines, variables, sizes, indent)
        indent = self._open_tiles(printer, lines, indent)
        for load in self.staged:
            self._stage(printer, lines, indent, load)
        for i in (self.tile, self.order[-1]):
            v = self.variables[i]
            if i == self.order[-1]:
                lines.append(f"{indent}#pragma omp simd")
            lines.append(f"{indent}for (int64_t {v} = {v}_tile; {v} < {self._end(printer, i)}; {v}++) {{")
            indent += "    "
        return indent

    def _open_tiles(self, printer, lines, indent: str) -> str:
        """The loops over tiles (and over the untiled dims); returns the indent inside them."""
        variables = [self.variables[i] for i in self.order]
        tiled = {self.tile, self.order[-1]}
        parallel = self.parallel(printer)
        if parallel is True:
            lines.append(f"{indent}#pragma omp parallel for collapse({len(variables)})")
        elif parallel:
            lines.append(f"{indent}#pragma omp parallel for collapse({len(variables)}) if(parallel: {parallel})")
        for i in self.order:
            v, n = self.variables[i], printer.size(self.sizes[i])
            if i in tiled:
                lines.append(f"{indent}for (int64_t {v}_tile = 0; {v}_tile < {n}; {v}_tile += {TILE}) {{")
            else:
                lines.append(f"{indent}for (int64_t {v} = 0; {v} < {n}; {v}++) {{")
            indent += "    "
        return indent

    def close(self, lines, indent: str) -> None:
        count = len(self.variables) + (2 if self.tile is not None else 0)
        for i in range(count):
            lines.append(indent[: len(indent) - 4 * (i + 1)] + "}")

    def _plain_loops(self, printer, lines, variables, sizes, indent, parallel=None):
        if not variables:
            return indent
        parallel = self.parallel(printer) if parallel is None else parallel
        if len(variables) == 1:
            pragma = "omp parallel for simd schedule(static)" if parallel else "omp simd"
            lines.append(f"{indent}#pragma {pragma}")
        elif parallel:
            collapse = f" collapse({len(variables) - 1})" if len(variables) > 2 else ""
            lines.append(f"{indent}#pragma omp parallel for{collapse}")
        for k, (v, s) in enumerate(zip(variables, sizes)):
            if len(variables) > 1 and k == len(variables) - 1:
                lines.append(f"{indent}#pragma omp simd")
            lines.append(f"{indent}for (int64_t {v} = 0; {v} < {printer.size(s)}; {v}++) {{")
            indent += "    "
        return indent

    def _end(self, printer, i) -> str:
        v, n = self.variables[i], self.sizes[i]
        if isinstance(n, int) and n % TILE == 0:
            return f"{v}_tile + {TILE}"
        n = printer.size(n)
        return f"({v}_tile + {TILE} < {n} ? {v}_tile + {TILE} : {n})"

    def _stage(self, printer, lines, indent, load: StagedLoad):
        """Copy this tile of ``load`` into a transposed buffer; the body then reads the buffer."""
        self._declare_tile(printer, lines, indent, load)
        full = [isinstance(n, int) and n % TILE == 0 for n in (self.sizes[self.tile], self.sizes[self.order[-1]])]
        if all(full) or printer.layouts[load.name].dtype.itemsize != 4:
            self._fill_tile(printer, lines, indent, load, all(full))
            return
        d, l = self.variables[self.tile], self.variables[self.order[-1]]
        scalar, call = self._tile_copies(printer, load, False)
        lines.append(f"{indent}if ({self._end(printer, self.tile)} - {d}_tile == {TILE} && "
                     f"{self._end(printer, self.order[-1])} - {l}_tile == {TILE}) {{")
        lines.append(f"{indent}    {call}")
        lines.append(f"{indent}}} else {{")
        lines.extend(indent + "    " + s for s in scalar)
        lines.append(f"{indent}}}")

    def _declare_tile(self, printer, lines, indent, load: StagedLoad):
        """The transposed buffer of ``load``'s tile; the body reads its elements from it."""
        from .handler import ctype

        d, l = self.variables[self.tile], self.variables[self.order[-1]]
        tile = printer.new_var("tile")
        load.buffer = tile
        printer.staged[(load.name, load.index)] = f"{tile}[{TILE}*({d} - {d}_tile) + ({l} - {l}_tile)]"
        lines.append(f"{indent}alignas(64) {ctype(printer.layouts[load.name].dtype, storage=True)} "
                     f"{tile}[{TILE * TILE}];")

    def _fill_tile(self, printer, lines, indent, load: StagedLoad, full: bool):
        """Copy this tile of ``load`` (a full one: ``full``) into its buffer."""
        scalar, call = self._tile_copies(printer, load, full)
        if full and printer.layouts[load.name].dtype.itemsize == 4:
            lines.append(indent + call)
        else:
            lines.extend(indent + s for s in scalar)

    def _tile_copies(self, printer, load: StagedLoad, full: bool):
        """(lines of a plain copy of the tile, the register transpose of a full tile)."""
        d, l = self.variables[self.tile], self.variables[self.order[-1]]
        ptr = printer.param(load.name)
        element = printer.staged[(load.name, load.index)]
        ends = [f"{v}_tile + {TILE}" if full else self._end(printer, i)
                for v, i in ((l, self.order[-1]), (d, self.tile))]
        scalar = [
            f"for (int64_t {l} = {l}_tile; {l} < {ends[0]}; {l}++) {{",
            f"    for (int64_t {d} = {d}_tile; {d} < {ends[1]}; {d}++) {{",
            f"        {element} = {ptr}[{printer.index(load.index)}];",
            "    }",
            "}",
        ]
        corner = load.index.subs({d: sympy.Symbol(f"{d}_tile"), l: sympy.Symbol(f"{l}_tile")})
        call = f"magpy_transpose16_b32({ptr} + {printer.index(corner)}, {printer.size(load.stride)}, {load.buffer});"
        return scalar, call


def loop_order(kernel, produced=(), layouts=None) -> list[int]:
    """The kernel's dims, outermost first: by decreasing stride of its first stored buffer, then
    the innermost chosen by what the walk costs.

    Given the buffers' ``layouts`` (C++ kernels), the innermost is the dim along which the
    kernel's reads and writes together cost clearly least (``_walk_cost``), if any does: a
    channels-last max pool over an NCHW input walked channels innermost, reading each of its 9
    window elements 1024 floats apart; a batch norm's ELU over a channels-last convolution, padded
    and stored in both layouts, walked the NCHW rows (a strided read and a strided store: gcc
    left the loop scalar, ``expm1f`` and all); a bilinear gradient over 8 channels walked the rows,
    because a read of its row positions walks them.

    Without (Triton's blocks): when the store's order leaves a short dim innermost (the 3 channels
    of a channels-last image), a dim that some load walks contiguously and that is long enough to
    vectorize goes innermost.
    """
    variables = kernel.outer_vars
    natural = list(range(len(variables)))
    if len(variables) < 2:
        return natural
    order = natural
    for node in kernel.nodes:
        if kernel.storage.get(node.name) != "memory":
            continue
        coeffs = linear_coefficients(kernel.store_index(node), variables)
        if coeffs is not None:
            order = sorted(natural, key=lambda i: (-abs(estimate(coeffs[i])), i))
        break
    if layouts is not None:
        return _cheapest_innermost(kernel, produced, order, layouts)
    sizes = kernel.outer
    if at_least(sizes[order[-1]], TILE) is not False:
        return order
    for node in kernel.nodes:
        for name, index in direct_reads(kernel, node):
            coeffs = None if name in produced else linear_coefficients(index, variables)
            if coeffs is None:
                continue
            for i in natural:
                if coeffs[i] == 1 and at_least(sizes[i], TILE) is not False:
                    return [d for d in order if d != i] + [i]
    return order


# Elements of 4 bytes in a vector register (AVX2): a dim this long fills one.
VECTOR_FLOATS = 8
VECTOR_BYTES = 32
CACHE_LINE = 64
# Another walk is taken when it costs less than this fraction of the current one.
CHEAPER = 0.9


def _cheapest_innermost(kernel, produced, order: list[int], layouts) -> list[int]:
    """``order`` with the innermost dim replaced by the one, at least a vector long, whose walk
    costs clearly less (``_walk_cost``; a shorter dim's walk, which does not vectorize, costs as
    scalar code), or ``order`` as it is."""
    sizes = kernel.outer
    accesses = _accesses(kernel, produced, layouts)
    if not accesses:
        return order
    inner = order[-1]
    current = _walk_cost(accesses, inner, sizes)
    candidates = [d for d in order[:-1] if at_least(sizes[d], VECTOR_FLOATS) is not False]
    if not candidates:
        return order
    best = min(candidates, key=lambda d: _walk_cost(accesses, d, sizes))
    if _walk_cost(accesses, best, sizes) >= CHEAPER * current:
        return order
    return [d for d in order if d != best] + [best]


def _accesses(kernel, produced, layouts) -> list[tuple[list, int, bool]]:
    """(coefficients of the loop variables, element size, whether a tile could stage it) of every
    store to memory and every direct read of a buffer the kernel does not produce, masked ones
    included (a read's element size from ``layouts``, 4 bytes where it is not there)."""
    variables = kernel.outer_vars
    accesses = []
    for node in kernel.nodes:
        if kernel.storage.get(node.name) == "memory":
            coeffs = linear_coefficients(kernel.store_index(node), variables)
            if coeffs is not None:
                accesses.append((coeffs, node.layout.dtype.itemsize, False))
        handler = DependencyHandler()
        with set_handler(handler):
            kernel.evaluate(node)
        for name, index, indirect in handler.reads:
            if indirect or name in produced:
                continue
            coeffs = linear_coefficients(sympy.expand(index), variables)
            if coeffs is not None:
                itemsize = layouts[name].dtype.itemsize if name in layouts else 4
                accesses.append((coeffs, itemsize, (name, index) in handler.unmasked))
    return accesses


def _walk_cost(accesses, d: int, sizes) -> float:
    """What walking dim ``d`` innermost costs per element, summed over the accesses: nothing for
    one that does not move, a vector's share for a contiguous one (a whole element where ``d`` is
    shorter than a vector), and for a strided one an element's own load or store (gcc builds such
    vectors element by element, when it vectorizes the loop at all) plus the share of a cache line
    it crosses. A read that steps along ``d`` while another long dim walks it contiguously is
    counted as contiguous: a tile stages it."""
    vector = VECTOR_BYTES if at_least(sizes[d], VECTOR_FLOATS) is not False else 0
    total = 0.0
    for coeffs, itemsize, stageable in accesses:
        step = abs(estimate(coeffs[d]))
        if step > 1 and stageable and any(coeffs[e] == 1 and e != d and at_least(sizes[e], TILE) is not False
                                          for e in range(len(coeffs))):
            step = 1
        if step == 1:
            total += itemsize / vector if vector else 1
        elif step:
            total += 1 + min(step * itemsize, CACHE_LINE) / CACHE_LINE
    return total
