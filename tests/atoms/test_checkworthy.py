"""Checkworthy atoms and abstentions (issue #25): the rules on a labelled list, the LLM
classifier against a real HTTP server (:class:`~fact_reasoner.llm.testing.ScriptedServer`), and
what ``--skip-uncheckable``, ``--abstention on`` and ``--gamma`` do to a record's scores, worked
by hand on records that carry their atoms, contexts and relations (no model)."""

from __future__ import annotations

import json
import math

import pytest

from fact_reasoner import FactReasoner, PipelineConfig
from fact_reasoner.atoms.checkworthy import (
    LLMAbstentionDetector,
    LLMClassifier,
    RuleAbstentionDetector,
    RuleClassifier,
    classify_by_rules,
)
from fact_reasoner.errors import RecordFailed
from fact_reasoner.llm.openai import OpenAICompatibleLLM
from fact_reasoner.llm.testing import ScriptedServer
from fact_reasoner.scores import summarize_rows

# (atom, checkworthy?) — written by hand; the uncheckable ones cover every kind of REASONS
LABELLED = [
    ("Jean Daullé was born in 1703.", True),
    ("Jean Daullé was a French engraver.", True),
    ("He trained under Laurent Cars in Paris.", True),
    ("He became a member of the Royal Academy in 1744.", True),
    ("His prints were collected throughout Europe.", True),
    ("She is widely regarded as one of the greatest sopranos of her time.", True),
    ("Critics praised his debut album.", True),
    ("He won the Ballon d'Or in 2008.", True),
    ("The film grossed $200 million worldwide.", True),
    ("She may be best known for her role in Friends.", False),
    ("He is considered a pioneer of electronic music.", True),
    ("She was married to the director in 1998.", True),
    ("He died in Lyon at the age of 62.", True),
    ("The album was released in May 2004.", True),
    ("His work influenced many later painters.", True),
    ("She served as the mayor of Toronto.", True),
    ("He is a truly talented musician.", False),
    ("Her performances are amazing.", False),
    ("She is a true inspiration to young athletes.", False),
    ("In my opinion, his later novels are his best.", False),
    ("His legacy will always be remembered.", False),
    ("He is one of the greatest footballers ever.", False),
    ("When was he born?", False),
    ("Did she win an Oscar?", False),
    ("He was probably born in the 1950s.", False),
    ("She might have studied in Vienna.", False),
    ("It is unclear whether he ever married.", False),
    ("I believe he was born in Chicago.", False),
    ("It seems that the band split in 1999.", False),
    ("Consult a doctor before taking the medication.", False),
    ("You should visit the museum if you are in Paris.", False),
    ("It is recommended to check the official website.", False),
    ("Please note that the dates may vary.", False),
    ("I hope this helps!", False),
    ("As an AI language model, I do not have personal opinions.", False),
    ("Let me know if you need more information.", False),
    ("My knowledge cutoff is September 2021.", False),
    ("I could not find more details about his early life.", False),
]


def test_the_rules_on_the_labelled_list():
    """Precision and recall of "uncheckable" over LABELLED: 23 uncheckable, 15 checkworthy.

    The rules find 23 of 23 (recall 1.0) and call no checkworthy atom uncheckable (precision
    1.0), reported opinions ("widely regarded as one of the greatest", "Critics praised")
    included. The list was written beside the rules, so this pins them (a pattern that breaks
    fails here); it is no measurement — that is experiments/results/checkworthy.md.
    """
    verdicts = RuleClassifier().classify([text for text, _ in LABELLED])
    truth_uncheckable = [not worthy for _, worthy in LABELLED]
    predicted = [not v.checkworthy for v in verdicts]
    tp = sum(p and t for p, t in zip(predicted, truth_uncheckable))
    fp = sum(p and not t for p, t in zip(predicted, truth_uncheckable))
    fn = sum(t and not p for p, t in zip(predicted, truth_uncheckable))
    wrong = [text for (text, _), p, t in zip(LABELLED, predicted, truth_uncheckable) if p != t]
    assert (tp, fp, fn) == (23, 0, 0), wrong
    assert all(v.reason for v in verdicts if not v.checkworthy)
    assert all(v.reason is None for v in verdicts if v.checkworthy)


@pytest.mark.parametrize(
    ("atom", "kind"),
    [
        ("Is he alive?", "question"),
        ("I hope this helps.", "about the response"),
        ("Consider reading his biography.", "instruction"),
        ("He possibly lived in Rome.", "hedge"),
        ("She is an amazing dancer.", "opinion"),
    ],
)
def test_each_reason_names_its_kind_and_the_words_that_showed_it(atom, kind):
    verdict = classify_by_rules(atom)
    assert not verdict.checkworthy and verdict.reason is not None and verdict.reason.startswith(kind)


