"""Loading and launching Triton kernels: module files cached by content, block configs tuned once.

Each kernel is written, with the prelude, to ``<cache>/triton/k<hash>.py`` (the cache directory
of the C++ kernels, mode 0700) and imported from there: Triton reads a kernel's source from its
file, and Triton keeps the compiled binaries in its own cache. ``TritonLauncher`` is what the
generated wrapper calls with the kernel's tensors; on the first call on a GPU it times each of
the plan's block configs and keeps the fastest. On a GPU each static kernel's configs are
compiled ahead of that call in worker processes (``precompile``): the launcher waits for them.

Once every kernel of a graph has run on a GPU, ``TritonGraph`` swaps the graph's wrapper for one
that calls each kernel's ``DirectLaunch``: Triton's C launcher with the grid, the kernel handle
and the sizes written into the source, the stream read once per call, and raw pointers (a tensor
argument would cost the launcher a method call and a CUDA driver query each).
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import importlib.util
import os
import sys
import threading
from typing import Callable, Optional

from ..compile_cache import cache_dir
from ..ir import python_size
from .kernel import PRELUDE
from .plan import PERSISTENT_MAX, TILE_ROWS_MIN, LaunchPlan, candidate_configs, next_power_of_2
from .precompile import settle

_modules: dict[str, object] = {}
# The other form a symbolic kernel of a kind is also printed in, for launches the first cannot serve.
ALTERNATIVE = {"looped": "persistent", "tiled": "pointwise"}
_lock = threading.Lock()
# Timed launches per config when tuning (after one untimed launch that compiles it).
TUNE_RUNS = 10


def interpreting() -> bool:
    """True when Triton runs kernels in its interpreter: ``TRITON_INTERPRET=1`` when triton was
    imported (its library functions were made then; setting the variable later changes nothing)."""
    if "triton" in sys.modules:
        from triton.runtime.interpreter import InterpretedFunction
        import triton.language as tl

        return isinstance(tl.sum, InterpretedFunction)
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def kernel_file_source(body: str) -> str:
    return PRELUDE + "\n\n" + body


def load_kernel(body: str, name: str):
    """The ``@triton.jit`` function ``name`` defined by ``body`` (loaded once per content)."""
    source = kernel_file_source(body)
    digest = hashlib.sha256(source.encode()).hexdigest()[:40]
    with _lock:
        module = _modules.get(digest)
        if module is None:
            folder = cache_dir().parent / "triton"
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = folder / f"k{digest}.py"
            if not path.exists():
                tmp = path.with_name(f"{path.name}.tmp{os.getpid()}.{threading.get_ident()}")
                tmp.write_text(source)
                os.replace(tmp, path)
            spec = importlib.util.spec_from_file_location(f"magpy_triton_k{digest}", path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
            _modules[digest] = module
    return getattr(module, name)


class TritonLauncher:
    """Calls a kernel over its grid: ``launcher(*tensors, *numbers)`` in the kernel's parameter
    order (``numbers``: the last ``nnumbers`` arguments, its float inputs' values).

    After the first launch on a GPU, later ones call the compiled kernel directly, skipping
    Triton's argument binding (most of a small kernel's launch cost) — as long as every
    pointer has the 16-byte alignment it had when the kernel was specialised for it.

    A kernel with symbolic sizes has a ``SymbolicLauncher`` instead.
    """

    fast = True  # False: always launch through Triton's JIT entry (for measuring the difference)

    def __init__(self, fn, plan: LaunchPlan, name: str, nnumbers: int = 0, rewrites=()):
        self.fn = fn
        self.rewrites = tuple(rewrites)  # positions of buffers it updates in place (``fastest``'s ``keep``)
        self.plan = plan
        self.__name__ = name
        self.nnumbers = nnumbers
        self.sizes = (plan.xnumel,) if plan.kind == "pointwise" else (plan.xnumel, plan.rnumel)
        self.config = plan.configs[0] if len(plan.configs) == 1 else None
        self.compiled = None
        self.alignment = None
        self.pending = None  # futures of this kernel's compiles in worker processes (``precompile``)

    def grid(self, config) -> tuple:
        xblock, rblock, _ = config
        rows = (self.plan.xnumel + xblock - 1) // xblock
        if self.plan.kind == "tiled":  # columns along axis 0, which takes up to 2**31 - 1 blocks
            return ((self.plan.rnumel + rblock - 1) // rblock, rows, 1)
        return (rows, 1, 1)

    def _options(self, config) -> dict:
        """The keyword arguments of a launch with ``config``: block sizes and warps."""
        xblock, rblock, warps = config
        if self.plan.kind == "pointwise":
            return {"XBLOCK": xblock, "num_warps": warps}
        return {"XBLOCK": xblock, "RBLOCK": rblock, "num_warps": warps}

    def _launch(self, config, tensors, numbers=()):
        return self.fn[self.grid(config)](*tensors, *numbers, *self.sizes, **self._options(config))

    def warmup(self, config, tensors, numbers=()):
        """Triton's JIT entry for a launch with ``config``, stopping short of the launch: compiles
        the kernel (``tensors`` may be stand-ins with a ``dtype`` and a ``data_ptr()``)."""
        return self.fn.warmup(*tensors, *numbers, *self.sizes, grid=self.grid(config), **self._options(config))

    def __call__(self, *args):
        if self.plan.empty:
            return
        split = len(args) - self.nnumbers
        tensors, numbers = args[:split], args[split:]
        compiled = self.compiled
        if compiled is not None and tuple(t.data_ptr() % 16 == 0 for t in tensors) == self.alignment:
            try:
                compiled.run(*self.launch_grid, self.stream(self.device), compiled.function,
                             compiled.packed_metadata, None, None, None, *tensors, *numbers, *self.constants)
                return
            except TypeError:  # this Triton's launcher takes other arguments: use its JIT entry
                self.compiled = None
                TritonLauncher.fast = False
        if self.pending is not None:  # (its compiles in worker processes: wait for them)
            pending, self.pending = self.pending, None
            settle(pending)
        if self.config is None:
            self.config = self.tune(tensors, numbers)
        kernel = self._launch(self.config, tensors, numbers)
        if self.fast and kernel is not None and tensors and tensors[0].device.type == "cuda" \
                and not interpreting():
            self._remember(kernel, tensors)

    def _remember(self, kernel, tensors):
        """Keep the compiled kernel for direct launches, unless someone hooks Triton's launches
        (a profiler): direct launches would skip the hooks."""
        from triton.runtime import driver

        if _launch_hooked():
            return
        self.launch_grid = self.grid(self.config)
        xblock, rblock, _ = self.config
        self.constants = self.sizes + ((xblock,) if self.plan.kind == "pointwise" else (xblock, rblock))
        self.device = tensors[0].device.index
        self.stream = driver.active.get_current_stream
        self.alignment = tuple(t.data_ptr() % 16 == 0 for t in tensors)
        self.compiled = kernel

    def direct(self) -> Optional["DirectLaunch"]:
        """This kernel's launch with all but its pointers fixed, once it has run on a GPU with
        every pointer 16-byte aligned; None before that, or where Triton's launcher is not the
        one ``DirectLaunch`` knows how to call."""
        compiled = self.compiled
        if compiled is None or not all(self.alignment) or self.nnumbers:
            return None  # (numbers change from call to call: they are not the launch's constants)
        launcher = compiled.run
        from triton.backends.nvidia import driver as nvidia

        if getattr(nvidia, "_BASE_ARGS_FORMAT", None) != DirectLaunch.FORMAT \
                or type(launcher).__name__ != "CudaLauncher" \
                or not callable(getattr(launcher, "launch", None)) \
                or getattr(launcher.launch, "__name__", None) != "launch" \
                or launcher.global_scratch_size or launcher.profile_scratch_size:
            return None
        return DirectLaunch(launcher.launch, self.launch_grid, compiled.function,
                            bool(launcher.launch_cooperative_grid), bool(launcher.launch_pdl),
                            compiled.packed_metadata, self.constants, self.device)

    def tune(self, tensors, numbers=()):
        """The fastest of the plan's configs on these tensors."""
        if len(self.plan.configs) == 1 or not tensors or \
                (tensors[0].device.type != "cuda" and not interpreting()):
            return self.plan.configs[0]
        ints, direct = (*numbers, *self.sizes), not interpreting()
        return fastest(self.plan.configs,
                       lambda c: _Launch(self.fn, self.plan.kind, self.plan.xnumel, c, ints, direct).trial(tensors),
                       self.__name__, [tensors[i] for i in self.rewrites])


