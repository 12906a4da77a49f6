"""What library code does inside a model's forward besides computing (transformers' caches and helpers),
each reduced to what the call is: a plain attribute set on a tensor the graph makes, dict's own item read
through ``super()`` in a table subclass, a model output unpacked into another, a config whose
``__getattribute__`` maps names, a conversion that changes nothing. Every test runs the program eagerly and compiled and compares."""
import collections
import copy
import functools
import logging
import threading
import warnings

import torch
import torch.nn as nn

try:
    from .twin import Call, differential, expect, expect_one_graph, fresh, plain, twins
except ImportError:  # tests/capture is not a package: pytest put this folder on sys.path
    from twin import Call, differential, expect, expect_one_graph, fresh, plain, twins


def t(*shape):
    return torch.randn(*(shape or (2, 3)))


# ---- a plain attribute set on a tensor the graph makes ---------------------------------------------

def _mark_static(tensor, index=None):
    """As torch._dynamo's ``mark_static_address`` / ``mark_static`` tag a cache buffer for cudagraphs."""
    tensor._static_kind = "unguarded"
    if index is not None:
        if not hasattr(tensor, "_static_dims"):
            tensor._static_dims = set()
        tensor._static_dims.add(index)


class _Cache:
    def __init__(self, x, index):
        self.states = [torch.zeros_like(x)]
        _mark_static(self.states[0], index)
        _mark_static(self.states[0], 0)


class _Cached(nn.Module):
    def forward(self, x, index: int):
        cache = _Cache(x, index)
        cache.states[0].add_(x)
        return x * 2, cache, len(cache.states[0]._static_dims)


def test_a_plain_attribute_set_on_a_tensor_the_graph_makes_is_set_on_each_runs_tensor():
    calls = [(t(), 1), (t(), 1), (t(), 2)]
    stats = differential(twins(_Cached()), calls)
    expect_one_graph(stats)
    for (_, index), outcome in zip(calls, stats.side.outcomes):
        state = outcome.result[1].states[0]
        assert state._static_kind == "unguarded" and state._static_dims == {0, index}


# ---- dict's own __getitem__ through super() ----------------------------------------------------------

class _Instantier(collections.OrderedDict):
    """A table of classes (with keyword arguments) that hands out a new instance on each lookup."""

    def __getitem__(self, key):
        content = super().__getitem__(key)
        cls, kwargs = content if isinstance(content, tuple) else (content, {})
        return cls(**kwargs)


_ACTIVATIONS = _Instantier({"relu": nn.ReLU, "clipped": (nn.Hardtanh, {"min_val": -0.5, "max_val": 0.5})})


def test_super_getitem_of_a_table_that_builds_what_it_hands_out():
    def fn(x, name):
        return _ACTIVATIONS[name](x) * 2

    stats = differential(plain(fn), [(t(), "relu"), (t(), "clipped"), (t(), "relu"), (t(), "clipped")])
    expect(stats, compiles=2, cache_hits=2, fallbacks=0)


def test_super_getitem_of_a_table_changed_between_calls():
    table = _Instantier({"act": nn.ReLU})

    def fn(x):
        return table["act"](x) + 1

    def swap(env):
        table["act"] = (nn.Hardtanh, {"min_val": -0.1, "max_val": 0.1})

    calls = [Call((t(),)), Call((t(),)), Call((t(),), before=swap)]
    stats = differential(lambda: (fn, None), calls, reset=lambda: table.update(act=nn.ReLU))
    expect(stats, compiles=2, fallbacks=0)


# ---- a model output unpacked into another (``Output(extra=None, **outputs)``) ----------------------------

class _Output(collections.OrderedDict):
    """As transformers' ModelOutput: items set on construction, read back through a Python ``__getitem__``
    over ``dict(self.items())``."""

    def __init__(self, **fields):
        super().__init__()
        for key, value in fields.items():
            if value is not None:
                self[key] = value

    def __getitem__(self, key):
        if isinstance(key, str):
            return dict(self.items())[key]
        return tuple(self.values())[key]


def test_a_model_output_unpacked_into_another_keeps_its_values():
    def fn(x, n):
        inner = _Output(hidden=x * 2, count=n)
        outer = _Output(extra=None, **inner)
        return outer["hidden"] + outer["count"], outer, outer[1]

    # (before: ``self.items()`` of the output was a constant: the first call's count came back)
    stats = differential(plain(fn), [(t(), 1), (t(), 2), (t(), 3), (t(), 4)])
    expect(stats, fallbacks=0, graph_breaks=0)


