"""The repro script: a standalone Python program for one graph and its inputs.

It rebuilds the inputs (same sizes, strides, dtypes and devices; small tensors value by value, larger ones
drawn from a seeded generator between the original's smallest and largest value), rebuilds the graph by
tracing the graph's own code (``fx``'s rendering of it), runs it eagerly and compiled by the backend, and
exits 1 printing what differs while the fault is there, 0 once they agree, 2 when it cannot be run here
(a function of the graph, or the backend, that it cannot import). It needs torch and magpy (for the
comparison ``check_equivalent`` makes, and the backend when it is one of magpy's).

``render`` writes one; ``reproduces`` runs one in this process and says whether it shows the fault.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import sys
import textwrap
import types
from typing import Optional

import torch

from .subgraph import Subgraph
from .tensors import span

#: tensors spanning at most this many elements are written out value by value; larger ones are drawn
#: from a seeded generator (``render`` can be asked to write every value)
INLINE_LIMIT = 256

#: names the script defines itself, whatever the graph's code refers to
_PREDEFINED = {"torch", "inf", "nan"}

_HEADER = '''\
{title}
"""Written by magpy.minify: the graph below, compiled by the backend {backend_name}, against eager.

Exits 1 printing what differs while the fault shows ({check} check), 0 once they agree, 2 when it cannot
run here (it lacks something it cannot import).
"""
import sys
import traceback
from math import inf, nan

import torch

from magpy.testing import difference

CHECK = {check!r}
GRAD_ENABLED = {grad_enabled!r}
'''

_STRIDED = '''
def strided(size, stride, dtype, values=None, seed=None, low=0, high=1, device="cpu", requires_grad=False):
    """A tensor of these sizes, strides and dtype over a storage of its own that holds ``values``, or
    numbers drawn with ``seed`` between ``low`` and ``high``."""
    extent = 1 + sum((n - 1) * s for n, s in zip(size, stride)) if all(size) else 0
    if values is None:
        generator = torch.Generator().manual_seed(seed)
        if dtype == torch.bool:
            values = torch.rand(extent, generator=generator) < 0.5
        elif dtype.is_floating_point or dtype.is_complex:
            values = torch.rand(extent, generator=generator, dtype=torch.float64) * (high - low) + low
        else:
            values = torch.randint(low, high + 1, (extent,), generator=generator)
    storage = torch.as_tensor(values, dtype=dtype, device=device)
    return storage.as_strided(size, stride).requires_grad_(requires_grad)
'''

_GRAPH = '''

def build_graph():
    """The graph as an fx.GraphModule, traced from Repro.forward."""
    root = Repro()
    return torch.fx.GraphModule(root, torch.fx.Tracer(autowrap_functions=AUTOWRAP).trace(root))
'''

_MAIN = '''

def run(call):
    """``call(inputs)`` on fresh inputs, from a fixed random state: (its outputs, the inputs afterwards)."""
    inputs = make_inputs()
    with torch.random.fork_rng(), torch.set_grad_enabled(GRAD_ENABLED):
        torch.manual_seed(0)
        result = call(inputs)
    return (tuple(result) if isinstance(result, (list, tuple)) else (result,)), inputs


def main():
    eager = run(lambda inputs: build_graph()(*inputs))
    try:
        compiled = run(lambda inputs: backend()(build_graph(), make_inputs())(*inputs))
    except Exception:
        if CHECK != "error":
            raise
        traceback.print_exc()
        print("the backend raised on this graph; eager runs it without error")
        return 1
    if CHECK == "error":
        print("the backend compiles and runs this graph without error")
        return 0
    problem = difference(eager[0], compiled[0], path="output") or difference(eager[1], compiled[1], path="input")
    if problem:
        print(f"compiled differs from eager: {{problem}}")
        return 1
    print("compiled and eager agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def render(sub: Subgraph, backend, check: str, title: str, inline_limit: float = INLINE_LIMIT) -> str:
    """The repro script of ``sub`` compiled by ``backend`` (a name or a callable), for ``check``."""
    code = sub.gm.graph.python_code(root_module="self")
    forward = code.src[code.src.index("def forward"):].rstrip()
    definitions, autowrap = _definitions(code.globals, forward)
    parts = [
        _HEADER.format(title=_comment(title), backend_name=backend_name(backend), check=check,
                       grad_enabled=sub.grad_enabled),
        definitions,
        _backend_source(backend),
        _STRIDED,
        _inputs_source(sub.inputs, inline_limit),
        "\n\nclass Repro(torch.nn.Module):\n" + textwrap.indent(forward, "    ") + "\n",
        f"\n\n# functions the graph calls as they are (tracing does not enter them)\n"
        f"AUTOWRAP = ({', '.join(autowrap)}{',' if len(autowrap) == 1 else ''})\n",
        _GRAPH,
        _MAIN.format(),
    ]
    return "".join(part for part in parts if part)


def _comment(text: str) -> str:
    return "\n".join(f"# {line}".rstrip() for line in text.splitlines())


def reproduces(script: str) -> bool:
    """Does ``script`` show the fault (``main()`` returns 1) when run in this process? Its output is
    swallowed."""
    namespace = {"__name__": "magpy_repro"}
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            exec(compile(script, "<magpy repro>", "exec"), namespace)  # noqa: S102 - our own script
            return namespace["main"]() == 1
    except (Exception, SystemExit):  # noqa: BLE001 - a script that cannot run reproduces nothing
        return False


def seeds_inputs(sub: Subgraph, inline_limit: float = INLINE_LIMIT) -> bool:
    """Does the script of ``sub`` draw some input from a seeded generator (rather than inline it)?"""
    return any(isinstance(t, torch.Tensor) and span(t).numel() > inline_limit for t in sub.inputs)


# ---- the graph's globals ---------------------------------------------------------------------------

def _definitions(globals_: dict, forward: str) -> tuple[str, list[str]]:
    """(the source defining every global name ``forward`` uses, the names of the Python functions
    among them — tracing must keep those as calls)."""
    setup, lines, autowrap = [], [], []
    for name, obj in globals_.items():
        if name in _PREDEFINED or not re.search(rf"\b{re.escape(name)}\b", forward):
            continue
        found = resolve(obj)
        if found is None:
            lines += _cannot_run(f"{name} = {obj!r}")
            continue
        needs, expression = found
        setup += [line for line in needs if line not in setup and line != "import torch"]
        if expression != name:
            lines.append(f"{name} = {expression}")
        if isinstance(obj, types.FunctionType):
            autowrap.append(name)
    source = "\n".join(setup + lines)
    return ("\n" + source + "\n" if source else ""), autowrap


def _cannot_run(what: str) -> list[str]:
    """Statements that stop the script with status 2, saying what it lacks."""
    return [f"sys.stderr.write({f'this repro cannot rebuild {what}: define it here to run it' + chr(10)!r})",
            "sys.exit(2)"]


def resolve(obj) -> Optional[tuple[list[str], str]]:
    """(statements to run first, an expression) that give ``obj`` in a fresh process; None when no
    rule of ``_RULES`` knows how."""
    for rule in _RULES:
        found = rule(obj)
        if found is not None:
            return found
    return None


def _module(obj):
    if isinstance(obj, types.ModuleType):
        return [f"import {obj.__name__}"], obj.__name__
    return None


def _special_value(obj):
    if isinstance(obj, float):  # (inf, nan)
        return [], f"float({str(obj)!r})"
    if obj is type(None):
        return [], "type(None)"
    return None


def _stand_in(obj):
    """magpy's stand-ins for builtins fx would misname (``magpy.capture.vf``) are made on demand: the
    script makes its own, around the same builtin."""
    if getattr(obj, "__module__", None) != "magpy.capture.vf" or not hasattr(obj, "__wrapped__"):
        return None
    inner = resolve(obj.__wrapped__)
    if inner is None:
        return None
    return inner[0] + ["from magpy.capture.vf import calling"], f"calling({inner[1]}, {obj.__name__!r})"


def _variable_function(obj):
    """A builtin of ``torch._C._VariableFunctions`` (its ``__module__`` says "torch", wrongly)."""
    name = getattr(obj, "__name__", None)
    if name and getattr(torch._C._VariableFunctions, name, None) is obj:
        return ["import torch"], f"torch._C._VariableFunctions.{name}"
    return None


def _importable(obj):
    """``module.qualname``, importing the module (from its folder when it is the user's own; a script run
    as ``__main__`` by its file's name: its ``if __name__ == "__main__":`` block then does not run)."""
    module_name, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    module = sys.modules.get(module_name or "")
    if module is None or not qualname or "<" in qualname:
        return None
    found = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if found is not obj:
        return None
    if module_name == "__main__":
        path = getattr(module, "__file__", None) or ""
        module_name = os.path.splitext(os.path.basename(path))[0]
        if not module_name.isidentifier():
            return None
        folder = os.path.dirname(os.path.abspath(path))
    else:
        folder = _import_folder(module)
    needs = [f"if {folder!r} not in sys.path: sys.path.append({folder!r})"] if folder else []
    return needs + [f"import {module_name}"], f"{module_name}.{qualname}"


def _import_folder(module) -> Optional[str]:
    """The folder to put on sys.path to import ``module`` by its name — None for torch, magpy, the
    standard library and installed packages, which the script's Python finds by itself."""
    name, path = module.__name__, getattr(module, "__file__", None)
    top = name.partition(".")[0]
    if path is None or top in ("torch", "magpy") or top in sys.stdlib_module_names:
        return None
    folder = os.path.abspath(path)
    if os.path.basename(folder) == "__init__.py":
        folder = os.path.dirname(folder)
    else:
        folder = os.path.splitext(folder)[0]
    for part in reversed(name.split(".")):
        if os.path.basename(folder) != part:
            return None   # (imported under another name than its file's: it cannot be imported again)
        folder = os.path.dirname(folder)
    if any(part in ("site-packages", "dist-packages") for part in folder.split(os.sep)):
        return None
    return folder


_RULES = (_module, _special_value, _stand_in, _variable_function, _importable)


# ---- the backend -----------------------------------------------------------------------------------

def backend_name(backend) -> str:
    return repr(backend) if isinstance(backend, str) else getattr(backend, "__qualname__", repr(backend))


def _backend_source(backend) -> str:
    """``def backend()`` returning the backend: magpy's own by name, another by import."""
    from ..backends import lookup_backend

    fn = backend
    if isinstance(backend, str):
        fn = lookup_backend(backend)
        if getattr(fn, "__module__", "").startswith("magpy."):
            return _backend_function(["from magpy.backends import lookup_backend"],
                                     f"lookup_backend({backend!r})")
    found = resolve(fn)
    if found is None:
        return _backend_function(_cannot_run(f"the backend {backend_name(backend)}"), "None")
    return _backend_function(*found)


def _backend_function(setup: list[str], expression: str) -> str:
    body = "".join(f"    {line}\n" for line in setup)
    return (f'\n\ndef backend():\n    """The backend under test: (gm, example_inputs) -> compiled callable."""\n'
            f"{body}    return {expression}\n\n")


# ---- the inputs -----------------------------------------------------------------------------------

def _inputs_source(inputs: list, inline_limit: float) -> str:
    made = "".join(f"        {_tensor_source(t, seed, inline_limit)},\n" for seed, t in enumerate(inputs))
    return f"\n\ndef make_inputs():\n    return [\n{made}    ]\n"


def _tensor_source(t: torch.Tensor, seed: int, inline_limit: float) -> str:
    storage = span(t).cpu()
    args = [repr(list(t.shape)), repr(list(t.stride())), str(t.dtype)]
    if storage.numel() <= inline_limit:
        values = textwrap.fill(", ".join(map(repr, storage.tolist())), width=100, initial_indent=" " * 12,
                               subsequent_indent=" " * 12, break_long_words=False)
        args.append(f"values=[\n{values}\n        ]" if values else "values=[]")
    else:
        low, high = _value_range(storage)
        args += [f"seed={seed}", f"low={low!r}", f"high={high!r}"]
    if t.device.type != "cpu":
        args.append(f"device={str(t.device)!r}")
    if t.requires_grad:
        args.append("requires_grad=True")
    return f"strided({', '.join(args)})"


def _value_range(storage: torch.Tensor):
    """The smallest and largest finite value (real parts of complex numbers), as Python numbers."""
    if storage.dtype == torch.bool:
        return 0, 1
    if storage.dtype.is_complex:
        storage = storage.real
    if storage.dtype.is_floating_point:
        finite = storage[torch.isfinite(storage)].double()
        return (float(finite.min()), float(finite.max())) if finite.numel() else (0.0, 1.0)
    return int(storage.min()), int(storage.max())
