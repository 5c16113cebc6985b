"""The polarity pairs of the contradiction specialist (``experiments/nli_training/polarity.py``):
which sentences are negated and how, which are left alone, and the rows made of them."""

from __future__ import annotations

import random

import pytest

from experiments.nli_training.polarity import affirm, claims, negate, no_more_than, polarity_rows


@pytest.mark.parametrize(
    "sentence, negated",
    [
        ("The tower was completed in 1889.", "The tower was not completed in 1889."),
        ("Whales can hold their breath for an hour.", "Whales cannot hold their breath for an hour."),
        ("The film has been released on DVD.", "The film has not been released on DVD."),
        ("Paris hosted the games.", None),  # no auxiliary to negate
        ("The city has a large harbour.", None),  # "has not a large harbour" is not English
        ("The law is not only a rule.", None),  # already negative
        ("The plan is only a draft.", None),  # "is not only" would not negate it
        ("Is the sky blue.", None),  # the auxiliary opens the sentence
    ],
)
def test_negate_inserts_not_after_the_first_auxiliary_or_leaves_the_sentence(sentence, negated):
    got = negate(sentence, random.Random(0))
    if negated is None:
        assert got is None
    else:
        assert got == negated or got == negated.replace(" not ", " no longer ", 1)


def test_affirm_takes_out_a_not_that_negates_and_no_other():
    assert affirm("The film was not released in 2001.") == "The film was released in 2001."
    assert affirm("Owls cannot turn their heads fully.") == "Owls can turn their heads fully."
    assert affirm("The law is not only a rule.") is None
    assert affirm("It was not never seen.") is None  # still negative without it
    assert affirm("Nothing was lost.") is None


def test_no_more_than_reads_a_superlative():
    assert no_more_than("The Nile is the longest river in Africa.") == "No river in Africa is longer than the Nile."
    assert no_more_than("Rome was the largest city of the empire.") == "No city of the empire was larger than Rome."
    assert no_more_than("Ann is the best player.") == "No player is better than Ann."
    assert no_more_than("The Nile is a river.") is None


def test_rows_pair_each_polarity_change_with_the_same_polarity_and_leave_reserved_subjects_out():
    mix = {
        "train": [
            {"premise": "x", "hypothesis": "The bridge was opened in 1932.", "source": "fever_ggkorn"},
            {"premise": "x", "hypothesis": "The Great Wall was built by one emperor.", "source": "fever_ggkorn"},
            {"premise": "x", "hypothesis": "Owls are the quietest birds of prey.", "source": "scitail"},
            {"premise": "x", "hypothesis": "The river is long.", "source": "mnli_matched"},  # not a claim source
        ]
    }
    sentences = claims(mix, random.Random(0), 10)
    assert sorted(sentences) == ["Owls are the quietest birds of prey.", "The bridge was opened in 1932."]
    rows = polarity_rows(sentences, random.Random(0))
    contradictions = [r for r in rows if r["label"] == "contradiction"]
    same = [r for r in rows if r["source"] == "targeted_polarity_same"]
    assert len(same) == 6 and all(r["label"] == "entailment" for r in same)
    assert ("The bridge was opened in 1932.", "The bridge was not opened in 1932.") in {
        (r["premise"], r["hypothesis"]) for r in contradictions
    } or ("The bridge was opened in 1932.", "The bridge was no longer opened in 1932.") in {
        (r["premise"], r["hypothesis"]) for r in contradictions
    }
    readings = [r for r in rows if r["source"] == "targeted_no_more_than"]
    assert sorted(r["group"] for r in readings) == [
        "targeted:polarity:no … than to superlative",
        "targeted:polarity:superlative to no … than",
    ]
    assert all(r["split"] == "train" and r["group"].startswith("targeted:polarity:") for r in rows)
