"""How a Triton kernel is launched: its shape (pointwise, tiled, persistent or looped), its sizes
and the block configs to try — fixed when the kernel's sizes are, chosen at each launch from the
launch's sizes when they are symbolic (``launch_configs``).
"""
from __future__ import annotations

import dataclasses
import os

from ..ir import is_static, prod
from ..scheduler import Kernel

# Rows up to this long are reduced in registers (persistent); longer ones in a loop. (Softmax
# over 8192 x 8192 float32 on an H200: 4.0 TB/s persistent, 3.8 looped in 2048-element chunks.)
PERSISTENT_MAX = 8192
# Kernels at least this large (elements) try several block shapes on their first call.
TUNE_MIN_ELEMENTS = 1 << 22
# The fewest rows a tile of a tiled pointwise kernel has (in every config).
TILE_ROWS_MIN = 32


@dataclasses.dataclass
class LaunchPlan:
    """How a kernel is launched: its shape, sizes, and the block configs to choose among
    (``(XBLOCK, RBLOCK, num_warps)``; the first is the guess when there is no tuning).

    Symbolic ``xnumel``/``rnumel`` are size expressions; ``configs`` is then empty and each
    launch takes ``launch_configs`` of its own sizes.
    """

    kind: str  # "pointwise" | "persistent" | "looped" | "tiled"
    xnumel: object
    rnumel: object
    configs: list
    autotune: bool = False  # the wider set of configs (mode "max-autotune"): ``autotuned``
    # No element to write (a static size 0 among the outputs' dims): never launched. (``xnumel`` is at least 1
    # for the grid's sake, and the kernel masks by it: launched, it stored one element past an empty buffer.)
    empty: bool = False

    @property
    def symbolic(self) -> bool:
        return not is_static([self.xnumel, self.rnumel])


