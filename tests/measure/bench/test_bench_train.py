"""``bench --train``: every backend trains its own copy of one model; a wrong loss or wrong weights after the
checked steps make the backend WRONG (not a speedup); models with nothing to train are skipped with the
reason; the table has the training columns."""
import json

import pytest
import torch
from torch import nn

from magpy import cli, zoo
from magpy.measure.bench import BenchOptions, run, training
from magpy.measure.bench.options import BenchError
from magpy.measure.bench.runners import BackendResult


def train(models=("toy",), backends=("magpy",), **options):
    return run(BenchOptions.build(models=list(models), backends=list(backends), quick=True, train=True,
                                  progress=False, log_path=None, **options))


class FlippedGradient(torch.autograd.Function):
    """The identity forward, the negated gradient backward: the loss stays right, the weights go wrong."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return -grad


def test_the_train_table_has_step_time_speedup_first_step_weights_and_memory(toy_zoo, fake_magpy, tmp_path,
                                                                              capsys):
    report = train(json_path=str(tmp_path / "train.json"))
    out = capsys.readouterr().out
    header, _, row, _, geomean = out.splitlines()[1:6]
    for column in ("model", "eager ms", "magpy ×", "first 2 steps s (magpy)", "weights Δ (magpy)",
                   "peak MiB (eager / magpy)"):
        assert column in header
    assert row.startswith("toy") and row.rstrip().endswith("n/a / n/a")      # (memory: CUDA only)
    assert geomean.startswith("geomean")
    assert "the optimizer step runs eagerly for every compiler" in out
    assert "first 2 steps: the first two steps together" in out
    result = report.rows[0].results["magpy"]
    assert result.ok and result.first_call_s > 0 and result.second_call_s > 0 and result.weights_rel_diff == 0.0
    assert result.first_calls_s == result.first_call_s + result.second_call_s
    assert f"{result.first_calls_s:.1f}" in row
    saved = json.loads((tmp_path / "train.json").read_text())
    saved_magpy = saved["rows"][0]["results"]["magpy"]
    assert saved["meta"]["train"] is True and saved_magpy["weights_rel_diff"] == 0.0
    assert saved_magpy["second_call_s"] == result.second_call_s


def test_a_wrong_gradient_is_a_weights_mismatch_not_a_speedup(toy_zoo, fake_magpy, use_compiler):
    class WrongGradient(fake_magpy):
        def __call__(self, *args):
            return FlippedGradient.apply(super().__call__(*args))

    use_compiler(WrongGradient)
    report = train()
    result = report.rows[0].results["magpy"]
    assert result.status == "wrong" and result.reason.startswith("weights")
    assert result.weights_rel_diff > 1.0 and result.ms is None
    assert report.rows[0].speedup("magpy") is None and report.wrong()


def test_a_wrong_loss_is_a_mismatch(toy_zoo, fake_magpy, use_compiler, capsys):
    class WrongOutput(fake_magpy):
        def __call__(self, *args):
            return super().__call__(*args) + 1

    use_compiler(WrongOutput)
    report = train()
    result = report.rows[0].results["magpy"]
    assert result.status == "wrong" and result.reason.startswith("loss")
    assert "WRONG OUTPUT: magpy on toy: loss" in capsys.readouterr().out


@pytest.fixture
def frozen_zoo(monkeypatch):
    """Adds "frozen", a model whose parameters all have requires_grad off."""
    def build(size):
        model = nn.Linear(4, 4).requires_grad_(False)
        return model, (torch.randn(2, 4),)

    spec = zoo.ModelSpec(name="frozen", summary="nothing to train", build=build)
    real_get = zoo.get
    monkeypatch.setitem(zoo.REGISTRY, "frozen", "frozen")
    monkeypatch.setattr(zoo, "get", lambda name: spec if name == "frozen" else real_get(name))


def test_a_model_with_nothing_to_train_is_skipped_with_the_reason(frozen_zoo, toy_zoo, fake_magpy, capsys):
    report = train(models=["frozen", "toy"])
    frozen = report.rows[0].results
    assert {r.status for r in frozen.values()} == {"skipped"}
    assert frozen["magpy"].reason == "no parameters requiring grad"
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("frozen"))
    assert "no parameters requiring grad" in line
    assert report.rows[1].results["magpy"].ok


def test_amp_trains_under_bf16_autocast(toy_zoo, fake_magpy, use_compiler, capsys):
    seen = []

    class Autocast(fake_magpy):
        def __call__(self, *args):
            seen.append(torch.is_autocast_enabled("cpu"))
            return super().__call__(*args)

    use_compiler(Autocast)
    report = train(amp=True)
    assert report.rows[0].results["magpy"].ok and seen and all(seen)
    assert "train (bf16 autocast)" in capsys.readouterr().out


def test_magpy_trains_a_small_model_as_eager_does(toy_zoo):
    result = train().rows[0].results["magpy"]
    assert result.ok and result.graphs == 1 and result.weights_rel_diff < training.WEIGHT_RTOL


def test_compile_opt_compiles_the_optimizers_step_and_trains_as_eager_does(toy_zoo, use_compiler, capsys):
    import magpy

    compiled = []

    def spy(fn, **options):
        compiled.append(fn)
        return magpy.compile(fn, **options)

    use_compiler(spy)
    result = train(compile_opt=True).rows[0].results["magpy"]
    assert result.ok and result.weights_rel_diff < training.WEIGHT_RTOL
    steps = [fn for fn in compiled if isinstance(getattr(fn, "__self__", None), torch.optim.Optimizer)]
    assert [fn.__name__ for fn in steps] == ["step"]   # (that it then runs compiled: tests/backends)
    assert "compiles the optimizer's step too" in capsys.readouterr().out


def test_mode_reaches_both_compilers_and_the_legend(toy_zoo, use_compiler, monkeypatch, capsys):
    import magpy

    modes = []

    def spy(fn, **options):
        modes.append(options.get("mode"))
        return magpy.compile(fn, **options)

    def inductor(model, mode=None):
        modes.append(("inductor", mode))
        return model

    use_compiler(spy)
    monkeypatch.setattr(training, "compile_with_inductor", inductor)
    report = train(backends=("magpy", "inductor"), mode="max-autotune-no-cudagraphs")
    assert report.rows[0].results["magpy"].ok
    assert modes[0] == "max-autotune-no-cudagraphs" and ("inductor", "max-autotune-no-cudagraphs") in modes
    assert "Both compilers in mode 'max-autotune-no-cudagraphs'" in capsys.readouterr().out


def test_dropout_is_off_in_training_mode():
    model = training.training_mode(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).eval())
    assert model.training and model[1].p == 0.0


def noisy_workload(exact_offset):
    """A workload whose eager weights moved by 1.0 from the initial ones and sit ``exact_offset`` from the
    float64 run's."""
    initial = nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        initial.weight.fill_(0.0)
    workload = training.TrainingWorkload(zoo.ModelSpec("n", "", build=None), "small", torch.device("cpu"),
                                         None, lambda: None, False, initial, (), [], [])
    workload.reference = training.Reference(1.0, {"weight": torch.ones(1, 1)}, 1.0,
                                            {"weight": torch.full((1, 1), 1.0 + exact_offset)})
    return workload


