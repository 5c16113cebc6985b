"""The same-subject rule and the references the reviser leaves (issue #52 item 4).

"Together they discovered polonium." came out NS 0.50 on a user's answer: "Together" was read as
the name the atom is about, and no passage names "Together". An atom that opens with a
reference the reviser left is about someone all the same — the subject of its sentence, or the
record's topic — and the rule counts where it found each subject. The answers are made-up
biographies written for these tests (``tests/atoms/test_long_answers.py`` has them whole).
"""

from __future__ import annotations

import json

from tests.helpers import require_extra

require_extra("llm")

from fact_reasoner import FactReasoner, PipelineConfig  # noqa: E402
from fact_reasoner.atoms.frames import atom_frame, atom_subject, names_subject  # noqa: E402
from fact_reasoner.graph.build import plan_graph  # noqa: E402
from fact_reasoner.llm.openai import OpenAICompatibleLLM  # noqa: E402
from fact_reasoner.llm.testing import ScriptedServer  # noqa: E402
from fact_reasoner.nli import NLIJudgement  # noqa: E402
from fact_reasoner.schema import Atom, Context, Relation  # noqa: E402
from fact_reasoner.settings.graph_options import GraphOptions  # noqa: E402
from fact_reasoner.stages import screen_and_build  # noqa: E402


def test_an_opening_adverb_is_not_a_subject():
    """ "Together" was read as the name the atom is about; no passage names "Together", so the
    same-subject rule set aside the entailment of a true atom."""
    assert atom_frame("Together they climbed the Skarfjell in 1880.").subject == frozenset()
    assert names_subject(
        "Together they climbed the Skarfjell in 1880.",
        "With the guide Per Lund she climbed the Skarfjell in 1880.",
        "Anna Ruud",
        topic="Anna Ruud",
    )


def test_an_unnamed_subject_is_looked_for_in_its_sentence_then_the_topic():
    sentence = "Karl Brenn, who taught at the Royal Academy, was a Danish composer."
    assert atom_subject("He taught at the Royal Academy.", sentence, "Karl Brenn") == (
        frozenset({"Karl", "Brenn"}),
        "sentence",
    )
    assert atom_subject("He taught at the Royal Academy.", "He taught there.", "Karl Brenn")[1] == "topic"
    assert atom_subject("He taught at the Royal Academy.")[1] == "none"
    # a passage about someone else is no evidence for "he" when the record is about Karl Brenn
    other = "Niels Holm taught at the Royal Academy for thirty years."
    assert not names_subject("He taught at the Royal Academy.", other, "Niels Holm", topic="Karl Brenn")
    assert names_subject("He taught at the Royal Academy.", other, "Niels Holm")  # no topic: kept, as before


def _rel(source: str, target: str, relation: str, p: float) -> Relation:
    return Relation(source=source, target=target, relation=relation, probability=p)


def test_the_graph_reads_a_reference_the_reviser_left_by_sentence_and_topic_and_counts_it():
    atoms = [
        Atom(id="a0", text="Together they climbed the Skarfjell in 1880.", sentence=2),
        Atom(id="a1", text="She was a Norwegian mountaineer.", sentence=0),
        Atom(id="a2", text="Anna Ruud met the guide Per Lund.", sentence=1),
        Atom(id="a3", text="He was born in Bergen."),
    ]
    contexts = [
        Context(id="c0", title="Anna Ruud", text="With the guide Per Lund she climbed the Skarfjell in 1880."),
        Context(id="c1", title="Per Lund", text="Lund was a guide, born in Bergen in 1850."),
    ]
    sentences = ["Anna Ruud was a Norwegian mountaineer.", "In 1878 she met the guide Per Lund in Bergen."]
    sentences += ["Together they climbed the Skarfjell in 1880."]
    plan = plan_graph(atoms, contexts, 2, topic="Anna Ruud", sentences=sentences)
    relations = [
        _rel("c0", "a0", "entailment", 0.9),
        _rel("c0", "a1", "entailment", 0.8),
        _rel("c0", "a2", "entailment", 0.85),
        _rel("c1", "a3", "entailment", 0.9),
    ]
    built = screen_and_build(plan, relations, GraphOptions(version=2))
    kept = {(f.source, f.target) for f in built.factor_relations}
    # a0: "Together" is no name, the topic is; a1: its sentence names Anna Ruud; a2: named;
    # a3: no sentence, the topic (Anna Ruud) is not in the passage about Per Lund: set aside
    assert kept == {("c0", "a0"), ("c0", "a1"), ("c0", "a2")}
    counters = built.rule_counters()
    assert counters["entailments_other_subject"] == 1
    assert {k: v for k, v in counters.items() if k.startswith("entailments_subject")} == {
        "entailments_subject_from_atom": 1,
        "entailments_subject_from_sentence": 1,
        "entailments_subject_from_topic": 2,
        "entailments_subject_unknown": 0,
    }
    # without a topic or sentences the rule checks only atoms that name their subject, as before
    before = screen_and_build(plan_graph(atoms, contexts, 2), relations, GraphOptions(version=2))
    assert before.rule_counters()["entailments_subject_unknown"] == 3


