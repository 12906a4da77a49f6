"""Side effects a compiled call must replay on every call: in-place tensor updates, attribute stores,
new objects, global and closure-cell writes, printing and warnings."""
import sys
import warnings

import pytest
import torch
import torch.nn as nn

import magpy

try:
    from .twin import fresh, differential, expect, expect_one_graph, expect_recompile, plain, unsupported, Call, \
        FromEnv, assert_same
except ImportError:  # tests/capture is not a package: pytest put this folder on sys.path
    from twin import fresh, differential, expect, expect_one_graph, expect_recompile, plain, unsupported, Call, \
        FromEnv, assert_same


def t(*shape):
    return torch.randn(*(shape or (2, 3)))


# ---- in-place tensor operations on inputs ---------------------------------------------------------------

def test_inplace_method_on_an_input():
    def fn(x, y):
        x.add_(y)
        x.mul_(2)
        return x.sum()

    stats = differential(plain(fn), fresh(lambda: (t(), t())))
    expect_one_graph(stats)


def test_augmented_assignment_on_an_input_tensor():
    def fn(x, y):
        x += y
        x *= 3
        return x

    stats = differential(plain(fn), fresh(lambda: (t(), t())))
    expect_one_graph(stats)


def test_setitem_into_an_input_tensor():
    def fn(x, v):
        x[0] = v
        x[:, 1] = x[:, 2] * 2
        return x

    stats = differential(plain(fn), [(t(), 5.0), (t(), 5.0), (t(), -1.0)])
    expect_recompile(stats)


def test_inplace_on_a_view_of_an_input():
    def fn(x):
        row = x[1]
        row.zero_()
        x.t().add_(1)
        return x

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_inplace_chain_through_a_helper_that_returns_its_argument():
    def same(v):
        return v

    def fn(x):
        same(x).add_(1)
        return x * 2

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_out_argument_writes_an_input():
    def fn(x, y, out):
        torch.add(x, y, out=out)
        return out

    stats = differential(plain(fn), fresh(lambda: (t(), t(), t())))
    expect_one_graph(stats)


def test_inplace_activation_on_an_intermediate():
    def fn(x):
        y = x * 2
        torch.relu_(y)
        y.clamp_(max=1.0)
        return y, x

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_inplace_on_a_tensor_in_an_input_list():
    def fn(xs):
        for x in xs:
            x.sub_(1)
        return xs

    stats = differential(plain(fn), fresh(lambda: ([t(), t()],)))
    expect_one_graph(stats)


# ---- attribute stores on user objects; new objects --------------------------------------------------------

class State:
    def __init__(self):
        self.count = 0
        self.history = []
        self.last = None


def test_attribute_stores_on_a_user_object():
    def fn(state, x):
        state.count = state.count + 1
        state.last = x * 2
        return state.last + state.count

    def make():
        return fn, State()

    stats = differential(make, fresh(lambda: (FromEnv(), t())))
    # the count read back makes every call different: each one recompiles (or runs eagerly) correctly
    expect(stats, fallbacks=0)


def test_attribute_store_of_a_constant_on_a_user_object():
    def fn(state, x):
        state.mode = "done"
        state.last = x + 1
        return x.sum()

    stats = differential(lambda: (fn, State()), fresh(lambda: (FromEnv(), t())))
    expect_one_graph(stats)


def test_append_to_a_list_attribute_of_a_user_object():
    def fn(state, x):
        state.history.append(x.mean())
        return x

    stats = differential(lambda: (fn, State()), fresh(lambda: (FromEnv(), t())))
    expect_one_graph(stats)


def test_lists_that_only_grow_need_no_length_guard_however_often_appended():
    def fn(state, x):
        state.history.append(x.mean())
        state.history.extend([x.max(), 1])
        state.history.append("step")
        return x

    stats = differential(lambda: (fn, State()), fresh(lambda: (FromEnv(), t())))
    expect_one_graph(stats)


class Box:
    def __init__(self, value, tag="box"):
        self.value = value
        self.tag = tag

    def doubled(self):
        return Box(self.value * 2, self.tag + "2")


def test_new_user_object_returned():
    def fn(x):
        return Box(x.relu()).doubled()

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_new_object_stored_on_an_outside_object():
    def fn(state, x):
        state.last = Box(x + 1)
        return state.last.value

    stats = differential(lambda: (fn, State()), fresh(lambda: (FromEnv(), t())))
    expect_one_graph(stats)


