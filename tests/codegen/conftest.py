"""Fixtures of the codegen tests (helpers live in codegen_check.py)."""
import os

import pytest

os.environ.setdefault("MAGPY_STRICT", "1")


@pytest.fixture(params=["reference", "cpp"])
def mode(request):
    """Run a test through the reference evaluator and through compiled C++."""
    return request.param
