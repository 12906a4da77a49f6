"""``torch.vmap(fn, in_dims, out_dims)(*args)`` (``torch.func.vmap`` too, and vmaps of vmaps): one node of the
graph that runs ``torch.vmap`` over a sub-graph of ``fn``.

``torch.vmap`` returns a Python function whose call is ``vmap_impl(fn, in_dims, out_dims, randomness,
chunk_size, *args, **kwargs)``; the VM calls that through a lookaside. The body ``fn`` runs once, in the VM,
on *examples*: each batched argument's first slice (``arg.select(dim, 0)``, recorded as an op of the graph),
the others as they are. Its ops are recorded as usual, so the tensors it reads from outside (closure cells,
globals, attributes) become graph inputs by their paths and what its Python code decided is guarded.
Arguments in containers (tuples, lists and dicts, a nested ``in_dims`` saying which of their tensors are
batched) are flattened as torch's pytree flattens them: the body gets new containers of the same shape
holding the examples, as torch.vmap hands it new containers of batched tensors. The ops recorded from the
first example on (the *region*) are then cut out of the graph into a sub-graph whose inputs are the
examples (batched) and every node from before the region it uses (*lifted*: passed unbatched, in_dim
None), and whose outputs are the body's result flattened; in their place one node calls
``torch.vmap(sub-graph, flat in_dims + Nones, flat out_dims, chunk_size=...)`` over the batched tensors and
the lifted values, and the call's result is its outputs put back into the body's result structure. The
call's real result is that node run now, so later calls, with new values in the closure tensors, compute
with those; a backend tracing the graph (make_fx, AOTAutograd) traces through ``torch.vmap`` to plain aten
ops.

Refused (a graph break; torch then runs the body natively, from the random state it had before, as in
eager): a body that draws random numbers, branches on tensor data or takes Python numbers from it (errors
under vmap in eager too), hands tensors it made to anything but its result, returns anything but tensors,
or has sizes that depend on data; arguments in containers other than tuples, lists and dicts. A body
that changes outside state has done so once, as torch.vmap runs a body once: its result is the sub-graph's
and later calls run eagerly. Where capture gives up inside the body itself, torch runs the body again: its
Python effects (if any) happen twice on that first call.
"""
import operator

import torch
from torch import fx
import torch._functorch.vmap as _functorch_vmap
import torch.utils._pytree as pytree

from . import predicates, vf
from ..interp import register_lookaside
from ..interp.calls import call
from .values import _Abandon, _is_tensor

_vmap_impl = _functorch_vmap.vmap_impl
_is_leaf = getattr(pytree, "tree_is_leaf", None) or pytree._is_leaf  # (the private name warns in newer torch)


def _random_state():
    """torch's random generators' states (the CPU one, and CUDA's where it is in use)."""
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return torch.random.get_rng_state(), cuda


def _set_random_state(state):
    cpu, cuda = state
    torch.random.set_rng_state(cpu)
    if cuda is not None:
        torch.cuda.set_rng_state_all(cuda)


class VmapCall:
    """What the graph's vmap node runs: ``torch.vmap`` of the body's sub-graph over the batched tensors
    (``in_dims``, flat) and the lifted values (None); the sub-graph returns the body's result flattened, and
    so does this (a tuple, ``out_dims`` flat)."""

    def __init__(self, body, in_dims, out_dims, randomness, chunk_size):
        self.body, self.in_dims, self.out_dims = body, in_dims, out_dims
        self.randomness, self.chunk_size = randomness, chunk_size

    def __call__(self, *args):
        return torch.vmap(self.body, in_dims=self.in_dims, out_dims=self.out_dims, randomness=self.randomness,
                          chunk_size=self.chunk_size)(*args)


