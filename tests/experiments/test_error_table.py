"""experiments/error_table.py's classes on hand-made atoms and rows, and sentence_reading's units."""

from __future__ import annotations

import pytest

from experiments import error_table as et
from experiments import sentence_reading as sr


def _atom(text: str, label: str, prediction: str, evidence=(), unused=None, probability=0.5) -> dict:
    return {
        "id": "a0",
        "text": text,
        "label": label,
        "prediction": prediction,
        "probability": probability,
        "evidence": list(evidence),
        "unused_evidence": unused,
    }


def _passage(text: str, title: str = "Edmund Hillary", cid: str = "c0") -> dict:
    return {"id": cid, "title": title, "text": text}


HILLARY = "Edmund Hillary"


def _sub(text: str, passages: list[dict], topic: str = HILLARY, **atom) -> str | None:
    verdict = et.classify_error(_atom(text, "S", "NS", **atom), topic, passages)
    assert verdict is not None and verdict[0] == et.NO_EVIDENCE
    return verdict[1]


def test_right_and_unlabelled_atoms_are_no_error() -> None:
    passages = [_passage("Edmund Hillary died in 2008.")]
    assert et.classify_error(_atom("Edmund Hillary died in 2008.", "S", "S"), HILLARY, passages) is None
    assert et.classify_error(_atom("Edmund Hillary died in 2008.", "IR", "NS"), HILLARY, passages) is None
    assert et.classify_error(_atom("Edmund Hillary died in 2008.", None, "NS"), HILLARY, passages) is None


def test_false_contradiction_and_false_entailment() -> None:
    passages = [_passage("Edmund Hillary died in Auckland in 2008.")]
    contradicted = _atom(
        "Edmund Hillary died in 2008.",
        "S",
        "NS",
        evidence=[{"context": "c0", "relation": "contradiction", "probability": 0.8}],
        probability=0.2,
    )
    kind, _, details = et.classify_error(contradicted, HILLARY, passages)
    assert kind == et.FALSE_CONTRADICTION and details["contradiction"]["probability"] == 0.8
    entailed = _atom(
        "Edmund Hillary died in Wellington in 2008.",
        "NS",
        "S",
        evidence=[{"context": "c0", "relation": "entailment", "probability": 0.7}],
        probability=0.8,
    )
    kind, sub, details = et.classify_error(entailed, HILLARY, passages)
    assert (kind, sub) == (et.FALSE_ENTAILMENT, et.VALUE_MISSING)
    assert details["best"]["values_missing"] == ("wellington",)
    near = dict(entailed, text="Edmund Hillary died in Auckland.")
    assert et.classify_error(near, HILLARY, passages)[1] == et.NEAR_MISS


def test_graph_rule_comes_first_and_keeps_what_the_words_say() -> None:
    unused = [{"context": "c0", "relation": "entailment", "probability": 0.45, "reason": "below the floor"}]
    passages = [_passage("Edmund Hillary was a mountaineer. Hillary died in Auckland in 2008.")]
    kind, sub, details = et.classify_error(
        _atom("Edmund Hillary died in 2008.", "S", "NS", unused=unused), HILLARY, passages
    )
    assert (kind, sub, details["rule"]) == (et.NO_EVIDENCE, et.GRAPH_RULE, "below the floor")
    assert details["text_class"] == et.PARAPHRASE
    # a set-aside contradiction is no graph rule for a missed entailment
    contra = [{"context": "c0", "relation": "contradiction", "probability": 0.6, "reason": "another attribute"}]
    assert _sub("Edmund Hillary died in 2008.", passages, unused=contra) == et.PARAPHRASE


