"""The generated Python wrapper: checks inputs, allocates buffers, launches kernels, frees buffers.

The wrapper is real, readable Python source (dumped by ``MAGPY_DEBUG_DIR``); kernels, extern ops
and constants reach it through the namespace it is executed in. Everything it runs per call is a
cost of every call: views are made from their layouts in one call each, library calls go through
torch's own bindings, and on a GPU a second wrapper launches each kernel directly
(``triton.runtime.DirectLaunch``) once the first has compiled them (static graphs only).

A graph with symbolic sizes reads each size symbol from the inputs first (``s0 =
x.size(0)``), checks every input's sizes and strides and the ShapeEnv's guards over those
symbols (any call they do not hold for runs eagerly), then computes buffer sizes, kernel size
arguments and extern calls' size arguments from them. A size made from data (``u0``) is read
from the result of the library call making it, right after that call, and what the trace
recorded about it is checked there (a call it does not hold for runs eagerly too: nothing
before it has changed anything outside the wrapper).
"""
from __future__ import annotations

import math
from typing import Optional

import sympy
import torch

from .checks import ERROR_FLAG, error_flag, kernel_error
from .graph import Constant
from .input_writes import InputWrite
from .ir import BufferRef, ExternCall, GetItem, WrapperView, python_size, returns_alias
from .scheduler import Kernel, ScatterKernel
from .sizes import SizeAsFloat, SizeRelation, SizeSource, UnsupportedSize, guard_namespace, is_float_symbol, \
    render_float

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1


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


def _reinterpret():
    """``reinterpret(base, size, stride, offset)``: a view of ``base`` with that layout, ``offset``
    elements past base's own storage offset (torch's C++ fast path where this torch has it)."""
    fast = getattr(getattr(getattr(torch._C, "_dynamo", None), "guards", None), "_reinterpret_tensor", None)
    if fast is not None:
        return fast

    def reinterpret(base, size, stride, offset):
        return base.as_strided(size, stride, base.storage_offset() + offset)

    return reinterpret


# Library calls whose torch function takes the aten overload's arguments, through a cheaper
# binding than the overload's (a Python frame and schema-driven parsing fewer).
TORCH_FUNCTIONS = {
    torch.ops.aten.mm.default: "torch.mm",
    torch.ops.aten.bmm.default: "torch.bmm",
    torch.ops.aten.addmm.default: "torch.addmm",
    torch.ops.aten.baddbmm.default: "torch.baddbmm",
    torch.ops.aten.convolution.default: "torch.convolution",
}

def cuda_runtime():
    """(the current raw CUDA stream of a device index, the current device index): C calls."""
    return torch._C._cuda_getCurrentRawStream, torch._C._cuda_getDevice


# Where a kernel argument's pointer comes from, for direct launches (see ``_pointer_roots``).
OWN = ""  # a buffer this wrapper allocates, or a library call's fresh result: 512-byte aligned


