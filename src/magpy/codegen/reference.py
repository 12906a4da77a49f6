"""The reference evaluator: IR bodies evaluated with torch tensors — the test oracle.

``ReferenceHandler`` evaluates a body once over a whole index grid (index variables are
broadcast ``arange`` tensors), so it is exact about what the IR *means* and independent of the
C++ printer. ``ReferenceKernel`` runs a scheduled kernel this way; it is called with tensors in
the kernel's parameter order, then the values of its size symbols, like the C++ kernel is
called with their pointers and sizes.
"""
from __future__ import annotations

import sympy
import torch

from .ir import FloorDiv, ModIndex, index_vars
from .ops import result_dtype, set_handler
from .scheduler import ScatterKernel

TORCH_OPS = {
    "abs": torch.abs, "neg": torch.neg, "exp": torch.exp, "exp2": torch.exp2, "expm1": torch.expm1,
    "log": torch.log, "log2": torch.log2, "log10": torch.log10, "log1p": torch.log1p,
    "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan,
    "asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "sinh": torch.sinh,
    "cosh": torch.cosh, "tanh": torch.tanh, "asinh": torch.asinh, "acosh": torch.acosh,
    "atanh": torch.atanh, "erf": torch.erf, "erfc": torch.erfc, "sigmoid": torch.sigmoid,
    "reciprocal": torch.reciprocal, "floor": torch.floor, "ceil": torch.ceil, "round": torch.round,
    "trunc": torch.trunc, "sign": torch.sign, "lgamma": torch.lgamma, "relu": torch.relu,
    "bitwise_not": torch.bitwise_not, "square": lambda x: x * x,
    "isnan": torch.isnan, "isinf": torch.isinf, "signbit": torch.signbit,
    "logical_not": torch.logical_not,
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "truediv": torch.div,
    "floordiv": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "truncdiv": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "remainder": torch.remainder, "fmod": torch.fmod, "pow": torch.pow,
    "maximum": torch.maximum, "minimum": torch.minimum, "atan2": torch.atan2,
    "copysign": torch.copysign, "hypot": torch.hypot, "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
    "left_shift": torch.bitwise_left_shift, "right_shift": torch.bitwise_right_shift,
    "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or,
    "logical_xor": torch.logical_xor,
}


def evaluate_index(expr, env):
    """A sympy index expression evaluated with symbols bound to (broadcastable) int64 tensors."""
    if isinstance(expr, int):
        return expr
    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return env[expr]
    args = [evaluate_index(a, env) for a in expr.args]
    if isinstance(expr, sympy.Add):
        out = args[0]
        for a in args[1:]:
            out = out + a
        return out
    if isinstance(expr, sympy.Mul):
        out = args[0]
        for a in args[1:]:
            out = out * a
        return out
    if isinstance(expr, sympy.Pow):
        return args[0] ** args[1]
    if isinstance(expr, (FloorDiv, ModIndex)) and isinstance(args[0], torch.Tensor) and \
            isinstance(args[1], int) and args[1] == 0:
        return args[0] * 0  # (by a size from data that is 0: only for elements masked off, see triton.print_index)
    if isinstance(expr, FloorDiv):
        a, b = args
        return torch.div(a, b, rounding_mode="floor") if isinstance(a, torch.Tensor) else a // b
    if isinstance(expr, ModIndex):
        a, b = args
        return torch.remainder(a, b) if isinstance(a, torch.Tensor) else a % b
    if isinstance(expr, (sympy.Max, sympy.Min)):
        if not any(isinstance(a, torch.Tensor) for a in args):
            return (max if isinstance(expr, sympy.Max) else min)(args)
        pick = torch.maximum if isinstance(expr, sympy.Max) else torch.minimum
        out = torch.as_tensor(args[0])
        for a in args[1:]:
            out = pick(out, torch.as_tensor(a))
        return out
    raise NotImplementedError(f"index expression {expr}")