ABSTENTIONS = [
    ("I'm sorry, but I could not find any information about Jean Daullé.", True),
    ("I could not find any information about this person. However, there is a painter named X.", True),
    ("I don't know who that is.", True),
    ("There is no information available about Kang Ji-hwan in my training data.", True),
    ("As of my knowledge cutoff in 2021, I have no information about him.", True),
    ("The search results do not provide information about her [1].", True),
    ("Could you please provide more context about who this is?", True),
    ("", True),
    ("Unfortunately, I was unable to find information on this person.", True),
    ("Jean Daullé (1703-1763) was a French engraver.", False),
    ("Kang Ji-hwan is a South Korean actor. I could not find his birth date.", False),
    ("She was born in 1950 and I don't know much else is said of her childhood.", False),
]


@pytest.mark.parametrize(("response", "abstains"), ABSTENTIONS)
def test_abstention_rules(response, abstains):
    """A response abstains iff its first sentence opens with a decline (FActScore's rule): a
    decline later in an answer that answers does not make it an abstention."""
    assert (RuleAbstentionDetector().abstention(response) is not None) is abstains


# -- the LLM classifier, against a real HTTP server -------------------------------------------

ATOMS = ["He was born in 1703.", "I hope this helps!"]
GOOD_REPLY = json.dumps(
    {
        "atoms": [
            {"id": 1, "checkworthy": True, "reason": "none"},
            {"id": 2, "checkworthy": False, "reason": "about the response"},
        ]
    }
)


def llm(server: ScriptedServer) -> OpenAICompatibleLLM:
    return OpenAICompatibleLLM("m", base_url=server.base_url, cache=None, max_retries=0, backoff=0.01)


def test_the_llm_classifier_asks_once_per_response_and_reads_every_verdict():
    with ScriptedServer([GOOD_REPLY]) as server:
        verdicts = LLMClassifier(llm(server)).classify(ATOMS, response="He was born in 1703. I hope this helps!")
    assert [v.checkworthy for v in verdicts] == [True, False]
    assert verdicts[1].reason == "about the response (llm)"
    assert len(server.requests) == 1  # both atoms in one call
    prompt = server.requests[0]["body"]["messages"][-1]["content"]
    assert "1. He was born in 1703." in prompt and "2. I hope this helps!" in prompt


@pytest.mark.parametrize(
    "bad",
    [
        "not json",
        json.dumps({"atoms": [{"id": 1, "checkworthy": True, "reason": "none"}]}),  # one verdict missing
        json.dumps({"atoms": [{"id": 1, "checkworthy": "yes", "reason": "none"}, {"id": 2, "checkworthy": True}]}),
        json.dumps({"atoms": [{"id": 1, "checkworthy": True, "reason": "none"}] * 2}),  # judged twice
        json.dumps(
            {
                "atoms": [
                    {"id": 1, "checkworthy": True, "reason": "none"},
                    {"id": 2, "checkworthy": False, "reason": "none"},  # uncheckable without a reason
                ]
            }
        ),
    ],
)
def test_an_unreadable_llm_reply_fails_the_record_instead_of_calling_atoms_checkworthy(bad):
    # every attempt (first, repair, one retry) gets the same unusable reply
    with ScriptedServer([bad]) as server:
        with pytest.raises(RecordFailed, match="checkworthy"):
            LLMClassifier(llm(server)).classify(ATOMS)
    assert len(server.requests) == 3


def test_a_reply_repaired_on_the_second_attempt_is_used():
    with ScriptedServer(["{oops", GOOD_REPLY]) as server:
        verdicts = LLMClassifier(llm(server)).classify(ATOMS)
    assert [v.checkworthy for v in verdicts] == [True, False] and len(server.requests) == 2


def test_a_server_that_fails_fails_the_record():
    with ScriptedServer([500]) as server:
        with pytest.raises(RecordFailed):
            LLMClassifier(llm(server)).classify(ATOMS)


def test_the_llm_abstention_detector():
    with ScriptedServer(['{"declines": true}', '{"declines": false}', "maybe"]) as server:
        detector = LLMAbstentionDetector(llm(server), retries=0)
        assert detector.abstention("I don't know.") == "declines (llm)"
        assert detector.abstention("He was a painter.") is None
        with pytest.raises(RecordFailed, match="abstention"):
            detector.abstention("Hm.")


# -- what the settings do to a record's scores -------------------------------------------------

# Four atoms. a0, a1 entailed by c0 (P ≈ 0.9 → S), a2 contradicted (NS), a3 an opinion with no
# relation (stays at the prior 0.5 → NS).
RECORD = {
    "input": "Tell me a bio of Ada Lovelace.",
    "output": "Ada Lovelace was a mathematician. She was born in 1815. She died in 1900. She is truly inspiring.",
    "atoms": [
        {"id": "a0", "text": "Ada Lovelace was a mathematician.", "label": "S"},
        {"id": "a1", "text": "Ada Lovelace was born in 1815.", "label": "S"},
        {"id": "a2", "text": "Ada Lovelace died in 1900.", "label": "NS"},
        {"id": "a3", "text": "Ada Lovelace is truly inspiring.", "label": "NS"},
    ],
    "contexts": [{"id": "c0", "text": "Ada Lovelace (1815-1852) was an English mathematician."}],
    "relations": [
        {"source": "c0", "target": "a0", "relation": "entailment", "probability": 0.9},
        {"source": "c0", "target": "a1", "relation": "entailment", "probability": 0.9},
        {"source": "c0", "target": "a2", "relation": "contradiction", "probability": 0.9},
    ],
}


