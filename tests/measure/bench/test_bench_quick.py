"""--quick times every model under eager and magpy and runs torch.compile on the three cheapest to compile;
the others say "not run in --quick"."""
from magpy import zoo
from magpy.measure.bench import BenchOptions, run
from magpy.measure.bench.options import QUICK_INDUCTOR_BY_COST, QUICK_INDUCTOR_COUNT, quick_inductor_models
from magpy.measure.bench.report import render_table

ISSUE_NINE = ["resnet", "densenet", "bert", "gpt", "lstm", "monodepth", "blockdrop", "quant_resnet", "tridentnet"]
HF = ["hf_bert", "hf_gpt2", "hf_llama"]


def test_quick_runs_torch_compile_on_the_three_cheapest_in_table_order():
    assert quick_inductor_models(ISSUE_NINE + HF) == ["lstm", "hf_bert", "hf_gpt2"]
    assert quick_inductor_models(ISSUE_NINE) == ["gpt", "lstm", "tridentnet"]      # transformers missing
    assert quick_inductor_models(["quant_resnet", "monodepth"]) == ["quant_resnet", "monodepth"]


def test_every_zoo_model_has_a_compile_cost_rank():
    assert set(zoo.names()) <= set(QUICK_INDUCTOR_BY_COST)
    assert QUICK_INDUCTOR_COUNT >= 3


def test_quick_options_keep_every_model_and_no_run_budget():
    options = BenchOptions.build(quick=True)
    assert options.models == zoo.names() and options.backends == ["eager", "magpy", "inductor"]
    assert options.budget_s is None and options.threads == 1
    assert options.inductor_models == quick_inductor_models(zoo.names())
    assert BenchOptions.build(quick=True, backends=["inductor"]).inductor_models is None
    assert BenchOptions.build(quick=True, threads=2).threads == 2


def test_a_model_left_out_of_torch_compile_says_so(toy_zoo, fake_magpy, monkeypatch):
    monkeypatch.setattr("magpy.measure.bench.options.QUICK_INDUCTOR_COUNT", 0)
    options = BenchOptions.build(models=["toy"], quick=True, progress=False)
    report = run(options)
    result = report.rows[0].results["inductor"]
    assert (result.status, result.reason) == ("skipped", "not run in --quick")
    assert report.rows[0].results["magpy"].ok
    assert "not run in --quick" in next(line for line in render_table(report).splitlines() if line.startswith("toy"))


def test_first_calls_are_the_first_two_calls_timed_and_said_so(toy_zoo, fake_magpy, capsys):
    report = run(BenchOptions.build(models=["toy"], backends=["eager", "magpy"], quick=True, progress=False))
    result = report.rows[0].results["magpy"]
    assert result.first_call_s > 0 and result.second_call_s > 0
    assert result.first_calls_s == result.first_call_s + result.second_call_s
    assert result.compile_s == max(result.first_calls_s - result.capture_s, 0.0)
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("model"))
    row = next(line for line in out.splitlines() if line.startswith("toy"))
    assert "first calls s" in header and f"{result.first_calls_s:.2f}" in row
    assert "first calls s: the first two calls together" in out
