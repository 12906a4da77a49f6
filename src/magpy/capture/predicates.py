"""Branches on tensor data, kept inside one graph: the guard recomputes the condition.

``if x.sum() > 0:`` decides which code runs, so a cache entry holds only for calls where the condition
comes out the same. Instead of giving up, capture cuts from the graph the nodes the condition depends on
(a *predicate graph*), and the entry's guard runs it on the call's own inputs and compares its truth
with the first call's. Another outcome misses the entry and captures the other path as its own graph.

Only pure computations can be run twice (once in the guard, once in the graph): a condition that
depends on an in-place update or on a random op is not cut. A condition on random numbers (``assert
not torch.isnan(dropout(x)).any()``) is *checked* instead: the graph computes it as one more output, and
when it comes out otherwise the entry undoes what the graph did — only the random generators' state,
so only graphs whose other ops are pure qualify (``checkable``) — and misses.
"""
import operator

import torch
from torch import fx

#: words in the name of an op that changes state or draws random numbers (cannot be rerun in a guard)
_IMPURE_WORDS = ("rand", "dropout", "bernoulli", "multinomial", "normal_", "uniform_", "exponential_",
                 "poisson", "seed")


#: operator functions that write into their first operand
_WRITES = {operator.setitem, operator.delitem, operator.iadd, operator.iand, operator.ifloordiv,
           operator.ilshift, operator.imatmul, operator.imod, operator.imul, operator.ior, operator.ipow,
           operator.irshift, operator.isub, operator.itruediv, operator.ixor, operator.iconcat}


def _name(node):
    target = node.target
    return target if isinstance(target, str) else getattr(target, "__name__", "")


def writes(node):
    """Does this op write into its first argument (an in-place tensor method or operator)?"""
    name = _name(node)
    if node.target in _WRITES or node.kwargs.get("inplace") is True:
        return True
    return name.endswith("_") and not name.endswith("__") and \
        getattr(node.target, "__module__", None) != "_operator"  # (``relu_``, ``t.add_``; not ``not_``)


def _impure(node):
    if node.op not in ("call_function", "call_method"):
        return False
    name = _name(node)
    if "batch_norm" in name or "instance_norm" in name:
        # in training mode these update their running statistics in place (the flag is argument 5 of
        # torch.batch_norm / F.batch_norm / instance_norm)
        return (len(node.args) > 5 and node.args[5] is True) or node.kwargs.get("training") is True
    if writes(node):
        return True
    return any(word in name for word in _IMPURE_WORDS) or "out" in node.kwargs


_RANDOM_WORDS = ("rand", "dropout", "bernoulli", "multinomial", "normal", "uniform", "exponential",
                 "poisson")


def _draws_only(node):
    """An op whose only effect is advancing a random generator (not writing into a tensor)."""
    name = _name(node)
    in_place = writes(node) or "out" in node.kwargs or \
        ("dropout" in name and len(node.args) > 3 and node.args[3] is True)  # (``inplace`` by position)
    return not in_place and any(word in name for word in _RANDOM_WORDS)


def draws(graph) -> bool:
    """Does some op of this graph draw from torch's random generators?"""
    return any(n.op in ("call_function", "call_method") and any(word in _name(n) for word in _RANDOM_WORDS)
               for n in graph.nodes)


#: ops whose result may share memory with their first argument
_VIEWS = {"view", "view_as", "reshape", "reshape_as", "transpose", "permute", "t", "select", "narrow",
          "expand", "expand_as", "squeeze", "unsqueeze", "flatten", "unflatten", "as_strided", "diagonal",
          "unbind", "split", "chunk", "contiguous", "detach", "getitem", "getattr", "movedim", "swapaxes",
          "swapdims", "view_as_real", "view_as_complex", "unfold", "__getitem__", "tensor_split"}


def _base(node):
    """The node whose memory ``node``'s result may share (through views)."""
    while isinstance(node, fx.Node) and node.op in ("call_function", "call_method") and node.args and \
            _name(node) in _VIEWS:
        node = node.args[0]
    return node


def _writes_fresh(node):
    """An in-place op (``scatter_``, ``x[i] = v``) writing into a tensor the graph made itself, not into
    an input: running the graph again makes and writes that tensor again."""
    if node.op not in ("call_function", "call_method") or not node.args or not writes(node):
        return False
    base = _base(node.args[0])
    return isinstance(base, fx.Node) and base.op != "placeholder"


def written_placeholders(graph) -> set:
    """The graph inputs some op writes into (through views too), by what the ops are: torch's
    ``batch_norm`` updates its running statistics without counting a new version of them."""
    written = set()
    for n in graph.nodes:
        if n.op not in ("call_function", "call_method") or not _impure(n):
            continue
        written.update(b for b in map(_base, _written_targets(n)) if isinstance(b, fx.Node) and b.op == "placeholder")
    return written


def _written_targets(n):
    """What the impure op ``n`` writes into (its arguments)."""
    if writes(n) and n.args:
        return n.args[:1]
    if "norm" in _name(n):
        return n.args[1:5]  # (the running statistics, wherever the overload puts them)
    return [n.kwargs.get("out")]


def checkable(graph):
    """Can a run of this graph be undone — by restoring the random generators, and the inputs it writes
    in place from copies the entry takes first (``emit.undo``)? Not where an op has another effect (a
    reseed, an ``out=`` tensor, running statistics updated without a write the version counter sees)."""
    return all(not _impure(n) or _draws_only(n) or _writes_fresh(n) or _writes_input(n) for n in graph.nodes)