def fastest(configs, trial, name: str, keep=()):
    """The config of ``configs`` that runs fastest on the GPU. ``trial(config)`` launches the kernel
    once (compiling it) and returns a callable launching it again directly, or None when only
    ``trial`` can: the JIT entry costs more CPU time than a short kernel takes, and the timing would
    measure that. Running it again is harmless for what it only writes; ``keep``, the tensors it
    updates from their own values, are put back as they were before the first trial.

    Each timed launch starts with the L2 cache overwritten, as a kernel whose inputs were written
    long before finds it: back to back, a kernel reading more than L2 holds finds the tail of its
    input still there, which favours some block shapes over others."""
    if len(configs) == 1:
        return configs[0]
    with _kept(keep):
        return _tried(configs, trial) if interpreting() else _fastest(configs, trial, name)


def _tried(configs, trial):
    """Under the interpreter (``plan.interpreted_trials``): each config launched as ``_fastest`` launches it,
    a few times, untimed; the last is kept (a config other than the first: its launches are checked too)."""
    for config in configs:
        again = trial(config) or (lambda: trial(config))
        for _ in range(2):
            again()
    return configs[-1]


@contextlib.contextmanager
def _kept(tensors):
    """The body may run a kernel that updates ``tensors`` from their own values (a scatter's adds, a
    running mean) any number of times: they are put back as they were after it, so the launch that
    follows applies its update once. (Through ``.data``: the copy back bumps no version counter.)"""
    saved = [t.clone() for t in tensors]
    try:
        yield
    finally:
        for t, old in zip(tensors, saved):
            t.data.copy_(old)


