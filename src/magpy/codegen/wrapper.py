"""The generated Python wrapper: checks inputs, allocates buffers, launches kernels, frees buffers.

The wrapper is real, readable Python source (dumped by ``MAGPY_DEBUG_DIR``); kernels, extern ops
and constants reach it through the namespace it is executed in.

A graph with symbolic sizes reads each size symbol from the inputs first (``s0 =
x.size(0)``), checks every input's sizes and strides and the ShapeEnv's guards over those
symbols (any call they do not hold for runs eagerly), then computes buffer sizes, kernel size
arguments and extern calls' size arguments from them.
"""
from __future__ import annotations

import math

import sympy
import torch

from .graph import Constant
from .ir import BufferRef, ExternCall, GetItem, WrapperView, python_size
from .scheduler import Kernel
from .sizes import SizeAsFloat, SizeSource, guard_namespace


def _empty_strided(device: torch.device):
    """``empty_strided(size, stride, dtype)`` on ``device``: torch's C++ fast path (a third of
    ``torch.empty_strided``'s cost per call) where this torch has it — on a GPU only when there
    is one, since it allocates on the current one."""
    guards = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
    if device.type == "cpu":
        fast = getattr(guards, "_empty_strided_cpu", None)
    elif device.type == "cuda" and torch.cuda.device_count() == 1:
        fast = getattr(guards, "_empty_strided_cuda", None)
    else:
        fast = None
    if fast is not None:
        return fast

    def empty_strided(size, stride, dtype):
        return torch.empty_strided(size, stride, dtype=dtype, device=device)

    return empty_strided


