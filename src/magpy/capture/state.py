"""What one capture holds besides the observer's rooms: the ``Capture`` it produces (graph, guards, side
effects), the contents of containers by provenance, and the graph's tensors (held weakly).
"""
import weakref

import torch
from torch import fx


class Capture:
    """What one observed call produced (consumed by ``emit``)."""

    def __init__(self):
        self.graph = fx.Graph()
        self.inputs = []          # (Source, example tensor) per graph placeholder, in order
        self.outputs = []         # fx nodes returned by the graph, in order
        self.guards = {}          # key -> Guard
        self.side_effects = []    # (kind, target expr, name/key, value template)
        self.pre_graph = 0        # how many side effects came before the first graph op
        self.result_template = None
        self.unsupported = None   # an Unsupported, when capture must give up
        self.failed_at = None     # the root frame's instruction (VM index) running when it gave up
        self.stopped = None       # a ``breaks.Stopped``: capture stopped before a graph break
        self.condition_sites = ()  # per branch on tensor data (``predicates.holds``), its root instruction
        self.condition_places = ()  # per branch on tensor data, its ``places.Place`` (how it reads, where)
        self.resume = None        # the ``Continuation`` the mock hands the live values to (set by api)
        self.op_count = 0
        self.draws = []           # (native random function, constant arguments) per draw, in order
        self.host_values = False  # the graph computes or takes Python numbers, or shapes from data
        self.data_shapes = False  # sizes come from tensor data (``nonzero``, a mask's count): unbacked sizes
                                  # to a compiling backend
        self.data_values = False  # … for some other reason than symbolic input sizes (a compiling backend
                                  # given symbolic inputs serves a graph whose only host values are sizes)
        self.float_inputs = False  # floats from outside are graph inputs (symbolic floats to a backend
                                   # that takes them, ``backends.symbolic.FLOAT_BACKENDS``)
        self.may_raise = False    # some graph op may raise on other data (``graph_builder.may_raise``)
        self.written = ()         # positions in ``inputs`` of the tensors the call wrote in place
        self.checks = []          # (output index, truth): conditions on random data, checked after the graph
        self.symbolic = []        # (Source, dims) of graph inputs with symbolic sizes (``dynamic_dims``)
        self.written_numbers = set()  # paths of outside numbers the call wrote (a counter: they change)
        self.autograd_nodes = False  # side effects act on the autograd nodes of graph tensors: the graph
                                     # must run op by op (a compiled graph has one node for all of them)


class _Contents(dict):
    """``CaptureObserver.contents``: also lists outside lists and deques the program changed without
    reading them (``lengths.Unread``). What one holds is followed from its entry state and those changes
    once the program reads it (a lookup here): until then its length is not guarded (a history that only
    grows, a heap pushed to, needs no guard)."""

    def __init__(self, observer):
        super().__init__()
        self.observer = weakref.proxy(observer)  # (no cycle: the observer and what the call made die when it ends)
        self.grown = {}           # id(outside list or deque) -> its ``lengths.Unread``
        self.outside = set()      # ids of outside containers whose contents are tracked here (they changed)

    def changed_outside(self, obj):
        return id(obj) in self.grown or id(obj) in self.outside

    def grow(self, key, unread):
        self.grown[key] = unread
        self.get = self._get_grown  # (until then lookups are the dict's own: capture makes very many)

    def _get_grown(self, key, default=None):
        unread = self.grown.pop(key, None)
        if unread is not None:
            if not self.grown:
                del self.get
            self[key] = (unread.target, unread.followed(self.observer))
            self.outside.add(key)
        return dict.get(self, key, default)


class _TensorNodes:
    """``id(tensor) -> (tensor, node)`` for the tensors the graph computes, holding them weakly: capture
    must not keep every activation of the call alive (eager frees them as it goes). A dead tensor's
    entry is gone, so an id used again by a new tensor finds nothing."""

    def __init__(self):
        self._entries = {}

    def get(self, key, default=None):
        entry = self._entries.get(key)
        if entry is None:
            return default
        tensor = entry[0]()
        if tensor is None:
            del self._entries[key]
            return default
        return tensor, entry[1]

    def __setitem__(self, key, value):
        self._entries[key] = (weakref.ref(value[0]), value[1])

    def __contains__(self, key):
        return self.get(key) is not None

    def tensor_of(self, node):
        """The live tensor the graph's ``node`` computed, or None."""
        for ref, n in self._entries.values():
            if n is node:
                return ref()
        return None

    def forget_nodes(self, nodes):
        """Forget the tensors of these nodes (cut out of the graph)."""
        for key, (_, n) in list(self._entries.items()):
            if n in nodes:
                del self._entries[key]

    def forget_sharing(self, kept, other):
        """Forget every tensor but ``kept`` that shares storage with ``kept`` or ``other``."""
        storages = {t.untyped_storage().data_ptr() for t in (kept, other)}
        for key, (ref, _) in list(self._entries.items()):
            t = ref()
            if t is not None and t is not kept and t.layout is torch.strided and \
                    t.untyped_storage().data_ptr() in storages:
                del self._entries[key]
