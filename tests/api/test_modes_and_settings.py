"""``mode=`` (in ``magpy.compile`` and through ``torch.compile(backend="magpy")``), and settings checked when
``magpy.compile`` is called: an unknown backend, mode or option, or a flag of the wrong type raises at once,
naming the valid values."""
import os
import warnings

import pytest
import torch
import torch.nn as nn

import magpy
from magpy import codegen
from magpy.backends.settings import MODES, options_for
from magpy.codegen.triton.plan import TUNE_MIN_ELEMENTS, candidate_configs

MODE_NAMES = list(MODES)


def softmax_scale(x, w):
    return torch.softmax(x * w, -1) + 1


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x)).sum(-1)


# ---- modes ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODE_NAMES)
def test_every_mode_compiles_and_matches_eager_without_a_word_on_cpu(mode):
    f = magpy.compile(softmax_scale, mode=mode)
    w = torch.randn(8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (no "cudagraphs needs CUDA tensor inputs" for a mode on CPU)
        for _ in range(3):
            x = torch.randn(4, 8)
            torch.testing.assert_close(f(x, w), softmax_scale(x, w))
    assert f.stats.graphs == 1 and f.stats.cache_hits == 2 and f.stats.fallbacks == 0


@pytest.mark.parametrize("mode", MODE_NAMES)
def test_every_mode_compiles_a_module(mode):
    m = Tiny()
    cm = magpy.compile(m, mode=mode)
    x = torch.randn(3, 4)
    torch.testing.assert_close(cm(x), m(x))
    assert cm._magpy_compiled.settings()["mode"] == mode


def test_a_mode_stands_for_options_and_explicit_options_win():
    assert options_for(None, None) == {}
    assert options_for("reduce-overhead", None) == {"cudagraphs": True}
    assert options_for("max-autotune", None) == {"cudagraphs": True, "autotune": True}
    assert options_for("max-autotune-no-cudagraphs", None) == {"cudagraphs": False, "autotune": True}
    assert options_for("max-autotune", {"cudagraphs": False}) == {"cudagraphs": False, "autotune": True}
    assert options_for("reduce-overhead", {"cudagraphs": None, "codegen": "cpp"}) == {"codegen": "cpp"}


def test_a_backend_taking_mode_and_options_gets_them_as_torch_compile_passes_them():
    seen = []

    def mine(gm, example_inputs, mode=None, options=None):
        seen.append((mode, options))
        return gm.forward

    f = magpy.compile(softmax_scale, backend=mine, mode="max-autotune", options={"anything": 1})
    x, w = torch.randn(2, 8), torch.randn(8)
    torch.testing.assert_close(f(x, w), softmax_scale(x, w))
    assert seen == [("max-autotune", {"anything": 1})]


def test_a_backend_taking_no_mode_runs_the_same_in_every_mode():
    f = magpy.compile(softmax_scale, backend="eager", mode="reduce-overhead")
    x, w = torch.randn(2, 8), torch.randn(8)
    torch.testing.assert_close(f(x, w), softmax_scale(x, w))


def test_explicit_cudagraphs_on_cpu_still_says_it_cannot():
    f = magpy.compile(lambda x: x.exp() + 1, options={"cudagraphs": True})
    with pytest.warns(UserWarning, match="cudagraphs needs CUDA tensor inputs"):
        x = torch.randn(5)
        torch.testing.assert_close(f(x), x.exp() + 1)


@pytest.mark.skipif(os.environ.get("MAGPY_TEST_DEVICE", "cpu") != "cpu",
                    reason="CPU tensors through Triton need its interpreter (set only for CPU test runs)")
def test_max_autotune_reaches_the_triton_code_generator():
    x, w = torch.randn(4, 8), torch.randn(8)
    for mode, widened in (("max-autotune", True), ("default", False)):
        f = magpy.compile(softmax_scale, mode=mode, options={"codegen": "triton"})  # (CPU: the interpreter)
        torch.testing.assert_close(f(x, w), softmax_scale(x, w))
        report = codegen.last_report()
        assert report.mode == "triton" and report.kernels and report.autotune is widened


@pytest.mark.parametrize("kind, xnumel, rnumel", [
    ("pointwise", 1000, 1), ("pointwise", TUNE_MIN_ELEMENTS, 1), ("tiled", 4096, 4096),
    ("persistent", 4096, 1000), ("looped", 4096, 100_000)])
def test_max_autotune_times_more_block_configs_the_default_guess_first(kind, xnumel, rnumel):
    default = candidate_configs(kind, xnumel, rnumel, interpret=False)
    wider = candidate_configs(kind, xnumel, rnumel, interpret=False, autotune=True)
    assert wider[0] == default[0] and set(default) < set(wider) and len(set(wider)) == len(wider)
    assert all(c[0] <= max(1024, xnumel) for c in wider)  # (no block far larger than the kernel)


def test_max_autotune_tunes_small_kernels_that_default_does_not():
    assert len(candidate_configs("pointwise", 1000, 1, interpret=False)) == 1
    assert len(candidate_configs("pointwise", 1000, 1, interpret=False, autotune=True)) > 1
    assert len(candidate_configs("pointwise", 1000, 1, interpret=True, autotune=True)) == 1  # (nothing timed)


# ---- settings checked at compile time ------------------------------------------------------------------

BAD_SETTINGS = [
    (dict(backend="magpi"), "unknown backend 'magpi' (did you mean 'magpy'?); known backends: "),
    (dict(backend=42), "backend must be a backend's name or a callable"),
    (dict(mode="max_autotune"), "unknown mode 'max_autotune' (did you mean 'max-autotune'?); modes: default, "
                                "reduce-overhead, max-autotune, max-autotune-no-cudagraphs"),
    (dict(mode=3), "unknown mode 3; modes: default"),
    (dict(options={"cudagraph": True}), "backend 'magpy' has no option 'cudagraph' (did you mean 'cudagraphs'?); "
                                        "its options: autotune (True, False), codegen ('cpp', 'triton'), "
                                        "cudagraphs (True, False)"),
    (dict(options={"codegen": "cuda"}), "option 'codegen' of backend 'magpy' cannot be 'cuda'; valid: 'cpp', 'triton'"),
    (dict(options={"cudagraphs": 1}), "option 'cudagraphs' of backend 'magpy' cannot be 1; valid: True, False"),
    (dict(options=["codegen"]), "options must be a dict, not list"),
    (dict(backend="eager", options={"codegen": "cpp"}), "backend 'eager' has no option 'codegen'; it takes no options"),
    (dict(backend=lambda gm, example_inputs: gm.forward, options={"a": 1}), "takes no options"),
    (dict(fullgraph="yes"), "fullgraph must be True or False, not 'yes' (str)"),
    (dict(fullgraph=1), "fullgraph must be True or False, not 1 (int)"),
    (dict(dynamic="auto"), "dynamic must be None, True or False, not 'auto' (str)"),
]


@pytest.mark.parametrize("settings, message", BAD_SETTINGS, ids=[str(s) for s, _ in BAD_SETTINGS])
def test_bad_settings_raise_when_compiling_naming_the_valid_values(settings, message):
    calls = []

    def fn(x):
        calls.append(1)
        return x + 1

    for target in (fn, Tiny()):
        with pytest.raises(magpy.SettingError) as info:
            magpy.compile(target, **settings)
        assert message in str(info.value)
        assert str(info.value).startswith("magpy.compile: ")
    assert calls == []  # (raised before anything ran)


def test_an_unknown_backend_lists_every_registered_one():
    magpy.register_backend("listed_for_settings_test", lambda gm, example_inputs: gm.forward)
    with pytest.raises(magpy.SettingError) as info:
        magpy.compile(softmax_scale, backend="nope")
    listed = str(info.value).split("known backends: ")[1]
    assert all(name in listed for name in ("eager", "inductor", "magpy", "listed_for_settings_test"))


def test_setting_errors_are_value_and_type_errors():
    with pytest.raises(ValueError):
        magpy.compile(softmax_scale, mode="fast")
    with pytest.raises(TypeError):
        magpy.compile(softmax_scale, fullgraph=None)


def test_the_decorator_form_checks_when_decorating():
    with pytest.raises(magpy.SettingError, match="unknown mode 'fastest'"):
        @magpy.compile(mode="fastest")
        def f(x):
            return x


def test_inductor_options_are_inductors_own_config_names():
    with pytest.raises(magpy.SettingError, match=r"no option 'max_autotun' \(did you mean 'max_autotune'\?\).*"
                                                 r"torch\._inductor\.list_options\(\)"):
        magpy.compile(softmax_scale, backend="inductor", options={"max_autotun": True})
    magpy.compile(softmax_scale, backend="inductor", options={"max_autotune": False})  # (accepted)


def test_callables_and_registered_backends_stay_accepted():
    def mine(gm, example_inputs):
        return gm.forward

    magpy.register_backend("mine_for_settings_test", mine)
    x, w = torch.randn(2, 8), torch.randn(8)
    for backend in (mine, "mine_for_settings_test"):
        f = magpy.compile(softmax_scale, backend=backend, fullgraph=True, dynamic=False)
        torch.testing.assert_close(f(x, w), softmax_scale(x, w))


# ---- through torch.compile ------------------------------------------------------------------------------

@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("settings", [dict(mode="reduce-overhead"), dict(mode="max-autotune"),
                                      dict(options={"codegen": "cpp", "autotune": True})])
def test_torch_compile_hands_mode_or_options_to_the_magpy_backend(fresh_dynamo, settings):
    compiled = torch.compile(softmax_scale, backend="magpy", **settings)
    x, w = torch.randn(4, 8), torch.randn(8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.testing.assert_close(compiled(x, w), softmax_scale(x, w))
    assert codegen.last_report().mode == "cpp"


def test_torch_compile_refuses_mode_and_options_together(fresh_dynamo):
    # (torch's own rule, for every backend: magpy.compile takes both, the options winning)
    with pytest.raises(RuntimeError, match="Either mode or options"):
        torch.compile(softmax_scale, backend="magpy", mode="max-autotune", options={"codegen": "cpp"})


def test_torch_compile_with_an_unknown_option_fails_naming_the_valid_ones(fresh_dynamo):
    compiled = torch.compile(softmax_scale, backend="magpy", options={"cuda_graphs": True})
    with pytest.raises(Exception, match="has no option 'cuda_graphs'.*its options: autotune"):
        compiled(torch.randn(2, 8), torch.randn(8))
