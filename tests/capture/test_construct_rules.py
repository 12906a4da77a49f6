"""Rules by what a construct is (issue 27): behaviour derived from what a construct is and what libraries
promise of it, not from one failing program. Each construct runs eagerly and compiled side by side
(``twin.differential``) and capture's outcome is stated (one graph, or a break with a readable reason).
"""
import enum
import itertools

import torch

from twin import Call, differential, expect, expect_one_graph, fresh, plain, twins


def t(*shape):
    return torch.randn(*shape or (3,))


def reasons(stats):
    return [reason for reason, _ in stats.reasons]


def no_internal_errors(stats):
    assert not any("internal" in r or "failed" in r for r in reasons(stats)), stats.reasons


# ---- lookups of callables never hash them; internal errors stay internal -------------------------

class _Doubler(torch.nn.Module):
    def forward(self, x):
        return x * 2 + 1


SCRIPTED = torch.jit.script(_Doubler())


def calls_a_scripted_module(x):
    return SCRIPTED(x) + 1


def test_a_scripted_module_is_a_graph_break_named_as_torchscript():
    stats = differential(plain(calls_a_scripted_module), fresh(lambda: (t(),)))
    expect(stats, graph_breaks=1, fallbacks=0)
    assert reasons(stats) == ["TorchScript _Doubler.forward() runs natively: MagPy cannot see inside compiled "
                              "TorchScript (graph break)"]


def calls_script_method_call(x):
    # (``ScriptMethod.__call__`` is a pybind11 ``instancemethod``: unhashable)
    return torch._C.ScriptMethod.__call__(SCRIPTED.forward, x) + 1


def test_an_unhashable_callable_is_looked_up_by_identity():
    stats = differential(plain(calls_script_method_call), fresh(lambda: (t(),)))
    no_internal_errors(stats)
    assert all(r.startswith("TorchScript _Doubler.forward()") for r in reasons(stats)), stats.reasons


COUNTS = {"steps": 3, "lr": 2}


def last_pair_of_items(x):
    return x + list(COUNTS.items())[-1][1]


def test_a_pair_read_back_from_a_list_of_items_keeps_its_provenance():
    def make():
        COUNTS.update(steps=3, lr=2)
        return last_pair_of_items, None

    def bump(env):
        COUNTS["lr"] += 1

    stats = differential(make, [Call((t(),)), Call((t(),), before=bump), Call((t(),))],
                         observe=lambda env: dict(COUNTS))
    expect(stats, compiles=2, fallbacks=0)


class _Obj:
    def __init__(self, n):
        self.n = n


SHARED = _Obj(2)


def values_of_a_written_object(x):
    setattr(SHARED, "n", SHARED.n - 1)
    return x + sum(vars(SHARED).values())


def test_a_view_of_a_dict_capture_lost_track_of_is_no_internal_error():
    def make():
        SHARED.n = 2
        return values_of_a_written_object, None

    stats = differential(make, fresh(lambda: (t(),)), observe=lambda env: SHARED.n, backend="magpy")
    no_internal_errors(stats)


# ---- Python types as dtypes -----------------------------------------------------------------------

def python_types_as_dtypes(x):
    eye = torch.eye(x.shape[0], dtype=bool)
    counts = torch.zeros(3, dtype=int) + 1
    return x.to(float).masked_fill(eye, 0), counts, x.to(dtype=complex), torch.ones(2, dtype=float)


def test_python_types_given_as_dtypes_are_the_dtypes_torch_reads_them_as():
    stats = differential(plain(python_types_as_dtypes), fresh(lambda: (t(3, 3),)))
    expect_one_graph(stats)


# ---- profiler annotations ----------------------------------------------------------------------------

def annotated(x):
    with torch.autograd.profiler.record_function("scale"):
        y = x * 2
    with torch.profiler.record_function("shift"):
        y = y + 1
    handle = torch.ops.profiler._record_function_enter_new("raw", None)
    y = y.sin()
    torch.ops.profiler._record_function_exit._RecordFunction(handle)
    return y


def test_profiler_annotations_have_no_effect_on_values_and_never_break():
    stats = differential(plain(annotated), fresh(lambda: (t(),), n=4))
    expect(stats, graph_breaks=0, fallbacks=0, graphs=stats.compiles)


