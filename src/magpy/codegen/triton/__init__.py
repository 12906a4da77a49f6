"""Triton kernels for CUDA tensors: ``@triton.jit`` functions from ``tl``/``tl.math`` only, so that
every kernel also runs under ``TRITON_INTERPRET=1`` on CPU tensors.

    dtypes.py      Triton's types for torch dtypes; ``TritonUnsupported``
    math.py        the math rows: one per ``ops`` name, functions Triton lacks spelled out
    handler.py     ``TritonHandler``, the ``ops`` handler printing one kernel body
    plan.py        how a kernel is launched: its shape, sizes and block configs
    kernel.py      ``render_kernel``: a scheduled ``Kernel`` as one Triton function
    scatter.py     ``render_scatter``: a ``ScatterKernel`` with atomic adds
    compile_worker.py  a process compiling kernels into Triton's cache (run by path: no torch, no magpy)
    precompile.py  every static kernel's block configs compiled in a pool of those, before its first launch
    runtime.py     loading kernels from the cache and launching them (tuning, direct launches)

Imports point up the list. This package never stands in for Triton's own: every import here is
explicit-relative or absolute, so ``import triton`` in these modules (and in the kernels' files)
is Triton's.
"""