class _Shifted(dict):
    def __getitem__(self, key):
        return dict(self.items())[key] + 1


def test_items_of_a_dict_made_here_holding_an_argument():
    def fn(x, n):
        d = _Shifted()
        d["a"] = n
        return x * d["a"]

    stats = differential(plain(fn), [(t(), 1), (t(), 2), (t(), 3)])
    expect(stats, fallbacks=0, graph_breaks=0)


# ---- a config whose __getattribute__ maps names, its sub-config copied ------------------------------------

class _Config:
    attribute_map = {"hidden": "hidden_size"}

    def __init__(self, **fields):
        for key, value in fields.items():
            setattr(self, key, value)

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)

    def get_text_config(self):
        for name in ("text_config",):
            if hasattr(self, name) and getattr(self, name, None) is not None:
                return getattr(self, name)
        return self


class _Configured(nn.Module):
    def __init__(self):
        super().__init__()
        self.config = _Config(text_config=_Config(hidden_size=3, scale=2.0, ignore={"a", "b"}))
        self.linear = nn.Linear(3, 3)

    def forward(self, x):
        text = self.config.get_text_config()
        copied = copy.deepcopy(text.get_text_config())  # (a set in it: reduced, its memo keyed by id)
        return self.linear(x) * copied.scale + copied.hidden, sorted(copied.ignore)


def test_a_sub_config_read_through_a_mapping_getattribute_and_deep_copied():
    def rescale(env):
        env.config.text_config.scale = 5.0

    # (before: super().__getattribute__ read the sub-config as a constant; its methods bound to
    # nothing known, and the set in it could not be copied)
    calls = [Call((t(3),)), Call((t(3),)), Call((t(3),), before=rescale), Call((t(3),))]
    stats = differential(twins(_Configured()), calls)
    expect(stats, compiles=2, cache_hits=2, fallbacks=0)


# ---- a buffer converted to what it already is ---------------------------------------------------------

class _Positions(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Buffer(torch.randn(8, 3), persistent=False)

    def forward(self, x):
        # (``to`` hands back the buffer itself: storing it again reads its ``persistent`` mark)
        self.table = self.table.to(device=x.device, dtype=x.dtype)
        return x + self.table[: x.shape[0]]


def test_a_conversion_that_changes_nothing_is_a_read_of_the_tensor():
    calls = [(t(2, 3),), (t(2, 3),), (t(2, 3).double(),), (t(2, 3).double(),)]
    stats = differential(twins(_Positions()), calls)
    expect(stats, fallbacks=0, graph_breaks=0)


class _Settings:
    def __init__(self, **fields):
        self.__dict__.update(fields)


class _Copying(nn.Module):
    def __init__(self):
        super().__init__()
        self.settings = _Settings(sizes=[1, 2], names={"a"})

    def forward(self, x):
        shallow = copy.copy(self.settings)
        deep = copy.deepcopy(shallow)  # (its memo is keyed by the id of the table the copy made)
        return x * len(deep.sizes), deep


def test_a_deep_copy_of_a_copy_keys_its_memo_by_objects_the_call_made():
    # (before: the id of the copy's attribute table was guarded like a value: a new compile every call)
    stats = differential(twins(_Copying()), fresh(lambda: (t(),)))
    expect_one_graph(stats)


# ---- a tensor's values as text, a module list backwards, torch.numel, rows unpacked --------------------

def _check(cond, message):
    """As transformers' ``torch_compilable_check``: the message is made first, shown only when the check fails."""
    if not callable(message):
        def message_callable():
            return message
    else:
        message_callable = message
    torch._check_tensor_all_with(ValueError, cond, message_callable)


def test_a_tensor_formatted_into_a_message_or_a_warning():
    def fn(x):
        _check(x > -10, f"values out of range: {x}")
        warnings.warn(f"values {x} sum {x.sum():.2f}")
        return x + 1, f"{x}"

    # (before: formatting a tensor as text broke the graph; the graph now formats it on every call)
    stats = differential(plain(fn), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class _Flows(nn.Module):
    def __init__(self):
        super().__init__()
        self.flows = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])

    def forward(self, x, reverse: bool):
        for flow in reversed(self.flows) if reverse else self.flows:
            x = flow(x) * 2
        return x


def test_a_module_list_run_backwards():
    calls = [(t(3), True), (t(3), True), (t(3), False), (t(3), True)]
    stats = differential(twins(_Flows()), calls)
    expect(stats, compiles=2, cache_hits=2, fallbacks=0)