def test_reasons_name_native_callables_as_users_write_them():
    from magpy.capture.names import callable_name

    traced = torch.jit.trace(_Doubler(), t())
    assert callable_name(traced._c.hasattr) == "ScriptModule.hasattr"
    assert callable_name(torch.ops.profiler._record_function_enter_new) == \
        "torch.ops.profiler._record_function_enter_new"
    assert "pybind11" not in callable_name(torch._C.ScriptMethod.__call__)


# ---- ``x in tensor`` ---------------------------------------------------------------------------------

def pads_by_membership(ids, x):
    if 0 in ids[:, [-1, 0]]:
        x = x + 1
    if 5 not in ids:
        x = x * 2
    return x


def pads_by_comparison(ids, x):
    # (what ``Tensor.__contains__`` is: ``(element == self).any().item()``)
    if (0 == ids[:, [-1, 0]]).any().item():
        x = x + 1
    if not (5 == ids).any().item():
        x = x * 2
    return x


PAD_CALLS = [(torch.tensor([[0, 1, 2]]), t()), (torch.tensor([[3, 1, 2]]), t()), (torch.tensor([[5, 1, 0]]), t()),
             (torch.tensor([[3, 1, 2]]), t()), (torch.tensor([[0, 4, 7]]), t())]


def test_membership_in_a_tensor_is_a_branch_on_data_the_graph_computes():
    stats = differential(plain(pads_by_membership), PAD_CALLS)
    same = differential(plain(pads_by_comparison), PAD_CALLS)
    assert reasons(stats) == reasons(same) == []
    expect(stats, compiles=same.compiles, graphs=same.graphs, graph_breaks=same.graph_breaks, fallbacks=0,
           cache_hits=same.cache_hits)


# ---- builtin max/min over a tensor and a number ----------------------------------------------------------

def mean_over_mask(mask, x):
    count = max(torch.sum(mask), 1)        # a tensor, or the int 1: which, the data decide
    floor = min(1, mask.sum())
    return x / count, floor, max(mask[0], mask[1], 0.5)


MASKS = [(torch.tensor([1., 1, 0]), t()), (torch.tensor([0., 0, 0]), t()), (torch.tensor([1., 1, 1]), t()),
         (torch.tensor([0., 0, 0]), t()), (torch.tensor([0., 1, 0]), t())]


def test_builtin_max_and_min_over_a_tensor_are_branches_on_data_returning_one_argument():
    stats = differential(plain(mean_over_mask), MASKS)
    # (as any branch on data: an entry per way the data go, a split where they flip; no rule is missing)
    expect(stats, fallbacks=0)
    assert reasons(stats) == [] and stats.cache_hits >= 1, stats


# ---- dicts keyed by Enum members ---------------------------------------------------------------------

class Mode(enum.Enum):
    SUM = 1
    DIFF = 2


SCALE_OF = {Mode.SUM: 2.0, Mode.DIFF: 3.0}


