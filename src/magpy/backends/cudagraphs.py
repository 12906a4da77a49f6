"""CUDA graph replay of a compiled graph.

A call of a compiled graph is a few hundred kernel launches issued from Python; replaying them as
one CUDA graph costs one launch. The first call runs as compiled (it compiles and tunes the
kernels); the second captures the graph; later calls replay it and return copies of the outputs
(the next replay overwrites the graph's own). Inputs that were the same tensor objects in the
first two calls (parameters, buffers) are read in place, where they are: a later call that brings
another object there, or one whose storage moved, runs uncaptured. Other inputs are copied into
the graph's own copies on every call, so a replay follows the data it is given.

A graph that writes into its inputs (a buffer's new values, stored by its kernels) is replayed when
its compiler says which inputs those are (``writes``): one read in place is written where it is, one
copied in is copied back after each replay, the warm-up before a capture writes into copies of
them (else the capturing call would apply the write twice), and the version counters the call bumps
(as eager does: a ``num_batches_tracked.add_``; not batch norm's statistics) are bumped after each
replay too. The graph runs as compiled, never replayed, when it cannot be captured (a CPU
synchronisation inside it, say), when it writes to inputs it was not told of, when its outputs
share memory with its inputs or with each other (copies would not), when inputs require grad with
grad mode on (autograd records no graph), or when its inputs are not all CUDA tensors.

``options={"cudagraphs": True}`` replays whenever it can, and warns when it cannot; by default a
replay is one of the candidates ``backends/choose.py`` times for inference graphs, kept only when
clearly faster.
"""
from __future__ import annotations

import warnings
import weakref
from typing import Callable, Optional

import torch


def wrap(compiled: Callable, example_inputs, quiet: bool = False, writes=()) -> Callable:
    """``compiled`` replayed as a CUDA graph where possible (see the module docstring); ``quiet``
    keeps the reasons it cannot be to itself (``GraphReplay.disabled``); ``writes``: the positions of
    the inputs it writes into."""
    if not on_cuda(example_inputs):
        if not quiet:
            warnings.warn("magpy: cudagraphs needs CUDA tensor inputs; the graph runs without it")
        return compiled
    return GraphReplay(compiled, quiet, writes)


def on_cuda(example_inputs) -> bool:
    """Are the graph's inputs CUDA tensors, all of them (and one at least)? (Else no replay.)"""
    tensors = [x for x in example_inputs if isinstance(x, torch.Tensor)]
    return bool(tensors) and all(t.device.type == "cuda" for t in tensors)


class GraphReplay:
    """Runs ``compiled``; from its second call on, replays it as a CUDA graph."""

    def __init__(self, compiled: Callable, quiet: bool = False, writes=()):
        self.compiled = compiled
        self.quiet = quiet
        self.writes = frozenset(writes)
        self.bumps: list = []  # positions of the written inputs whose version a call bumps
        self.calls = 0
        self.graph: Optional[torch.cuda.CUDAGraph] = None
        self.static_inputs: list = []
        self.pointers: list = []  # data_ptr of each input read in place, else None
        self.first_inputs: list = []  # the first call's inputs, until the capture (held: ids get reused)
        self.static_outputs = None
        self.disabled: Optional[str] = None

    def _disable(self, reason: str) -> None:
        self.disabled = reason
        self.graph = None
        self.static_inputs, self.static_outputs = [], None
        if not self.quiet:
            warnings.warn(f"magpy: cudagraphs off for a graph: {reason}")

    def __call__(self, *args):
        if self.disabled or (torch.is_grad_enabled() and any(
                isinstance(a, torch.Tensor) and a.requires_grad for a in args)):
            return self.compiled(*args)
        self.calls += 1
        if self.calls == 1:
            return self._first(args)
        if self.graph is None:
            self._capture(args)
            if self.disabled:
                return self.compiled(*args)
        if not self._load(args):
            return self.compiled(*args)
        self.graph.replay()
        _write_back(args, self.static_inputs, self.writes, self.bumps)
        return _copy(self.static_outputs)

    def _first(self, args):
        versions = _versions(args)
        self.first_inputs = list(args)
        result = self.compiled(*args)
        moved = [i for i, v in versions.items() if args[i]._version != v]
        self.bumps = [i for i in moved if i in self.writes]
        if len(self.bumps) != len(moved):
            self._disable("it writes to its inputs")
        return result

    def _capture(self, args) -> None:
        kept = [isinstance(a, torch.Tensor) and i < len(self.first_inputs) and a is self.first_inputs[i]
                for i, a in enumerate(args)]
        self.first_inputs = []
        self.static_inputs = [a if not isinstance(a, torch.Tensor) or keep else a.detach().clone()
                              for a, keep in zip(args, kept)]
        self.pointers = [a.data_ptr() if keep else None for a, keep in zip(args, kept)]
        try:
            graph, self.static_outputs = record(lambda: self.compiled(*self.static_inputs),
                                                warm_up=lambda: self.compiled(*_spared(self.static_inputs, self.writes)))
        except Exception as error:  # noqa: BLE001 - anything capture refuses: run uncaptured
            self._disable(f"capture failed ({type(error).__name__}: {str(error).splitlines()[0][:120]})")
            return
        if _shares_memory(self.static_outputs, self.static_inputs):
            self._disable("its outputs share memory with its inputs or with each other")
            return
        self.graph = graph

    def _load(self, args) -> bool:
        """Copy ``args`` into the captured inputs; False when a call cannot replay."""
        if len(args) != len(self.static_inputs):
            return False
        for arg, static, pointer in zip(args, self.static_inputs, self.pointers):
            if pointer is not None:
                if arg is not static or arg.data_ptr() != pointer:
                    return False
            elif isinstance(static, torch.Tensor):
                if not isinstance(arg, torch.Tensor) or arg.shape != static.shape or arg.dtype != static.dtype \
                        or arg.stride() != static.stride():
                    return False
                static.copy_(arg)
            elif arg != static:
                return False
        return True


