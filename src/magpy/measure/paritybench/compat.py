"""The opt-in ``--compat`` layer: names that old Python, numpy, scipy and torch had and the corpus still uses.

The generated files were crawled years ago; many stop at import on a name that has since been removed
(``torch._six``, ``collections.Iterable``, ``scipy.signal.kaiser``). Each Restoration below puts one such name
back, pointing at its modern equivalent, and only where the name is really missing. Nothing here changes what a
name that exists today does. Runs report whether the layer was on, since it changes which cases run in eager.
"""
from __future__ import annotations

import collections
import collections.abc
import importlib
import math
import sys
import types
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Restoration:
    name: str                       # what comes back, as the corpus spells it
    replacement: str                # what it now means
    apply: Callable[[], bool]       # puts it back; False when it was already there or its package is absent


def _restore_torch_six() -> bool:
    if "torch._six" in sys.modules:
        return False
    import torch
    six = types.ModuleType("torch._six", "compatibility names removed from torch (restored by --compat)")
    six.string_classes = (str, bytes)
    six.int_classes = int
    six.container_abcs = collections.abc
    six.inf = math.inf
    six.nan = math.nan
    six.PY2, six.PY3, six.PY37 = False, True, True
    six.with_metaclass = lambda meta, *bases: meta("_six_base", bases or (object,), {})
    sys.modules["torch._six"] = six
    torch._six = six
    return True


_COLLECTIONS_ABCS = ("Awaitable", "Callable", "Container", "Hashable", "ItemsView", "Iterable", "Iterator",
                     "KeysView", "Mapping", "MappingView", "MutableMapping", "MutableSequence", "MutableSet",
                     "Sequence", "Set", "Sized", "ValuesView")


def _restore_collections_abcs() -> bool:
    restored = False
    for name in _COLLECTIONS_ABCS:
        if not hasattr(collections, name):
            setattr(collections, name, getattr(collections.abc, name))
            restored = True
    return restored


_NUMPY_ALIASES = {"float": float, "int": int, "bool": bool, "object": object, "complex": complex, "str": str}


def _restore_numpy_aliases() -> bool:
    import numpy
    restored = False
    for name, builtin in _NUMPY_ALIASES.items():
        if name not in numpy.__dict__:
            setattr(numpy, name, builtin)
            restored = True
    if "asscalar" not in numpy.__dict__:
        numpy.asscalar = lambda array: array.item()
        restored = True
    return restored


_SCIPY_WINDOWS = ("barthann", "bartlett", "blackman", "blackmanharris", "bohman", "boxcar", "chebwin", "cosine",
                  "exponential", "flattop", "gaussian", "general_gaussian", "hamming", "hann", "kaiser", "nuttall",
                  "parzen", "triang", "tukey")


def _restore_scipy_windows() -> bool:
    signal = _real_module("scipy.signal")
    if signal is None:
        return False
    restored = False
    for name in _SCIPY_WINDOWS:
        if not hasattr(signal, name) and hasattr(signal.windows, name):
            setattr(signal, name, getattr(signal.windows, name))
            restored = True
    if not hasattr(signal, "hanning") and hasattr(signal.windows, "hann"):
        signal.hanning = signal.windows.hann
        restored = True
    return restored


def _restore_getargspec() -> bool:
    import inspect
    if hasattr(inspect, "getargspec"):
        return False
    arg_spec = collections.namedtuple("ArgSpec", "args varargs keywords defaults")

    def getargspec(func):
        spec = inspect.getfullargspec(func)
        return arg_spec(spec.args, spec.varargs, spec.varkw, spec.defaults)

    inspect.getargspec = getargspec
    return True


def _restore_fractions_gcd() -> bool:
    import fractions
    if hasattr(fractions, "gcd"):
        return False
    fractions.gcd = math.gcd
    return True


def _restore_torchvision_model_utils() -> bool:
    models = _real_module("torchvision.models")
    if models is None or "torchvision.models.utils" in sys.modules:
        return False
    import torch.hub
    utils = types.ModuleType("torchvision.models.utils", "removed torchvision module (restored by --compat)")
    utils.load_state_dict_from_url = torch.hub.load_state_dict_from_url
    utils.load_url = torch.hub.load_state_dict_from_url
    sys.modules["torchvision.models.utils"] = utils
    models.utils = utils
    return True


