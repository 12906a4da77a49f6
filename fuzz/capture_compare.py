"""Deep comparison of what the eager and the compiled world leave: results, state, inputs.

Both worlds are built from the same source, so each has its own classes: plain objects (the state
object, the program's ``Obj``) are compared by class name and attributes. Mutable objects are numbered
in order of first sight on each side, so that aliasing (which containers, which tensors are the same
object) is compared too. Attributes holding ids are compared by what the ids tell apart, never by their
numbers (each world has its own objects). Floating tensors are compared exactly on the eager backend
(it runs the very same torch ops) and within float32 rounding on the generated kernels (their fused
arithmetic may round differently).
"""
import collections

import torch

#: classes compared by their attributes (each world's module has its own class of that name)
PLAIN = {"State", "Obj"}

#: attributes holding ids: a dict keyed by ids by its values, a list of ids by which entries are equal
ID_KEYED = {"memo": lambda memo: list(memo.values()),
            "ids": lambda ids: [ids.index(i) for i in ids]}

#: mutable objects whose identity matters (aliasing)
_IDENTIFIED = (list, dict, set, collections.deque, torch.Tensor)


class Comparison:
    """One deep comparison: ``same(eager_value, compiled_value, path)`` raises AssertionError naming the
    path of the first difference."""

    def __init__(self, exact=True):
        self.exact = exact
        # id -> (number in order of first sight, the object: held, so that a temporary compared here
        # cannot die and hand its id to the next one)
        self.ids_a, self.ids_b = {}, {}

    def same(self, a, b, path):
        if isinstance(a, torch.nn.Module):  # (its state: parameters, buffers, attributes, children)
            return self.same(_module_state(a), _module_state(b), path)
        if (isinstance(a, _IDENTIFIED) or type(a).__name__ in PLAIN) and not self._first_sight(a, b, path):
            return None  # seen before, compared there
        if type(a).__name__ in PLAIN and type(a).__name__ == type(b).__name__:
            return self.same(_plain_vars(a), _plain_vars(b), f"{path}.__dict__")
        assert type(a) is type(b), f"{path}: {type(b).__name__} vs eager {type(a).__name__}"
        if isinstance(a, torch.Tensor):
            return self.same_tensor(a, b, path)
        if isinstance(a, (list, tuple, collections.deque)):
            return self.same_sequence(a, b, path)
        if isinstance(a, dict):
            assert list(a) == list(b), f"{path}: keys {list(b)} vs eager {list(a)}"
            for k in a:
                self.same(a[k], b[k], f"{path}[{k!r}]")
            return None
        assert a == b, f"{path}: {b!r} vs eager {a!r}"
        return None

    def _first_sight(self, a, b, path):
        first_a = self.ids_a.setdefault(id(a), (len(self.ids_a), a))[0]
        first_b = self.ids_b.setdefault(id(b), (len(self.ids_b), b))[0]
        assert first_a == first_b, f"{path}: aliasing differs (compiled shares it differently)"
        return first_a == len(self.ids_a) - 1

    def same_sequence(self, a, b, path):
        assert len(a) == len(b), f"{path}: length {len(b)} vs eager {len(a)}: {b!r} vs {a!r}"
        if isinstance(a, collections.deque):
            assert a.maxlen == b.maxlen, f"{path}: maxlen"
        for k, (u, v) in enumerate(zip(a, b)):
            self.same(u, v, f"{path}[{k}]")

    def same_tensor(self, a, b, path):
        assert a.dtype == b.dtype, f"{path}: dtype {b.dtype} vs eager {a.dtype}"
        assert a.shape == b.shape and self._equal(a.detach(), b.detach()), f"{path}: {b} vs eager {a}"
        assert a.requires_grad == b.requires_grad, f"{path}: requires_grad differs"
        if a.requires_grad and a.is_leaf:   # (a parameter's, or a leaf's the program kept)
            self.same(a.grad, b.grad, f"{path}.grad")

    def _equal(self, a, b):
        if not (a.is_floating_point() or a.is_complex()):
            return torch.equal(a, b)
        tolerance = dict(rtol=0, atol=0) if self.exact else dict(rtol=1.3e-6, atol=1e-5)
        return torch.allclose(b, a, equal_nan=True, **tolerance)   # (NaN where eager has NaN is right)


def same(a, b, path, exact=True):
    Comparison(exact).same(a, b, path)


def _plain_vars(o):
    return {k: ID_KEYED[k](v) if k in ID_KEYED else v for k, v in vars(o).items()}


def _module_state(m):
    return {"state": dict(m.state_dict(keep_vars=True)), "training": m.training,
            "attributes": {k: v for k, v in vars(m).items() if not k.startswith("_") and k != "training"},
            "children": dict(m._modules)}