_capture_streams: dict = {}  # device index -> the one stream every capture on it runs on


def record(run: Callable, pool=None, warm_up: Optional[Callable] = None):
    """(a CUDA graph of ``run()``, what ``run()`` returned inside the capture): ``warm_up`` (by default
    ``run``: one that writes into inputs writes into copies of them instead) run once on the capture
    stream, then ``run`` recorded (into ``pool``, a graph's memory pool, if given).

    One long-lived capture stream per device, and cuBLAS's cached workspaces dropped before and after:
    a workspace made during a capture comes from the graph's pool, and kept in cuBLAS's cache (by
    stream) it would outlive that pool — later matmuls on the stream then write into freed memory."""
    device = torch.cuda.current_device()
    side = _capture_streams.get(device)
    if side is None:
        side = _capture_streams[device] = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", lambda: None)
    graph = torch.cuda.CUDAGraph()
    try:
        clear()
        with torch.cuda.stream(side):
            (warm_up or run)()
            side.synchronize()
            with torch.cuda.graph(graph, pool=pool, stream=side):
                outputs = run()
    finally:
        clear()
        torch.cuda.current_stream().wait_stream(side)
    return graph, outputs


def _versions(args) -> dict:
    return {i: a._version for i, a in enumerate(args) if isinstance(a, torch.Tensor)}


def _spared(inputs, writes) -> list:
    """``inputs``, those at the positions ``writes`` replaced by copies (a warm-up run writes those)."""
    return [a.clone() if i in writes and isinstance(a, torch.Tensor) else a for i, a in enumerate(inputs)]


def _write_back(args, statics, writes, bumps=()) -> None:
    """After a replay: the written inputs the graph has copies of get the values written there, and
    the versions a call of the graph bumps are bumped (a replay writes memory, not tensors)."""
    for i in writes:
        if statics[i] is not args[i]:
            args[i].copy_(statics[i])
    if bumps:
        torch.autograd.graph.increment_version(tuple(args[i] for i in bumps))


def _tensors(value) -> list:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def _shares_memory(outputs, inputs) -> bool:
    storages = [t.untyped_storage().data_ptr() for t in _tensors(outputs)]
    inside = {t.untyped_storage().data_ptr() for t in _tensors(inputs)}
    return len(set(storages)) != len(storages) or any(s in inside for s in storages if s)


def _copy(value):
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_copy(v) for v in value)
    return value


# Storages a forward replay reads in place (parameters) or hands out in place (saved tensors), by data_ptr ->
# the replay: a backward replay reads what lies there where it lies too.
_IN_PLACE: "weakref.WeakValueDictionary[int, TrainingReplay]" = weakref.WeakValueDictionary()
_use_count = getattr(torch._C, "_storage_Use_Count", None)


