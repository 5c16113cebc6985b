"""The NLI model shipped in the package loads offline and gets obvious pairs right."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
pytest.importorskip("torch")
pytest.importorskip("transformers")

from fact_reasoner.nli.cross_encoder import CrossEncoderNLI, shipped_model_path  # noqa: E402

pytestmark = pytest.mark.skipif(
    not (shipped_model_path() / "model.safetensors").exists(), reason="shipped NLI model not present"
)


@pytest.fixture(scope="module")
def shipped():
    return CrossEncoderNLI()


def test_shipped_model_files_and_size():
    folder = shipped_model_path()
    for name in ("config.json", "model.safetensors", "tokenizer.json", "MODEL_CARD.md"):
        assert (folder / name).exists(), name
    assert (folder / "model.safetensors").stat().st_size <= 50 * 1024 * 1024


def test_shipped_model_label_order(shipped):
    assert sorted(shipped.label_names) == ["contradiction", "entailment", "neutral"]


def test_shipped_model_ranks_and_normalises(shipped):
    """What the shipped model does reliably (it is weak: see MODEL_CARD.md).

    Probabilities are a distribution; an entailed atom gets more entailment than an unrelated
    one; a negated copy of a stated fact is a contradiction.
    """
    premise = (
        "Marie Curie (born 7 November 1867 in Warsaw) was a Polish and naturalised-French physicist "
        "and chemist who conducted pioneering research on radioactivity. She was the first woman "
        "to win a Nobel Prize."
    )
    entailed = "Marie Curie was a physicist."
    negated = "Marie Curie was not a physicist."
    unrelated = "Marie Curie played professional basketball in Chicago."
    e, c, n = shipped.judge([(premise, entailed), (premise, negated), (premise, unrelated)])
    for j in (e, c, n):
        assert not j.failed
        assert sum(j.probabilities.values()) == pytest.approx(1.0)
    assert e.probabilities["entailment"] > n.probabilities["entailment"]
    assert c.label.value == "contradiction"
    assert c.probabilities["contradiction"] > e.probabilities["contradiction"]