def next_power_of_2(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()


def plan_launch(kernel: Kernel, interpret: bool, tile=None, kind=None) -> LaunchPlan:
    """The kernel's shape and block configs (large blocks under the interpreter, where each
    program instance costs a millisecond or two). ``tile``: the (rows, columns) sizes of a tiled
    pointwise kernel. ``kind``: the form of a symbolic reduction ("looped" by default)."""
    xnumel, rnumel = prod(kernel.outer), prod(kernel.inner)
    if not is_static([xnumel, rnumel]):
        if tile is not None:
            return LaunchPlan("tiled", prod(tile[0]), prod(tile[1]), [])
        return LaunchPlan((kind or "looped") if kernel.inner else "pointwise", xnumel, rnumel, [])
    empty = xnumel == 0 or (tile is not None and 0 in (prod(t) for t in tile))
    xnumel = max(xnumel, 1)
    if tile is not None:
        kind, (xnumel, rnumel) = "tiled", (max(prod(t), 1) for t in tile)
    else:
        kind = "pointwise" if not kernel.inner else \
            "persistent" if next_power_of_2(rnumel) <= PERSISTENT_MAX else "looped"
    return LaunchPlan(kind, xnumel, rnumel, candidate_configs(kind, xnumel, rnumel, interpret), empty=empty)


def candidate_configs(kind: str, xnumel: int, rnumel: int, interpret: bool, autotune: bool = False) -> list:
    """The block configs worth timing for a kernel of ``kind`` over these sizes, the best guess
    first (one config where the kernel is too small for the choice to matter). Static kernels
    take them once; symbolic ones for each launch's sizes (``runtime.SymbolicLauncher``).
    ``autotune`` (mode "max-autotune"): ``WIDER_CONFIGS`` besides, for every kernel whatever its
    size (those with blocks larger than the kernel left out), the same best guess first."""
    xnumel, rnumel = max(xnumel, 1), max(rnumel, 1)
    if interpret:  # (one config: the interpreter is timed by no one)
        config = _interpreted_config(kind, xnumel, rnumel)
        return [config, *_halved(kind, config)] if interpreted_trials() else [config]
    configs = _default_configs(kind, xnumel, rnumel)
    if autotune:
        return _widened(kind, xnumel, rnumel, configs)
    return configs if xnumel * rnumel >= TUNE_MIN_ELEMENTS else configs[:1]


# Mode "max-autotune": the configs timed besides the default ones, by kind of kernel. (A tile has at
# least TILE_ROWS_MIN rows in every config; a persistent kernel's RBLOCK is its whole row: its
# configs are made from the row's length, ``_persistent_configs``.)
WIDER_CONFIGS = {
    "pointwise": [(1024, 1, 4), (2048, 1, 8), (512, 1, 4), (4096, 1, 8), (1024, 1, 8), (512, 1, 2),
                  (256, 1, 2), (256, 1, 1), (128, 1, 1)],
    "tiled": [(64, 64, 4), (TILE_ROWS_MIN, 128, 4), (128, 32, 4), (64, 128, 8), (128, 64, 8), (64, 32, 4),
              (TILE_ROWS_MIN, 64, 4), (TILE_ROWS_MIN, 32, 2)],
    "looped": [(1, 2048, 8), (1, 1024, 8), (1, 2048, 16), (1, 4096, 16), (1, 1024, 4), (1, 512, 4),
               (2, 1024, 8), (4, 512, 8), (8, 256, 4)],
}
PERSISTENT_ELEMENTS = (2048, 4096)  # the elements a persistent program holds: default,
WIDER_PERSISTENT_ELEMENTS = (512, 1024, 2048, 4096, 8192, 16384)  # and with "max-autotune"


def _default_configs(kind: str, xnumel: int, rnumel: int) -> list:
    if kind == "tiled":  # (xnumel, rnumel: the rows and columns of the tiles' grid)
        return WIDER_CONFIGS["tiled"][:3]
    if kind == "pointwise":
        if xnumel < TUNE_MIN_ELEMENTS:
            block = min(next_power_of_2(xnumel), 1024)
            return [(block, 1, max(1, min(4, block // 128)))]
        return WIDER_CONFIGS["pointwise"][:3]
    if kind == "persistent":
        return _persistent_configs(xnumel, rnumel, PERSISTENT_ELEMENTS)
    return WIDER_CONFIGS["looped"][:4]


def _persistent_configs(xnumel: int, rnumel: int, elements, wider: bool = False) -> list:
    rblock, rows = next_power_of_2(rnumel), next_power_of_2(xnumel)
    configs = []
    for n in elements:
        xblock = max(1, min(n // rblock, rows, 64))
        warps = max(1, min(16, xblock * rblock // 256))
        # (fewer warps: more programs per multiprocessor, which a long row's reduction can use better)
        configs += [(xblock, rblock, warps), (xblock, rblock, max(1, warps // 2))]
        if wider:
            configs.append((xblock, rblock, min(16, warps * 2)))
    return list(dict.fromkeys(configs))


def _widened(kind: str, xnumel: int, rnumel: int, configs: list) -> list:
    """``configs`` and, after them, the wider set that fits the kernel's sizes."""
    if kind == "persistent":
        wider = _persistent_configs(xnumel, rnumel, WIDER_PERSISTENT_ELEMENTS, wider=True)
    else:
        rows, columns = next_power_of_2(xnumel), next_power_of_2(rnumel)
        wider = [c for c in WIDER_CONFIGS[kind] if c[0] <= rows and (kind == "pointwise" or c[1] <= columns)]
    return list(dict.fromkeys(configs + wider))


def _interpreted_config(kind: str, xnumel: int, rnumel: int) -> tuple:
    """Large blocks: under the interpreter each program instance costs a millisecond or two."""
    if kind == "tiled":
        return (min(next_power_of_2(xnumel), 128), min(next_power_of_2(rnumel), 128), 4)
    if kind == "pointwise":
        return (min(next_power_of_2(xnumel), 16384), 1, 4)
    rblock, rows = next_power_of_2(rnumel), next_power_of_2(xnumel)
    if kind == "persistent":
        return (max(1, min(16384 // rblock, rows)), rblock, 4)
    return (min(rows, 8), 4096, 4)


def interpreted_trials() -> bool:
    """``MAGPY_TRITON_TRIALS=1`` (tests and fuzzers): under the interpreter, kernels get a second block config
    and are launched with each before one is kept, as tuning launches them on a GPU (``runtime.fastest``), so
    that what tuning does to a kernel's buffers is checked without one."""
    return os.environ.get("MAGPY_TRITON_TRIALS", "0") not in ("", "0")


def _halved(kind: str, config: tuple) -> list:
    """A second config for ``interpreted_trials``: the block that may shrink halved (a persistent kernel's
    row and a tile's least rows stay), or none."""
    xblock, rblock, warps = config
    if kind in ("pointwise", "persistent") and xblock > 1:
        return [(xblock // 2, rblock, warps)]
    if kind == "looped" and rblock > 1:
        return [(xblock, rblock // 2, warps)]
    if kind == "tiled" and rblock > 1:
        return [(xblock, rblock // 2, warps)]
    return []


def autotuned(plan: LaunchPlan, interpret: bool) -> LaunchPlan:
    """``plan`` as mode "max-autotune" launches it: its configs ``candidate_configs(..., autotune=True)``
    (a symbolic plan's at each launch's sizes)."""
    configs = plan.configs if plan.symbolic else \
        candidate_configs(plan.kind, plan.xnumel, plan.rnumel, interpret, autotune=True)
    return dataclasses.replace(plan, configs=configs, autotune=True)
