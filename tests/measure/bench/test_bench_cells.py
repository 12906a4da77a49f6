"""Table cells are one short line: a failure is ``n/a (Type: first line…)``, whatever the exception carried
(tracebacks printed into messages, wrappers, advice); wrong outputs are loud; details go to the log."""
from magpy import cli
from magpy.measure.bench import BenchOptions, run, runners
from magpy.measure.bench.reasons import short_reason
from magpy.measure.bench.report import REASON_WIDTH, ModelRow, Report, render_table, render_wrong, status_text
from magpy.measure.bench.runners import BackendResult
from magpy.measure.bench.timing import StepTimeout

WORKER_TRACEBACK = """C++ compile of a kernel failed in a worker:

Traceback (most recent call last):
  File "/usr/lib/python3.11/concurrent/futures/process.py", line 256, in _process_worker
    r = call_item.fn(*call_item.args, **call_item.kwargs)
  File "/torch/_inductor/codecache.py", line 2051, in compile
    raise CppCompileError(cmd, output)
torch._inductor.exc.CppCompileError: C++ compile error: undefined reference to `sleef_expf8'
"""


class Wrapper(Exception):
    """Like torch._dynamo's BackendCompilerFailed: names the wrapped exception only in its message."""

    def __init__(self, inner):
        self.inner_exception = inner
        super().__init__(f"backend='inductor' raised:\n{type(inner).__name__}: {inner}\n\n"
                         "Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially "
                         "if you're reporting a bug to PyTorch).")


def na_result(error):
    return BackendResult("inductor", status=runners.NOT_AVAILABLE, reason=short_reason(error))


def test_a_traceback_inside_a_message_becomes_its_last_exception_line():
    reason = short_reason(RuntimeError(WORKER_TRACEBACK))
    assert reason == "torch._inductor.exc.CppCompileError: C++ compile error: undefined reference to `sleef_expf8'"
    cell = status_text(na_result(RuntimeError(WORKER_TRACEBACK)))
    assert cell.startswith("n/a (torch._inductor.exc.CppCompil") and cell.endswith("…)")
    assert len(cell) <= REASON_WIDTH + len("n/a ()") and "\n" not in cell and "Traceback" not in cell


def test_a_wrapper_cell_names_the_wrapped_error_not_the_wrapper():
    reason = short_reason(Wrapper(ValueError("bad shape (2, 3)\nmore detail")))
    assert reason == "ValueError: bad shape (2, 3)"


def test_a_timeout_however_wrapped_reads_as_a_timeout():
    try:
        try:
            raise StepTimeout("timeout 90s")
        except StepTimeout as inner:
            raise Wrapper(RuntimeError("compile worker died")) from inner
    except Wrapper as error:
        assert short_reason(error) == "timeout 90s"


def test_the_table_row_of_a_failure_is_one_line_without_a_traceback():
    rows = [ModelRow("gpt", "small", {"eager": BackendResult("eager", ms=1.0, times_ms=[1.0] * 9, samples=9),
                                      "inductor": na_result(Wrapper(RuntimeError(WORKER_TRACEBACK)))})]
    table = render_table(Report(meta={}, backends=["eager", "inductor"], rows=rows))
    gpt_line = next(line for line in table.splitlines() if line.startswith("gpt"))
    assert "n/a (torch._inductor.exc.CppCompil" in gpt_line
    assert "Traceback" not in table and 'File "' not in table


def test_wrong_outputs_are_loud_in_the_cell_and_in_a_line_of_their_own():
    wrong = BackendResult("magpy", status=runners.WRONG, reason="max err 1.0e+00",
                          detail="Tensor-likes are not close!\n\nMismatched elements: 8 / 8 (100.0%)")
    report = Report(meta={}, backends=["eager", "magpy"], rows=[ModelRow("lstm", "small", {
        "eager": BackendResult("eager", ms=1.0, times_ms=[1.0] * 9, samples=9), "magpy": wrong})])
    line = next(line for line in render_table(report).splitlines() if line.startswith("lstm"))
    assert "WRONG (max err 1.0e+00)" in line and line.rstrip().endswith("WRONG")
    assert render_wrong(report) == ("WRONG OUTPUT: magpy on lstm: max err 1.0e+00; Tensor-likes are not close!; "
                                    "Mismatched elements: 8 / 8 (100.0%)")


def test_a_failing_compiler_leaves_its_traceback_in_the_log_not_the_table(toy_zoo, use_compiler, tmp_path, capsys):
    def compile(module, **options):
        raise NotImplementedError("no VM for this opcode\n  (and a second line)")

    use_compiler(compile)
    log = tmp_path / "bench.log"
    run(BenchOptions.build(models=["toy"], backends=["magpy"], quick=True, progress=False, log_path=str(log)))
    out = capsys.readouterr().out
    assert "n/a (NotImplementedError: no VM for th…)" in out
    assert "Traceback" not in out and "second line" not in out
    assert f"details (tracebacks, compiler warnings, every round's times): {log}" in out
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "NotImplementedError: no VM for this opcode" in text
    assert "] toy · timing" in text


def test_the_command_exits_1_and_says_so_when_a_compiler_is_wrong(toy_zoo, fake_magpy, use_compiler, tmp_path,
                                                                   capsys):
    class WrongCompiled(fake_magpy):
        def __call__(self, *args):
            return super().__call__(*args) + 1

    use_compiler(WrongCompiled)
    status = cli.main(["bench", "--quick", "--models", "toy", "--backends", "magpy", "--no-progress",
                       "--log", str(tmp_path / "bench.log")])
    out = capsys.readouterr().out
    assert status == 1
    assert "WRONG (max err 1.0e+00)" in out and "WRONG OUTPUT: magpy on toy: max err 1.0e+00" in out
    assert "WRONG OUTPUT (max err 1.0e+00)" in (tmp_path / "bench.log").read_text()
