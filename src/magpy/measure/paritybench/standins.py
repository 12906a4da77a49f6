"""Light stand-ins for the third-party packages every ParityBench file imports on its first line.

Each generated file starts with ``import …, matplotlib, numpy, pandas, scipy, sklearn, tensorflow, torchaudio,
torchtext, torchvision, …``. The real package is used wherever it imports; otherwise a stand-in is installed
in its place. A stand-in lets the import succeed and nothing more: any attribute, at any depth
(``tensorflow.keras.layers.Dense``, ``from torchtext.data import Field``), is a placeholder class that can be
named, subclassed and used in ``isinstance``, but calling or instantiating one raises StandInUsed, so a test
case that really needs the package fails in eager with a clear reason instead of computing something else.

torchvision gets one more chance before its stand-in: a wheel built for another torch build loads its Python
code fine but not its C++ operators, and its import then stops at the first fake-kernel registration for a
missing ``torchvision::`` operator. Such operators are declared here with a signature nobody can call, so the
Python part (models, transforms) imports and runs, and only the C++ operators (``nms``, ``roi_align``, …) fail.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import re
import sys
import types

# The packages of the generated files' common import line, in the order they are reported.
PACKAGES = ("numpy", "scipy", "sklearn", "pandas", "matplotlib", "torchvision", "torchaudio", "torchtext",
            "tensorflow")

STANDIN_VERSION = "0+standin"


class StandInUsed(RuntimeError):
    """A test case used a package that is only a stand-in here."""


class _PlaceholderType(type):
    """Metaclass of placeholders: any attribute is a nested placeholder; calling one raises StandInUsed."""

    def __getattr__(cls, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return placeholder(f"{cls._standin_path}.{name}")

    def __call__(cls, *args, **kwargs):
        raise StandInUsed(f"{cls._standin_path} is unavailable: "
                          f"{cls._standin_path.split('.')[0]} is a stand-in here (not installed)")

    def __repr__(cls) -> str:
        return f"<stand-in {cls._standin_path}>"


_PLACEHOLDERS: dict[str, type] = {}


def placeholder(path: str) -> type:
    """The placeholder class standing for the dotted ``path`` (one class per path)."""
    cls = _PLACEHOLDERS.get(path)
    if cls is None:
        cls = _PlaceholderType(path.rsplit(".", 1)[-1], (), {"_standin_path": path, "__module__": path})
        _PLACEHOLDERS[path] = cls
    return cls


class StandInModule(types.ModuleType):
    """A stand-in package or submodule: its attributes are placeholders, its submodules stand-ins too."""

    def __init__(self, name: str):
        super().__init__(name, f"stand-in for {name} (not installed here)")
        self.__path__ = []                  # a package, so ``import name.sub`` reaches the finder
        self.__version__ = STANDIN_VERSION
        self.__standin__ = True

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return placeholder(f"{self.__name__}.{name}")


class StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves ``root`` and every ``root.sub.module`` of the stood-in packages as StandInModules."""

    def __init__(self, roots: set[str]):
        self.roots = roots

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".", 1)[0] in self.roots:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        return StandInModule(spec.name)

    def exec_module(self, module):
        parent, _, child = module.__name__.rpartition(".")
        if parent and parent in sys.modules:
            setattr(sys.modules[parent], child, module)


def is_standin(module) -> bool:
    return getattr(module, "__standin__", False) is True


def install(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Import each package for real where possible, else put a stand-in in its place.

    Returns ``{package: description}``, e.g. ``{"scipy": "1.17.1", "tensorflow": "stand-in (No module named
    'tensorflow')"}``; torchvision's entry says when its C++ operators are missing. Idempotent."""
    environment: dict[str, str] = {}
    missing: set[str] = set()
    for name in packages:
        module = sys.modules.get(name)
        if module is not None and is_standin(module):
            missing.add(name)
            environment[name] = "stand-in"
            continue
        try:
            if name == "matplotlib":
                _import_matplotlib()
            description = _import_torchvision() if name == "torchvision" else _import_real(name)
        except Exception as error:              # a broken install is as good as none
            _forget(name)
            missing.add(name)
            environment[name] = f"stand-in ({_first_line(error)})"
        else:
            environment[name] = description
    if missing:
        finder = next((f for f in sys.meta_path if isinstance(f, StandInFinder)), None)
        if finder is None:
            sys.meta_path.insert(0, StandInFinder(missing))
        else:
            finder.roots |= missing
        for name in missing:
            importlib.import_module(name)
    return environment


def _import_real(name: str) -> str:
    module = importlib.import_module(name)
    return str(getattr(module, "__version__", "installed"))


def _import_matplotlib() -> None:
    import os
    os.environ.setdefault("MPLBACKEND", "Agg")         # no display here; never open a window


_MISSING_OPERATOR = re.compile(r"operator torchvision::(\w+) does not exist")


def _import_torchvision() -> str:
    """Import torchvision, declaring its C++ operators first where its extension cannot load."""
    declared: list[str] = []
    library = None
    for _ in range(64):
        try:
            module = importlib.import_module("torchvision")
            break
        except RuntimeError as error:
            match = _MISSING_OPERATOR.search(str(error))
            if match is None:
                raise
            import torch.library
            if library is None:
                library = torch.library.Library("torchvision", "FRAGMENT")
            # A signature no real call matches: calling the operator fails with its name in the message.
            library.define(f"{match.group(1)}(Tensor[] cpp_operator_not_built_for_this_torch) -> Tensor")
            declared.append(match.group(1))
            _forget("torchvision")
    else:
        raise ImportError("torchvision: too many missing C++ operators")
    _KEEP_ALIVE.append(library)
    version = str(getattr(module, "__version__", "installed"))
    return f"{version} (without its C++ operators)" if declared else version


_KEEP_ALIVE: list = []          # a torch.library.Library unregisters its operators when collected


def _forget(name: str) -> None:
    for key in [k for k in sys.modules if k == name or k.startswith(name + ".")]:
        del sys.modules[key]


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".strip()