class SharedPool:
    """The memory pool of one graph's forward replay, which its backward's capture shares: the
    backward's temporaries take what the forward freed, as eager's do (replays come in that order:
    a forward replays only once what it handed the backward is gone)."""

    def __init__(self):
        self.handle = None


class TrainingReplay:
    """One of AOTAutograd's training graphs (a forward or a backward, called boxed), replayed as a
    CUDA graph from its second call on, as ``GraphReplay`` replays inference graphs.

    Outputs are handed out in place: new tensor objects on the graph's own memory, which the next
    replay overwrites. So a replay first checks that every tensor handed out before is gone (by the
    use count of its storage): a forward's saved tensors once the backward ran (a backward replay reads
    them where they are: no activation is copied), gradients once the optimizer's ``zero_grad`` dropped
    them. Where a saved tensor is still held
    (two forwards before a backward) the call runs unreplayed, on fresh memory. An output the program
    keeps (a loss kept in a list, a ``.grad`` accumulated into) is copied from then on, and the graph is
    recorded again, leaving the memory it had to whoever holds it. Inputs met at the same address with
    the same layout are read in place (parameters; the saved tensors); others are copied into the graph's
    own. One read in place that moved to memory a forward replay owns (its saved tensors, recorded
    again) has the graph recorded again too; elsewhere the call runs unreplayed. At most ``RECORDS``
    recordings: after that, calls that cannot replay run unreplayed. The inputs a forward writes
    (``writes``: buffers, whose new values its kernels store) are written where they are when read in
    place, copied back after the replay when copied in, and spared by the warm-up before a recording
    (it writes into copies of them); AOTAutograd bumps their versions after the call, replayed or not.
    """

    RECORDS = 4

    def __init__(self, boxed: Callable, saved_from: Optional[int] = None, pool: Optional[SharedPool] = None,
                 writes=()):
        self.boxed = boxed
        self.saved_from = saved_from
        self.pool = pool
        self.writes = frozenset(writes)  # positions of the inputs the graph writes into
        self.calls = 0
        self.records = 0
        self.graph: Optional[torch.cuda.CUDAGraph] = None
        self.disabled: Optional[str] = None
        self.first: list = []
        self.arity = 0
        self.placed: set = set()  # positions of inputs read in place
        self.places: list = []   # (position, data_ptr, shape, stride, dtype) of inputs read in place
        self.copies: list = []   # (position, the graph's own copy) of inputs copied in
        self.values: list = []   # (position, value) of inputs that are not tensors
        self.outputs = None
        self.copied: set = set()  # outputs handed out as copies
        self.handed: list = []   # (storage, its use count while nothing else holds it, output positions)
        self.registered: list = []  # the data_ptrs this replay put in ``_IN_PLACE``

    def __call__(self, args: list):
        if self.disabled or _use_count is None:
            return self.boxed(args)
        self.calls += 1
        if self.calls == 1:
            self.first = list(args)
            versions = _versions(self.first)
            result = self.boxed(args)
            if any(self.first[i]._version != v for i, v in versions.items() if i not in self.writes):
                self._disable("it writes to inputs it was not told of")
            return result
        if self.graph is None:
            self._capture(args)
            if self.graph is None:
                return self.boxed(args)
        held = self._held()
        if held == "saved":
            return self.boxed(args)
        fit = self._fit(args)
        if held == "kept" or fit == "moved":
            if self.records >= self.RECORDS:
                return self.boxed(args)
            self._release()
            self._capture(args)
            if self.graph is None:
                return self.boxed(args)
        elif fit == "elsewhere":
            return self.boxed(args)
        if not self._load(args):
            return self.boxed(args)
        self.graph.replay()
        for i, held in self.copies:
            if i in self.writes:
                args[i].copy_(held)  # (the graph wrote its copy)
        args.clear()  # (after the replay is queued: an input read in place may be held by this list alone)
        return self._results()

    def _disable(self, reason: str) -> None:
        self.disabled = reason
        warnings.warn(f"magpy: cudagraphs off for a training graph: {reason}")
        self._release()

    def _release(self) -> None:
        """Let go of the recording (what it handed out stays with whoever holds it)."""
        for pointer in self.registered:
            if _IN_PLACE.get(pointer) is self:
                del _IN_PLACE[pointer]
        self.graph, self.outputs, self.first, self.handed, self.registered = None, None, [], [], []
        self.places, self.copies, self.values = [], [], []

    def _capture(self, args) -> None:
        statics = []
        self.arity = len(args)
        for i, a in enumerate(args):
            if not isinstance(a, torch.Tensor):
                self.values.append((i, a))
                statics.append(a)
            elif (i < len(self.first) and a is self.first[i]) or i in self.placed or \
                    a.untyped_storage().data_ptr() in _IN_PLACE:
                self.placed.add(i)
                self.places.append((i, a.data_ptr(), a.shape, a.stride(), a.dtype))
                statics.append(a)
            else:
                copy = a.detach().clone()
                self.copies.append((i, copy))
                statics.append(copy)
        self.first = []
        self.records += 1
        try:
            graph, outputs = record(lambda: self.boxed(list(statics)), self.pool.handle if self.pool else None,
                                    warm_up=lambda: self.boxed(_spared(statics, self.writes)))
        except Exception as error:  # noqa: BLE001 - anything capture refuses: run uncaptured
            self._disable(f"capture failed ({type(error).__name__}: {str(error).splitlines()[0][:120]})")
            return
        # (an output on a parameter's memory is never overwritten by a replay; one on the graph's own, or
        # on its copy of an input, is)
        placed = {statics[i].untyped_storage().data_ptr() for i, *_ in self.places}
        if self.saved_from is not None:
            self._register(placed)
        storages: dict = {}
        for i, o in enumerate(outputs):
            if isinstance(o, torch.Tensor) and i not in self.copied and o.untyped_storage().data_ptr() not in placed:
                storage = o.untyped_storage()
                storages.setdefault(storage.data_ptr(), (storage, []))[1].append(i)
        for pointer, (storage, positions) in storages.items():
            self.handed.append((storage, _use_count(storage._cdata), positions))
            if self.saved_from is not None and max(positions) >= self.saved_from:
                self._register([pointer])
        if self.pool is not None and self.pool.handle is None:
            self.pool.handle = graph.pool()
        self.outputs, self.graph = outputs, graph

    def _register(self, pointers) -> None:
        for pointer in pointers:
            _IN_PLACE[pointer] = self
            self.registered.append(pointer)

    def _saved(self, i: int) -> bool:
        return self.saved_from is not None and i >= self.saved_from

    def _held(self) -> Optional[str]:
        """What of the outputs an earlier replay handed out is still held: "saved" (a saved tensor: the
        backward has not run yet), "kept" (only outputs the program kept, copied from now on), or None."""
        held = None
        for storage, count, positions in self.handed:
            if _use_count(storage._cdata) != count:
                if any(self._saved(i) for i in positions):
                    return "saved"
                self.copied.update(positions)
                held = "kept"
        return held

    def _fit(self, args) -> Optional[str]:
        """Are the inputs read in place where the recording reads them? None (yes), "moved" (one moved to
        memory a forward replay owns: its recording anew), or "elsewhere"."""
        if len(args) != self.arity:
            return "elsewhere"
        fit = None
        for i, pointer, shape, stride, dtype in self.places:
            a = args[i]
            if not isinstance(a, torch.Tensor):
                return "elsewhere"
            if a.data_ptr() != pointer or a.stride() != stride or a.shape != shape or a.dtype != dtype:
                if a.data_ptr() != pointer and a.untyped_storage().data_ptr() in _IN_PLACE:
                    return "moved"
                fit = "elsewhere"
        return fit

    def _load(self, args) -> bool:
        """Copy the inputs the recording has copies of into them; False when one does not fit."""
        for i, value in self.values:
            if isinstance(args[i], torch.Tensor) or args[i] != value:
                return False
        for i, held in self.copies:
            a = args[i]
            if not isinstance(a, torch.Tensor) or a.shape != held.shape or a.stride() != held.stride() or \
                    a.dtype != held.dtype:
                return False
        for i, held in self.copies:
            held.copy_(args[i])
        return True

    def _results(self):
        copied = self.copied
        return type(self.outputs)(o.clone() if i in copied else o.detach() if isinstance(o, torch.Tensor) else o
                                  for i, o in enumerate(self.outputs))