def assess(record=RECORD, **settings):
    config = PipelineConfig(version=1, nli="precomputed", use_cache=False, k=3, **settings)
    return FactReasoner(config).assess(record).model_dump(mode="json")


def test_skip_uncheckable_leaves_the_opinion_out_of_precision_and_f1():
    """Without: S = 2 of n = 4, Pr = 0.5, R@3 = 2/3, F1@3 = 2·0.5·(2/3) / (0.5 + 2/3) = 4/7.
    With: a3 left out, S = 2 of n = 3, Pr = 2/3, R@3 = 2/3, F1@3 = 2/3; a3 stays in the output
    with checkworthy false and its reason, and the counter says one atom was left out."""
    before = assess()
    assert before["factuality_score"] == pytest.approx(0.5)
    assert before["f1_k"] == pytest.approx(4 / 7)
    assert "checkworthy" not in before["atoms"][0]  # the default output is unchanged
    after = assess(skip_uncheckable=True)
    assert after["factuality_score"] == pytest.approx(2 / 3)
    assert after["recall_k"] == pytest.approx(2 / 3)
    assert after["f1_k"] == pytest.approx(2 / 3)
    assert (after["num_atoms"], after["num_true_atoms"]) == (3, 2)
    opinion = after["atoms"][3]
    assert opinion["checkworthy"] is False and opinion["uncheckable_reason"].startswith("opinion")
    assert [a["checkworthy"] for a in after["atoms"][:3]] == [True, True, True]
    assert after["counters"]["uncheckable_atoms"] == 1
    # gold agreement over the scored atoms too: gold Pr 2/3 (a3's NS left out), not 2/4
    assert after["gold_factuality_score"] == pytest.approx(2 / 3)
    summary = summarize_rows([after])
    assert summary.num_uncheckable_atoms == 1 and summary.num_gold_atoms == 3
    assert summary.mae_factuality_score == pytest.approx(0.0)


def test_gamma_penalises_a_short_response_by_hand():
    """n = 4 atoms, γ = 10: penalty exp(1 − 10/4) = exp(−1.5) = 0.22313; Pr 0.5 → 0.11157.
    γ = 4 (n not below γ): penalty 1."""
    row = assess(gamma=10)
    assert row["length_penalty"] == pytest.approx(math.exp(-1.5))
    assert row["unpenalized_factuality_score"] == pytest.approx(0.5)
    assert row["factuality_score"] == pytest.approx(0.5 * 0.2231301601)
    assert assess(gamma=4)["factuality_score"] == pytest.approx(0.5)
    assert "length_penalty" not in assess()


def test_an_abstention_has_no_precision_and_the_summary_gives_the_respond_ratio():
    declined = {"input": "Tell me a bio of X.", "output": "I'm sorry, I could not find any information about X."}
    row_declined = assess(declined, abstention="on")
    assert row_declined["abstained"] is True and "sorry" in row_declined["abstention_reason"]
    assert row_declined["factuality_score"] is None and row_declined["f1_k"] is None
    assert row_declined["num_atoms"] == 0  # not atomized: no model was needed
    row_answer = assess(abstention="on")
    assert row_answer["abstained"] is False and row_answer["factuality_score"] == pytest.approx(0.5)
    summary = summarize_rows([row_answer, row_declined, row_answer])
    assert summary.num_abstained == 1
    assert summary.respond_ratio == pytest.approx(2 / 3)
    assert summary.mean_factuality_score == pytest.approx(0.5)  # over the responding records
    assert summary.num_records == 3
    assert summarize_rows([assess()]).respond_ratio is None  # detection off: not reported


def test_an_abstention_that_carries_atoms_keeps_their_verdicts_but_no_score():
    declined = dict(RECORD, output="I could not find any information about her. Ada was a mathematician.")
    row = assess(declined, abstention="on")
    assert row["abstained"] is True and row["factuality_score"] is None
    assert len(row["atoms"]) == 4
    assert summarize_rows([row]).num_gold_records == 0  # no precision to compare with gold


def test_settings_at_their_defaults_keep_the_resume_fingerprint():
    """Outputs written before these settings existed stay resumable; turning one on changes
    the fingerprint; the gate never enters it."""
    base = PipelineConfig().settings()
    assert "skip_uncheckable" not in base["scores"] and "gamma" not in base["scores"]
    assert PipelineConfig(skip_uncheckable=True).settings()["scores"]["skip_uncheckable"] is True
    assert PipelineConfig(abstention="on").settings()["scores"]["abstention"] == "on"
    assert PipelineConfig(fail_under={"factuality_score": 0.9}).settings() == base
