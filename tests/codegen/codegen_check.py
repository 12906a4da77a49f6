"""Checking helpers for codegen tests: trace to aten, compile, compare with eager."""
import os

import torch

os.environ.setdefault("MAGPY_STRICT", "1")

from magpy.codegen import compile_aten_graph  # noqa: E402
from magpy.codegen.decompositions import decomposition_table  # noqa: E402

TOLERANCES = {
    torch.float32: (1e-4, 1e-5),
    torch.float64: (1e-9, 1e-9),
    torch.float16: (2e-3, 2e-3),
    torch.bfloat16: (1.6e-2, 1.6e-2),
}


def trace(fn, *inputs):
    """``fn`` as an aten-level fx graph (our decompositions), with fake values on every node."""
    from torch.fx.experimental.proxy_tensor import make_fx

    return make_fx(fn, decomposition_table=decomposition_table(), tracing_mode="fake")(*inputs)


def assert_close(actual, expected, what=""):
    if isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), what
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, f"{what}[{i}]")
        return
    if not isinstance(expected, torch.Tensor):
        assert actual == expected, what
        return
    assert isinstance(actual, torch.Tensor), f"{what}: got {type(actual)}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    rtol, atol = TOLERANCES.get(expected.dtype, (0, 0))
    torch.testing.assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=True,
                               msg=lambda m: f"{what}: {m}")


# MAGPY_TEST_DEVICE=cuda runs the Triton tests on a GPU (their inputs are moved there).
DEVICE = torch.device(os.environ.get("MAGPY_TEST_DEVICE", "cpu"))
if DEVICE.type == "cuda":
    # Eager's own CUDA kernels round some float64 constants to float32 (hardswish's 1/6).
    TOLERANCES[torch.float64] = (1e-7, 1e-9)


def on_device(x):
    return x.to(DEVICE) if isinstance(x, torch.Tensor) else x


def check(fn, *inputs, mode="cpp", fuse=True):
    """Compile ``fn`` for ``inputs`` with ``mode`` and assert it matches eager; returns the report.

    Triton kernels run on ``DEVICE`` (the inputs are moved there).
    """
    if mode == "triton":
        inputs = tuple(on_device(x) for x in inputs)
    expected = fn(*inputs)
    gm = trace(fn, *inputs)
    compiled = compile_aten_graph(gm, inputs, mode=mode, fuse=fuse)
    report = compiled.magpy_report
    assert report.graph_fallback is None, report.graph_fallback
    # On a GPU the second call runs the wrapper that launches kernels directly.
    for _ in range(2 if DEVICE.type == "cuda" else 1):
        actual = compiled(*inputs)
        if isinstance(expected, torch.Tensor):
            actual = actual[0] if isinstance(actual, (list, tuple)) and len(actual) == 1 else actual
        assert_close(actual, expected, getattr(fn, "__name__", "fn"))
    return report
