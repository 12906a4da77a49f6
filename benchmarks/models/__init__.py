"""The benchmark model zoo.

The models live in the package, in ``magpy.zoo``, so that ``python -m magpy bench`` works from an installed
copy of MagPy; this module re-exports the registry for scripts under ``benchmarks/``::

    from benchmarks.models import get, names
    module, inputs = get("densenet").make(size="medium")
"""
from magpy.zoo import REGISTRY, SIZES, ModelSpec, Tolerance, get, names, seeded

__all__ = ["REGISTRY", "SIZES", "ModelSpec", "Tolerance", "get", "names", "seeded"]