class WrapperWriter:
    """Builds the wrapper source; ``namespace`` holds every object the source names."""

    def __init__(self, lowering, scheduler, kernel_params: dict, call_style: str = "pointer",
                 kernel_sizes: dict = None, direct: Optional[dict] = None, checked=frozenset()):
        """``kernel_sizes``: kernel name -> the size symbols it takes after its buffers (symbolic
        graphs). ``direct``: kernel name -> ``DirectLaunch`` of kernels launched directly (a GPU
        wrapper written after the first call); they need ``general``, the first wrapper, in
        ``write`` for calls whose inputs are not aligned as when the kernels were compiled.
        ``checked``: kernels that report a failed ``ops.check`` (C++: they return its code;
        Triton: they store it into the ``_error_code`` tensor passed last); the wrapper raises
        eager's exception right after such a kernel."""
        self.lowering = lowering
        self.scheduler = scheduler
        self.kernel_params = kernel_params  # kernel name -> buffer names in argument order
        self.kernel_sizes = kernel_sizes or {}  # kernel name -> size symbols after the buffers
        self.call_style = call_style
        self.direct = direct or {}
        self.checked = checked
        self.namespace: dict = {"torch": torch, "aten": torch.ops.aten, "prims": torch.ops.prims,
                                "reinterpret": _reinterpret(), "_kernel_error": kernel_error}
        self.lines: list[str] = []
        self.launched_directly: set[str] = set()
        self._constants = 0
        self.read: set = set()  # size symbols read so far, at the point being written
        self.unchecked: list = []  # relations not checked yet: some size in them is not read yet
        self.mutated = False  # an op written so far may have changed an input

    # ------------------------------------------------------------------------------------------

    def constant(self, value) -> str:
        name = f"_const{self._constants}"
        self._constants += 1
        self.namespace[name] = value
        return name

    def size(self, expr) -> str:
        """Python text of a size (symbols are locals of the wrapper, read from the inputs, or from
        the result making them before this point)."""
        if isinstance(expr, sympy.Basic):
            self.lowering.sizes.check_readable(expr)
            unread = sorted(str(s) for s in expr.free_symbols - self.read)
            if unread:
                raise UnsupportedSize(f"size {expr} is needed before {', '.join(unread)} is read")
        return python_size(expr)

    def relation(self, relation) -> str:
        """Python text of a relation between sizes in torch's vocabulary (read before this point)."""
        unread = sorted(str(s) for s in relation.free_symbols - self.read)
        if unread:
            raise UnsupportedSize(f"relation {relation} is needed before {', '.join(unread)} is read")
        for name, value in guard_namespace().items():
            self.namespace.setdefault(name, value)
        return self.lowering.sizes.check_text(relation)

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
        if isinstance(a, SizeRelation):  # (a SymBool result: ``y.size(0) > 3``, for a branch after the graph)
            return f"bool({self.relation(a.expr)})"
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
        if target in TORCH_FUNCTIONS:
            return TORCH_FUNCTIONS[target]
        if isinstance(target, torch._ops.OpOverload):
            ns = target.namespace
            if ns in ("aten", "prims"):
                return f"{ns}.{target.overloadpacket.__name__}.{target._overloadname}"
        return self.constant(target)

    # ------------------------------------------------------------------------------------------

    def write(self, kernels: dict, eager_fallback, general=None) -> str:
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
        out.append("    return call_boxed(list(args))")
        out.append("")
        # Boxed, as AOTAutograd calls a graph: the caller's list is emptied once nothing can fall back to
        # eager, and each input dropped after its last use, so a backward frees the activations it was given
        # as it goes, as eager's autograd does.
        out.append("def call_boxed(args):")
        self.inputs_text = ", ".join(names)
        if names:
            out.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = args")
        sources = low.sizes.sources
        self.read = {symbol for symbol, source in sources.items() if source.kind != "output"}
        self.unchecked = low.sizes.run_time_relations()
        self.mutated = False
        if self.read:
            out.append("    # Size symbols, read from the inputs (inputs of another rank run eagerly).")
            out.append("    try:")
            out.extend(f"        {line}" for line in self._size_reads(names))
            out.append("    except (ValueError, IndexError):")
            out.append(f"        return _eager({self.inputs_text})")
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
        for symbol, source in sources.items():
            if source.kind == "value" and not is_float_symbol(symbol):
                # A Python int becomes an int64 kernel argument (ctypes would wrap it silently):
                # one past int64 runs eagerly, where torch raises OverflowError.
                checks.append(f"not {INT64_MIN} <= {symbol} <= {INT64_MAX}")
        for number in low.sizes.int64_checks(self.read):  # (``n * m``: each part of it, as kernels compute)
            checks.append(f"not {INT64_MIN} <= {self.size(number)} <= {INT64_MAX}")
        if checks:
            out.append("    # Kernels are specialised to these sizes and strides.")
            out.append("    if " + " or ".join(checks) + ":")
            out.append(f"        return _eager({self.inputs_text})")
        guards = low.sizes.guard_checks()
        if guards:
            for name, value in guard_namespace().items():
                self.namespace.setdefault(name, value)
            out.append("    # What the graph's trace assumed of its sizes (the ShapeEnv's guards).")
            out.append("    if not (" + " and ".join(guards) + "):")
            out.append(f"        return _eager({self.inputs_text})")
        self._check_relations()
        if self.direct:
            self._direct_prologue(general)
        last_use = self._last_uses()
        outputs = self._output_names()
        keep = set(outputs) | set(low.constants) | {ERROR_FLAG}
        if self.unchecked:  # (a check after some kernels may still run the graph eagerly, on every input)
            keep |= {n for n in low.inputs if n}
        else:
            out.append("    args.clear()")
        for i, item in enumerate(items):
            if isinstance(item, Kernel):
                self._kernel(item)
            elif isinstance(item, ExternCall):
                self._extern(item)
            elif isinstance(item, WrapperView) and item.offset is not None:
                lay = item.layout
                out.append(f"    {item.name} = reinterpret({item.base}, {tuple(lay.size)!r}, "
                           f"{tuple(lay.stride)!r}, {item.offset})")
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
        if self.unchecked:
            raise UnsupportedSize(f"the graph asserts {', '.join(map(str, self.unchecked))} of sizes it never reads")
        out.append(f"    return {self._render_outputs(low.outputs)}")
        return "\n".join(out) + "\n"

    def _read_made_sizes(self, call: ExternCall):
        """After library call ``call``: read the sizes from data it makes, check what is known of them."""
        if not call.makes_sizes:
            return
        sources = self.lowering.sizes.sources
        self.lines.append(f"    {', '.join(map(str, call.makes_sizes))} = "
                          f"{', '.join(sources[s].read() for s in call.makes_sizes)}")
        self.read.update(call.makes_sizes)
        self._check_relations()

    def _check_relations(self):
        """Check each relation whose sizes are all read now: a call it fails runs eagerly (``_eager``
        is safe to run only while nothing has changed an input)."""
        ready = [r for r in self.unchecked if r.free_symbols <= self.read]
        if not ready:
            return
        if self.mutated:
            raise UnsupportedSize("sizes from data are checked after an op that may change an input")
        self.unchecked = [r for r in self.unchecked if r not in ready]
        texts = [self.relation(r) for r in ready]
        self.lines.append("    # What the trace recorded of the sizes from data (eager raises where it asserted).")
        self.lines.append("    if not (" + " and ".join(texts) + "):")
        self.lines.append(f"        return _eager({self.inputs_text})")

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
            if source.kind in ("stride", "value"):
                lines.append(f"{symbol} = {source.read(names[source.position])}")
        for symbol, source in low.sizes.sources.items():
            if source.kind == "quotient":
                lines.append(f"{symbol} = {render_float(source.quotient, self.size)}")
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
                if isinstance(item, ScatterKernel):
                    names.add(item.node.base)  # (its storage, taken over here)
            else:
                names = item.buffer_reads() | {item.name}
            for n in names:
                last[n] = i
        return last

    def _kernel(self, kernel: Kernel):
        out = self.lines
        params = self.kernel_params[kernel.name]
        if isinstance(kernel, ScatterKernel):
            out.append(f"    {kernel.node.name} = {kernel.node.base}  # (updated in place)")
        allocated = [] if isinstance(kernel, ScatterKernel) else kernel.nodes
        if any(isinstance(node, InputWrite) for node in allocated):
            self.mutated = True  # (it stores into an input's own memory)
        for node in allocated:
            if kernel.storage[node.name] == "memory" and not isinstance(node, InputWrite):
                lay = node.layout
                out.append(f"    {node.name} = empty_strided({self.sizes(lay.size)}, {self.sizes(lay.stride)}, "
                           f"{lay.dtype})")
        if kernel.name in self.launched_directly:
            launch = self.direct[kernel.name]
            self.namespace.update(launch.namespace(kernel.name))
            pointers = [f"{p}.data_ptr()" for p in params]
            out.append(f"    {launch.call_source(kernel.name, pointers, 'stream')}")
            return
        if self.call_style == "pointer":
            args = [f"{p}.data_ptr()" for p in params]
        else:
            args = list(params)
        args += [self.size(s) for s in self.kernel_sizes.get(kernel.name, ())]
        launch = f"{kernel.name}({', '.join(args)})"
        if kernel.name not in self.checked:
            out.append(f"    {launch}")
        elif self.call_style == "pointer":
            out.append(f"    if (_code := {launch}):")
            out.append("        raise _kernel_error(_code)")
        else:
            # (the flag among the kernel's buffers stays zero on every call but one that raises,
            # which resets it)
            if ERROR_FLAG not in self.namespace:
                self.namespace[ERROR_FLAG] = error_flag(self.lowering.device)
            out.append(f"    {launch}")
            out.append(f"    if {ERROR_FLAG}[0]:")
            out.append(f"        raise _kernel_error({ERROR_FLAG}.item(), {ERROR_FLAG})")

    def _direct_prologue(self, general):
        """Which kernels launch directly, and the lines before them: the inputs those kernels
        read (through views too) must be 16-byte aligned and on the current device, as when the
        kernels were compiled, or the call goes to the ``general`` wrapper; the stream is read
        once."""
        roots = self._pointer_roots()
        self.launched_directly = set()
        inputs = set()
        for name, launch in self.direct.items():
            found = [roots.get(p) for p in self.kernel_params[name]]
            if None in found:
                continue
            self.launched_directly.add(name)
            inputs.update(r for r in found if r != OWN)
        if not self.launched_directly:
            return
        device = next(iter(self.direct.values())).device
        self.namespace["_general"] = general
        self.namespace["_raw_stream"], self.namespace["_current_device"] = cuda_runtime()
        out = self.lines
        order = [n for n in self.lowering.inputs if n in inputs]
        out.append("    # Kernels launched directly were compiled for 16-byte aligned pointers.")
        aligned = f"({' | '.join(f'{n}.data_ptr()' for n in order)}) & 15 or " if order else ""
        out.append(f"    if {aligned}_current_device() != {device}:")
        out.append(f"        return _general({self.inputs_text})")
        out.append(f"    stream = _raw_stream({device})")

    def _pointer_roots(self) -> dict:
        """Buffer name -> where its pointer comes from: ``OWN`` (aligned whatever the inputs),
        the graph input it is a view of (aligned as that input is, the view's offset being fixed),
        or None (unknown: a library call's result that may alias its arguments)."""
        low = self.lowering
        roots = {n: n for n in low.inputs if n}
        roots.update((n, OWN) for n in low.constants)
        for item in self.scheduler.items:
            if isinstance(item, Kernel):
                roots.update((node.name, OWN) for node in item.nodes
                             if item.storage[node.name] == "memory" and not isinstance(node, InputWrite))
            elif isinstance(item, ExternCall):
                roots[item.name] = None if returns_alias(item.target) else OWN
            elif isinstance(item, (WrapperView, GetItem)):
                roots[item.name] = roots.get(item.base)
        return roots

    def _extern(self, call: ExternCall):
        out = self.lines
        args = [self.render_arg(a) for a in call.args]
        args += [f"{k}={self.render_arg(v)}" for k, v in call.kwargs.items()]
        out.append(f"    {call.name} = {self.target_name(call.target)}({', '.join(args)})  # {call.reason}")
        self.mutated = self.mutated or call.is_mutating
        self._read_made_sizes(call)
        self._restride(call.name)

    def _restride(self, name: str):
        layout = self.lowering.layouts.get(name)
        if layout is None or not layout.is_dense():
            return
        # Kernels read this result with the strides its fake value promised.
        self.lines.append(f"    if {name}.stride() != {self.sizes(layout.stride)}:")
        self.lines.append(f"        {name} = empty_strided({self.sizes(layout.size)}, "
                          f"{self.sizes(layout.stride)}, {layout.dtype}).copy_({name})")