class ByMode(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mode = Mode.SUM
        self.offsets = {Mode.SUM: torch.ones(3), Mode.DIFF: torch.full((3,), 2.0)}

    def forward(self, x):
        made = {Mode.SUM: x + 1, Mode.DIFF: x - 1}
        return made[self.mode] * SCALE_OF[self.mode] + self.offsets[self.mode]


def test_a_dict_keyed_by_enum_members_is_guarded_by_the_members_identity():
    def switch(env):
        env.mode = Mode.DIFF

    calls = [Call((t(),)), Call((t(),)), Call((t(),), before=switch), Call((t(),))]
    stats = differential(twins(ByMode()), calls)
    expect(stats, compiles=2, graphs=2, cache_hits=2, fallbacks=0, graph_breaks=0)


# ---- split by sizes from data ------------------------------------------------------------------------

def experts(inputs, expert_size):
    sizes = expert_size.tolist()
    pieces = inputs.split(sizes)
    others = torch.split(inputs * 2, sizes, dim=0)
    return [p.sum(0) + q.sum(0) for p, q in zip(pieces, others)]


EXPERT_CALLS = [(t(6, 2), torch.tensor([1, 2, 3])), (t(6, 2), torch.tensor([3, 2, 1])), (t(6, 2), torch.tensor([0, 6, 0]))]


def test_split_by_sizes_from_tolist_is_as_many_pieces_as_the_list_is_long():
    stats = differential(plain(experts), EXPERT_CALLS)
    expect_one_graph(stats)


# ---- iterators over outside containers ---------------------------------------------------------------

class Grouped(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(3, 3)
        self.second = torch.nn.Linear(3, 3)
        self.groups = {"a": [self.first], "b": [self.second, self.first]}
        self.order = [1, 2, 3]

    def forward(self, x):
        for layer in itertools.chain(*self.groups.values()):
            x = layer(x)
        for layer in itertools.chain.from_iterable([self.groups["b"], [self.second]]):
            x = layer(x)
        for k in reversed(self.order):
            if k > 1:
                x = x * k
        return x


def test_chain_and_reversed_over_outside_containers_guard_them_and_iterate():
    def grow(env):
        env.order.append(4)

    def regroup(env):
        env.groups["a"].append(env.second)

    calls = [Call((t(),)), Call((t(),)), Call((t(),), before=grow), Call((t(),)), Call((t(),), before=regroup)]
    stats = differential(twins(Grouped()), calls)
    expect(stats, compiles=3, graphs=3, cache_hits=2, fallbacks=0, graph_breaks=0)


# ---- autocast regions --------------------------------------------------------------------------------

def autocast_regions(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = x @ w
        with torch.autocast("cpu", enabled=False):
            full = x @ w
    torch.set_autocast_enabled("cpu", True)
    toggled = x @ w
    torch.set_autocast_enabled("cpu", False)
    return low, full, toggled, low.float() + 1


def test_autocast_regions_are_ops_of_the_graph_with_eagers_dtypes():
    for backend in ("eager", "magpy"):
        stats = differential(plain(autocast_regions), fresh(lambda: (t(4, 4), t(4, 4))), backend=backend)
        expect_one_graph(stats)


def autocast_left_on(x, w):
    torch.set_autocast_enabled("cpu", True)
    return x @ w


def test_a_call_that_leaves_autocast_on_is_not_compiled_with_the_setter_in_the_graph():
    stats = differential(plain(autocast_left_on), fresh(lambda: (t(4, 4), t(4, 4))),
                         observe=lambda env: torch.is_autocast_enabled("cpu"),
                         reset=lambda: torch.set_autocast_enabled("cpu", False))
    torch.set_autocast_enabled("cpu", False)
    assert "leaves autocast changed" in reasons(stats)[0], stats.reasons


# ---- functions and modules a library torch.compile()d ------------------------------------------------

@torch.compile(backend="eager")
def _compiled_helper(x, k=2):
    return torch.sin(x) * k


def calls_a_compiled_helper(x):
    return _compiled_helper(x, k=3) + 1


class WithCompiledPart(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.part = torch.compile(torch.nn.Linear(4, 4), backend="eager")

    def forward(self, x):
        return self.part(x).relu() * 2


def test_a_function_compiled_by_torch_compile_is_followed_as_its_original():
    # (its own entry point would hook the frames of whatever runs it: under capture, the VM's)
    stats = differential(plain(calls_a_compiled_helper), fresh(lambda: (t(4),)))
    expect_one_graph(stats)


def test_a_module_compiled_by_torch_compile_is_followed_as_its_original():
    torch.manual_seed(0)
    # (the module's own state: torch.compile's bookkeeping in ``part`` is only touched where it runs)
    stats = differential(twins(WithCompiledPart()), fresh(lambda: (t(2, 4),)),
                         observe=lambda m: dict(m.state_dict()))
    expect_one_graph(stats)


# ---- an item of a tensor written by calling ``__setitem__`` ----------------------------------------

def writes_by_calling_setitem(x, v):
    x.__setitem__((slice(None), 0), v[:, 0])
    torch.Tensor.__setitem__(x, (0, 1), v[0, 1] * 2)
    return x + 1


def test_setitem_called_as_a_method_is_the_subscript_write_in_one_graph():
    import magpy

    for backend in ("eager", "magpy"):
        magpy.reset()
        compiled = magpy.compile(writes_by_calling_setitem, backend=backend)
        for _ in range(3):
            x, v = t(3, 4), t(3, 4)
            ours, theirs = x.clone(), x.clone()
            assert torch.equal(compiled(ours, v), writes_by_calling_setitem(theirs, v))
            assert torch.equal(ours, theirs), backend
        expect_one_graph(compiled.stats)


def test_setitem_of_a_list_called_as_a_method_is_still_the_lists():
    def f(xs, x):
        xs.__setitem__(0, x * 2)
        return xs[0] + 1

    stats = differential(plain(f), fresh(lambda: ([t(), t()], t())))
    no_internal_errors(stats)
