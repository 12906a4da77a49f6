"""Fixtures of the codegen tests (helpers live in codegen_check.py)."""
import os

import pytest

os.environ.setdefault("MAGPY_STRICT", "1")
# Triton kernels run on CPU tensors in its interpreter, which must be chosen before triton is
# imported (collecting this folder happens before any test imports it).
os.environ.setdefault("TRITON_INTERPRET", "1")


@pytest.fixture(params=["reference", "cpp"])
def mode(request):
    """Run a test through the reference evaluator and through compiled C++."""
    return request.param