def test_container_stored_then_filled_and_printed_midway():
    # ``self.outputs = {}`` and then filled: the stored dict is the returned one, as the call left it;
    # a print in between shows it as it was then
    def fn(state, x):
        state.last = []
        print("before", state.last)
        state.last.append(x * 2)
        state.last.append(x + 1)
        return state.last

    stats = differential(lambda: (fn, State()), fresh(lambda: (FromEnv(), t())))
    expect_one_graph(stats)


class Node:
    def __init__(self, value, parent=None):
        self.value = value
        self.parent = parent
        self.children = []
        if parent is not None:
            parent.children.append(self)


def test_new_objects_referring_to_each_other():
    # a small tree with back references (a cycle): rebuilt fresh, with the same shape, on every call
    def fn(x, k: int):
        root = Node(x)
        leaf = Node(x * k, root)
        leaf.value = leaf.value + 1      # changed after it was linked in
        return root, leaf.parent is root

    stats = differential(plain(fn), fresh(lambda: (t(), 3)))
    expect_one_graph(stats)


def test_new_object_attribute_from_an_argument_is_recomputed():
    def fn(x, n):
        return Box(x, tag="n=" + str(n + 1))

    stats = differential(plain(fn), [(t(), 1), (t(), 1), (t(), 2)])
    expect(stats, fallbacks=0)


@pytest.mark.filterwarnings("ignore:magpy:UserWarning")  # compiled outside the harness
def test_new_objects_are_new_on_every_call():
    def fn(x):
        return Box(x * 2), Box(x)

    def identity_of_results():
        compiled = __import__("magpy").compile(fn, backend="eager")
        x = t()
        first, second = compiled(x), compiled(x)
        return first[0] is not second[0] and first[0] is not first[1]
    assert identity_of_results()
    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


# ---- globals and closure cells ------------------------------------------------------------------------------

counter = 0
scale = 2.0
registry = {}


def _restore_globals():
    global counter, scale
    counter, scale = 0, 2.0
    registry.clear()
    torch.manual_seed(0)


def test_global_write():
    def fn(x):
        global counter
        counter += 1
        return x * scale

    stats = differential(plain(fn), fresh(lambda: (t(),)), reset=_restore_globals,
                         observe=lambda env: (counter, scale))
    expect(stats, fallbacks=0)


def test_global_write_of_a_tensor():
    def fn(x):
        global scale
        scale = x.sum()
        return x

    stats = differential(plain(fn), fresh(lambda: (t(),)), reset=_restore_globals, observe=lambda env: scale)
    expect(stats, fallbacks=0)


def test_global_read_changed_between_calls_recompiles():
    def set_scale(env):
        global scale
        scale = 5.0

    def fn(x):
        return x * scale

    calls = [(t(),), (t(),), Call((t(),), before=set_scale)]
    stats = differential(plain(fn), calls, reset=_restore_globals)
    expect_recompile(stats)


def test_global_dict_mutation():
    def fn(name, x):
        registry[name] = x * 2
        return len(registry)

    calls = [("a", t()), ("a", t()), ("b", t())]
    stats = differential(plain(fn), calls, reset=_restore_globals, observe=lambda env: dict(registry))
    expect(stats, fallbacks=0)


def test_closure_cell_write():
    def make():
        total = 0

        def fn(x):
            nonlocal total
            total += 1
            return x * total

        fn.read = lambda: total
        return fn, fn

    stats = differential(make, fresh(lambda: (t(),)), observe=lambda fn: fn.read())
    expect(stats, fallbacks=0)


def test_closure_cell_write_of_a_tensor():
    def make():
        last = None

        def fn(x):
            nonlocal last
            last = x.exp()
            return x

        fn.read = lambda: last
        return fn, fn

    stats = differential(make, fresh(lambda: (t(),)), observe=lambda fn: fn.read())
    expect_one_graph(stats)


def test_closure_list_cell_mutation():
    def make():
        seen = []

        def fn(x):
            seen.append(x.sum())
            return x + len(seen)

        return fn, seen

    stats = differential(make, fresh(lambda: (t(),)))
    expect(stats, fallbacks=0)


# ---- printing and warnings (they must not vanish on cache hits) ---------------------------------------------

def test_print_of_python_values(capsys):
    def fn(x, step):
        print("step", step)
        return x + step

    stats = differential(plain(fn), [(t(), 1), (t(), 1), (t(), 2)])
    out = capsys.readouterr().out.splitlines()
    assert out == ["step 1", "step 1", "step 2"] * 2
    expect_recompile(stats)


