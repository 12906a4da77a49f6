"""``python -m magpy explain|trace FILE.py:FUNC``: a script defining FUNC and ``example_inputs()``, run in a
subprocess; what it prints, the dot file, and clear one-line errors with exit status 2 (never a traceback)."""
import os
import subprocess
import sys
import textwrap

import pytest

import magpy
from magpy.script import ScriptError, load

SRC = os.path.dirname(os.path.dirname(magpy.__file__))

MODEL = """
import torch
import torch.nn as nn

SCALE = 2.0


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l = nn.Linear(3, 3)

    def forward(self, x):
        return torch.relu(self.l(x)) * SCALE


def shifted(x, k=1):
    return x * SCALE + k


def example_inputs():
    return (torch.randn(2, 3),), {"k": 2}
"""


def model_line(text):
    return next(k for k, line in enumerate(MODEL.splitlines(), 1) if text in line)


def script(tmp_path, text, name="prog.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def magpy_cli(*argv, cwd):
    env = dict(os.environ, PYTHONPATH=SRC)
    return subprocess.run([sys.executable, "-m", "magpy", *map(str, argv)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=300)


def test_explain_prints_graphs_breaks_and_guards(tmp_path):
    path = script(tmp_path, MODEL.replace('(torch.randn(2, 3),), {"k": 2}', "(torch.randn(2, 3),)"))
    done = magpy_cli("explain", f"{path}:Net", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("1 graph(s), 0 graph break(s)")
    assert "SCALE == 2.0" in out and "self.l is <Linear" in out
    assert "  graph:\n    def forward(" in out and "torch.relu" in out
    assert "self.l.weight: Parameter" not in out and "of torch's machinery hidden" in out


def test_explain_verbose_prints_torchs_guards_too(tmp_path):
    path = script(tmp_path, MODEL.replace('(torch.randn(2, 3),), {"k": 2}', "(torch.randn(2, 3),)"))
    done = magpy_cli("explain", f"{path}:Net", "--verbose", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "self.l.weight: Parameter(float32" in done.stdout and "SCALE == 2.0" in done.stdout
    assert "hidden" not in done.stdout


def test_trace_prints_events_and_writes_the_dot_file(tmp_path):
    path = script(tmp_path, MODEL)
    dot = tmp_path / "out.dot"
    done = magpy_cli("trace", f"{path.name}:shifted", "--dot", dot, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"prog.py:{model_line('def shifted')} ") and lines[0].endswith("call   shifted()")
    assert any(line.startswith(f"prog.py:{model_line('x * SCALE + k')} ") and "op     operator.mul -> mul" in line
               for line in lines)
    assert "k = 2" in done.stdout  # (the keyword argument example_inputs gave)
    assert "captured whole" in done.stdout and f"RefGraph written to {dot}" in done.stdout
    text = dot.read_text()
    assert text.startswith("digraph refgraph {") and text.rstrip().endswith("}") and '"SCALE\\n2.0"' in text


def test_trace_only_ops_prints_graph_nodes(tmp_path):
    path = script(tmp_path, MODEL)
    done = magpy_cli("trace", f"{path}:shifted", "--only", "ops", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    kinds = {line.split()[1] for line in done.stdout.splitlines()[:-1]}
    assert kinds == {"op", "input"}


ERRORS = {
    "no such file": ("missing.py:f", None, "no such file: missing.py"),
    "no function": ("prog.py:g", "def f(x):\n    return x\n", "prog.py defines no g"),
    "no example_inputs": ("prog.py:f", "def f(x):\n    return x\n", "prog.py defines no example_inputs()"),
    "no FUNC in the spec": ("prog.py", "def f(x):\n    return x\n", "expected FILE.py:FUNC"),
    "not callable": ("prog.py:N", "N = 3\n", "N in prog.py is a int, not a function or module"),
    "inputs not a tuple": ("prog.py:f", "def f(x):\n    return x\ndef example_inputs():\n    return 3\n",
                           "example_inputs() must return a tuple of arguments"),
    "script fails": ("prog.py:f", "import no_such_module\n",
                     "importing prog.py failed: ModuleNotFoundError: No module named 'no_such_module'"),
}


@pytest.mark.parametrize("case", ERRORS)
def test_errors_are_one_clear_line_with_status_2(case, tmp_path):
    spec, text, message = ERRORS[case]
    if text is not None:
        script(tmp_path, text)
    done = magpy_cli("trace", spec, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(f"magpy trace: error: {message}"), done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_the_programs_own_error_is_one_line_at_its_line_with_status_1(tmp_path):
    script(tmp_path, "def f(x):\n    raise ValueError('bad input')\ndef example_inputs():\n    return (1,)\n")
    done = magpy_cli("explain", "prog.py:f", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == "magpy explain: f raised ValueError: bad input (prog.py:2)\n"


# ---- the script convention, in process ------------------------------------------------------------------

def test_example_inputs_as_a_tuple_are_positional_arguments(tmp_path):
    path = script(tmp_path, "def f(a, b):\n    return a\ndef example_inputs():\n    return (1, 2)\n", "pos.py")
    target = load(f"{path}:f")
    assert (target.args, target.kwargs) == ((1, 2), {})


def test_example_inputs_as_a_pair_are_arguments_and_keywords(tmp_path):
    path = script(tmp_path, "def f(a, b):\n    return a\ndef example_inputs():\n    return (1,), {'b': 2}\n",
                  "pair.py")
    target = load(f"{path}:f")
    assert (target.args, target.kwargs) == ((1,), {"b": 2})


def test_a_module_class_is_made_once_without_arguments(tmp_path):
    path = script(tmp_path, MODEL, "cls.py")
    target = load(f"{path}:Net")
    assert type(target.fn).__name__ == "Net"


def test_the_inputs_function_can_be_named(tmp_path):
    path = script(tmp_path, "def f(a):\n    return a\ndef small():\n    return (7,)\n", "named.py")
    assert load(f"{path}:f", inputs="small").args == (7,)
    with pytest.raises(ScriptError, match="defines no example_inputs"):
        load(f"{path}:f")
