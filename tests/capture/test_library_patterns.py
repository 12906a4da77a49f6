"""Patterns real libraries (transformers' plumbing) use around a model's forward, each reduced to what the
call is: a dict subclass reached through ``super()``, ``ModelOutput``-like dicts, ``getattr`` with a default,
ABC checks, signatures, functools and contextlib helpers, dataclasses, enums, context variables, one-time
warnings. Every test runs the program eagerly and compiled and compares."""
import collections.abc
import contextvars
import copy
import dataclasses
import functools

import torch
import torch.nn as nn

try:
    from .twin import Call, fresh, differential, expect_one_graph, twins
except ImportError:  # tests/capture is not a package: pytest put this folder on sys.path
    from twin import Call, fresh, differential, expect_one_graph, twins


def t(*shape):
    return torch.randn(*(shape or (2, 3)))


class _Registry(dict):
    """Keyed by the string of a class; ``get`` goes to dict's own through ``super()``."""

    def __setitem__(self, owner, value):
        super().__setitem__(str(owner.__class__), value)

    def get(self, owner):
        return super().get(str(owner.__class__)) or {}


_REGISTRY = _Registry()


class _Registered(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)
        _REGISTRY[self] = {"scale": 2.0}

    def forward(self, x):
        found = _REGISTRY.get(self)
        if found:
            return self.linear(x) * found["scale"]
        return self.linear(x)


