"""The shape of the house: files and classes stay small, and imports point one way.

An import cycle means no module of it can be read or tested alone. Imports inside functions count as
much as those at the top of a module: a lazy import hides a cycle, it does not break it. The one
exception is an import kept lazy for import cost (a heavy library behind a rarely used feature), whose
line says so with a ``# lazy:`` comment.
"""
import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "magpy"
MAX_FILE_LINES = 800
MAX_CLASS_LINES = 600
LAZY_FOR_COST = "# lazy:"

#: cycles still in the house, each with why it is still there; a cycle that is gone must leave this list
KNOWN_CYCLES = {}


def _name(path):
    """``magpy.capture.rules.torch`` for ``src/magpy/capture/rules/torch.py``."""
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in SRC.rglob("*.py")}


def _imported(node, module, is_package):
    """The magpy modules one import statement of ``module`` names (the innermost module each name is)."""
    if isinstance(node, ast.Import):
        targets = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".")[:None if is_package else -1]
            base = base[:len(base) - node.level + 1]
            full = ".".join(base + ([node.module] if node.module else []))
        else:
            full = node.module or ""
        targets = [f"{full}.{a.name}" for a in node.names]
    found = set()
    for target in targets:
        while target and target not in MODULES:
            target = target.rpartition(".")[0]
        if target and target != module:
            found.add(target)
    return found


def _imports(module):
    """Every magpy module that ``module`` imports, at module level or inside functions (but not the
    imports marked lazy for import cost)."""
    path = MODULES[module]
    text = path.read_text()
    lines = text.splitlines()
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and getattr(node, "module", None) != "__future__":
            if LAZY_FOR_COST in lines[node.end_lineno - 1]:
                continue
            found |= _imported(node, module, path.name == "__init__.py")
    return found


IMPORTS = {m: _imports(m) for m in MODULES}


def _cycles(graph):
    """The import cycles of ``graph`` (module -> modules it imports): one per strongly connected part,
    as ``a -> b -> a`` from its first module in order, through the first module in order each time."""
    index, low, stack, on_stack, parts = {}, {}, [], set(), []

    def connect(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            part = set()
            while True:
                top = stack.pop()
                on_stack.discard(top)
                part.add(top)
                if top == node:
                    break
            if len(part) > 1:
                parts.append(part)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_shortest_round(graph, part) for part in parts]


def _shortest_round(graph, part):
    """``a -> … -> a``: the shortest way round ``part`` from its first module, always taking the first."""
    start = min(part)
    seen = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    path = [node]
                    while seen[path[-1]] is not None:
                        path.append(seen[path[-1]])
                    return " -> ".join([*reversed(path), start])
                if nxt in part and nxt not in seen:
                    seen[nxt] = node
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"not a cycle: {part}")


def _package(module):
    """The room of the house a module is in: ``capture`` for ``magpy.capture.rules.torch``, ``api``
    for ``magpy.api``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "magpy"


PACKAGES = sorted({_package(m) for m in MODULES if (SRC / _package(m)).is_dir()})


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside_the_package(package):
    inside = {m for m in MODULES if _package(m) == package}
    graph = {m: IMPORTS[m] & inside for m in inside}
    cycles = _cycles(graph)
    assert set(cycles) <= set(KNOWN_CYCLES), f"import cycle in magpy.{package}: {set(cycles) - set(KNOWN_CYCLES)}"
    known = {c for c in KNOWN_CYCLES if c.startswith(f"magpy.{package}.")}
    assert known <= set(cycles), f"gone from magpy.{package}, so gone from KNOWN_CYCLES too: {known - set(cycles)}"


def test_no_import_cycle_between_packages():
    graph = {}
    for module, imported in IMPORTS.items():
        here = _package(module)
        graph.setdefault(here, set()).update(
            _package(m) for m in imported if _package(m) not in (here, "magpy"))
    cycles = _cycles(graph)
    assert set(cycles) <= set(KNOWN_CYCLES), f"import cycle between packages of magpy: {set(cycles) - set(KNOWN_CYCLES)}"
    known = {c for c in KNOWN_CYCLES if not c.startswith("magpy.")}
    assert known <= set(cycles), f"gone, so gone from KNOWN_CYCLES too: {known - set(cycles)}"


def test_a_lazy_import_says_why():
    bare = [f"{MODULES[m].relative_to(SRC)}:{line}"
            for m in MODULES for line, text in enumerate(MODULES[m].read_text().splitlines(), 1)
            if text.rstrip().endswith(LAZY_FOR_COST.strip())]
    assert not bare, f"``# lazy:`` with no reason: {bare}"


def test_no_file_is_a_hall():
    long = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_FILE_LINES}
    assert not long, f"files over {MAX_FILE_LINES} lines: {long}"


def test_no_class_is_a_hall():
    long = {}
    for p in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ClassDef) and node.end_lineno - node.lineno + 1 > MAX_CLASS_LINES:
                long[f"{p.relative_to(SRC)}:{node.name}"] = node.end_lineno - node.lineno + 1
    assert not long, f"classes over {MAX_CLASS_LINES} lines: {long}"
