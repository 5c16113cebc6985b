"""The behavioural suite for NLI judges (``experiments.behaviour``): its two parts are
disjoint, its items say what they claim, its scoring counts what it says — and the shipped
cross-encoder is held to it on a fast subset."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from experiments import behaviour
from experiments.behaviour import CAPABILITIES, Item, ItemResult
from fact_reasoner.nli.base import NLIJudgement
from fact_reasoner.nli.cross_encoder import shipped_model_path
from fact_reasoner.schema import RelationType
from tests.helpers import REPO_ROOT

FACTSCORE = REPO_ROOT.parent / "shared" / "data" / "factscore_bios_dev"
needs_factscore = pytest.mark.skipif(
    not (FACTSCORE / "topic_passages_dev.json").is_file(), reason=f"shared data absent: {FACTSCORE}"
)
needs_shipped = pytest.mark.skipif(
    not (shipped_model_path() / "model.onnx").is_file(), reason="the shipped NLI model is not in this checkout"
)


@pytest.fixture(scope="module")
def suite():
    return behaviour.load_suite()


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def test_parts_have_different_templates_and_people(suite):
    train, held = suite["parts"]["train"], suite["parts"]["heldout"]
    # premises are worded differently; a claim may have the same form in both parts ("NAME was
    # born in YEAR." is what atoms look like), never against the same premise
    assert not {t["premise"] for t in train["templates"]} & {t["premise"] for t in held["templates"]}
    assert not {t["id"] for t in train["templates"]} & {t["id"] for t in held["templates"]}
    assert not {p["name"] for p in train["people"]} & {p["name"] for p in held["people"]}
    assert not {p["short"] for p in train["people"]} & {p["short"] for p in held["people"]}
    assert not {c["country"] for c in train["countries"]} & {c["country"] for c in held["countries"]}
    assert not set(train["relatives"]) & set(held["relatives"])
    # every capability is tested in both parts, by templates of its own
    for part in (train, held):
        assert {t["capability"] for t in part["templates"]} == set(CAPABILITIES)


def test_template_items_are_filled_and_deterministic(suite):
    for part in ("train", "heldout"):
        items = behaviour.template_items(part, suite=suite)
        assert items == behaviour.template_items(part, suite=suite)
        assert len(items) > 300
        for item in items:
            assert "{" not in item.premise + item.hypothesis, item
            assert item.premise != item.hypothesis or item.variant == "identical"
        counts = Counter(i.capability for i in items)
        assert all(counts[c] >= 40 for c in CAPABILITIES), counts


def test_substitutes_differ_from_the_fact(suite):
    """A substitution claim never repeats the premise's value (else its label would be wrong)."""
    for item in behaviour.template_items("heldout", suite=suite):
        if item.capability != "substitution":
            continue
        years_p = set(re.findall(r"\b1\d{3}|20\d\d\b", item.premise))
        years_h = set(re.findall(r"\b1\d{3}|20\d\d\b", item.hypothesis))
        if item.variant == "year":
            assert years_h and not years_h <= years_p, item
        else:
            assert not _words(item.hypothesis) <= _words(item.premise), item


def test_other_nationality_is_from_another_group():
    import random

    rng = random.Random(0)
    for _ in range(200):
        assert behaviour.other_nationality("Scottish", rng) not in ("English", "British", "Welsh", "Scottish")
    assert behaviour.with_article("Ukrainian engineer") == "a Ukrainian engineer"
    assert behaviour.with_article("English physician") == "an English physician"


def test_heldout_names_cover_people_relatives_and_topics(suite):
    names = behaviour.heldout_names(suite)
    assert {"Alexander Fleming", "Marie Curie", "Greta Holloway", "Owen Wright"} - names == {"Owen Wright"}
    assert "Chadwick Boseman" in names and "Osama bin Laden" in names


@needs_factscore
def test_heldout_topics_are_the_training_mix_split(suite):
    """The suite's held-out FActScore topics are exactly those the training mix holds out."""
    from experiments.nli_training.data import factscore_topic_split
    from experiments.nli_training.mix import HERE

    config = json.loads((HERE / "mix.json").read_text())
    _, held = factscore_topic_split(
        REPO_ROOT.parent / "shared" / "data", config["seed"], config["factscore_held_fraction"]
    )
    assert set(suite["factscore_heldout_topics"]) == held


@needs_factscore
def test_passage_items_follow_the_topic_split(suite):
    held_topics = set(suite["factscore_heldout_topics"])
    for part in ("train", "heldout"):
        items = behaviour.passage_items(part, FACTSCORE, suite=suite)
        topics = {i.source.removeprefix("passage:") for i in items}
        assert topics and (topics <= held_topics if part == "heldout" else not topics & held_topics)
        counts = Counter(i.capability for i in items)
        assert {"word_for_word", "part", "substitution", "negation", "role_swap", "other_attribute"} <= set(counts)
        for item in items:
            if item.capability == "word_for_word":
                assert item.hypothesis in item.premise
            if item.capability == "other_attribute":
                year = re.search(r"born in (\d{4})", item.hypothesis).group(1)
                assert year not in item.premise and "born" not in item.premise.lower()
            if item.capability == "negation":
                # the premise holds the sentence the claim negates
                assert " not " in item.hypothesis and item.hypothesis.replace(" not ", " ", 1) in item.premise


