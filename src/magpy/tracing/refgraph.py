"""The RefGraph of one traced call: the outside objects it read and wrote, and the paths between them.

Nodes are objects from outside the call, by identity (two paths to one module are one node); plain
values (numbers, strings, None) are leaves of the path that read them. Edges are access steps: from the
call's entry to its roots (``arg``, ``global``, ``cell``), then ``.name`` and ``[key]``. A write makes a
new version of its target: ``writes`` lists them in order. It renders as indented text and as Graphviz
dot (``dot -Tsvg refgraph.dot``).
"""
from .events import describe
from ..capture.sources import ArgSource, AttrSource, CellSource, GlobalSource, ItemSource, Source

#: root Source type -> the label of the edge from the call's entry
_ROOTS = {ArgSource: "arg", GlobalSource: "global", CellSource: "cell"}
_PLAIN = (int, float, complex, bool, str, bytes, type(None))
ENTRY = "entry"


class Node:
    """One outside object (or plain value) the call reached, labelled by the first path that reached it."""
    __slots__ = ("key", "path", "value", "written")

    def __init__(self, key, path, value):
        self.key = key
        self.path = path
        self.value = value
        self.written = False


class RefGraph:
    """Built from a traced call's reads and writes (``read``, ``write``), in the order they happened."""

    def __init__(self):
        self.nodes = {}        # key -> Node, in the order they were reached
        self.edges = {}        # (parent key, child key, label) -> None (an ordered set)
        self.writes = []       # (rendered path, description of the value stored; None: deleted)
        self._by_source = {}   # Source -> node key

    # ---- building --------------------------------------------------------------------------------
    def read(self, source, value):
        """The call read ``value`` by ``source``."""
        self._reach(source, value)

    def write(self, source, value, deleted=False):
        """The call stored ``value`` at ``source`` (or deleted what was there)."""
        key = self._reach(source, None if deleted else value, written=True)
        self.nodes[key].written = True
        write = (source.render(), None if deleted else describe(value))
        if not self.writes or self.writes[-1] != write:  # (``Module.__setattr__`` stores what STORE_ATTR did)
            self.writes.append(write)

    def _reach(self, source, value, written=False):
        known = self._by_source.get(source)
        if known is not None and not written:
            return known
        plain = type(value) in _PLAIN or value is None
        key = ("path", source) if plain or written else ("object", id(value))
        if key not in self.nodes:
            self.nodes[key] = Node(key, source.render(), value)
        self._by_source[source] = key
        base = getattr(source, "base", None)
        if isinstance(base, Source):
            parent = self._by_source.get(base)
            if parent is None:
                parent = self._reach(base, None)
            self.edges[(parent, key, _step(source))] = None
        else:
            self.edges[(ENTRY, key, _ROOTS.get(type(source), "const"))] = None
        return key

    # ---- rendering -------------------------------------------------------------------------------
    def _children(self):
        out = {}
        for parent, child, label in self.edges:
            out.setdefault(parent, []).append((label, child))
        return out

    def to_text(self):
        """Indented text: each root, then what was read through it; a node reached again is named only."""
        children = self._children()
        lines = [f"RefGraph: {len(self.nodes)} outside object(s) and value(s) read, "
                 f"{len(self.writes)} write(s)"]
        shown = set()

        def visit(key, label, depth):
            node = self.nodes[key]
            mark = "  (written)" if node.written else ""
            if key in shown:
                lines.append(f"{'  ' * depth}{label} -> {node.path}  (see above)")
                return
            shown.add(key)
            lines.append(f"{'  ' * depth}{label} -> {node.path}: {_summary(node)}{mark}")
            for child_label, child in children.get(key, ()):
                visit(child, child_label, depth + 1)

        for label, key in children.get(ENTRY, ()):
            visit(key, label, 1)
        if self.writes:
            lines.append("writes:")
            lines += [f"  {path} = {value}" if value is not None else f"  del {path}"
                      for path, value in self.writes]
        return "\n".join(lines)

    def to_dot(self):
        """Graphviz dot text: one box per node (its path and value), one labelled arrow per step."""
        ids = {ENTRY: "entry"}
        for k, key in enumerate(self.nodes):
            ids[key] = f"n{k}"
        lines = ["digraph refgraph {", "  rankdir=LR;", '  node [shape=box, fontname="monospace"];',
                 f'  entry [label={_quote("call entry")}, shape=ellipse];']
        for key, node in self.nodes.items():
            style = ", color=red" if node.written else ""
            lines.append(f"  {ids[key]} [label={_quote(node.path + chr(10) + _summary(node))}{style}];")
        for parent, child, label in self.edges:
            lines.append(f"  {ids[parent]} -> {ids[child]} [label={_quote(label)}];")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def __str__(self):
        return self.to_text()


def _step(source):
    """The access step from a path's base to it: ``.name`` or ``[key]``."""
    if type(source) is AttrSource:
        return f".{source.name}"
    if type(source) is ItemSource:
        return f"[{source.key!r}]"
    return type(source).__name__


def _summary(node):
    """A plain value or tensor as it was; any other object by its class."""
    value = node.value
    if type(value) in _PLAIN or hasattr(value, "shape"):
        return describe(value)
    return type(value).__qualname__


def _quote(text):
    """A dot string literal (quotes and backslashes escaped, newlines as dot's ``\\n``)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
