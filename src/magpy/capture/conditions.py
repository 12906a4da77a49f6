"""Operators and branches: the instruction rules of ``operations`` dispatched, and the conditions the
program decided on (a branch on data becomes a guard that reruns its condition).
"""
from . import predicates
from ..errors import Unsupported
from .guards import NoneGuard, TruthGuard, ValueGuard
from .places import Place
from .sources import Const, Expr
from .values import Traced, UNKNOWN, _NOT_WRITTEN, _SCALARS, _event, _is_tensor
from .operations import _OPERATIONS, _TENSOR_NEUTRAL


def is_conditions_guard(g) -> bool:
    """Is ``g`` the guard that reruns a capture's branches on tensor data (``predicates.holds``)?"""
    return type(g) is ValueGuard and type(g.expr) is Expr and g.expr.fn is predicates.holds


class Conditions:

    """Operators and branches: what the program decides, and the guards that make it decide so again."""



    @_event(lambda frame, opname, arg, inputs, provs, outputs: [None] * len(outputs))
    def operation(self, frame, opname, arg, inputs, input_provs, outputs):
        self.frame = frame
        if self.dispatched is not None and outputs:
            prov = self.take_dispatched(outputs[0])
            if prov is not _NOT_WRITTEN:
                return [prov, *[None] * (len(outputs) - 1)]  # (a torch-function mode computed it)
        handler = _OPERATIONS.get(opname)
        if handler is not None:
            return handler(self, arg, inputs, input_provs, outputs)
        if any(_is_tensor(x) for x in inputs) and opname not in _TENSOR_NEUTRAL:
            self.unsupported(f"{opname} on a tensor")
        if all(p is None for p in input_provs):
            return None
        return [UNKNOWN] * len(outputs)

    @_event(None)
    def branch(self, frame, kind, value, prov, taken):
        if _is_tensor(value):
            if kind in ("POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE"):
                return
            return self.data_branch(self.node_of(value, prov), bool(value), frame)
        if kind in ("POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE"):
            if prov is None or type(prov) is Traced:
                return  # a constant, an object made by the program, or a number the graph computes
            if prov is not None:
                if prov is UNKNOWN:
                    self.unsupported("a None check on a value of unknown origin", frame)
                self.guard(NoneGuard(prov, value is None))
            return
        if prov is None:
            prov = self.effective(value, None)
        if prov is None:
            return
        if prov is UNKNOWN:
            self.unsupported("a branch on a value computed by a call MagPy has no rule for", frame)
        if type(prov) is Traced:
            return self.data_branch(prov.node, bool(value), frame)
        if type(value) is bool or isinstance(value, _SCALARS):
            self.guard(ValueGuard(prov, value) if type(value) is not bool else TruthGuard(prov, value))
        else:
            self.guard(TruthGuard(prov, bool(value)))

    def data_branch(self, node, truth, frame, splits=True, form="{text} is {truth}"):
        """A branch on tensor data: guarded by rerunning the condition (``predicates``; one guard for all
        of the call's conditions, made by ``guard_conditions`` at the end). One over sizes only (``if
        x.size(0) > 4``, a symbolic size pinned by ``range(n)``) is a plain guard on those sizes.
        ``form``: how the condition reads at its place (``places.Place``), for explanations."""
        sizes = predicates.over_sizes(node, self.cap.inputs)
        if sizes is not None:
            self.guard(TruthGuard(sizes, truth))
            return
        if predicates.ancestry([node]) is None:
            # (random: checked after the graph runs, if it can be)
            self.checks.append((node, truth, Place.of_frame(frame, form)))
            return
        # (with the root frame's instruction deciding it: should the data go the other way on later calls,
        # a capture splits the call there rather than compile one entry per way)
        root = self.root
        site = root.index if splits and root is not None and self.splittable() else None
        self.conditions.append((node, truth, site, Place.of_frame(frame, form)))

    def guard_conditions(self):
        cap = self.cap
        if self.checks and cap.unsupported is None:
            place = self.checks[0][2]  # (where it branched: the frame has run on since)
            # (the effects made before the graph's first op wait for the checks, as for a graph that may
            # raise: a check that fails leaves nothing done)
            if not predicates.checkable(cap.graph):
                said = f": {place.text()}" if place is not None and place.text() else ""
                cap.unsupported = Unsupported(f"a branch on tensor data that depends on an in-place op (graph "
                                              f"break){said}", place and place.filename, place and place.lineno)
                return
            for node, truth, _ in self.checks:
                cap.outputs.append(cap.graph.call_function(bool, (node,)))
                cap.checks.append((len(cap.outputs) - 1, truth))
            cap.host_values = True
            cap.data_values |= not all(predicates.reads_sizes_only(node) for node, _, _ in self.checks)
        if self.conditions:
            nodes, truths, sites, places = zip(*self.conditions)
            cap.condition_sites = sites
            cap.condition_places = places
            cut = predicates.cut(self.cap.graph, nodes, self.cap.inputs)
            if cut is None:  # (a later in-place op writes into what a condition read)
                frame = self.root
                cap.unsupported = Unsupported("a branch on tensor data that an in-place op changes later "
                                              "(graph break)", frame and frame.filename, frame and frame.lineno)
                return
            self.guard(ValueGuard(Expr(predicates.holds, (Const(cut[0]), *cut[1])), tuple(truths)))