def _fastest(configs, trial, name: str):
    import torch

    flush = torch.empty(_l2_bytes() // 4 * 2, dtype=torch.int32, device="cuda")
    best, best_time = None, float("inf")
    for config in configs:
        try:
            again = trial(config)  # compiles
        except Exception:  # noqa: BLE001 - a config that does not compile (resources) is skipped
            continue
        again = again or (lambda: trial(config))
        again()
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(TUNE_RUNS)]
        for start, end in events:
            flush.zero_()
            start.record()
            again()
            end.record()
        events[-1][1].synchronize()
        elapsed = sum(start.elapsed_time(end) for start, end in events)
        if elapsed < best_time:
            best, best_time = config, elapsed
    if best is None:
        raise RuntimeError(f"no block config of {name} compiles")
    return best


def _l2_bytes() -> int:
    import torch

    return getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0) \
        or 64 * 2**20


class SymbolicLauncher:
    """Launches a kernel whose sizes are symbolic: ``launcher(*tensors, *sizes)``, ``sizes`` the
    values of its ``size_params``.

    ``kernels`` maps each form of the kernel to its ``@triton.jit`` function: (kind, wide), the
    kind "pointwise" or a reduction's "persistent" and "looped", wide for int64 indexes. Each
    call takes the persistent form where its rows fit in ``PERSISTENT_MAX``, int32 indexes
    where every index fits (no storage nor iteration space of 2**31 elements or more), and the
    block config a static kernel of its sizes would take: the fastest of ``candidate_configs``,
    timed once per form and power-of-two size class on a GPU. What a launch of given sizes
    needs is worked out once (``_Launch``). On a GPU the compiled kernel of each specialisation
    (what Triton specialises on: the block config, pointer alignment, int arguments equal to 1,
    divisible by 16, or past int32) is launched directly after its first launch, as
    ``TritonLauncher`` does.
    """

    def __init__(self, kernels: dict, plan: LaunchPlan, name: str, size_params, rewrites=()):
        self.kernels = kernels
        self.rewrites = tuple(rewrites)  # as ``TritonLauncher``'s
        self.__name__ = name
        self.tiled = plan.kind == "tiled"
        names = ", ".join(str(s) for s in size_params)
        body = f"({python_size(plan.xnumel)}, {python_size(plan.rnumel)})"
        self.numels = eval(f"lambda {names}: {body}", {"max": max, "min": min})  # noqa: S307 - our text
        self.nsizes = len(size_params)
        self.launches: dict = {}  # (sizes, pointer alignments) -> _Launch
        self.configs: dict = {}  # (kind, wide, size classes) -> the block config timed fastest
        self.interpret = interpreting()  # (fixed once triton is imported, as it is once kernels are loaded)
        self.autotune = plan.autotune

    def choose(self, xnumel: int, rnumel: int, tensors) -> tuple:
        """The (kind, wide) form for a launch of these sizes on these tensors."""
        wide = xnumel * max(rnumel, 1) >= 2**31 or any(
            t.untyped_storage().nbytes() >= 2**31 * t.element_size() for t in tensors)
        if self.tiled:  # (the tiles' rows run along grid axis 1, which takes at most 65535 blocks)
            return ("tiled" if xnumel <= 65535 * TILE_ROWS_MIN else "pointwise"), wide
        if ("pointwise", wide) in self.kernels:
            return "pointwise", wide
        persistent = ("persistent", wide) in self.kernels and next_power_of_2(max(rnumel, 1)) <= PERSISTENT_MAX
        return ("persistent" if persistent else "looped"), wide

    def __call__(self, *args):
        split = len(args) - self.nsizes
        tensors, sizes = args[:split], args[split:]
        on_gpu = tensors and tensors[0].is_cuda and not self.interpret
        if on_gpu:
            pointers = tuple(t.data_ptr() for t in tensors)
            key = (sizes, tuple(p % 16 == 0 for p in pointers))
            launch = self.launches.get(key)
            if launch is not None and launch.compiled is not None:
                try:
                    launch.run(tensors[0].device.index, pointers)
                    return
                except TypeError:  # this Triton's launcher takes other arguments: use its JIT entry
                    TritonLauncher.fast = launch.direct = False
                    launch.compiled = None
        if not on_gpu or launch is None:
            launch = self._plan(sizes, tensors, on_gpu)
            if on_gpu and len(self.launches) < 4096:
                self.launches[key] = launch
        launch(tensors)

    def _plan(self, sizes, tensors, on_gpu) -> "_Launch":
        xnumel, rnumel = self.numels(*sizes)
        kind, wide = self.choose(xnumel, rnumel, tensors)
        if self.tiled and kind == "pointwise":  # (one run of every element, untiled)
            xnumel, rnumel = xnumel * rnumel, 1
        fn = self.kernels[kind, wide]
        ints = sizes + ((xnumel,) if kind == "pointwise" else (xnumel, rnumel))
        configs = candidate_configs(kind, xnumel, rnumel, self.interpret, self.autotune)
        if (on_gpu or self.interpret) and len(configs) > 1:
            size_class = (kind, wide, next_power_of_2(xnumel), next_power_of_2(rnumel))
            config = self.configs.get(size_class)
            if config is None:
                config = self.configs[size_class] = fastest(
                    configs, lambda c: _Launch(fn, kind, xnumel, c, ints, on_gpu).trial(tensors), self.__name__,
                    [tensors[i] for i in self.rewrites])
        else:
            config = configs[0]
        return _Launch(fn, kind, xnumel, config, ints, on_gpu and TritonLauncher.fast)


