"""Objects whose classes define hostile ``__eq__``, ``__hash__``, ``__getattr__``, ``__bool__`` or
``__len__``: compile, explain and trace run none of that code for their own bookkeeping. Each is used
as a module, as a submodule, and as a plain object passed as an argument; results and state equal
eager's, and no exception of ours reaches the caller."""
import functools
import warnings

import pytest
import torch
import torch.nn as nn

import magpy


class Hostile(Exception):
    """Raised by the hostile methods: it must never escape a call that eager runs without it."""


def _eq_raises(self, other):
    raise Hostile("__eq__")


def _eq_tensor(self, other):  # as tensor-like classes do
    return torch.ones(2)


def _hash_raises(self):
    raise Hostile("__hash__")


def _getattr_keyerror(self, name):  # a config proxy's common slip: KeyError, not AttributeError
    raise KeyError(name)


def _getattr_anything(self, name):  # a Mock-like object: every missing name has a value
    return 0


def _bool_raises(self):
    raise Hostile("__bool__")


def _len_raises(self):
    raise Hostile("__len__")


HOSTILE = {
    "eq_raises": {"__eq__": _eq_raises, "__hash__": object.__hash__},
    "eq_returns_tensor": {"__eq__": _eq_tensor},   # (and so unhashable)
    "eq_returns_tensor_hashable": {"__eq__": _eq_tensor, "__hash__": object.__hash__},
    "hash_raises": {"__hash__": _hash_raises},
    "unhashable": {"__hash__": None},
    "getattr_raises_keyerror": {"__getattr__": _getattr_keyerror},
    "getattr_answers_anything": {"__getattr__": _getattr_anything},
    "bool_raises": {"__bool__": _bool_raises},
    "len_raises": {"__len__": _len_raises},
}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls += 1
        return self.fc(x).relu() * 2


class Config:
    def __init__(self):
        self.scale = 3.0
        self.items = [1, 2]

    def shift(self, x):
        return x - self.scale

    def __call__(self, x):
        return x * self.scale


class Outer(nn.Module):
    def __init__(self, inner, config):
        super().__init__()
        self.inner = inner
        self.config = config
        self.seen = []

    def forward(self, x):
        self.seen.append(self.config)
        return self.inner(x) * self.config.scale + self.config(x)


def uses_config(x, config, out):
    y = config.shift(x) + config(x) * config.scale
    if config is not None and isinstance(config, Config):
        y = y + len(config.items)
    out.append(config)
    return [y, config], {"config": config}, (config, config)


_classes = {}


def hostile_net(kind):
    """A module of a class with the hostile methods ``kind`` (they take effect once it is built:
    ``nn.Module.__init__`` itself asks for attributes it does not have yet)."""
    if kind not in _classes:
        protocols = dict(HOSTILE[kind])
        user_getattr = protocols.pop("__getattr__", None)
        cls = type(f"Net_{kind}", (Net,), protocols)
        if user_getattr is not None:
            def __getattr__(self, name):
                try:
                    return nn.Module.__getattr__(self, name)   # parameters, buffers, submodules
                except AttributeError:
                    return user_getattr(self, name)
            cls.hostile_getattr = __getattr__
        _classes[kind] = cls
    cls = _classes[kind]
    cls.__getattr__ = nn.Module.__getattr__
    net = cls()
    cls.__getattr__ = getattr(cls, "hostile_getattr", nn.Module.__getattr__)
    return net


def hostile_config(kind):
    key = ("config", kind)
    if key not in _classes:
        _classes[key] = type(f"Config_{kind}", (Config,), dict(HOSTILE[kind]))
    return _classes[key]()


def scenario(kind, use):
    """(a target, the arguments of one call of it), built afresh: eager and compiled run twins."""
    torch.manual_seed(0)
    x = torch.randn(2, 4)
    if use == "module":
        return hostile_net(kind), (x,)
    if use == "submodule":
        return Outer(hostile_net(kind), hostile_config(kind)), (x,)
    return uses_config, (x, hostile_config(kind), [])


def tensors_of(value):
    """The tensors in a result or a module's state, in order (other objects by type name)."""
    if isinstance(value, torch.Tensor):
        return [value.detach()]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors_of(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_of(v)]
    if isinstance(value, nn.Module):  # (``parameters()`` would hash the modules)
        return list(value.state_dict().values())
    return [type(value).__name__]


def assert_same(got, expected):
    got, expected = tensors_of(got), tensors_of(expected)
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        if isinstance(e, str):
            assert g == e
        else:
            torch.testing.assert_close(g, e)


def eager_run(kind, use, calls=3):
    target, args = scenario(kind, use)
    return [target(*args) for _ in range(calls)], target


@pytest.mark.parametrize("use", ["module", "submodule", "argument"])
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_compile_runs_none_of_a_hostile_class_code(kind, use):
    expected, eager_target = eager_run(kind, use)
    target, args = scenario(kind, use)
    compiled = magpy.compile(target, backend="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # nor does it fall back
        got = [compiled(*args) for _ in range(3)]
    assert_same(got, expected)
    assert_same(target, eager_target)


@pytest.mark.parametrize("use", ["module", "submodule", "argument"])
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_explain_runs_none_of_a_hostile_class_code(kind, use):
    target, args = scenario(kind, use)
    explanation = magpy.explain(target, *args)
    assert explanation.graph_count == 1 and explanation.graph_break_count == 0
    assert "is <" in str(explanation)   # identity guards name the object without asking it


@pytest.mark.parametrize("use", ["module", "submodule", "argument"])
@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_trace_runs_none_of_a_hostile_class_code(kind, use):
    expected, _ = eager_run(kind, use, calls=1)
    target, args = scenario(kind, use)
    traced = magpy.trace(target)
    assert_same(traced(*args), expected[0])
    assert traced.last.unsupported is None


class PartialWithItsOwnEq(functools.partial):
    """A callable the VM calls natively (a C type's subclass) whose class defines ``__eq__``."""

    def __eq__(self, other):
        raise Hostile("__eq__")

    __hash__ = functools.partial.__hash__


def calls_it(x, fn):
    return fn(x) + 1


def test_a_natively_called_object_of_a_hostile_class_is_a_graph_break_with_a_reason():
    fn = PartialWithItsOwnEq(torch.mul, 3)
    x = torch.randn(3)
    compiled = magpy.compile(calls_it, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = [compiled(x, fn) for _ in range(2)]
    for g in got:
        torch.testing.assert_close(g, calls_it(x, fn))
    # (a graph break there: the call is split, and the reason says why)
    assert any("PartialWithItsOwnEq (a callable whose class defines __eq__" in r for r, _ in compiled.stats.reasons)