def test_passage_sentences_and_names():
    text = (
        "<s>Ann Roe Ann Roe (born 3 May 1950) is an Irish poet.</s><s>Career.:Early. Roe was a teacher. She left.</s>"
    )
    assert behaviour.passage_sentences(text) == [
        "Ann Roe Ann Roe (born 3 May 1950) is an Irish poet.",
        "Career.:Early.",
        "Roe was a teacher.",
        "She left.",
    ]
    assert behaviour.display_name("Owen Wright (surfer)") == "Owen Wright"
    assert behaviour.display_name("Rennie Fritchie, Baroness Fritchie") == "Rennie Fritchie"


class _Fixed:
    """A judge that gives every pair one label (or fails), to check the scoring."""

    name = "fixed"

    def __init__(self, label: str | None):
        self.label = label

    def judge(self, pairs):
        if self.label is None:
            return [NLIJudgement.failure("no model") for _ in pairs]
        probabilities = {k: 0.1 for k in ("entailment", "neutral", "contradiction")} | {self.label: 0.8}
        return [NLIJudgement(RelationType(self.label), 0.8, probabilities) for _ in pairs]


def test_scoring_counts_labels_per_capability(suite):
    items = behaviour.fast_subset(behaviour.template_items("heldout", suite=suite), 10)
    assert Counter(i.capability for i in items) == {c: 10 for c in CAPABILITIES}
    score = behaviour.score_results(behaviour.judge_items(_Fixed("entailment"), items, chunk=7))
    accuracy = {c.capability.name: c.total.accuracy for c in score.capabilities}
    assert accuracy["word_for_word"] == accuracy["paraphrase"] == accuracy["part"] == 1.0
    assert accuracy["role_swap"] == accuracy["substitution"] == accuracy["other_attribute"] == 0.0
    assert score.spurious_contradiction == 0.0 and not score.passed
    wrong = {c.capability.name: c.total.wrong_label for c in score.capabilities}
    assert wrong["negation"] == "entailment" and wrong["word_for_word"] is None

    contradicting = behaviour.score_results(behaviour.judge_items(_Fixed("contradiction"), items))
    assert contradicting.spurious_contradiction == 1.0
    accuracy = {c.capability.name: c.total.accuracy for c in contradicting.capabilities}
    assert accuracy["role_swap"] == accuracy["substitution"] == accuracy["negation"] == 1.0


def test_failed_judgements_count_as_wrong_never_neutral(suite):
    items = behaviour.fast_subset(behaviour.template_items("heldout", suite=suite), 3)
    score = behaviour.score_results(behaviour.judge_items(_Fixed(None), items))
    assert score.failed == len(items)
    assert all(c.total.accuracy == 0.0 and c.total.wrong_label == "failed" for c in score.capabilities)
    assert not score.passed
    assert "judgement(s) failed" in behaviour.format_report(score)


def test_report_names_every_capability_and_verdict():
    item = Item("hedged", "v", "A may be B.", "A is B.", "heldout", "t")
    score = behaviour.score_results([ItemResult(item, "neutral"), ItemResult(item, "entailment")])
    text = behaviour.format_report(score, "title")
    assert "hedged" in text and "0.500" in text and "FAIL" in text
    assert score.as_dict()["capabilities"]["hedged"]["accuracy"] == 0.5


# --------------------------------------------------------------------------- the shipped model

#: the fast subset the test suite runs: held-out template items (package data, so it runs
#: without ../shared), at most this many per capability
FAST_PER_CAPABILITY = 20

#: What the shipped model (version 3) scores on that subset, measured 2026-11-26 on this
#: machine (1.00 1.00 1.00 0.00 0.80 0.55 0.20 0.00 0.00; spurious contradictions 0.267) (held-out template items, 20 per capability), less one item (0.05) for differences
#: between CPUs in int8 arithmetic. Version 3 misses most of the suite's thresholds (see its
#: MODEL_CARD.md), so this test guards against a regression from what ships; the thresholds
#: themselves are the next test, marked as expected to fail until a model meeting them ships —
#: strict, so the day it passes it fails and this table must be replaced by the thresholds.
SHIPPED_FLOORS = {
    "word_for_word": 0.95,
    "paraphrase": 0.95,
    "part": 0.95,
    "role_swap": 0.0,
    "substitution": 0.75,
    "negation": 0.50,
    "other_attribute": 0.15,
    "someone_else": 0.0,
    "hedged": 0.0,
}
#: the largest share of neutral items version 3 calls contradiction on the subset (plus 0.05)
SHIPPED_SPURIOUS_CEILING = 0.32


