"""C++/OpenMP kernels for CPU tensors: ``extern "C"`` functions over raw pointers, no torch headers.

    kernel.py      ``render_kernel``: a scheduled ``Kernel`` as one C++ function (the row layout:
                   OpenMP over rows, ``omp simd`` innermost, reductions as reduction clauses)
    handler.py     ``CppHandler``, the ``ops`` handler printing one loop body; C++ dtypes,
                   constants, index expressions and math
    loops.py       loop nests of pointwise kernels: loop order, tiles across a transpose, split loops
    segments.py    where to split loops so that each part decides its comparisons of indices
    columns.py     reductions whose rows lie side by side, vectorised across the rows
    reductions.py  what reductions start from and how partial results combine
    hoist.py       what a loop repeats, moved in front of it; what its index alone computes, once
    scatter.py     ``render_scatter``: a ``ScatterKernel`` updating its buffer in place
    prelude.py     the text every kernel starts with

Imports point down the list's dependencies: ``handler`` below ``reductions`` and ``loops``, those
below ``columns`` and ``kernel``, ``kernel`` below ``scatter``; ``segments`` and ``hoist`` import
nothing of the package (the printer hands them its ranges and lines). Sources are built and loaded by
``codegen/compile_cache.py``.
"""