class _RemovedWeightURLs(dict):
    """What ``model_urls`` reads as: a mapping with no entries whose lookups say why."""

    def __missing__(self, key):
        raise KeyError(f"{key!r}: torchvision no longer has model_urls (and weights cannot be downloaded here)")


_TORCHVISION_MODEL_MODULES = ("alexnet", "densenet", "googlenet", "inception", "mnasnet", "mobilenetv2",
                              "mobilenetv3", "resnet", "shufflenetv2", "squeezenet", "vgg", "video.resnet")


def _restore_torchvision_model_urls() -> bool:
    if _real_module("torchvision.models") is None:
        return False
    restored = False
    for name in _TORCHVISION_MODEL_MODULES:
        module = _real_module(f"torchvision.models.{name}")
        if module is not None and not hasattr(module, "model_urls"):
            module.model_urls = _RemovedWeightURLs()
            restored = True
    return restored


_MOVED_MODULES = {                      # old module path → where its contents live now
    "numpy.lib.function_base": "numpy.lib._function_base_impl",
    "scipy.sparse.linalg.eigen": "scipy.sparse.linalg._eigen",
    "scipy.sparse.linalg.eigen.arpack": "scipy.sparse.linalg._eigen.arpack",
}


def _restore_moved_modules() -> bool:
    restored = False
    for old, new in _MOVED_MODULES.items():
        if old in sys.modules or _real_module(old) is not None:
            continue
        module = _real_module(new)
        if module is not None:
            sys.modules[old] = module
            parent, _, child = old.rpartition(".")
            if parent in sys.modules:
                setattr(sys.modules[parent], child, module)
            restored = True
    return restored


def _restore_dataset_type_variable() -> bool:
    import typing
    import torch.utils.data.dataset as dataset
    if hasattr(dataset, "T_co"):
        return False
    dataset.T_co = typing.TypeVar("T_co", covariant=True)
    return True


def _restore_torch_accumulate() -> bool:
    import itertools
    import torch._utils
    if hasattr(torch._utils, "_accumulate"):
        return False
    torch._utils._accumulate = itertools.accumulate
    return True


RESTORATIONS = (
    Restoration("torch._six", "a module of builtins and collections.abc", _restore_torch_six),
    Restoration("collections.Iterable, Mapping, …", "collections.abc.*", _restore_collections_abcs),
    Restoration("numpy.float, int, bool, object, asscalar", "the builtins, ndarray.item", _restore_numpy_aliases),
    Restoration("scipy.signal.kaiser, hann, hanning, …", "scipy.signal.windows.*", _restore_scipy_windows),
    Restoration("inspect.getargspec", "inspect.getfullargspec", _restore_getargspec),
    Restoration("fractions.gcd", "math.gcd", _restore_fractions_gcd),
    Restoration("torchvision.models.utils", "torch.hub.load_state_dict_from_url",
                _restore_torchvision_model_utils),
    Restoration("torchvision.models.*.model_urls", "an empty mapping (no downloads here)",
                _restore_torchvision_model_urls),
    Restoration("numpy.lib.function_base, scipy.sparse.linalg.eigen", "their private new homes",
                _restore_moved_modules),
    Restoration("torch.utils.data.dataset.T_co", "a covariant TypeVar", _restore_dataset_type_variable),
    Restoration("torch._utils._accumulate", "itertools.accumulate", _restore_torch_accumulate),
)


def install() -> list[str]:
    """Apply every restoration; returns the names that were really missing and are now back."""
    restored = []
    for restoration in RESTORATIONS:
        try:
            if restoration.apply():
                restored.append(restoration.name)
        except Exception:           # a package too old or too new for one restoration: skip that one
            continue
    return restored


def _real_module(name: str):
    """The module if its package is really installed (not a stand-in), else None."""
    try:
        module = importlib.import_module(name)
    except Exception:
        return None
    return None if getattr(module, "__standin__", False) else module