def test_warnings_warn_in_forward():
    # BART warns inside forward; every call must warn again
    def fn(x):
        if x.shape[0] > 1:
            warnings.warn("large batch", UserWarning)
        return x * 2

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    assert [w for o in stats.side.outcomes for w in o.user_warnings] == [(UserWarning, "large batch")] * 3
    expect_one_graph(stats)


def test_write_to_sys_stdout(capsys):
    def fn(x):
        sys.stdout.write("hello\n")
        return x

    differential(plain(fn), fresh(lambda: (t(),)))
    assert capsys.readouterr().out == "hello\n" * 6


# ---- effects around failures and on tensors ----------------------------------------------------------------

def test_store_before_a_failing_tensor_op_still_happens():
    # eager sets state.count, then the index op raises: a replay must not lose (or reorder) the store
    def fn(state, x, idx):
        state.count = 5
        return x[idx]

    # a fresh object on every call, so that the third call's store is visible on its own
    calls = [(State(), t(3), torch.tensor([0])), (State(), t(3), torch.tensor([1])),
             (State(), t(3), torch.tensor([7]))]
    stats = differential(plain(fn), calls, raises=True)
    assert isinstance(stats.side.outcomes[2].error, IndexError)
    expect(stats, fallbacks=0)


def test_inplace_before_a_failing_tensor_op_still_happens():
    def fn(x, idx):
        x.mul_(2)
        return x[idx]

    calls = [(t(3), torch.tensor([0])), (t(3), torch.tensor([1])), (t(3), torch.tensor([7]))]
    stats = differential(plain(fn), calls, raises=True)
    expect(stats, fallbacks=0)


def test_python_attribute_set_on_a_tensor():
    def fn(x):
        x.tag = "seen"
        return x * 2

    stats = differential(plain(fn), fresh(lambda: (t(),)))
    assert all(o.args[0].tag == "seen" for o in stats.side.outcomes)
    expect_one_graph(stats)


def test_grad_reset_to_none_inside():
    def fn(p):
        out = p.grad * 2
        p.grad = None
        return out

    def with_grad():
        p = torch.randn(3, requires_grad=True)
        p.grad = torch.randn(3)
        return (p,)

    stats = differential(plain(fn), fresh(with_grad))
    assert all(o.args[0].grad is None for o in stats.side.outcomes)
    expect_one_graph(stats)


def _warn_here(x):
    warnings.warn("from the user's line")  # the line every call's warning must point at
    return x * 2


def test_warning_is_attributed_to_the_users_line():
    # default warning filters dedupe per (file, line) and ``filterwarnings(module=...)`` matches the
    # file: a warning replayed from MagPy's own code would be filtered differently than in eager
    import magpy
    compiled = magpy.compile(_warn_here, backend="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            compiled(t())
    where = {(w.filename, w.lineno) for w in caught if "user's line" in str(w.message)}
    assert where == {(__file__, _warn_here.__code__.co_firstlineno + 1)}


class _QuietPool(nn.Module):
    """YOLOv5's SPP: pooling inside ``warnings.catch_warnings()`` + ``simplefilter('ignore')``."""

    def __init__(self):
        super().__init__()
        self.pools = nn.ModuleList(nn.MaxPool2d(k, 1, k // 2) for k in (3, 5))

    def forward(self, x):
        x = x * 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = torch.cat([x] + [m(x) for m in self.pools], 1)
        warnings.warn("pooled")   # (shown on every call: leaving the block reset the registries)
        return out


def _run_warned(fn, calls):
    """Outputs, warnings shown (with the default once-per-location action) and the program's own
    filter left behind, over ``calls`` calls."""
    shown, outs = [], []

    def show(message, category, filename, lineno, file=None, line=None):
        shown.append(str(message))
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        for x in calls:
            outs.append(fn(x))
            outs.append([f for f in warnings.filters if f[:3] == ("ignore", None, Warning)])
    return outs, shown


def test_catch_warnings_and_simplefilter_leave_the_filters_as_eager_does():
    calls = [torch.randn(1, 2, 4, 4) for _ in range(3)]
    eager, model = _QuietPool(), _QuietPool()
    compiled = magpy.compile(model, backend="eager", fullgraph=True)
    want, got = _run_warned(eager, calls), _run_warned(compiled, calls)
    assert_same(got, want, "outputs, the filters after each call, the warnings shown")
    assert len(want[1]) == 3   # (leaving the block reset the registries: shown on every call)
    expect_one_graph(compiled._magpy_compiled.stats)