def test_torch_numel_and_rows_of_a_tensor_unpacked_into_zip():
    def fn(ids, grid):
        if torch.numel(ids) == 0:
            return grid
        rows, cols = zip(*ids)  # (``zip(*t)``: the rows of t, then their elements)
        grid = grid.clone()
        grid[rows, cols] = 0.0
        return grid

    stats = differential(plain(fn), fresh(lambda: (torch.randint(0, 4, (5, 2)), t(4, 4))))
    expect_one_graph(stats)


def test_a_method_of_a_row_that_zip_took_from_a_tensor():
    # (ViLT's ``for h, w in zip(x_h, x_w)`` hands each row to ``interpolate``, which asks ``is_floating_point()``)
    def fn(a, b):
        out = []
        for p, q in zip(a, b):
            out.append(p * q if p.is_floating_point() else p + q)
        return out

    stats = differential(plain(fn), fresh(lambda: (t(3, 2), t(3, 2))))
    expect_one_graph(stats)


class _Converted(nn.Module):
    def __init__(self):
        super().__init__()
        self.classifier = nn.Linear(3, 2)

    def forward(self, x):
        self.classifier = self.classifier.to(x.dtype)  # (a module already of that dtype: nothing changes)
        return self.classifier(x)


def test_module_to_that_changes_nothing():
    stats = differential(twins(_Converted()), fresh(lambda: (t(3),)))
    expect_one_graph(stats)


# ---- locks taken and given back inside the call ------------------------------------------------------

class _Lazy(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    @functools.cached_property
    def table(self):  # (Python 3.11's cached_property computes it holding an RLock)
        return torch.arange(4.0) * 2


def _lazy_forward(self, x):
    return self.linear(x) + self.table


_Lazy.forward = _lazy_forward

_LOCK = threading.RLock()
_COUNTS = {}


def test_a_cached_property_computed_under_its_lock():
    stats = differential(twins(_Lazy()), fresh(lambda: (t(4),)))
    expect(stats, compiles=2, cache_hits=1, fallbacks=0)  # (computed, then read from the instance)


def test_a_lock_held_around_an_update_of_outside_state():
    def fn(x, key):
        _LOCK.acquire()
        try:
            _COUNTS[key] = _COUNTS.get(key, 0) + 1
        finally:
            _LOCK.release()
        with _LOCK:
            return x * _COUNTS[key]

    stats = differential(plain(fn), [(t(), "a"), (t(), "a"), (t(), "b")], observe=lambda env: dict(_COUNTS),
                         reset=_COUNTS.clear)
    expect(stats, fallbacks=0, graph_breaks=0)


def test_a_lock_the_call_makes_for_itself():
    def fn(x):
        lock, again = threading.Lock(), threading.RLock()
        with lock:
            y = x + 1
        with again, again:
            return y * 2

    expect_one_graph(differential(plain(fn), fresh(lambda: (t(),))))


def test_a_lock_left_held_is_not_replayed():
    lock = threading.Lock()

    def fn(x):
        if lock.locked():
            lock.release()
        lock.acquire()
        return x + 1

    stats = differential(plain(fn), fresh(lambda: (t(),)), reset=lambda: lock.release() if lock.locked() else None)
    assert any("still held" in reason for reason, _ in stats.reasons)


# ---- log records ------------------------------------------------------------------------------------------

_LOGGER = logging.getLogger("magpy.tests.library_internals")
_LOGGER.propagate = False


class _Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append((record.levelname, record.getMessage(), record.filename, record.lineno,
                             record.funcName, getattr(record, "tag", None)))


def _logging_program():
    for handler in list(_LOGGER.handlers):  # (the other side's, done by now)
        _LOGGER.removeHandler(handler)
    handler = _Records()
    _LOGGER.addHandler(handler)
    _LOGGER.setLevel(logging.INFO)

    def fn(x, n):
        _LOGGER.warning("this calls %s with %d", "forward", n)
        _LOGGER.debug("not shown")
        _LOGGER.log(logging.ERROR, "sum %s", x.sum(), extra={"tag": n})
        if n > 2:
            _LOGGER.setLevel(logging.CRITICAL)  # (from then on nothing below it is shown)
        return x * n

    return fn, handler


def test_log_records_are_made_again_from_the_line_that_logged():
    # (before: the logger's lock and its search for the caller's frame broke the graph)
    stats = differential(_logging_program, [(t(), 1), (t(), 2), (t(), 3), (t(), 1)],
                         observe=lambda handler: list(handler.records))
    expect(stats, fallbacks=0, graph_breaks=0)
