"""``experiments.eval_rag_metrics``: the RAG metrics on labelled HaluBench rows, judged by the
shipped cross-encoder."""

from __future__ import annotations

import json

from experiments import eval_rag_metrics
from tests.experiments.test_behaviour import needs_shipped


@needs_shipped
def test_the_report_counts_the_pairs_the_judge_was_asked(tmp_path, monkeypatch):
    monkeypatch.setenv("FACT_REASONER_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "rag.json"
    argv = ["--halubench", "3", "--max-context-words", "300", "--atomizer", "sentence", "--nli", "cross-encoder"]
    eval_rag_metrics.main([*argv, "--out", str(out)])
    report = json.loads(out.read_text())
    assert report["nli"] == "cross-encoder"
    # an empty cache: every distinct pair asked was answered by the model, and some were asked
    assert report["nli_pairs"] >= report["nli_pairs_judged"] > 0
    eval_rag_metrics.main([*argv, "--out", str(out)])
    again = json.loads(out.read_text())
    # the second run is answered from the pair cache, with the same pairs asked
    assert (again["nli_pairs"], again["nli_pairs_judged"]) == (report["nli_pairs"], 0)
