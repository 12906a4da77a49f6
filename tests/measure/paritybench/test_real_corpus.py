"""The runner on the real ParityBench checkout, when one is present (MAGPY_PARITYBENCH, default /work/paritybench)."""
from __future__ import annotations

import os

import pytest

from magpy.measure.paritybench.corpus import Corpus

REAL_CORPUS = os.environ.get("MAGPY_PARITYBENCH", "/work/paritybench")


@pytest.mark.skipif(not os.path.isdir(os.path.join(REAL_CORPUS, "generated")),
                    reason="no ParityBench checkout (set MAGPY_PARITYBENCH)")
def test_real_corpus_file_runs_under_dynamo(run_paritybench):
    corpus = Corpus.locate(REAL_CORPUS)
    name = "test_4uiiurz1_pytorch_auto_augment.py"
    if name not in corpus.select():
        pytest.skip(f"{name} is not in this checkout's public split")
    document, _ = run_paritybench(path=REAL_CORPUS, only=[name], timeout=120.0)
    assert document["files"][0]["file"] == name
    assert document["score"]["cases_eager_ok"] >= 1
    assert document["score"]["compilers"]["dynamo"]["cases_match"] >= 1
