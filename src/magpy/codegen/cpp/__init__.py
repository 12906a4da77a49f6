"""C++/OpenMP kernels for CPU tensors: ``extern "C"`` functions over raw pointers, no torch headers.

    kernel.py      ``render_kernel``: a scheduled ``Kernel`` as one C++ function (the row layout:
                   OpenMP over rows, ``omp simd`` innermost, reductions as reduction clauses)
    handler.py     ``CppHandler``, the ``ops`` handler printing one loop body; C++ dtypes,
                   constants, index expressions and math
    loops.py       loop nests of pointwise kernels: loop order, tiles across a transpose
    columns.py     reductions whose rows lie side by side, vectorised across the rows
    reductions.py  what reductions start from and how partial results combine
    hoist.py       arithmetic the innermost loop repeats, moved in front of it
    scatter.py     ``render_scatter``: a ``ScatterKernel`` updating its buffer in place
    prelude.py     the text every kernel starts with

Imports point down the list's dependencies: ``handler`` below ``reductions`` and ``loops``, those
below ``columns`` and ``kernel``, ``kernel`` below ``scatter``. Sources are built and loaded by
``codegen/compile_cache.py``.
"""
