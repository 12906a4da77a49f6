"""The shape of the house: files and classes stay small, and imports inside a package point one way.

An import cycle means no module of it can be read or tested alone; a module may import a module of its
own package lazily (inside a function) only to break such a cycle, with a comment saying why — those
imports are not counted here.
"""
import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "magpy"
MAX_FILE_LINES = 800
MAX_CLASS_LINES = 600


def _modules(package):
    return sorted((SRC / package).glob("*.py"))


def _module_imports(path, package):
    """The modules of ``package`` that ``path`` imports at module level."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                names.add(node.module.split(".")[0])
            else:
                names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and \
                node.module.startswith(f"magpy.{package}."):
            names.add(node.module.split(".")[2])
    own = {p.stem for p in _modules(package)}
    return {n for n in names if n in own and n != path.stem}


def _cycle(graph):
    """One import cycle of ``graph`` (module -> modules it imports), or None."""
    state = {}

    def visit(node, stack):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt, stack)
                if found:
                    return found
        state[node] = "done"
        stack.pop()
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node, [])
            if found:
                return found
    return None


@pytest.mark.parametrize("package", ["capture", "interp"])
def test_no_import_cycle_inside_the_package(package):
    graph = {p.stem: _module_imports(p, package) for p in _modules(package) if p.stem != "__init__"}
    cycle = _cycle(graph)
    assert cycle is None, f"import cycle in magpy.{package}: {' -> '.join(cycle)}"


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