class ReferenceHandler:
    """``ops`` over torch tensors; ``buffers`` maps buffer names to flat views of their storage."""

    def __init__(self, buffers: dict, env: dict):
        self.buffers = buffers
        self.env = env
        self.masked_depth = 0
        self._indirect = 0

    def load(self, name, index):
        flat = self.buffers[name]
        position = evaluate_index(sympy.expand(sympy.sympify(index)), self.env)
        position = torch.as_tensor(position, dtype=torch.int64)
        if self.masked_depth:
            # Masked-out lanes may point anywhere; their values are discarded.
            if flat.numel() == 0:
                return torch.zeros(position.shape, dtype=flat.dtype)
            position = position.clamp(0, flat.numel() - 1)
        return flat[position]

    def constant(self, value, dtype):
        return torch.tensor(value, dtype=dtype)

    def index_expr(self, expr, dtype):
        value = evaluate_index(sympy.expand(sympy.sympify(expr)), self.env)
        if isinstance(value, float):  # a float input (all its digits: as_tensor would make it a float32)
            value = torch.tensor(value, dtype=torch.float64)
        return torch.as_tensor(value).to(dtype)

    def to_dtype(self, x, dtype):
        return x.to(dtype)

    def where(self, cond, a, b):
        dtype = torch.promote_types(a.dtype, b.dtype)
        return torch.where(cond.to(torch.bool), a.to(dtype), b.to(dtype))

    def masked(self, mask, body, other):
        self.masked_depth += 1
        try:
            value = body()
        finally:
            self.masked_depth -= 1
        return torch.where(mask.to(torch.bool), value, torch.tensor(other, dtype=value.dtype))

    def check(self, ok, error):
        # (masked-out lanes hold anything: their checks do not count, as a kernel never runs them)
        if not self.masked_depth and not bool(torch.as_tensor(ok).all()):
            raise error()

    def indirect_indexing(self, x, size):
        size = int(evaluate_index(sympy.sympify(size), self.env))
        x = x.to(torch.int64)
        x = torch.where(x < 0, x + size, x)
        if self.masked_depth:
            x = x.clamp(0, max(int(size) - 1, 0))
        elif x.numel() and (int(x.min()) < 0 or int(x.max()) >= size):
            raise IndexError(f"index out of range for a dimension of size {size}")
        self._indirect += 1
        symbol = sympy.Symbol(f"ref_indirect{self._indirect}", integer=True, nonnegative=True)
        self.env[symbol] = x
        return symbol

    def __getattr__(self, name):
        if name not in TORCH_OPS:
            raise AttributeError(name)
        fn = TORCH_OPS[name]

        def apply(*args):
            operand = result_dtype("add", [a.dtype for a in args])
            return fn(*[a.to(operand) for a in args])

        return apply


def flat_storage(t: torch.Tensor) -> torch.Tensor:
    """A 1-D view of every element ``t``'s layout can reach, starting at ``t``'s first element."""
    if t.numel() == 0:
        return t.new_empty((0,))
    extent = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
    return torch.as_strided(t, (extent,), (1,), t.storage_offset())


def grid_env(sizes_by_prefix) -> dict:
    """Index symbols bound to aranges broadcast over the concatenated grid."""
    total = [s for _, sizes in sizes_by_prefix for s in sizes]
    env, position = {}, 0
    for prefix, sizes in sizes_by_prefix:
        for var, size in zip(index_vars(prefix, len(sizes)), sizes):
            shape = [1] * len(total)
            shape[position] = size
            env[var] = torch.arange(size, dtype=torch.int64).view(shape)
            position += 1
    return env


