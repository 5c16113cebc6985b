"""The NLI cross-encoder shipped in the package: its files, its size, and what it judges —
through ONNX Runtime and tokenizers only, in a process where torch cannot be imported."""

from __future__ import annotations

import json

import pytest

from fact_reasoner.nli.cross_encoder import shipped_model_path
from tests.helpers import require_extra
from tests.project.test_lean_install import _run_without_torch

pytestmark = pytest.mark.skipif(
    not (shipped_model_path() / "model.onnx").is_file(), reason="the shipped NLI model is not in this checkout"
)

PREMISE = (
    "Marie Curie (born 7 November 1867 in Warsaw) was a Polish and naturalised-French physicist "
    "and chemist who conducted pioneering research on radioactivity. She was the first woman "
    "to win a Nobel Prize."
)


def test_files_size_and_settings():
    folder = shipped_model_path()
    for name in ("model.onnx", "tokenizer.json", "config.json", "MODEL_CARD.md"):
        assert (folder / name).is_file(), name
    assert (folder / "model.onnx").stat().st_size <= 50 * 1024 * 1024
    config = json.loads((folder / "config.json").read_text())
    assert {int(k): v for k, v in config["id2label"].items()} == {0: "entailment", 1: "neutral", 2: "contradiction"}
    assert config["fact_reasoner"]["max_length"] == 128 and config["fact_reasoner"]["max_windows"] == 1


def test_judges_obvious_pairs_without_torch(tmp_path):
    """Entailed, negated and unrelated claims about one passage: the arg-max label of each, and
    the backend's defaults (window and window count) taken from the shipped config."""
    require_extra("embeddings")  # what the [nli] extra installs
    result = _run_without_torch(
        f"""
        import json
        from fact_reasoner.nli.cross_encoder import CrossEncoderNLI
        nli = CrossEncoderNLI()
        premise = {PREMISE!r}
        pairs = [(premise, "Marie Curie was born in Warsaw."),
                 (premise, "Marie Curie was born in Paris."),
                 (premise, "Marie Curie played professional basketball in Chicago.")]
        judged = nli.judge(pairs)
        print(json.dumps({{"labels": [j.label.value for j in judged],
                          "probabilities": [j.probabilities for j in judged],
                          "max_length": nli.max_length, "max_windows": nli.max_windows,
                          "runtime": nli.runtime}}))
        """,
        tmp_path,
    )
    assert result["runtime"] == "onnx" and result["max_length"] == 128 and result["max_windows"] == 1
    entailed, contradicted, unrelated = result["probabilities"]
    for p in result["probabilities"]:
        assert sum(p.values()) == pytest.approx(1.0)
    assert result["labels"][0] == "entailment"
    assert result["labels"][1] == "contradiction"
    assert result["labels"][2] != "entailment"
    assert entailed["entailment"] > unrelated["entailment"] and entailed["entailment"] > contradicted["entailment"]