def _writes_input(node):
    """An op writing only into graph inputs (through views too): in place (``x.add_(1)``, ``x[i] = v``), or
    a norm in training updating its running statistics."""
    if node.op not in ("call_function", "call_method") or not node.args or "out" in node.kwargs:
        return False
    bases = [_base(t) for t in _written_targets(node) if isinstance(t, fx.Node)]
    return bool(bases) and all(isinstance(b, fx.Node) and b.op == "placeholder" for b in bases)


def ancestry(nodes):
    """The nodes the conditions ``nodes`` are computed from (themselves included), or None when one of
    them cannot be rerun — or when some op writes (through a view) into one of them without being
    among them (a rerun of these alone would miss that write)."""
    needed, stack = set(), list(nodes)
    while stack:
        n = stack.pop()
        if n in needed:
            continue
        if _impure(n) and not _writes_fresh(n):
            return None
        needed.add(n)
        stack.extend(n.all_input_nodes)
    graph = nodes[0].graph if nodes else None
    last = set(nodes)
    for n in graph.nodes if graph is not None else ():
        if not last:
            break  # (a write after every condition was computed cannot change what they read)
        last.discard(n)
        if n not in needed and n.op in ("call_function", "call_method") and n.args and writes(n) and \
                _base(n.args[0]) in needed:
            return None
    return needed


def cut(graph, nodes, inputs):
    """The predicate graph computing ``tuple(bool(n) for n in nodes)`` from the placeholders it needs,
    with their sources (from ``inputs``, the capture's (source, example) list); None when a condition
    cannot be rerun. One graph for all the call's conditions: the guard runs shared work once."""
    needed = ancestry(nodes)
    if needed is None:
        return None
    sub = fx.Graph()
    env, sources = {}, []
    for n in graph.nodes:
        if n not in needed:
            continue
        if n.op == "placeholder":
            sources.append(inputs[int(n.name[2:])][0])
        env[n] = sub.node_copy(n, lambda x: env[x])
    sub.output(tuple(sub.call_function(bool, (env[n],)) for n in nodes))
    return fx.GraphModule(torch.nn.Module(), sub), tuple(sources)


#: what a condition over sizes may read of an input tensor (``x.size(0)``, ``x.shape``)
_SIZE_METHODS = {"size": torch.Tensor.size, "numel": torch.Tensor.numel, "dim": torch.Tensor.dim,
                 "stride": torch.Tensor.stride}
_PURE_BUILTINS = (min, max, abs, int, float, bool, round, len, slice, tuple, list)


def size_arithmetic(fn) -> bool:
    """Is ``fn`` pure arithmetic a condition over sizes may use (an operator, ``math``, ``min``…)?"""
    return any(fn is b for b in _PURE_BUILTINS) or (getattr(fn, "__module__", None) in ("_operator", "math")
                                                   and not any(fn is w for w in _WRITES))


def over_sizes(node, inputs):
    """The condition ``node`` computes, as an expression over the inputs' sizes and the numbers the graph
    takes (``x.size(0) > 4``), or None when it reads tensor data. The guard evaluates it directly: no
    graph runs, and it reads as what the program relied on."""
    from .sources import Const, Expr  # (sources imports this module's functions by name)

    def walk(n, size_of=False):
        if isinstance(n, (tuple, list)):
            parts = [walk(x) for x in n]
            return None if None in parts else Expr(tuple, (Expr(_pack, tuple(parts)),))
        if isinstance(n, slice):
            parts = [walk(x) for x in (n.start, n.stop, n.step)]
            return None if None in parts else Expr(slice, tuple(parts))
        if not isinstance(n, fx.Node):
            return Const(n) if n is None or type(n) in (int, float, bool, str) else None
        if n.op == "placeholder":
            source, example = inputs[int(n.name[2:])]
            return source if size_of == isinstance(example, torch.Tensor) else None
        if n.op == "call_method" and n.target in _SIZE_METHODS:
            args = [walk(n.args[0], size_of=True)] + [walk(a) for a in n.args[1:]]
            return None if None in args or n.kwargs else Expr(_SIZE_METHODS[n.target], tuple(args))
        if n.op != "call_function" or n.kwargs:
            return None
        if n.target is getattr and len(n.args) == 2 and n.args[1] == "shape":
            base = walk(n.args[0], size_of=True)
            return None if base is None else Expr(getattr, (base, Const("shape")))
        if size_arithmetic(n.target):
            args = [walk(a) for a in n.args]
            return None if None in args else Expr(n.target, tuple(args))
        return None

    return walk(node)


def reads_sizes_only(node) -> bool:
    """Is ``node`` arithmetic over the sizes of graph tensors (not their data)? A backend given symbolic
    sizes decides it (and guards it) as it traces."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if not isinstance(n, fx.Node) or n in seen:
            continue
        seen.add(n)
        if (n.op == "call_method" and n.target in _SIZE_METHODS) or \
                (n.op == "call_function" and n.target is getattr and n.args[1:] == ("shape",)):
            continue  # (what it reads of the tensor is its size)
        if n.op != "call_function" or not size_arithmetic(n.target):
            return False
        stack.extend(n.all_input_nodes)
    return True


def _pack(*items):
    return items


def equals_values(tensor, values):
    """Does ``tensor`` hold exactly ``values`` (its elements, flattened, as Python numbers)?"""
    return tensor.numel() == len(values) and tensor.flatten().tolist() == list(values)


def holds(predicate, *inputs):
    """Run a predicate graph on this call's values (no autograd: it only decides a branch). Its generated
    ``forward`` is called, not the module: fx's module call prints its own traceback to stderr when the
    graph raises (an index past the end on this call's data), where the call then runs as eager does."""
    with torch.no_grad():
        return predicate.forward(*inputs)
