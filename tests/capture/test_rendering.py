"""Guards and mocks name values as the user writes them: ``self.l.weight``, ``cfg['act']``, ``SCALE``, a
closure's variable, ``torch._C._get_tracing_state()`` — never module dictionaries or C record types."""
import operator

import torch
import torch.nn as nn

import magpy
from magpy.capture.names import callable_name, rendering_home
from magpy.capture.sources import ArgSource, AttrSource, CellSource, Const, Expr, GlobalSource, ItemSource

SCALE = 2.0
cfg = {"act": "relu"}


class WithLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 3)

    def forward(self, x):
        return self.l(x)


def _guards(fn, *args):
    return magpy.explain(fn, *args).guards


def _path(*steps):
    """A path from argument ``self`` through ``("attr", name)`` / ``("item", key)`` steps."""
    source = ArgSource("self", 0)
    for kind, name in steps:
        source = AttrSource(source, name) if kind == "attr" else ItemSource(source, name)
    return source


def test_a_parameter_read_through_module_dicts_renders_as_attributes():
    path = _path(("attr", "__dict__"), ("item", "_modules"), ("item", "l"), ("attr", "__dict__"),
                 ("item", "_parameters"), ("item", "weight"))
    assert path.render() == "self.l.weight"


def test_a_numbered_submodule_renders_as_an_index():
    assert _path(("attr", "_modules"), ("item", "0"), ("attr", "bias")).render() == "self[0].bias"


def test_a_dict_item_keeps_its_key():
    assert _path(("attr", "cfg"), ("item", "act")).render() == "self.cfg['act']"


def test_a_bare_dict_attribute_stays_a_dict():
    assert _path(("attr", "__dict__")).render() == "self.__dict__"
    assert _path(("attr", "__dict__"), ("item", "not a name")).render() == "self.__dict__['not a name']"


def test_a_global_of_the_home_module_is_a_bare_name():
    with rendering_home(globals()):
        assert GlobalSource(globals(), "SCALE").render() == "SCALE"
    assert GlobalSource(vars(nn.modules.module), "_global_forward_hooks").render() == \
        "torch.nn.modules.module._global_forward_hooks"


def test_a_closure_cell_is_its_variable():
    k = 3
    cell = (lambda: k).__closure__[0]
    assert CellSource(cell, "k").render() == "k"


def test_a_torch_c_function_is_named_by_its_module():
    assert callable_name(torch._C._get_tracing_state) == "torch._C._get_tracing_state"
    assert Expr(torch._C._get_tracing_state, ()).render() == "torch._C._get_tracing_state()"


def test_operators_render_as_written():
    x = ArgSource("x", 0)
    assert Expr(operator.contains, (x, Const("a"))).render() == "('a' in x)"
    assert Expr(getattr, (Expr(type, (x,)), Const("values"))).render() == "type(x).values"
    assert Expr(operator.getitem, (x, Const(1))).render() == "x[1]"


def test_guard_on_a_modules_parameter():
    guards = _guards(WithLinear(), torch.randn(2, 3))
    assert any(g.startswith("self.l.weight: Parameter(float32") for g in guards), guards
    assert not any("__dict__['_parameters']" in g or "_modules['l']" in g for g in guards), guards


def test_mock_names_the_modules_parameters():
    text = str(magpy.explain(WithLinear(), torch.randn(2, 3)))
    assert "graph(self.l.weight, self.l.bias, args[0])" in text


def test_guard_on_a_dict_item():
    def act(x):
        return torch.relu(x) if cfg["act"] == "relu" else x
    assert "bool(cfg['act'] == 'relu') is True" in _guards(act, torch.randn(2))


def test_guard_on_a_global():
    def scale(x):
        return x * SCALE
    assert "SCALE == 2.0" in _guards(scale, torch.randn(2))


def test_guard_on_a_closure_cell():
    k = 3

    def shift(x):
        return x + k
    assert "k == 3" in _guards(shift, torch.randn(2))


def test_guard_on_a_torch_c_function():
    def traced_state(x):
        return x + 1 if torch._C._get_tracing_state() is None else x
    guards = _guards(traced_state, torch.randn(2))
    assert "torch._C._get_tracing_state() is None" in guards or \
        "torch._C._get_tracing_state() == None" in guards, guards
    assert any(g.startswith("torch._C._get_tracing_state is <torch._C._get_tracing_state at") for g in guards)
    assert not any("pybind11" in g for g in guards), guards


class Box:
    def __init__(self):
        self.count = 0
        self.history = []


TOTAL = 0


def _mock(fn, *args):
    return str(magpy.explain(fn, *args)).split("mock:")[1]


def test_mock_stores_are_assignments_to_the_users_paths():
    def effects(box, x):
        global TOTAL
        box.count += 1
        cfg["act"] = "tanh"
        TOTAL = TOTAL + 1
        box.history.append(x.sum())
        return x
    try:
        mock = _mock(effects, Box(), torch.ones(2))
    finally:
        cfg["act"] = "relu"
    assert "  box.count = (box.count + 1)\n" in mock
    assert "  cfg['act'] = 'tanh'\n" in mock
    assert "  TOTAL = (TOTAL + 1)   # global\n" in mock
    assert "  box.history.append(out[0])\n" in mock


def test_mock_store_to_a_closure_cell_names_the_variable():
    k = 0

    def bump(x):
        nonlocal k
        k += 1
        return x + k
    assert "  k = (k + 1)   # closure cell\n" in _mock(bump, torch.ones(2))