def test_super_get_of_a_dict_subclass_is_a_read_of_the_item():
    stats = differential(twins(_Registered()), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class _Shadowing(dict):
    """``__getitem__`` of its own: ``d[k]`` and dict's ``get`` may disagree, so a guard cannot read one for
    the other."""

    def __getitem__(self, key):
        return 0


_SHADOWING = _Shadowing(scale=3)


def test_dict_get_on_a_subclass_with_its_own_getitem_stays_correct():
    def fn(x):
        return x * dict.get(_SHADOWING, "scale")

    differential(lambda: (fn, None), fresh(lambda: (t(),)))


_COLLECTOR = contextvars.ContextVar("collector", default=None)


class _Collecting(nn.Module):
    """An output collector activated for the call with a context variable that a forward hook reads."""

    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(3, 3)
        self.inner.register_forward_hook(self._hook)

    @staticmethod
    def _hook(module, args, output):
        collected = _COLLECTOR.get()
        if collected is not None:
            collected.append(output)

    def forward(self, x):
        collected = []
        token = _COLLECTOR.set(collected)
        try:
            out = self.inner(x).relu()
        finally:
            _COLLECTOR.reset(token)
        return out, tuple(collected), _COLLECTOR.get()


def test_context_var_set_read_by_a_hook_and_reset():
    stats = differential(twins(_Collecting()), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_context_var_left_set_falls_back():
    def make():
        var = contextvars.ContextVar("left", default=0)

        def fn(x):
            var.set(var.get() + 1)
            return x * var.get()
        return fn, None

    stats = differential(make, fresh(lambda: (t(),)))
    assert stats.fallbacks and not stats.graphs


class _Interface(collections.abc.MutableMapping):
    """A mapping of functions, local overrides over a class-wide dict; ``get`` is Mapping's (a KeyError from
    the class-wide dict caught)."""

    _global = {"relu": torch.relu}

    def __init__(self):
        self._local = {}

    def __getitem__(self, key):
        if key in self._local:
            return self._local[key]
        return self._global[key]

    def __setitem__(self, key, value):
        self._local[key] = value

    def __delitem__(self, key):
        del self._local[key]

    def __iter__(self):
        return iter({**self._global, **self._local})

    def __len__(self):
        return len(self._global) + len(self._local)


_FUNCTIONS = _Interface()


class _Dispatching(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x):
        return _FUNCTIONS.get(self.kind, torch.tanh)(x)


def test_mapping_get_catching_a_missing_key_of_a_python_getitem():
    stats = differential(twins(_Dispatching("eager")), fresh(lambda: (t(),)))
    expect_one_graph(stats)
    stats = differential(twins(_Dispatching("relu")), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class _Output(collections.OrderedDict):
    """A ModelOutput: an OrderedDict subclass made as a dataclass, whose ``__post_init__``, ``__setitem__`` and
    ``__setattr__`` keep items and attributes in step (set fields only become items)."""

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if value is not None:
                self[field.name] = value

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def __setattr__(self, name, value):
        if name in {field.name for field in dataclasses.fields(self)} and value is not None:
            super().__setitem__(name, value)
        super().__setattr__(name, value)

    def __getitem__(self, key):
        if isinstance(key, str):
            return dict(self.items())[key]
        return self.to_tuple()[key]

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclasses.dataclass
class _EncoderOutput(_Output):
    last_hidden_state: torch.Tensor = None
    pooled: torch.Tensor = None
    hidden_states: tuple = None


class _Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x, keep_hidden=False):
        hidden = self.linear(x)
        out = _EncoderOutput(last_hidden_state=hidden, pooled=hidden.mean(0))
        if keep_hidden:
            out["hidden_states"] = (x, hidden)
        return out


class _Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = _Encoder()

    def forward(self, x):
        out = self.encoder(x, keep_hidden=True)
        return out.last_hidden_state + out["pooled"] + out[0], out


def test_a_model_output_dict_made_by_the_call_is_rebuilt_each_call():
    stats = differential(twins(_Encoder()), fresh(lambda: (t(),)))
    expect_one_graph(stats)


def test_a_model_output_read_by_attribute_key_and_index_and_returned():
    stats = differential(twins(_Head()), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class _LayerConfigs(collections.abc.Sequence):
    """A per-layer view of a config: ``Sequence.__iter__`` (a generator) reads ``self[i]`` until IndexError."""

    def __init__(self, config):
        self._config = config

    def __len__(self):
        return self._config.layers

    def __getitem__(self, index):
        if not 0 <= index < len(self):
            raise IndexError("layer index out of range")
        return self._config


class _Config:
    def __init__(self, window):
        self.layers = 2
        self.window = window


class _PerLayer(nn.Module):
    def __init__(self, window):
        super().__init__()
        self.config = _Config(window)

    def forward(self, x):
        kinds = [getattr(layer, "window", None) for layer in _LayerConfigs(self.config)]
        return x * len(kinds) + kinds[0]


def test_items_of_a_python_iter_generator_keep_their_provenance():
    stats = differential(twins(_PerLayer(2)), fresh(lambda: (t(),)))
    expect_one_graph(stats)

    def change(env):
        env.config.window = 5
    calls = [Call((t(),)), Call((t(),), before=change), Call((t(),))]
    differential(twins(_PerLayer(2)), calls)


class _PerLayerKinds(nn.Module):
    """``zip`` of a list made here with a per-layer view (its Python ``__iter__`` a generator)."""

    def __init__(self, window):
        super().__init__()
        self.config = _Config(window)

    def forward(self, x):
        kinds = ["local" if k else "global" for k in range(self.config.layers)]
        windows = {}
        for kind, layer in zip(kinds, _LayerConfigs(self.config)):
            windows[kind] = getattr(layer, "window", None)
        return x * windows["local"] + len(windows)


def test_zip_with_a_python_iter_follows_the_generator():
    stats = differential(twins(_PerLayerKinds(2)), fresh(lambda: (t(),)))
    expect_one_graph(stats)

    def change(env):
        env.config.window = 7
    differential(twins(_PerLayerKinds(2)), [Call((t(),)), Call((t(),), before=change), Call((t(),))])


class _Settings:
    def __init__(self):
        self.layers = 2
        self.scale = 1.5
        self.names = ["a", "b"]


class _CopiesItsSettings(nn.Module):
    """``copy.deepcopy`` of a plain config object (``object.__reduce_ex__``), changed, then read."""

    def __init__(self):
        super().__init__()
        self.settings = _Settings()

    def forward(self, x):
        settings = copy.deepcopy(self.settings)
        settings.scale = settings.scale * 2
        settings.names.append("c")
        return x * settings.scale + len(settings.names), self.settings.names


def test_deepcopy_of_a_plain_object_reads_its_state():
    stats = differential(twins(_CopiesItsSettings()), fresh(lambda: (t(),)))
    expect_one_graph(stats)

    def change(env):
        env.settings.scale = 4.0
    differential(twins(_CopiesItsSettings()), [Call((t(),)), Call((t(),), before=change), Call((t(),))])


class _GuardedSettings(_Settings):
    """A config whose attribute reads go through a Python ``__getattribute__`` (an alias table)."""

    aliases = {"depth": "layers"}

    def __getattribute__(self, name):
        if name != "aliases" and name in super().__getattribute__("aliases"):
            name = super().__getattribute__("aliases")[name]
        return super().__getattribute__(name)


class _CopiesAndAsks(nn.Module):
    def __init__(self):
        super().__init__()
        self.settings = _GuardedSettings()

    def forward(self, x):
        settings = copy.deepcopy(self.settings)
        if hasattr(settings, "quantization"):
            return x
        return x * settings.depth


def test_hasattr_on_a_deep_copy_made_by_object_new():
    stats = differential(twins(_CopiesAndAsks()), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class _RenamesInACopy(nn.Module):
    """A copied config whose prefixed keys are renamed with getattr/delattr/setattr."""

    def __init__(self):
        super().__init__()
        self.settings = _Settings()
        self.settings.decoder_scale = 3.0

    def forward(self, x):
        settings = copy.deepcopy(self.settings)
        for key in list(vars(settings)):
            if key.startswith("decoder_"):
                value = getattr(settings, key)
                delattr(settings, key)
                setattr(settings, key[len("decoder_"):], value)
        return x * settings.scale + hasattr(settings, "decoder_scale")


def test_delattr_on_an_object_made_by_the_call():
    stats = differential(twins(_RenamesInACopy()), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class _ForgetsAnAttribute(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = torch.ones(3)

    def forward(self, x):
        if hasattr(self, "cache"):
            delattr(self, "cache")
        return x * 2


def test_delattr_on_a_module_attribute_is_replayed():
    differential(twins(_ForgetsAnAttribute()), fresh(lambda: (t(),)))


def _mask_for(config, x, mask):
    if not getattr(config, "is_causal", True):
        return x
    return x + mask


class _CopiedKeywords(nn.Module):
    """Keyword arguments gathered in a dict, copied, and passed on with ``**``."""

    def __init__(self):
        super().__init__()
        self.config = _Settings()

    def forward(self, x, extra):
        kwargs = {"config": self.config, "x": x, "mask": x * 2}
        copied = kwargs.copy()
        copied["mask"] = extra
        listed = [x, extra].copy()
        return {"full": _mask_for(**kwargs), "other": _mask_for(**copied), "listed": listed[1] * 3}


def test_copies_of_dicts_and_lists_keep_their_values_provenance():
    stats = differential(twins(_CopiedKeywords()), fresh(lambda: (t(), t())))
    expect_one_graph(stats)


@functools.lru_cache(None)
def _backend_available():
    return True


_WARNED = []


@functools.lru_cache(None)
def _warn_once(message):
    _WARNED.append(message)


class _Memoized(nn.Module):
    """A memoized availability check and a memoized one-time warning inside forward."""

    def forward(self, x):
        if not _backend_available():
            return x
        _warn_once("falling back to the reference implementation")
        return x * 2


class _Log:
    """A logger whose ``warning_once`` is a memoized function set on the class (bound as a method)."""

    def __init__(self):
        self.seen = []

    def warning(self, message):
        self.seen.append(message)

    warning_once = functools.lru_cache(None)(lambda self, message: self.warning(message))


_LOG = _Log()


class _WarnsThroughAMethod(nn.Module):
    def forward(self, x):
        _LOG.warning_once("slow path")
        return x - 1


def test_a_memoized_method_is_pure_by_its_contract():
    _Log.warning_once.cache_clear()
    _LOG.seen.clear()
    stats = differential(twins(_WarnsThroughAMethod()), fresh(lambda: (t(),)))
    expect_one_graph(stats)
    assert _LOG.seen == ["slow path"]


def test_memoized_calls_are_pure_by_their_contract():
    _warn_once.cache_clear()
    _WARNED.clear()
    stats = differential(twins(_Memoized()), fresh(lambda: (t(),)))
    expect_one_graph(stats)
    assert _WARNED == ["falling back to the reference implementation"]


class _States(nn.Module):
    def __init__(self, count):
        super().__init__()
        self.count = count

    def forward(self, x):
        states = dict.fromkeys(range(self.count))
        ready = collections.OrderedDict.fromkeys(["conv", "recurrent"], False)
        states[0] = x * 2
        if not ready["conv"]:
            states[1] = x + 1
        return states, ready


def test_dict_fromkeys_holds_its_value_under_each_key():
    stats = differential(twins(_States(3)), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class _Made:
    pass


class _NewObject(nn.Module):
    def forward(self, x):
        made = _Made.__new__(_Made)
        made.scale = 3
        if made.scale is None:
            return x
        return x * made.scale


def test_object_new_makes_a_new_object_of_the_call():
    stats = differential(twins(_NewObject()), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class _Experts(nn.Module):
    """``name not in interface`` on a Mapping whose ``__contains__`` (Mapping's) runs its Python
    ``__getitem__``: the name keeps its provenance inside both."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def forward(self, x):
        if self.kind != "eager" and self.kind not in _FUNCTIONS:
            raise KeyError(self.kind)
        return _FUNCTIONS.get(self.kind, torch.tanh)(x)


def test_in_on_a_mapping_with_a_python_contains_keeps_the_item_provenance():
    stats = differential(twins(_Experts("relu")), fresh(lambda: (t(),)))
    expect_one_graph(stats)
    stats = differential(twins(_Experts("eager")), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class _SlicesWithAnEllipsis(nn.Module):
    """A module attribute holding ``...`` (an index that keeps leading dims), read by the guards."""

    def __init__(self):
        super().__init__()
        self.index = (Ellipsis, slice(0, 2))

    def forward(self, x):
        if self.index[0] is Ellipsis:
            return x[self.index] * 2
        return x


def test_ellipsis_as_a_guarded_constant():
    stats = differential(twins(_SlicesWithAnEllipsis()), fresh(lambda: (t(2, 3),)))
    expect_one_graph(stats)


class _FieldsAfterInit(nn.Module):
    """A ModelOutput whose ``__setattr__`` asks ``dataclasses.fields(self)`` (a class attribute of an object
    made by the call, which also holds values from outside)."""

    def forward(self, x, mask):
        out = _EncoderOutput(last_hidden_state=x * 2)
        out.pooled = mask
        names = [field.name for field in dataclasses.fields(out)]
        return out, len(names)


def test_a_class_attribute_of_a_dict_made_by_the_call():
    stats = differential(twins(_FieldsAfterInit()), fresh(lambda: (t(), t())))
    expect_one_graph(stats)


class _OutputWithCount(nn.Module):
    """A number from the arguments stored in a ModelOutput made by the call (through its Python
    ``__setitem__``): the rebuilt output holds this call's number, never the first call's."""

    def forward(self, x, count):
        out = _EncoderOutput(last_hidden_state=x + 1, hidden_states=(count,))
        out["pooled"] = x.sum()
        return out


def test_a_model_output_holds_this_calls_values():
    calls = [Call((t(), 1)), Call((t(), 2)), Call((t(), 3))]
    differential(twins(_OutputWithCount()), calls)


class _ReadsTheCopy(nn.Module):
    """Attributes of a deep copy come from the original (``__dict__.update`` in copy's ``_reconstruct``):
    changing the original between calls must show."""

    def __init__(self):
        super().__init__()
        self.settings = _Settings()

    def forward(self, x):
        settings = copy.deepcopy(self.settings)
        return x * settings.__dict__.get("scale") + settings.layers


def test_attributes_of_a_deep_copy_follow_the_original():
    def change(env):
        env.settings.scale = 7.0
        env.settings.layers = 5
    differential(twins(_ReadsTheCopy()), [Call((t(),)), Call((t(),), before=change), Call((t(),))])


class _SerializesACopy(nn.Module):
    """``to_dict`` of a deep copy: ``copy.deepcopy(copy.__dict__)``, then a key renamed and a value read."""

    def __init__(self):
        super().__init__()
        self.settings = _Settings()

    def forward(self, x):
        settings = copy.deepcopy(self.settings)
        settings.extra = x.shape[0]
        table = copy.deepcopy(settings.__dict__)
        table["depth"] = table.pop("layers")
        return x * table["scale"] + table["depth"] + table["extra"], sorted(table)


def test_deepcopy_of_the_attribute_table_of_a_new_object():
    def change(env):
        env.settings.scale = 9.0
    differential(twins(_SerializesACopy()), [Call((t(),)), Call((t(),), before=change), Call((t(3, 2),))])
    stats = differential(twins(_SerializesACopy()), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class _CopiesACopy(nn.Module):
    def __init__(self):
        super().__init__()
        self.settings = _Settings()

    def forward(self, x):
        first = copy.deepcopy(self.settings)
        first.scale = first.scale + 1
        second = copy.deepcopy(first)
        return x * second.scale


def test_deepcopy_of_an_object_the_call_made():
    def change(env):
        env.settings.scale = 2.5
    stats = differential(twins(_CopiesACopy()), [Call((t(),)), Call((t(),), before=change), Call((t(),))])
    assert stats.graphs >= 1 and not stats.fallbacks  # (captured; it recompiles more often than it needs to)


class _LayerView(nn.Module):
    """A per-layer config: a shallow copy whose cached spec is dropped from its ``__dict__``, then
    overridden."""

    def __init__(self):
        super().__init__()
        self.settings = _Settings()
        self.settings.spec = {"window": 4}

    def forward(self, x):
        layer = copy.copy(self.settings)
        layer.__dict__.pop("spec", None)
        layer.scale = layer.scale * 3
        return x * layer.scale + hasattr(layer, "spec"), self.settings.spec["window"]


def test_a_shallow_copy_with_an_attribute_popped_from_its_table():
    def change(env):
        env.settings.scale = 0.5
    differential(twins(_LayerView()), [Call((t(),)), Call((t(),), before=change), Call((t(),))])
    stats = differential(twins(_LayerView()), fresh(lambda: (t(),)))
    expect_one_graph(stats)


class _PerKind(nn.Module):
    """A set of layer kinds held by the module, iterated to fill a dict."""

    def __init__(self):
        super().__init__()
        self.kinds = {"sliding", "full"}

    def forward(self, x):
        out = {}
        for kind in self.kinds:
            out[kind] = x * (2 if kind == "full" else 3)
        return out


def test_iterating_an_outside_set_of_names():
    stats = differential(twins(_PerKind()), fresh(lambda: (t(),)))
    expect_one_graph(stats)

    def change(env):
        env.kinds.add("chunked")
    differential(twins(_PerKind()), [Call((t(),)), Call((t(),), before=change), Call((t(),))])
