"""What the OpInfo run (``opinfo_check.py``) expects besides a pass: data, one entry per reason.

EXPECTED: known failures of our compiler, keyed ``(op, dtype)`` or ``(op, dtype, codegen)``; dtype is
a short name (f32 f64 f16 bf16 i64 i32 b8) or "*" for all. Each reason names the bug (they are
bugs to fix: remove the entry with the fix).
"""

EXPECTED: dict = {}

# Ops whose values eager leaves undefined: only shapes and dtypes are compared.
METADATA_ONLY = frozenset({"empty", "empty_like", "new_empty", "new_empty_strided", "empty_strided"})

# (op, dtype) -> (rtol, atol), where an op's own rounding makes it differ from eager by more than the
# default tolerance of its dtype without being wrong.
TOLERANCES: dict = {}

# Samples the Triton run leaves out (as unserved): a kernel launched over a zero-element tensor makes
# Triton's interpreter write through a bad pointer and the process dies (SIGSEGV) — a bug of ours:
# no kernel should be launched for an empty tensor. Repro: TRITON_INTERPRET=1, then
# magpy.compile(lambda n: torch.signal.windows.exponential(n, dtype=torch.float32),
#               options={"codegen": "triton"}) called three times with n=0.
TRITON_EMPTY = "zero-element tensors: a Triton kernel launched over one segfaults the interpreter (bug)"
