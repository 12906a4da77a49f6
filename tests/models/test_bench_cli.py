"""``python -m magpy bench``: the command runs, prints its table, and survives backends that fail."""
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch

import magpy
from magpy import cli
from magpy.measure.bench import BenchOptions, run, runners

SRC = str(Path(magpy.__file__).resolve().parent.parent) if magpy.__file__ else str(
    Path(next(iter(magpy.__path__))).resolve().parent)


def test_cli_bench_quick_eager_prints_a_table(tmp_path):
    report = tmp_path / "bench.json"
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-m", "magpy", "bench", "--quick", "--backends", "eager", "--models", "gpt,lstm",
         "--json", str(report), "--threads", "1"],
        capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    header = next(line for line in lines if line.startswith("model"))
    assert "eager ms" in header
    assert any(line.startswith("gpt ") for line in lines)
    assert any(line.startswith("lstm ") for line in lines)
    assert "gpt: eager" in proc.stderr                    # the progress report
    data = json.loads(report.read_text())
    assert [row["model"] for row in data["rows"]] == ["gpt", "lstm"]
    assert all(row["results"]["eager"]["ms"] > 0 for row in data["rows"])


def test_cli_rejects_an_unknown_model(capsys):
    assert cli.main(["bench", "--models", "alexnet"]) == 2
    assert "alexnet" in capsys.readouterr().err


class FakeCompiled:
    """Stands in for magpy.compile's result: runs the module, reports one graph."""

    def __init__(self, module, backend="magpy", **options):
        self.module = module
        self.stats = types.SimpleNamespace(graphs=1, graph_breaks=0)

    def __call__(self, *args):
        return self.module(*args)


def quick(models, backends):
    return BenchOptions.build(models=models, backends=backends, quick=True, progress=False)


def test_magpy_row_reports_stats_and_speedup(monkeypatch, capsys):
    monkeypatch.setattr(runners, "magpy_api", lambda name: FakeCompiled if name == "compile" else (lambda: None))
    report = run(quick(["lstm"], ["magpy"]))
    result = report.rows[0].results["magpy"]
    assert result.ok and (result.graphs, result.graph_breaks) == (1, 0)
    assert result.capture_s is not None and result.ms > 0
    assert report.rows[0].speedup("magpy") > 0
    assert "geomean" in capsys.readouterr().out


def test_failing_backend_becomes_a_short_na_cell_and_the_run_goes_on(monkeypatch, capsys):
    def broken_api(name):
        def compile(module, **options):
            raise NotImplementedError("no VM for this opcode")
        return compile if name == "compile" else (lambda: None)

    monkeypatch.setattr(runners, "magpy_api", broken_api)
    report = run(quick(["gpt", "lstm"], ["magpy"]))
    out = capsys.readouterr().out
    assert [row.results["magpy"].status for row in report.rows] == ["n/a", "n/a"]
    assert all(row.results["eager"].ok for row in report.rows)
    assert "n/a (NotImplementedError: no VM" in out


def test_wrong_outputs_are_flagged_not_timed(monkeypatch):
    class WrongCompiled(FakeCompiled):
        def __call__(self, *args):
            output, state = self.module(*args)
            return output + 1, state

    monkeypatch.setattr(runners, "magpy_api", lambda name: WrongCompiled if name == "compile" else (lambda: None))
    result = run(quick(["lstm"], ["magpy"])).rows[0].results["magpy"]
    assert result.status == "wrong" and result.ms is None
    assert result.max_abs_err == pytest.approx(1.0)


def test_spent_budget_skips_compilers_but_keeps_the_eager_baseline(monkeypatch):
    monkeypatch.setattr(runners, "magpy_api", lambda name: FakeCompiled if name == "compile" else (lambda: None))
    options = BenchOptions.build(models=["lstm"], backends=["magpy"], quick=True, budget=1e-6, progress=False)
    row = run(options).rows[0]
    assert row.results["magpy"].status == "skipped" and row.results["magpy"].reason == "time budget"
    assert row.results["eager"].ok and row.results["eager"].ms > 0


def test_a_magpy_fallback_is_marked_and_its_warning_noted(monkeypatch, capsys):
    import warnings

    class FallingBack(FakeCompiled):
        def __init__(self, module, **options):
            super().__init__(module)
            self.stats.graphs, self.stats.graph_breaks, self.stats.fallbacks = 0, 1, 1

        def __call__(self, *args):
            warnings.warn("magpy: LSTM.forward runs eagerly: some reason")   # every call: timing must hide it
            return self.module(*args)

    monkeypatch.setattr(runners, "magpy_api", lambda name: FallingBack if name == "compile" else (lambda: None))
    result = run(quick(["lstm"], ["magpy"])).rows[0].results["magpy"]
    out = capsys.readouterr().out
    assert result.ok and result.fallbacks == 1
    assert "(fallback)" in out
    assert "magpy (lstm): magpy: LSTM.forward runs eagerly: some reason" in out


def test_under_tf32_an_output_as_exact_as_eagers_passes_and_a_less_exact_one_does_not():
    from magpy import zoo
    from magpy.measure.bench.timing import Repeats
    exact = torch.linspace(-1, 1, 64)
    eager = exact + 0.02 * torch.sign(torch.sin(37 * exact))          # eager's own TF32 error: 0.02
    workload = runners.Workload(zoo.get("lstm"), "small", torch.device("cpu"), eager, Repeats(), lambda: None,
                                exact=exact)

    def verdict(actual):
        result = runners.BackendResult("magpy")
        return runners.matches(result, actual, workload), result.status

    other_algorithm = exact - 0.03 * torch.sign(torch.sin(37 * exact))   # 0.05 from eager, 0.03 from exact
    assert verdict(other_algorithm)[0]
    assert verdict(exact + 0.1) == (False, "wrong")
    workload.exact = None                                                # without TF32: eager's tolerance only
    assert verdict(other_algorithm) == (False, "wrong")