def _vmap_lookaside(vm, args, kwargs):
    provs, vm.lookaside_provs = vm.lookaside_provs, None
    observer = vm.observer
    if hasattr(observer, "vmap_call") and len(args) >= 5 and observer.cap.unsupported is None:
        positional = list(provs[0]) if provs is not None else [None] * len(args)
        positional += [None] * (len(args) - len(positional))
        keyword = provs[1] if provs is not None else {}
        done = observer.vmap_call(args, positional, kwargs, keyword)
        if done is not None:
            return done[0]
    # (not observed, or refused: torch runs it, with the program's torch-function modes around it)
    hook = vm.native_hook
    return _vmap_impl(*args, **kwargs) if hook is None else hook(_vmap_impl, args, kwargs, None)


register_lookaside(_vmap_impl, _vmap_lookaside)


class Vmaps:

    """The capture observer's vmap calls (a room of the observer)."""

    def vmap_call(self, args, arg_provs, kwargs, kw_provs):
        """Capture ``vmap_impl(fn, in_dims, out_dims, randomness, chunk_size, *args, **kwargs)``: ``(result,)``,
        or None when refused before the body ran (then torch runs it)."""
        fn, in_dims, out_dims, randomness, chunk_size, *call_args = args
        fn_prov, in_prov, out_prov, random_prov, chunk_prov, *call_provs = arg_provs
        try:
            for value, prov in ((in_dims, in_prov), (out_dims, out_prov), (randomness, random_prov),
                                (chunk_size, chunk_prov)):
                self.need(value, prov)
            leaves = [leaf for v, p in zip(call_args, call_provs) for leaf in self._vmap_leaves(v, p)]
            dims = self._vmap_dims(in_dims, call_args, leaves, out_dims)
            if fn_prov is not None:
                self.on_read(fn, fn_prov)
        except _Abandon:
            return None
        if dims is None:
            return None
        before = self._vmap_state()
        marker = next(iter(reversed(self.cap.graph.nodes)), None)
        examples, example_nodes = [], []
        try:
            for (value, prov), dim in zip(leaves, dims):
                if dim is None:
                    examples.append((value, prov))
                    continue
                example = value.select(dim, 0)
                node = self.record(torch.select, (value, dim, 0), (prov, None, None), None, None, example)
                examples.append((example, None))
                example_nodes.append(node)
            body_args = self._vmap_rebuild(tuple(call_args), iter(examples))
        except _Abandon:
            return None
        # the body runs once, here, on the examples (its Python effects happen once, as under torch.vmap); if
        # it is refused, torch runs it again from the same random state (its draws are eager's)
        generators = _random_state()
        self.vm.call_provs = (tuple(p for _, p in body_args), dict(kw_provs), fn_prov)
        body_out = call(self.vm, fn, tuple(v for v, _ in body_args), kwargs)
        if self.cap.unsupported is None:
            try:
                return (self._vmap_node(fn, body_out, dims, out_dims, randomness, chunk_size, leaves, marker,
                                        example_nodes, before),)
            except _Abandon:
                pass
        # (capture gave up inside the body or refused it: its Python effects run again natively)
        _set_random_state(generators)
        return None

    def _vmap_leaves(self, value, prov):
        """``value``'s leaves as torch's pytree flattens it, each with its provenance (an element's is read
        from its container's, which guards the container's length or keys). Containers other than plain
        tuples, lists and dicts are refused."""
        if type(value) in (tuple, list):
            provs = self._element_provs(value, prov)
            return [leaf for v, p in zip(value, provs) for leaf in self._vmap_leaves(v, p)]
        if type(value) is dict:
            provs = self._dict_provs(value, prov)
            return [leaf for k, v in value.items() for leaf in self._vmap_leaves(v, provs[k])]
        if not _is_leaf(value):
            if value is None:
                return []  # (None: a leaf of torch's pytree from 2.5 on, an empty node before)
            self.unsupported(f"torch.vmap over arguments in a {type(value).__name__} (graph break)")
        return [(value, prov)]

    def _vmap_rebuild(self, value, examples):
        """``value`` (a container of the arguments, or the tuple of all of them) with its leaves replaced by
        ``examples`` (``(value, prov)`` pairs, in order): ``[(value, prov)]`` of each of its items, in new
        containers whose items' provenance the observer knows (torch.vmap too hands the body new ones)."""
        items = []
        for v in (value.values() if type(value) is dict else value):
            if type(v) in (tuple, list, dict):
                inner = self._vmap_rebuild(v, examples)
                made = dict(zip(v, (x for x, _ in inner))) if type(v) is dict else type(v)(x for x, _ in inner)
                provs = dict(zip(v, (p for _, p in inner))) if type(v) is dict else [p for _, p in inner]
                self.contents[id(made)] = (made, provs)
                items.append((made, None))
            elif v is None and not _is_leaf(v):
                items.append((None, None))
            else:
                items.append(next(examples))
        return items

    def _vmap_dims(self, in_dims, call_args, leaves, out_dims):
        """The batched dim of each leaf of the arguments (None: passed as it is), as torch reads ``in_dims``;
        None where torch raises (it then runs the call, to raise its own error)."""
        if not isinstance(in_dims, (int, tuple)) or not call_args:
            return None
        flat, spec = pytree.tree_flatten(tuple(call_args))
        if len(flat) != len(leaves) or any(a is not b for a, (b, _) in zip(flat, leaves)):
            self.unsupported("torch.vmap over arguments torch's pytree flattens otherwise (graph break)")
        dims = pytree._broadcast_to_and_flatten(in_dims, spec)
        if dims is None:
            return None
        batch = set()
        for k, ((value, _), dim) in enumerate(zip(leaves, dims)):
            if dim is None:
                continue
            if not isinstance(dim, int) or not _is_tensor(value) or not -value.dim() <= dim < value.dim():
                return None
            dims[k] = dim % value.dim()
            batch.add(value.shape[dim])
        if len(batch) != 1 or not all(d is None or isinstance(d, int) for d in pytree.tree_leaves(out_dims)):
            return None  # (nothing batched, sizes that differ, out_dims not numbers: torch's error)
        if 0 in batch:
            self.unsupported("torch.vmap over an empty batch (graph break)")
        return dims

    def _vmap_state(self):
        """What a body must leave as it found it: (the decisions it made on tensor data and its draws, which
        torch.vmap refuses in eager; its effects on outside state, which happened once, as in eager)."""
        cap = self.cap
        return ((len(self.conditions), len(self.checks), len(cap.draws), cap.data_shapes),
                (len(cap.side_effects), len(self.written), len(self.items_written), len(self.objects_written)))

    def _vmap_out_dims(self, body_out, out_spec, out_dims, name):
        """``out_dims`` for each leaf of the body's result, as torch reads it."""
        if _is_tensor(body_out):
            flat = [out_dims] if out_dims is None or isinstance(out_dims, int) else \
                list(out_dims) if isinstance(out_dims, tuple) and len(out_dims) == 1 else None
        else:
            flat = pytree._broadcast_to_and_flatten(out_dims, out_spec)
        if flat is None:
            self.unsupported(f"torch.vmap ({name}) with out_dims that do not fit its result (graph break)")
        return flat

    def _vmap_node(self, fn, body_out, dims, out_dims, randomness, chunk_size, leaves, marker, example_nodes,
                   before):
        graph = self.cap.graph
        name = getattr(fn, "__name__", "fn")
        decisions, effects = self._vmap_state()
        if decisions != before[0]:
            self.unsupported(f"the body of torch.vmap ({name}) draws random numbers or decides on tensor data "
                             "(graph break)")
        outputs, out_spec = pytree.tree_flatten(body_out)
        if not outputs or not all(map(_is_tensor, outputs)):
            self.unsupported(f"the body of torch.vmap ({name}) returns other values than tensors (graph break)")
        flat_out_dims = self._vmap_out_dims(body_out, out_spec, out_dims, name)
        out_nodes = [self.node_of(t) for t in outputs]
        # the region: the ops recorded from the first example on (inputs read meanwhile stay outside)
        node = marker.next if marker is not None else next(iter(graph.nodes))
        region = []
        while node.op != "root":
            if node.op != "placeholder":
                region.append(node)
            node = node.next
        members = set(region)
        for n in region:
            if any(user not in members for user in n.users):
                self.unsupported(f"the body of torch.vmap ({name}) hands a tensor it made to outside code "
                                 "(graph break)")
            if n in self.dynamic:
                self.unsupported(f"torch.vmap ({name}) over sizes that depend on data (graph break)")
            if n in self.scalar_nodes:
                self.unsupported(f"the body of torch.vmap ({name}) takes Python numbers from tensor data (graph "
                                 "break)")
            if predicates._impure(n) and not (predicates._writes_fresh(n) and
                                               predicates._base(n.args[0]) in members):
                self.unsupported(f"the body of torch.vmap ({name}) writes into a tensor from outside or draws "
                                 "random numbers (graph break)")
        # the sub-graph: examples first (batched), then the nodes from before the region it uses (lifted)
        sub = fx.Graph()
        env = {}
        for k, n in enumerate(example_nodes):
            env[n] = sub.placeholder(f"batched{k}")
        lifted = []
        for n in region:
            if n in env:
                continue  # (an example: a placeholder of the sub-graph)
            for m in n.all_input_nodes:
                if m not in members and m not in env:
                    env[m] = sub.placeholder(f"lifted{len(lifted)}")
                    lifted.append(m)
        for n in out_nodes:
            if n not in members and n not in env:
                env[n] = sub.placeholder(f"lifted{len(lifted)}")
                lifted.append(n)
        for n in region:
            if n not in env:
                env[n] = sub.node_copy(n, env.__getitem__)
        sub.output(tuple(env[n] for n in out_nodes))
        lifted_values = [self._lifted_value(m, name) for m in lifted]
        body = fx.GraphModule(torch.nn.Module(), sub)
        batched = [leaf for leaf, d in zip(leaves, dims) if d is not None]
        run = VmapCall(body, (*(d for d in dims if d is not None), *[None] * len(lifted)), tuple(flat_out_dims),
                       randomness, chunk_size)
        # the region leaves the graph (its tensors with it: nothing outside may use them)
        for n in reversed(region):
            graph.erase_node(n)
        self.nodes.forget_nodes(members)
        self.scalar_nodes.difference_update(members)
        flat_result = run(*(v for v, _ in batched), *lifted_values)
        result = pytree.tree_unflatten(list(flat_result), out_spec)
        if effects != before[1]:
            # (its effects ran once, here, as torch.vmap runs a body once: the result is the sub-graph's, and
            # later calls run eagerly)
            try:
                self.unsupported(f"the body of torch.vmap ({name}) changes outside state (runs eagerly)", split=False)
            except _Abandon:
                return result
        node = graph.call_function(vf.calling(run, f"vmap_{name}"),
                                   (*(self.node_of(v, p) for v, p in batched), *lifted))
        self.cap.op_count += 1
        for k, tensor in enumerate(flat_result):
            self.nodes[id(tensor)] = (tensor, graph.call_function(operator.getitem, (node, k)))
        return result

    def _lifted_value(self, node, name):
        """The value this call's ``node`` (from before the body) computed: a tensor of the graph, or a number
        the graph takes as an input (one the call takes as it comes)."""
        if node.op == "placeholder":
            for (source, value), placeholder in zip(self.cap.inputs, (n for n in self.cap.graph.nodes
                                                                         if n.op == "placeholder")):
                if placeholder is node:
                    return value
        else:
            tensor = self.nodes.tensor_of(node)
            if tensor is not None:
                return tensor
        self.unsupported(f"the body of torch.vmap ({name}) uses a Python number the graph computes (graph break)")