@pytest.fixture(scope="module")
def shipped_score():
    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI

    items = behaviour.fast_subset(behaviour.template_items("heldout"), FAST_PER_CAPABILITY)
    return behaviour.score_results(behaviour.judge_items(CrossEncoderNLI(), items))


@needs_shipped
def test_shipped_model_keeps_its_floors(shipped_score):
    accuracy = {c.capability.name: c.total.accuracy for c in shipped_score.capabilities}
    assert set(accuracy) == set(SHIPPED_FLOORS)
    below = {name: round(accuracy[name], 3) for name, floor in SHIPPED_FLOORS.items() if accuracy[name] < floor}
    assert not below, f"capabilities below the shipped model's floor: {below}"
    assert shipped_score.spurious_contradiction is not None
    assert shipped_score.spurious_contradiction <= SHIPPED_SPURIOUS_CEILING


@needs_shipped
@pytest.mark.xfail(strict=True, reason="version 3 misses the thresholds (MODEL_CARD.md, 'Behavioural suite')")
def test_shipped_model_meets_thresholds(shipped_score):
    missed = {c.capability.name: round(c.total.accuracy, 3) for c in shipped_score.capabilities if not c.passed}
    assert not missed, f"below threshold: {missed}"
    assert shipped_score.spurious_contradiction <= behaviour.SPURIOUS_CONTRADICTION_LIMIT


@needs_shipped
def test_command_prints_tables_and_writes_json(tmp_path, capsys):
    out = tmp_path / "suite.json"
    status = behaviour.main(
        [
            "--nli",
            "cross-encoder",
            "--no-passages",
            "--per-capability",
            "2",
            "--json",
            str(out),
            "--quiet",
            "--no-cache",
        ]
    )
    printed = capsys.readouterr().out
    assert "summary" in printed and "spurious contra." in printed and "overall:" in printed
    report = json.loads(out.read_text())
    assert status == (0 if report["parts"]["heldout"]["passed"] else 1)
    assert len(report["items"]) == 2 * len(CAPABILITIES)
    assert report["judge"].startswith("cross-encoder:")


def test_command_rejects_a_missing_factscore_dir(tmp_path):
    with pytest.raises(SystemExit) as stopped:
        behaviour.main(["--factscore-dir", str(tmp_path), "--quiet"])
    assert stopped.value.code == 2


def test_module_docstring_lists_every_capability_and_threshold():
    doc = behaviour.__doc__ or ""
    for capability in CAPABILITIES.values():
        assert capability.name in doc
        assert f"≥ {capability.threshold:.2f}" in doc
    assert Path(behaviour.SUITE_FILE).is_file()


def test_through_the_graph_an_item_counts_only_as_the_factor_it_would_be():
    """The ship rule's view: the floor makes a weak label neutral, a contradiction about another
    attribute is no factor, and with ``entailments same-subject`` neither is an entailment from a
    passage about someone else; a failed judgement stays failed."""
    from fact_reasoner.settings.graph_options import GraphOptions

    def result(capability: str, premise: str, claim: str, label: str, p: float) -> ItemResult:
        rest = (1 - p) / 2
        probabilities = {"entailment": rest, "neutral": rest, "contradiction": rest} | {label: p}
        return ItemResult(Item(capability, "v", premise, claim, "heldout", "t"), label, probabilities)

    results = [
        result("part", "Ada Lovelace was born in London in 1815.", "Ada Lovelace was born in 1815.", "entailment", 0.9),
        result(
            "part", "Ada Lovelace was born in London in 1815.", "Ada Lovelace was born in 1815.", "entailment", 0.45
        ),
        result(
            "other_attribute",
            "Albert Einstein died in Princeton in 1955.",
            "Albert Einstein was born in 1879.",
            "contradiction",
            0.8,
        ),
        result(
            "substitution",
            "Albert Einstein was born in Ulm in 1879.",
            "Albert Einstein was born in 1880.",
            "contradiction",
            0.8,
        ),
        result(
            "role_swap",
            "Penicillin was discovered by Alexander Fleming.",
            "Marie Curie discovered penicillin.",
            "entailment",
            0.88,
        ),
        ItemResult(Item("negation", "v", "a", "b", "heldout", "t"), "failed", {}, "model error"),
    ]
    graphed = behaviour.through_graph(results)  # the default graph: same-subject entailments
    assert [g.label for g in graphed] == ["entailment", "neutral", "neutral", "contradiction", "neutral", "failed"]
    assert graphed[1].reason == "below the floor" and graphed[2].reason == "another attribute"
    assert graphed[4].reason == "the passage never names Marie Curie"
    anyone = behaviour.through_graph(results, GraphOptions(entailments="any"))
    assert anyone[4].label == "entailment" and anyone[4].reason is None
    score = behaviour.score_results(graphed)
    assert {c.capability.name: c.total.accuracy for c in score.capabilities}["part"] == 0.5