class _Judge:
    """Entails every atom from the passage that states it (by its key phrase), neutral otherwise."""

    name = identity = "scripted-judge"

    def __init__(self, entailed: dict[str, str]):
        self.entailed = entailed  # key phrase of the atom → key phrase of the passage

    def judge(self, pairs):
        out = []
        for premise, hypothesis in pairs:
            hit = any(a in hypothesis and p in premise for a, p in self.entailed.items())
            probabilities = {"entailment": 0.9, "contradiction": 0.05, "neutral": 0.05} if hit else None
            out.append(
                NLIJudgement.from_probabilities(
                    probabilities or {"entailment": 0.05, "contradiction": 0.05, "neutral": 0.9}
                )
            )
        return out


def test_a_true_atom_whose_reference_the_reviser_left_is_supported_end_to_end():
    """The issue's "Together they discovered polonium." came out NS 0.50: the same-subject rule
    set its entailment aside. Atomized and revised by a scripted model that leaves the reference,
    the atom is flagged, its entailment kept (the passage's title names the record's topic),
    and it is S."""
    atomizer_replies = {
        "Anna Ruud was a Norwegian mountaineer.": ["Anna Ruud was a Norwegian mountaineer."],
        "Together they climbed the Skarfjell in 1880.": ["Together they climbed the Skarfjell in 1880."],
    }

    def reply(body):
        asked = body["messages"][-1]["content"]
        if asked.startswith("Sentence: "):
            sentence = asked.removeprefix("Sentence: ").split("\n")[0]
            return json.dumps({"atoms": atomizer_replies[sentence]})
        return json.dumps({"atoms": ["Together they climbed the Skarfjell in 1880."]})  # left as it was

    record = {
        "input": "Tell me a bio of Anna Ruud.",
        "topic": "Anna Ruud",
        "output": "Anna Ruud was a Norwegian mountaineer. Together they climbed the Skarfjell in 1880.",
        "contexts": [
            {"id": "c0", "title": "Anna Ruud", "text": "Anna Ruud (1850-1921) was a Norwegian mountaineer."},
            {"id": "c1", "title": "Anna Ruud", "text": "With the guide Per Lund she climbed the Skarfjell in 1880."},
        ],
    }
    judge = _Judge({"Norwegian mountaineer": "Norwegian mountaineer", "climbed the Skarfjell": "climbed the Skarfjell"})
    with ScriptedServer([reply]) as server:
        llm = OpenAICompatibleLLM("m", base_url=server.base_url, cache=None)
        config = PipelineConfig(version=2, use_cache=False)
        row = FactReasoner(config, llm=llm, nli=judge).assess(record)
    together = next(a for a in row.atoms if a.text.startswith("Together"))
    assert together.prediction.value == "S" and together.probability > 0.5
    assert getattr(together, "unresolved_reference", None) == "they"
    assert row.counters["unresolved_atoms"] == 1
    assert row.counters["entailments_subject_from_topic"] == 1 and row.counters["entailments_other_subject"] == 0
    subjects = sum(v for k, v in row.counters.items() if k.startswith("entailments_subject_"))
    entailments = row.counters["entailments_same_subject"] + row.counters["entailments_other_subject"]
    assert subjects == entailments  # every entailment the rule decided, by where it found the subject


def test_the_topics_function_words_are_not_its_subject():
    """Every passage has "of" or "the": with them the topic "Battle of Hastings" named the
    subject of any passage, and the rule kept every entailment."""
    from fact_reasoner.atoms.frames import names_subject

    assert not names_subject("Together they won.", "The Siege of Paris was a siege.", topic="Battle of Hastings")
    assert names_subject("Together they won.", "Harold fell at Hastings.", topic="Battle of Hastings")
    assert not names_subject("They sold a million records.", "The band sold records.", topic="The Beatles")
