"""What the OpInfo run (``opinfo_check.py``) expects besides a pass: data, one entry per reason.

``KNOWN`` and ``TRITON_KNOWN`` map each known bug (its reason, with a minimal repro) to the cells
it fails: op -> dtypes (short names: f32 f64 f16 bf16 i64 i32 b8, or "*" for every dtype the op
supports). They are bugs to fix: the fix removes the cells (a listed cell that passes is an "xpass",
a failure of the full run). ``EXPECTED`` is the lookup built from them:
``(op, dtype[, codegen]) -> reason``.
"""

# --- C++ and Triton alike (the same lowerings) ----------------------------------------------------

GATHER_SAMPLES = (
    "gather: some OpInfo samples beyond the first three fail on a cache hit with bad index values "
    "(the first three pass; out-of-range indices raise eager's RuntimeError since the checks landed): "
    "to reduce with python -m fuzz opinfo --ops gather -v --samples 0"
)

ATEN_OVERLOAD_CALLED_DIRECTLY = (
    "capture, not codegen: a call of an aten overload itself (torch.ops.aten.slice.Tensor(x, 0)) "
    "makes a captured fx graph whose Python code does not compile (SyntaxError in <eval_with_key>), "
    "so the call runs eagerly (a counted fallback). Repro: c = magpy.compile(lambda x: "
    "torch.ops.aten.slice.Tensor(x, 0)); three calls on torch.randn(3); c.stats.reasons"
)

ZERO_SIZE_REPEAT = (
    "the compiler crashes (ZeroDivisionError: integer modulo by zero; the graph then runs eagerly) "
    "lowering repeat/tile of a zero-element tensor. Repro: c = magpy.compile(lambda x: torch.tile(x, ())); "
    "three calls on torch.empty(0); magpy.codegen.last_report().graph_fallback"
)

GCC_SIGNBIT_BFLOAT16 = (
    "the C++ kernel of signbit over bfloat16 does not build: gcc 12 stops with an internal error "
    "('unrecognizable insn', a vectorized shift of the float's bits) and the graph runs eagerly. "
    "Repro: c = magpy.compile(lambda x: torch.signbit(x)); three calls on "
    "torch.randn(20, 20, dtype=torch.bfloat16); magpy.codegen.last_report().graph_fallback"
)

KNOWN = {
    GATHER_SAMPLES: {
        "gather": "*",
    },
    ZERO_SIZE_REPEAT: {
        "repeat": "*", "tile": "*",
    },
    GCC_SIGNBIT_BFLOAT16: {
        "signbit": "bf16",
    },
    ATEN_OVERLOAD_CALLED_DIRECTLY: {
        "native_dropout_backward": "*", "slice": "*", "torch.ops.aten._safe_softmax.default": "*",
    },
}

# --- Triton only (run in its interpreter) -----------------------------------------------------------

TRITON_BFLOAT16_FROM_64_BITS = (
    "a cast of a 64-bit value (float64, int64) to bfloat16 calls magpy_round_bf16, which bitcasts its "
    "argument to int32: Triton refuses ('Cannot bitcast data-type of size 64 to data-type of size 32'). "
    "Repro: TRITON_INTERPRET=1; c = magpy.compile(lambda x: x.to(torch.bfloat16), options={'codegen': "
    "'triton'}); three calls on torch.randn(8, dtype=torch.float64)"
)

TRITON_SINH = (
    "sinh is off by up to 7e-4 relative in float32 (eager: 1 ulp). Repro: TRITON_INTERPRET=1; "
    "c = magpy.compile(torch.sinh, options={'codegen': 'triton'}); x = torch.linspace(-9, 9, 1001); "
    "c(x) three times: at x=-9 -4054.426 where eager gives -4051.542"
)

TRITON_KNOWN = {
    TRITON_BFLOAT16_FROM_64_BITS: {
        "arange": "bf16", "bfloat16": "f64",
    },
    TRITON_SINH: {
        "sinh": "f32 i64 i32",
    },
}


def _expected() -> dict:
    table = {}
    for known, codegen in ((KNOWN, None), (TRITON_KNOWN, "triton")):
        for reason, cells in known.items():
            for op, dtypes in cells.items():
                for dtype in dtypes.split():
                    table[(op, dtype) if codegen is None else (op, dtype, codegen)] = reason
    return table


EXPECTED: dict = _expected()

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
