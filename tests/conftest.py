"""Settings every test needs before anything is imported."""
import os

# The Triton codegen tests run their kernels on CPU tensors in Triton's interpreter, which is
# chosen once, when triton is imported — and ``import torch._dynamo`` imports it, so collecting
# almost any test module would. (MAGPY_TEST_DEVICE=cuda runs them compiled on a GPU instead.)
if os.environ.get("MAGPY_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")


import gc
import sys

import pytest


def _torch_global_state():
    """torch's thread state a test must leave as it found it: a compiled call that gives up part-way
    must not leave a context it entered (a vmap level, a grad mode, a mode on a stack) behind."""
    import torch
    return {
        "grad mode": torch.is_grad_enabled(),
        "inference mode": torch.is_inference_mode_enabled(),
        "torch-function modes": torch._C._len_torch_function_stack(),
        "dispatch modes": len(torch.utils._python_dispatch._get_current_dispatch_mode_stack()),
        "autocast": torch.is_autocast_enabled("cpu"),
        "default dtype": torch.get_default_dtype(),
        "dispatch keys included": str(torch._C._dispatch_tls_local_include_set()),
        "dispatch keys excluded": str(torch._C._dispatch_tls_local_exclude_set()),
        "functorch layers": torch._C._functorch.get_dynamic_layer_stack_depth(),
    }


@pytest.fixture(autouse=True)
def _leaves_torch_state_alone(request):
    if "torch" not in sys.modules:
        yield
        return
    before = _torch_global_state()
    yield
    after = _torch_global_state()
    if after != before:
        gc.collect()  # (a generator left suspended in a context it entered restores it only when collected)
        late = " (restored only by the garbage collector)" if _torch_global_state() == before else ""
        pytest.fail(f"the test left torch's global state changed{late}: {before} -> {after}")
