"""Settings every test needs before anything is imported."""
import os

# The Triton codegen tests run their kernels on CPU tensors in Triton's interpreter, which is
# chosen once, when triton is imported — and ``import torch._dynamo`` imports it, so collecting
# almost any test module would. (MAGPY_TEST_DEVICE=cuda runs them compiled on a GPU instead.)
if os.environ.get("MAGPY_TEST_DEVICE", "cpu") == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")
