"""What ``import magpy`` and a first ``magpy.compile`` cost a program: neither imports Dynamo (nor the
sympy and triton it brings), and ``torch.compile(backend="magpy")`` still finds the backend once Dynamo
loads — through the entry point of an installed MagPy, or, without one, the registration ``import magpy``
makes when Dynamo's registry is imported (``magpy/dynamo_registration.py``). Each check is a fresh
interpreter. (Timings: ``benchmarks/import_time.py``.)"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

import magpy

SRC = os.path.dirname(os.path.dirname(magpy.__file__))
HEAVY = ("torch._dynamo", "sympy", "triton")

# Dynamo finds no "magpy" entry point (a source checkout that was never installed)
NO_ENTRY_POINT = """
import importlib.metadata as metadata
everything = metadata.entry_points
def entry_points(**selection):
    found = everything(**selection)
    if selection.get("group") != "torch_dynamo_backends":
        return found
    return metadata.EntryPoints([e for e in found if e.name != "magpy"])
metadata.entry_points = entry_points
"""


def run(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; what it printed last, as JSON."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_import_and_first_compile_leave_dynamo_sympy_and_triton_unimported():
    found = run(f"""
        import json, sys
        import magpy
        after_import = sorted(m for m in ("torch", *{HEAVY!r}) if m in sys.modules)
        f = magpy.compile(lambda x: x + 1)
        g = magpy.compile(lambda x: x * 2, mode="max-autotune", options={{"codegen": "cpp"}})
        print(json.dumps([after_import, sorted(m for m in {HEAVY!r} if m in sys.modules)]))
    """)
    assert found == [[], []]


@pytest.mark.parametrize("first", ["magpy", "dynamo"])
def test_torch_compile_finds_the_backend_without_an_entry_point(first):
    imports = "import magpy, torch" if first == "magpy" else "import torch, torch._dynamo\nimport magpy"
    found = run(NO_ENTRY_POINT + imports + """
import json
import torch._dynamo.backends.registry as registry
f = torch.compile(lambda x: (x + 1).exp(), backend="magpy", mode="reduce-overhead")
x = torch.randn(5)
print(json.dumps([torch.allclose(f(x), (x + 1).exp()), registry._COMPILER_FNS["magpy"] is magpy.backends.magpy_backend]))
""")
    assert found == [True, True]