def test_weights_as_close_as_eager_is_to_float64_match_and_further_ones_do_not():
    workload = noisy_workload(0.1)            # eager's own rounding moved it by 0.1
    close, far = BackendResult("magpy"), BackendResult("magpy")
    assert training.weights_match(close, {"weight": torch.full((1, 1), 1.3)}, workload)
    assert close.weights_rel_diff == pytest.approx(0.3)
    assert not training.weights_match(far, {"weight": torch.full((1, 1), 1.5)}, workload)
    assert far.status == "wrong" and "weight" in far.detail
    exact = noisy_workload(0.0)               # no noise: only the floor is allowed
    assert not training.weights_match(BackendResult("magpy"), {"weight": torch.full((1, 1), 1.05)}, exact)


def test_cli_parses_train_and_amp(monkeypatch):
    seen = {}

    def fake_run(options):
        seen["options"] = options
        from magpy.measure.bench import Report
        return Report(meta={}, backends=options.backends)

    monkeypatch.setattr("magpy.measure.bench.run", fake_run)
    assert cli.main(["bench", "--train", "--amp", "--models", "gpt", "--no-progress"]) == 0
    assert seen["options"].train and seen["options"].amp
    assert cli.main(["bench", "--train", "--models", "gpt", "--no-progress"]) == 0
    assert seen["options"].train and not seen["options"].amp
    with pytest.raises(BenchError, match="--train"):
        BenchOptions.build(models=["gpt"], amp=True)
    assert cli.main(["bench", "--amp", "--models", "gpt", "--no-progress"]) == 2
    assert cli.main(["bench", "--train", "--compile-opt", "--models", "gpt", "--no-progress"]) == 0
    assert seen["options"].compile_opt
    assert cli.main(["bench", "--train", "--mode", "reduce-overhead", "--models", "gpt", "--no-progress"]) == 0
    assert seen["options"].mode == "reduce-overhead"
    with pytest.raises(BenchError, match="--train"):
        BenchOptions.build(models=["gpt"], compile_opt=True)


def test_a_compiler_that_ran_eagerly_says_so_beside_its_speedup(toy_zoo, fake_magpy, use_compiler, capsys):
    class FellBack(fake_magpy):
        def __init__(self, module, **options):
            super().__init__(module, **options)
            self.stats.fallbacks = 1

    use_compiler(FellBack)
    train()
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("toy"))
    assert "× ±" in line and "(fallback)" in line


def test_a_parameter_whose_gradient_is_rounding_noise_is_left_out_of_the_weights():
    state = {"weight": torch.ones(1, 1)}
    float32 = training.Run(1.0, {"weight": torch.full((1, 1), 3e-9)}, state)
    float64 = training.Run(1.0, {"weight": torch.full((1, 1), 2e-17)}, state)
    assert training.Reference.of(float32, float64).noise == {"weight"}
    real = training.Run(1.0, {"weight": torch.full((1, 1), 0.5 + 1e-7)}, state)
    assert training.Reference.of(real, training.Run(1.0, {"weight": torch.full((1, 1), 0.5)}, state)).noise == set()
    workload = noisy_workload(0.0)
    workload.reference.noise = frozenset({"weight"})
    result = BackendResult("magpy")
    assert training.weights_match(result, {"weight": torch.full((1, 1), -1.0)}, workload)
