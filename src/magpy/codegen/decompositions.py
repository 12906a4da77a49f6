"""The decomposition table used to bring graphs to the aten ops we lower.

torch's core-aten decompositions, plus the composite ops (softmax, layer_norm, gelu, ...) whose
decompositions are pointwise ops and reductions we fuse well. Matmul-like ops stay whole: they
run as extern calls.
"""
from __future__ import annotations

import functools

import torch

aten = torch.ops.aten

EXTRA = (
    "_softmax _log_softmax native_layer_norm gelu var_mean var std native_batch_norm "
    "_native_batch_norm_legit_functional _native_batch_norm_legit_no_training "
    "_native_batch_norm_legit native_group_norm hardtanh leaky_relu elu hardswish hardsigmoid "
    "softplus mish _log_softmax_backward_data log_sigmoid_forward linalg_vector_norm clamp_min "
    "clamp_max index_select roll flip tril triu lerp addcmul "
    "addcdiv silu silu_backward gelu_backward native_layer_norm_backward "
    "native_batch_norm_backward native_group_norm_backward embedding_dense_backward "
    "nll_loss_forward nll_loss_backward logit frac xlogy deg2rad hypot"
).split()

# Kept whole where torch's decompositions drop a check eager makes of positions from data:
# index_add's and index_copy's put with index_put, which counts a negative position from the end
# (eager raises; ``lowering.scatter`` lowers them whole), max_unpool's with ``_unsafe_index_put``
# (eager raises for a position outside its plane; a library call).
CHECKED = {"index_add", "index_add_", "index_copy", "index_copy_", "max_unpool2d", "max_unpool3d"}

# Kept whole: they are extern calls (BLAS) and decomposing them would only add copies.
KEEP = {"addmm", "mm", "bmm", "baddbmm", "convolution", "_scaled_dot_product_flash_attention_for_cpu"} | CHECKED


#: kept whole by the C++ generator only: on a GPU, cuBLAS picks faster kernels for a plain ``mm`` than for
#: ``addmm`` (BERT-large on an H200: 4.3 vs 3.3 ms for the same 60 GEMMs), and the bias add then fuses
#: into the kernel that follows (a layer norm, a GELU)
CPU_ONLY_KEEP = {"addmm"}


def convolution_then_bias(input, weight, bias, *args):
    """A convolution with a bias as one without, then the bias added: cuDNN adds a bias in a
    kernel of its own (torch asks it for no fused bias), where ours fuses into the next kernel."""
    if bias is None:
        return NotImplemented
    out = aten.convolution.default(input, weight, None, *args)
    return out + bias.view([1, -1] + [1] * (out.dim() - 2))


#: the Triton generator's own decompositions of ops the C++ generator keeps whole
TRITON_DECOMPOSITIONS = {aten.convolution.default: convolution_then_bias}


@functools.lru_cache(maxsize=None)
def decomposition_table(codegen: str = "cpp") -> dict:
    from torch._decomp import core_aten_decompositions, get_decompositions

    table = dict(core_aten_decompositions())
    extra = EXTRA + (sorted(CPU_ONLY_KEEP) if codegen == "triton" else [])
    table.update(get_decompositions([getattr(aten, name) for name in extra if hasattr(aten, name)]))
    keep = KEEP - CPU_ONLY_KEEP if codegen == "triton" else KEEP
    for op in list(table):
        packet = getattr(op, "overloadpacket", None)
        if packet is not None and packet.__name__ in keep:
            del table[op]
    if codegen == "triton":
        table.update(TRITON_DECOMPOSITIONS)
    return table