def test_what_the_passages_words_say() -> None:
    mountaineer = _passage("Edmund Hillary was a mountaineer from New Zealand. He climbed Everest in 1953.")
    assert _sub("Edmund Hillary was born in Auckland.", [mountaineer]) == et.LACKS
    assert _sub("Edmund Hillary was a highly respected mountaineer.", [mountaineer]) == et.EVALUATIVE_CLAIM
    assert _sub("Edmund Hillary climbed numerous mountains.", [mountaineer]) == et.EVALUATIVE_CLAIM
    assert _sub("Edmund Hillary climbed over five mountains.", [mountaineer]) == et.EVALUATIVE_CLAIM
    # a number in no passage: the passages lack it, count or not
    assert _sub("Edmund Hillary climbed over 20 mountains.", [mountaineer]) == et.LACKS
    born = _passage("Edmund Hillary was born in Chicago in 1919.")
    assert _sub("Edmund Hillary was American.", [born]) == et.WORLD_KNOWLEDGE
    assert _sub("Edmund Hillary was French.", [_passage("Edmund Hillary climbed Everest.")]) == et.LACKS
    decade = _passage("Edmund Hillary climbed Everest in 1953.")
    assert _sub("Edmund Hillary climbed Everest in the 1950s.", [decade]) == et.WORLD_KNOWLEDGE
    # the words are there and name the subject: the judge missed it
    assert _sub("Edmund Hillary climbed Everest in 1953.", [decade]) == et.PARAPHRASE
    # "Ph.D." and "PhD" are one word; "retired" and "retirement" too
    phd = _passage("Edmund Hillary was a mountaineer. In 1960 he obtained a Ph.D. in geology.")
    assert _sub("He holds a PhD.", [phd]) == et.PARAPHRASE
    assert _sub("He retired.", [_passage("Edmund Hillary announced his retirement.")]) == et.PARAPHRASE


def test_the_subject_in_a_pronoun_a_title_or_another_person() -> None:
    named_earlier = _passage("Edmund Hillary was a mountaineer. He died in Auckland in 2008.")
    assert _sub("Edmund Hillary died in Auckland in 2008.", [named_earlier]) == et.PRONOUN
    title_only = _passage("He was a mountaineer. He died in Auckland in 2008.")
    assert _sub("Edmund Hillary died in Auckland in 2008.", [title_only]) == et.TITLE_ONLY
    # an atom that opens with a pronoun cannot tell a pronoun from the name
    assert _sub("He died in Auckland in 2008.", [title_only]) == et.PARAPHRASE
    other = _passage("Edmund Hillary climbed Everest. Tenzing Norgay was born in Khumbu.")
    assert _sub("Edmund Hillary was born in Khumbu.", [other]) == et.ANOTHER_SUBJECT
    relative = _passage("Edmund Hillary climbed Everest. His father ran a bee farm in Tuakau.")
    assert _sub("Edmund Hillary ran a bee farm in Tuakau.", [relative]) == et.ANOTHER_SUBJECT


def test_values_are_phrases_and_exclude_the_subject() -> None:
    subject = et.subject_words("Annika Sörenstam", "Annika Sörenstam founded the ANNIKA Foundation.")
    assert et.atom_values("Annika Sörenstam and Joey D. Vieira met.", subject) == ["joey d vieira"]
    assert et.atom_values("He met Annika Sörenstam.", subject) == []
    assert et.atom_values("Annika Sörenstam founded the ANNIKA Foundation in 2008.", subject) == [
        "annika foundation",
        "2008",
    ]
    assert et.holds_value("annika foundation", "She runs the ANNIKA Foundation.")
    assert not et.holds_value("annika foundation", "The ANNIKA Academy and the Make-A-Wish Foundation.")
    # an atom about something else keeps its subject as content
    assert "weir" not in et.subject_words("Robert Smith", "The Weir Group is an engineering company.")


def _row(line: int, atoms: list[dict], predicted: float, gold: float) -> dict:
    return {
        "source_line": line,
        "topic": HILLARY,
        "atoms": atoms,
        "factuality_score": predicted,
        "gold_factuality_score": gold,
    }


def test_rows_measures_compare_and_agreement() -> None:
    records = [
        {
            "topic": HILLARY,
            "contexts": [_passage("Edmund Hillary died in 2008."), _passage("Edmund Hillary died in 2008.", cid="c1")],
        }
    ]
    assert [c["id"] for c in et.record_contexts(records[0])] == ["c0"]
    good = dict(_atom("Edmund Hillary died in 2008.", "S", "S"), id="a1")
    missed = dict(_atom("Edmund Hillary died in Auckland.", "S", "NS"), id="a2")
    wrong = dict(_atom("Edmund Hillary was French.", "NS", "NS"), id="a3")
    rows = [_row(1, [good, missed, wrong], predicted=0.5, gold=0.75)]
    errors = et.classify_rows(rows, records)
    assert [e["key"] for e in errors] == [f"{HILLARY}#a2"]
    measures = et.row_measures(rows)
    # TPR 1/2, TNR 1/1 -> 0.75; |0.5 - 0.75|
    assert measures["balanced_accuracy"] == 0.75 and measures["mae_precision"] == 0.25
    fixed = et.compare(errors, [])
    assert fixed["fixed"] == 1 and fixed["no_evidence_gold_S_now_supported"] == 1 and fixed["new"] == 0
    worse = et.compare([], errors)
    assert worse["new"] == 1 and worse["new_errors"] == {f"{et.NO_EVIDENCE} / {errors[0]['subclass']}": 1}
    verdicts = [{"sample": "A", "key": errors[0]["key"], "verdict": errors[0]["subclass"]}]
    assert et.agreement(errors, verdicts)["A"]["rate"] == 1.0
    verdicts[0]["verdict"] = et.WORLD_KNOWLEDGE
    check = et.agreement(errors, verdicts)["A"]
    assert check["rate"] == 0.0 and check["reachable_agree_rate"] == (
        0.0 if errors[0]["subclass"] in (et.LACKS, et.EVALUATIVE_CLAIM) else 1.0
    )
    counts = et.count_classes(errors)
    assert counts["classes"] == {et.NO_EVIDENCE: 1} and sum(counts["no_evidence"].values()) == 1


