"""Side-by-side benchmark of eager PyTorch, MagPy and torch.compile on the model zoo.

The same as ``python -m magpy bench`` (see ``--help``); kept here so the benchmarks folder has an entry point::

    PYTHONPATH=src python benchmarks/harness.py --quick --backends eager,magpy
"""
import sys
from pathlib import Path

try:
    from magpy.cli import main
except ImportError:     # run from a checkout without PYTHONPATH=src
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    from magpy.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["bench", *sys.argv[1:]]))
