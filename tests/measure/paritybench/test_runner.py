"""The ParityBench runner on a tiny fake checkout: scoring, dynamic files, crash and hang isolation, resuming.

Runs go through the ``run_paritybench`` fixture (conftest.py): a forked child of the test process runs the whole
runner and returns its JSON document and text report. The fake compilers "chaos" and "absent" live there too.
"""
from __future__ import annotations

import json
import sys
import textwrap

import pytest

from magpy.measure.paritybench import split_of
from magpy.measure.paritybench.corpus import Corpus

HEADER = """\
import sys
_module = sys.modules[__name__]
del sys
from _paritybench_helpers import _mock_config, patch_functional
import abc, collections, math, numpy, scipy, sklearn, tensorflow, torch, torchaudio, torchtext, torchvision
import os, time
from torch import nn
with open({log!r}, "a") as _log:
    _log.write(__name__ + "\\n")
"""

FILES = {
    "test_alpha.py": """
class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)
    def forward(self, x):
        return torch.relu(self.linear(x))

class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:                 # data-dependent: a graph break for a full-graph compiler
            return x + 1
        return x - 1

TESTCASES = [
    (Plain, lambda: ([], {}), lambda: ([torch.rand(2, 4)], {}), False),
    (Branchy, lambda: ([], {}), lambda: ([torch.rand(2, 4)], {}), False),
]
""",
    "test_beta.py": """
class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
    def forward(self, x):
        self.calls += 1
        return x * self.calls

class Plain(nn.Module):
    def forward(self, x):
        return x.sin()

class BadInit(nn.Module):
    def __init__(self):
        super().__init__()
        raise ValueError("needs a dataset")
    def forward(self, x):
        return x

TESTCASES = [
    (Counter, lambda: ([], {}), lambda: ([torch.rand(3)], {}), False),
    (Plain, lambda: ([], {}), lambda: ([torch.rand(3)], {}), False),
    (BadInit, lambda: ([], {}), lambda: ([torch.rand(3)], {}), False),
]
""",
    "test_crash.py": """
class Plain(nn.Module):
    def forward(self, x):
        return x * 2

class Abort(nn.Module):
    def forward(self, x):
        os._exit(9)                     # the whole worker dies in eager

class Tail(nn.Module):
    def forward(self, x):
        return x - 2

TESTCASES = [
    (Plain, lambda: ([], {}), lambda: ([torch.rand(3)], {}), False),
    (Abort, lambda: ([], {}), lambda: ([torch.rand(3)], {}), False),
    (Tail, lambda: ([], {}), lambda: ([torch.rand(3)], {}), False),
]
""",
    "test_hang.py": """
class Sleepy(nn.Module):
    def forward(self, x):
        time.sleep(60)
        return x

class Plain(nn.Module):
    def forward(self, x):
        return x.cos()

TESTCASES = [
    (Sleepy, lambda: ([], {}), lambda: ([torch.rand(3)], {}), False),
    (Plain, lambda: ([], {}), lambda: ([torch.rand(3)], {}), False),
]
""",
    "test_broken.py": """
raise RuntimeError("broken at import")
""",
    "test_empty.py": """
X = 1
""",
}

HELPERS = """\
class _mock_config(dict):
    __getattr__ = dict.__getitem__

def patch_functional():
    pass
"""


def _name_in(split: str, stem: str) -> str:
    return next(f"test_{stem}{i}.py" for i in range(1000) if split_of(f"test_{stem}{i}.py") == split)


@pytest.fixture
def tree(tmp_path):
    """A fake checkout: generated/ with the files above (all public) and one held-out file."""
    generated = tmp_path / "pb" / "generated"
    generated.mkdir(parents=True)
    log = tmp_path / "imports.log"
    (generated / "_paritybench_helpers.py").write_text(HELPERS)
    names = {}
    for name, body in FILES.items():
        public = name if split_of(name) == "public" else _name_in("public", name[5:-3])
        names[name] = public
        (generated / public).write_text(HEADER.format(log=str(log)) + textwrap.dedent(body))
    heldout = _name_in("heldout", "secret")
    (generated / heldout).write_text("raise SystemExit('a held-out file was opened')\n")
    return tmp_path, names, heldout, log


def _case(document: dict, file_name: str, name: str) -> dict:
    return next(c for c in document["cases"] if c["file"] == file_name and c["name"] == name)


pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the runner forks workers")


def test_split_is_the_salted_hash_of_the_name():
    import hashlib
    for name in ("test_a.py", "test_foo_bar.py", "test_1Konny_VIB_pytorch.py"):
        value = int(hashlib.sha256(("pb-split-v1:" + name).encode()).hexdigest(), 16) % 100
        assert split_of(name) == ("public" if value >= 30 else "heldout")


def test_selection_skips_heldout_files_by_default(tree):
    tmp_path, names, heldout, _ = tree
    corpus = Corpus.locate(str(tmp_path / "pb"))
    assert heldout not in corpus.select()
    assert sorted(corpus.select()) == sorted(names.values())
    assert corpus.select("heldout") == [heldout]
    assert corpus.select(limit=2) == sorted(names.values())[:2]