def test_sentence_reading_units_and_combination() -> None:
    text = "Edmund Hillary was a mountaineer. He died in Auckland in 2008. His son is Peter."
    assert sr.reading_units(text, HILLARY, "sentence") == [
        "Edmund Hillary was a mountaineer.",
        "Edmund Hillary was a mountaineer. He died in Auckland in 2008.",
        "He died in Auckland in 2008. His son is Peter.",
    ]
    assert sr.reading_units(text, HILLARY, "title")[1:] == [
        "Edmund Hillary died in Auckland in 2008.",
        "Edmund Hillary's son is Peter.",
    ]
    assert sr.reading_units(text, HILLARY, "adjacent") == [
        "Edmund Hillary was a mountaineer. He died in Auckland in 2008.",
        "He died in Auckland in 2008. His son is Peter.",
    ]
    assert sr.reading_units("One sentence only.", HILLARY, "adjacent") == ["One sentence only."]
    assert sr.top_units(["Everest was climbed.", "He died in Auckland.", "Bees."], "Hillary died in Auckland.", 1) == [
        "He died in Auckland."
    ]
    judge = {"entailment": 0.2, "neutral": 0.5, "contradiction": 0.3}
    unit = {"entailment": 0.1, "neutral": 0.1, "contradiction": 0.8}
    # a unit's contradiction counts as neutral: the pair's contradiction stays the judge's
    combined = sr.combine(judge, [unit, {"entailment": 0.9, "neutral": 0.05, "contradiction": 0.05}])
    # e = max(0.2, 0.1, 0.9), c = the judge's 0.3, n = min(0.5, 0.1 + 0.8, 0.05 + 0.05)
    total = 0.9 + 0.1 + 0.3
    assert combined == pytest.approx({"entailment": 0.9 / total, "neutral": 0.1 / total, "contradiction": 0.3 / total})


def test_stricter_keeps_only_confident_raised_entailments() -> None:
    from fact_reasoner.nli.base import NLIJudgement

    class Judge:
        def judge(self, pairs):
            assert pairs == [("P.", "A."), ("P.", "B."), ("P.", "C.")]
            return [
                NLIJudgement.from_probabilities({"entailment": 0.2, "neutral": 0.7, "contradiction": 0.1}),
                NLIJudgement.from_probabilities({"entailment": 0.2, "neutral": 0.7, "contradiction": 0.1}),
                NLIJudgement.from_probabilities({"entailment": 0.6, "neutral": 0.3, "contradiction": 0.1}),
            ]

    record = {
        "atoms": [{"id": "a", "text": "A."}, {"id": "b", "text": "B."}, {"id": "c", "text": "C."}],
        "contexts": [{"id": "c0", "text": "P."}],
        "relations": [
            {"source": "c0", "target": "a", "relation": "entailment", "probability": 0.65},
            {"source": "c0", "target": "b", "relation": "entailment", "probability": 0.85},
            {"source": "c0", "target": "c", "relation": "entailment", "probability": 0.62},
        ],
    }
    out = sr.stricter(record, Judge(), 0.8)["relations"]
    # raised below 0.8: the judge's neutral again; raised above: kept; the judge's own entailment: kept
    assert [(r["relation"], round(r["probability"], 2)) for r in out] == [
        ("neutral", 0.7),
        ("entailment", 0.85),
        ("entailment", 0.62),
    ]