class WrapperWriter:
    """Builds the wrapper source; ``namespace`` holds every object the source names."""

    def __init__(self, lowering, scheduler, kernel_params: dict, call_style: str = "pointer",
                 kernel_sizes: dict = None):
        self.lowering = lowering
        self.scheduler = scheduler
        self.kernel_params = kernel_params  # kernel name -> buffer names in argument order
        self.kernel_sizes = kernel_sizes or {}  # kernel name -> size symbols after the buffers
        self.call_style = call_style
        self.namespace: dict = {"torch": torch, "aten": torch.ops.aten, "prims": torch.ops.prims}
        self.lines: list[str] = []
        self._constants = 0

    # ------------------------------------------------------------------------------------------

    def constant(self, value) -> str:
        name = f"_const{self._constants}"
        self._constants += 1
        self.namespace[name] = value
        return name

    def size(self, expr) -> str:
        """Python text of a size (symbols are locals of the wrapper, read from the inputs)."""
        if isinstance(expr, sympy.Basic):
            self.lowering.sizes.check_readable(expr)
        return python_size(expr)

    def sizes(self, exprs) -> str:
        inner = ", ".join(self.size(e) for e in exprs)
        return f"({inner},)" if len(exprs) == 1 else f"({inner})"

    def render_arg(self, a) -> str:
        if isinstance(a, BufferRef):
            return a.name
        if isinstance(a, sympy.Expr):
            return self.size(a)
        if isinstance(a, SizeAsFloat):
            return f"float({self.size(a.size)})"
        if isinstance(a, list):
            return "[" + ", ".join(self.render_arg(x) for x in a) + "]"
        if isinstance(a, tuple):
            inner = ", ".join(self.render_arg(x) for x in a)
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if a is None or isinstance(a, (bool, int, str)):
            return repr(a)
        if isinstance(a, float):
            return repr(a) if math.isfinite(a) else f"float('{a}')"
        if isinstance(a, torch.dtype):
            return str(a)
        if isinstance(a, torch.device):
            return f"torch.device({str(a)!r})"
        if isinstance(a, (torch.memory_format, torch.layout)):
            return str(a)
        return self.constant(a)

    def target_name(self, target) -> str:
        if isinstance(target, torch._ops.OpOverload):
            ns = target.namespace
            if ns in ("aten", "prims"):
                return f"{ns}.{target.overloadpacket.__name__}.{target._overloadname}"
        return self.constant(target)

    # ------------------------------------------------------------------------------------------

    def write(self, kernels: dict, eager_fallback) -> str:
        low = self.lowering
        items = self.scheduler.items
        self.namespace["_eager"] = eager_fallback
        self.namespace["empty_strided"] = _empty_strided(low.device)
        self.namespace.update(kernels)
        self.namespace.update(low.constants)
        out = self.lines
        names = [n if n is not None else f"_scalar{i}" for i, n in enumerate(low.inputs)]
        n_kernels = sum(isinstance(it, Kernel) for it in items)
        n_extern = sum(isinstance(it, ExternCall) for it in items)
        out.append(f"# {n_kernels} kernels, {n_extern} extern calls")
        out.append("def call(*args):")
        if names:
            out.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = args")
        sources = low.sizes.sources
        if sources:
            out.append("    # Size symbols, read from the inputs (inputs of another rank run eagerly).")
            out.append("    try:")
            out.extend(f"        {line}" for line in self._size_reads(names))
            out.append("    except (ValueError, IndexError):")
            out.append("        return _eager(*args)")
        checks = []
        for position, name in enumerate(low.inputs):
            if name is None:
                continue
            layout = low.layouts[name]
            checks.append(f"{name}.stride() != {self.sizes(layout.stride)}")
            read = layout.size and all(sources.get(s) == SizeSource(position, "size", d)
                                       for d, s in enumerate(layout.size))
            if not read:  # (a shape whose every size was read from it just now needs no check)
                checks.append(f"{name}.shape != {self.sizes(layout.size)}")
        for position, value in low.sizes.int_inputs.items():
            if sources.get(value) != SizeSource(position, "value"):
                checks.append(f"{names[position]} != {self.size(value)}")
        if checks:
            out.append("    # Kernels are specialised to these sizes and strides.")
            out.append("    if " + " or ".join(checks) + ":")
            out.append("        return _eager(*args)")
        guards = low.sizes.guard_checks()
        if guards:
            for name, value in guard_namespace().items():
                self.namespace.setdefault(name, value)
            out.append("    # What the graph's trace assumed of its sizes (the ShapeEnv's guards).")
            out.append("    if not (" + " and ".join(guards) + "):")
            out.append("        return _eager(*args)")
        last_use = self._last_uses()
        outputs = self._output_names()
        keep = set(outputs) | {n for n in low.inputs if n} | set(low.constants)
        for i, item in enumerate(items):
            if isinstance(item, Kernel):
                self._kernel(item)
            elif isinstance(item, ExternCall):
                self._extern(item)
            elif isinstance(item, WrapperView):
                args = ", ".join(self.render_arg(a) for a in item.args)
                sep = ", " if args else ""
                out.append(f"    {item.name} = {self.target_name(item.target)}({item.base}{sep}{args})")
            elif isinstance(item, GetItem):
                out.append(f"    {item.name} = {item.base}[{item.index}]")
                self._restride(item.name)
            dead = sorted(n for n, last in last_use.items() if last == i and n not in keep)
            if dead:
                out.append(f"    del {', '.join(dead)}")
        out.append(f"    return {self._render_outputs(low.outputs)}")
        return "\n".join(out) + "\n"

    def _size_reads(self, names) -> list[str]:
        """Statements binding each size symbol: a tensor's sizes unpacked at once."""
        low = self.lowering
        lines = []
        for position, name in enumerate(low.inputs):
            if name is None:
                continue
            mine = {source.dim: str(symbol) for symbol, source in low.sizes.sources.items()
                    if source.position == position and source.kind == "size"}
            if mine:
                targets = [mine.get(d, "_") for d in range(len(low.layouts[name].size))]
                lines.append(f"{', '.join(targets)}{',' if len(targets) == 1 else ''} = {name}.shape")
        for symbol, source in low.sizes.sources.items():
            if source.kind != "size":
                lines.append(f"{symbol} = {source.read(names[source.position])}")
        return lines

    def _output_names(self) -> list[str]:
        found = []

        def visit(o):
            if isinstance(o, (list, tuple)):
                for x in o:
                    visit(x)
            elif isinstance(o, str):
                found.append(o)

        visit(self.lowering.outputs)
        return found

    def _render_outputs(self, o) -> str:
        if isinstance(o, list):
            return "[" + ", ".join(self._render_outputs(x) for x in o) + "]"
        if isinstance(o, tuple):
            inner = ", ".join(self._render_outputs(x) for x in o)
            return f"({inner},)" if len(o) == 1 else f"({inner})"
        if isinstance(o, Constant):
            return self.render_arg(o.value)
        return o

    def _last_uses(self) -> dict[str, int]:
        last: dict[str, int] = {}
        for i, item in enumerate(self.scheduler.items):
            if isinstance(item, Kernel):
                names = set(self.kernel_params.get(item.name, []))
            else:
                names = item.buffer_reads() | {item.name}
            for n in names:
                last[n] = i
        return last

    def _kernel(self, kernel: Kernel):
        out = self.lines
        low = self.lowering
        params = self.kernel_params[kernel.name]
        for node in kernel.nodes:
            if kernel.storage[node.name] == "memory":
                lay = node.layout
                out.append(f"    {node.name} = empty_strided({self.sizes(lay.size)}, {self.sizes(lay.stride)}, "
                           f"{lay.dtype})")
        if self.call_style == "pointer":
            args = [f"{p}.data_ptr()" for p in params]
        else:
            args = list(params)
        args += [self.size(s) for s in self.kernel_sizes.get(kernel.name, ())]
        out.append(f"    {kernel.name}({', '.join(args)})")

    def _extern(self, call: ExternCall):
        out = self.lines
        args = [self.render_arg(a) for a in call.args]
        args += [f"{k}={self.render_arg(v)}" for k, v in call.kwargs.items()]
        out.append(f"    {call.name} = {self.target_name(call.target)}({', '.join(args)})  # {call.reason}")
        self._restride(call.name)

    def _restride(self, name: str):
        layout = self.lowering.layouts.get(name)
        if layout is None or not layout.is_dense():
            return
        # Kernels read this result with the strides its fake value promised.
        self.lines.append(f"    if {name}.stride() != {self.sizes(layout.stride)}:")
        self.lines.append(f"        {name} = empty_strided({self.sizes(layout.size)}, "
                          f"{self.sizes(layout.stride)}, {layout.dtype}).copy_({name})")