def test_fake_tree_is_scored_per_case_and_per_file_with_failures_isolated(tree, run_paritybench):
    tmp_path, names, heldout, log = tree
    document, text = run_paritybench(compilers=["dynamo", "absent"])
    score = document["score"]
    files = {f["file"]: f for f in document["files"]}
    assert heldout not in files and heldout not in open(log).read()
    assert files[names["test_broken.py"]]["status"] == "import_error"
    assert files[names["test_empty.py"]]["status"] == "empty"
    # crash and hang cost only their own case; the cases after them still ran
    assert _case(document, names["test_crash.py"], "Abort")["eager"]["status"] == "crash"
    assert _case(document, names["test_crash.py"], "Tail")["compiled"]["dynamo"]["status"] == "pass"
    assert _case(document, names["test_hang.py"], "Sleepy")["eager"]["status"] == "timeout"
    assert _case(document, names["test_hang.py"], "Plain")["compiled"]["dynamo"]["status"] == "pass"
    assert _case(document, names["test_alpha.py"], "Branchy")["compiled"]["dynamo"]["status"] == "break"
    assert _case(document, names["test_beta.py"], "BadInit")["eager"]["status"] == "init_error"
    counter = _case(document, names["test_beta.py"], "Counter")
    assert counter["eager"]["dynamic"] and counter["compiled"]["dynamo"]["status"] == "pass"
    # scoring: 7 cases run in eager (one dynamic); alpha fails (a break), beta is the one dynamic file
    assert (score["cases_eager_ok"], score["cases_dynamic"]) == (7, 1)
    assert (score["files_static"], score["files_dynamic"], score["files_import_error"]) == (3, 1, 1)
    dynamo = score["compilers"]["dynamo"]
    assert (dynamo["cases_full_graph"], dynamo["cases_match"]) == (6, 6)
    assert (dynamo["static_files_pass"], dynamo["dynamic_files_pass"]) == (2, 1)
    assert dynamo["reasons"][0]["status"] == "break"
    assert files[names["test_alpha.py"]]["dynamo"] is False and files[names["test_hang.py"]]["dynamo"] is True
    assert "static files: all cases pass" in text and "2/3" in text
    assert document["score"]["compilers"]["absent"]["unavailable"] == "ImportError: not installed here"
    assert "Absent unavailable: ImportError: not installed here" in text


def test_rerun_skips_done_files_and_redoes_an_unfinished_one(tree, run_paritybench):
    tmp_path, names, _, log = tree
    first, _ = run_paritybench(only=["alpha", "beta", "empty"])
    imports = open(log).read().split()
    assert sorted(imports) == sorted(name[:-3] for key, name in names.items() if key in
                                     ("test_alpha.py", "test_beta.py", "test_empty.py"))
    # the run stopped inside beta: its file line is missing, one case line too, and the last line is torn
    state = tmp_path / "state.jsonl"
    lines = [json.loads(line) for line in state.read_text().splitlines()]
    kept = [r for r in lines if not (r.get("file") == names["test_beta.py"] and
                                     (r["kind"] == "file" or r.get("index") == 1))]
    state.write_text("".join(json.dumps(r) + "\n" for r in kept) + '{"kind": "case", "file": "torn')
    second, _ = run_paritybench(only=["alpha", "beta", "empty"])
    assert open(log).read().split() == imports + [names["test_beta.py"][:-3]]   # only beta ran again
    assert second["score"] == first["score"]
    assert len(second["cases"]) == len(first["cases"])
    # a compiler added later runs alone on the files already done; the earlier records stay
    third, _ = run_paritybench(only=["alpha"], compilers=["dynamo", "chaos"])
    assert open(log).read().split() == imports + [names["test_beta.py"][:-3], names["test_alpha.py"][:-3]]
    alpha = [c for c in first["cases"] if c["file"] == names["test_alpha.py"]]
    assert [c["compiled"]["dynamo"] for c in third["cases"]] == [c["compiled"]["dynamo"] for c in alpha]
    assert [c["compiled"]["chaos"]["status"] for c in third["cases"]] == ["pass", "pass"]


def test_a_compiler_crash_or_hang_costs_only_that_compiler_on_that_case(tmp_path, run_paritybench):
    generated = tmp_path / "pb" / "generated"
    generated.mkdir(parents=True)
    (generated / "_paritybench_helpers.py").write_text(HELPERS)
    body = HEADER.format(log=str(tmp_path / "imports.log")) + textwrap.dedent("""
        class Plain(nn.Module):
            def forward(self, x):
                return x + 1
        class CrashWhenCompiled(Plain):
            pass
        class HangWhenCompiled(Plain):
            pass
        TESTCASES = [(cls, lambda: ([], {}), lambda: ([torch.rand(2)], {}), False)
                     for cls in (Plain, CrashWhenCompiled, HangWhenCompiled, Plain)]
    """)
    name = _name_in("public", "chaos")
    (generated / name).write_text(body)
    document, text = run_paritybench(compilers=["chaos", "dynamo"], jobs=1)
    chaos = [c["compiled"]["chaos"]["status"] for c in document["cases"]]
    dynamo = [c["compiled"]["dynamo"]["status"] for c in document["cases"]]
    assert chaos == ["pass", "crash", "timeout", "pass"]
    assert dynamo == ["pass"] * 4                   # dynamo still ran on the cases chaos lost
    assert open(tmp_path / "imports.log").read().split().count(name[:-3]) == 3   # 1 worker + 2 restarts
    assert "crash in chaos" in text and "timeout in chaos" in text
