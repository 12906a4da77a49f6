"""The lowering table: aten overload -> function building IR values, filled by rooms by domain.

``registry.py`` holds the table (``@register_lowering``, ``lookup_lowering``), the context a
lowering gets and the helpers every room shares (broadcasting, type promotion, ``pointwise``).
The rooms register their lowerings when this package is imported, and import only the registry:

    pointwise.py   elementwise math, comparisons, casts, factories
    reduction.py   sums, products, means, extrema, any/all, variance
    view.py        views as index remaps (reshape, permute, slice, expand, ...)
    index.py       elements picked by position (cat, pad, gather, index, embedding)
    scatter.py     elements put at positions from data (index_put, scatter_add, ...)
    pool.py        pooling windows

Adding an op is adding one registered function in the right room.
"""
from . import index, pointwise, pool, reduction, scatter, view  # noqa: F401  (each registers its lowerings)
from .registry import LOWERINGS, LoweringContext, Unsupported, lookup_lowering, register_lowering

__all__ = ["LOWERINGS", "LoweringContext", "Unsupported", "lookup_lowering", "register_lowering"]