REDUCE = {
    "sum": lambda v, dims, dt: torch.sum(v, dims, dtype=dt),
    "prod": lambda v, dims, dt: torch.prod(v.flatten(-len(dims)), -1, dtype=dt),
    "max": lambda v, dims, dt: torch.amax(v, dims),
    "min": lambda v, dims, dt: torch.amin(v, dims),
    "argmax": lambda v, dims, dt: torch.argmax(v.flatten(-len(dims)), -1),
    "argmin": lambda v, dims, dt: torch.argmin(v.flatten(-len(dims)), -1),
    "any": lambda v, dims, dt: torch.any(v.flatten(-len(dims)).to(torch.bool), -1),
    "all": lambda v, dims, dt: torch.all(v.flatten(-len(dims)).to(torch.bool), -1),
}


def evaluate_node(node, buffers: dict, sizes: dict = None) -> torch.Tensor:
    """The values of a ComputedBuffer, shaped like its output (contiguous); ``sizes`` binds its
    size symbols."""
    data = node.data
    sizes = sizes or {}
    concrete = lambda dims: [int(evaluate_index(sympy.sympify(d), sizes)) for d in dims]  # noqa: E731
    if node.is_reduction:
        size, rsize = concrete(data.size), concrete(data.reduction_size)
        env = {**sizes, **grid_env([("x", size), ("r", rsize)])}
        handler = ReferenceHandler(buffers, env)
        with set_handler(handler):
            value = node.evaluate(index_vars("x", len(size)), index_vars("r", len(rsize)))
        value = torch.broadcast_to(value, size + rsize)
        dims = list(range(len(size), len(size) + len(rsize)))
        if value.dtype in (torch.float16, torch.bfloat16) and data.reduction_type in ("sum", "prod"):
            value = value.float()
        out = REDUCE[data.reduction_type](value, dims, None)
        return out.to(node.layout.dtype)
    size = concrete(data.size)
    env = {**sizes, **grid_env([("x", size)])}
    handler = ReferenceHandler(buffers, env)
    with set_handler(handler):
        value = node.evaluate(index_vars("x", len(size)))
    return torch.broadcast_to(value, size).to(node.layout.dtype)


def update_in_place(node, target: torch.Tensor, buffers: dict, sizes: dict) -> None:
    """Apply a ScatterBuffer's updates to ``target`` (its buffer's flat storage)."""
    data = node.data
    size = [int(evaluate_index(sympy.sympify(d), sizes)) for d in data.size]
    env = {**sizes, **grid_env([("x", size)])}
    handler = ReferenceHandler(buffers, env)
    with set_handler(handler):
        updates = node.evaluate(index_vars("x", len(size)))
    for position, value in updates:
        flat = evaluate_index(sympy.expand(node.layout.index(position)), handler.env)
        flat = torch.broadcast_to(torch.as_tensor(flat, dtype=torch.int64), size).reshape(-1)
        value = torch.broadcast_to(value.to(node.layout.dtype), size).reshape(-1)
        target.index_put_((flat,), value, accumulate=data.mode == "add")


class ReferenceKernel:
    """A scheduled kernel run by the reference evaluator; called with its parameter tensors."""

    def __init__(self, kernel, params: list[str], layouts, size_params=()):
        self.kernel = kernel
        self.params = params
        self.layouts = layouts
        self.size_params = list(size_params)
        self.__name__ = kernel.name

    def __call__(self, *args):
        tensors, values = args[:len(self.params)], args[len(self.params):]
        sizes = dict(zip(self.size_params, values))
        by_name = dict(zip(self.params, tensors))
        buffers = {}
        for name, t in by_name.items():
            buffers[name] = flat_storage(t)
        if isinstance(self.kernel, ScatterKernel):
            update_in_place(self.kernel.node, buffers[self.kernel.node.name], buffers, sizes)
            return
        for node in self.kernel.nodes:
            layout = node.layout
            target = by_name.get(node.name)
            if target is None:
                concrete = lambda dims: [int(evaluate_index(sympy.sympify(d), sizes)) for d in dims]  # noqa: E731
                target = torch.empty_strided(concrete(layout.size), concrete(layout.stride), dtype=layout.dtype)
                buffers[node.name] = flat_storage(target)
            target.copy_(evaluate_node(node, buffers, sizes))