class _Launch:
    """One kernel form launched over given sizes with one block config; on a GPU, after its first
    launch, through the compiled kernel directly."""

    __slots__ = ("fn", "grid", "ints", "blocks", "warps", "direct", "compiled", "stream")

    def __init__(self, fn, kind, xnumel, config, ints, direct):
        xblock, rblock, self.warps = config
        self.fn = fn
        self.grid = ((max(xnumel, 1) + xblock - 1) // xblock, 1, 1)
        if kind == "tiled":  # (columns along axis 0, which takes up to 2**31 - 1 blocks)
            self.grid = ((max(ints[-1], 1) + rblock - 1) // rblock, self.grid[0], 1)
        self.ints = ints
        self.blocks = {"XBLOCK": xblock} if kind == "pointwise" else {"XBLOCK": xblock, "RBLOCK": rblock}
        self.direct = direct
        self.compiled = None

    def __call__(self, tensors):
        kernel = self.fn[self.grid](*tensors, *self.ints, **self.blocks, num_warps=self.warps)
        if self.direct and kernel is not None and not _launch_hooked():
            from triton.runtime import driver

            self.stream = driver.active.get_current_stream
            self.compiled = kernel

    def trial(self, tensors):
        """Launch once, then a callable launching again directly (None when it cannot)."""
        self(tensors)
        if self.compiled is None:
            return None
        device, pointers = tensors[0].device.index, tuple(t.data_ptr() for t in tensors)
        try:
            self.run(device, pointers)
        except TypeError:  # this Triton's launcher takes other arguments
            return None
        return lambda: self.run(device, pointers)

    def run(self, device: int, pointers: tuple):
        """Launch the compiled kernel on raw pointers (once ``__call__`` has compiled it)."""
        compiled = self.compiled
        compiled.run(*self.grid, self.stream(device), compiled.function, compiled.packed_metadata,
                     None, None, None, *pointers, *self.ints, *self.blocks.values())




def _launch_hooked() -> bool:
    from triton import knobs

    return _hooked(knobs.runtime.launch_enter_hook) or _hooked(knobs.runtime.launch_exit_hook)


def _hooked(hook) -> bool:
    """True when a Triton launch hook (None, a function, or a chain of them) would run."""
    if hook is None:
        return False
    calls = getattr(hook, "calls", None)
    return calls is None or bool(calls)


@dataclasses.dataclass(frozen=True)
class DirectLaunch:
    """A compiled kernel's launch through Triton's C launcher (``triton/backends/nvidia/driver.py``,
    whose argument layout is ``FORMAT`` followed by the kernel's arguments): everything but the
    stream and the pointers is fixed. Launch hooks and scratch buffers are left out: a kernel
    that needs scratch memory has no DirectLaunch."""

    FORMAT = "iiiKKppOOOOOO"  # grid x, y, z; stream, function; cooperative, pdl; scratch x2; metadata; hooks...

    launch: Callable
    grid: tuple
    function: int
    cooperative: bool
    pdl: bool
    metadata: tuple
    constants: tuple  # the kernel's sizes and block sizes, after its pointers
    device: int

    def namespace(self, prefix: str) -> dict:
        """The objects ``call_source(prefix, ...)`` names."""
        return {f"{prefix}_launch": self.launch, f"{prefix}_meta": self.metadata}

    def call_source(self, prefix: str, pointers: list[str], stream: str) -> str:
        """Python source launching the kernel on ``stream`` with ``pointers`` (expressions)."""
        gx, gy, gz = self.grid
        args = [str(gx), str(gy), str(gz), stream, hex(self.function), str(int(self.cooperative)),
                str(int(self.pdl)), "None", "None", f"{prefix}_meta", "None", "None", "None",
                *pointers, *(repr(c) for c in self.constants)]
        return f"{prefix}_launch({', '.join(args)})"


class TritonGraph:
    """A compiled graph of Triton kernels: runs its wrapper, and once the wrapper has run and every
    kernel has a ``DirectLaunch``, runs the wrapper ``bind()`` returns instead (``bind`` returns
    None while it cannot make one; it is asked again after each of the first ``BIND_TRIES``
    calls, then never)."""

    BIND_TRIES = 3

    def __init__(self, wrapper: Callable, bind: Callable[[], Optional[Callable]]):
        self.run = wrapper
        self.bind = bind
        self.tries = 0

    def __call__(self, *args):
        return self.boxed(list(args))

    def boxed(self, args: list):
        """Run on the list of inputs AOTAutograd gives, which the wrapper empties (``call_boxed``)."""
        result = self.run.boxed(args)
        if self.bind is not None:
            self.tries += 1
            direct = self.bind()
            if direct is not None:
                self.run = direct
            if direct is not None or self.tries >= self.BIND_TRIES:
                self.bind = None
        return result
