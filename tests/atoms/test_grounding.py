"""Atoms the response does not state are not judged; atoms that do not stand alone are marked.

The checks themselves (:mod:`fact_reasoner.atoms.grounding`), then the pipeline around them with an
atomizer that returns what a small model really returned for the issue's answers (an Ada
Lovelace answer that came back with "born in London in 1815"; a Mount Everest answer whose
reviser left "It was first climbed in 1953."), judged from precomputed relations so that no
model is needed.
"""

import json
import math

import pytest

from fact_reasoner import FactReasoner, PipelineConfig
from fact_reasoner.atoms.atomizer import _EXAMPLES_V3, build_messages
from fact_reasoner.atoms.grounding import (
    check_atom,
    check_atoms,
    needs_revision,
    ungrounded_terms,
    unresolved_reference,
)
from fact_reasoner.atoms.reviser import _EXAMPLE_IN_V2, _EXAMPLE_OUT_V2, _EXAMPLE_TEXT_V2
from fact_reasoner.nli import NLIJudgement
from fact_reasoner.schema import Atom
from fact_reasoner.scores import summarize_rows

ADA = "Ada Lovelace is often called the first computer programmer because of her notes on Babbage's Analytical Engine."
EVEREST = (
    "Mount Everest is the highest mountain on Earth. It was first climbed in 1953. "
    "It lies on the border between Nepal and China."
)


@pytest.mark.parametrize(
    ("atom", "source", "missing"),
    [
        ("Ada Lovelace was born in London in 1815.", ADA, ["London", "1815"]),
        ("Ada Lovelace was married to Lord Byron.", ADA, ["Lord", "Byron"]),
        ("Ada Lovelace wrote notes on Babbage's Analytical Engine.", ADA, []),
        ("Einstein developed the theory of relativity in 1905.", "Einstein developed relativity.", ["1905"]),
        # names the reviser brings in from another sentence of the same response are fine
        ("Mount Everest was first climbed in 1953.", EVEREST, []),
        # number words, thousands separators, decades, accents, derived names, initials
        ("He won 2 Oscars.", "He won two Oscars.", []),
        ("It is 8849 metres high.", "It is 8,849 metres high.", []),
        ("She was active in the 1990s.", "She was active in 1990.", []),
        ("Jean Daulle was an engraver.", "Jean Daullé was an engraver.", []),
        ("He was German.", "He was born in Germany.", []),
        ("She served in the US Navy.", "She served in the United States Navy.", []),
        # a name is not present just because a short word starts the same way
        ("Ada Lovelace loved poetry.", "Ada loved poetry.", ["Lovelace"]),
        # function words that open a sentence are not names
        ("The bridge opened in 1931.", "the bridge opened in 1931", []),
    ],
)
def test_ungrounded_terms(atom, source, missing):
    assert ungrounded_terms(atom, source) == missing


def test_the_question_grounds_names_too():
    assert ungrounded_terms("Kang Ji-hwan is an actor.", "He is an actor.") == ["Kang", "Ji"]
    assert check_atom("Kang Ji-hwan is an actor.", "He is an actor.", "Tell me a bio of Kang Ji-hwan.").grounded


@pytest.mark.parametrize(
    ("atom", "pronoun"),
    [
        ("It was first climbed in 1953.", "It"),
        ("It lies on the border between Nepal and China.", "It"),
        ("Her notes were published in 1843.", "Her"),
        ("The theory made him famous.", "him"),
        ("Ada Lovelace published her notes.", None),
        ("Mount Everest was first climbed in 1953.", None),
    ],
)
def test_unresolved_reference(atom, pronoun):
    assert unresolved_reference(atom) == pronoun


def test_which_atoms_the_reviser_sees():
    response = "Marie Curie was a physicist. She was born in Warsaw. Curie won two Nobel Prizes."
    assert not needs_revision("Marie Curie was born in Warsaw.", response)
    assert needs_revision("She was born in Warsaw.", response)  # a pronoun
    assert needs_revision("Curie won two Nobel Prizes.", response)  # part of "Marie Curie"
    assert needs_revision("The prize was shared.", response)  # names nothing
    assert needs_revision("Marie Curie shared it with him.", response)  # a pronoun after a name


def test_the_worked_examples_state_only_what_their_text_states():
    """The examples teach the model to add nothing: each atom of v3's (and the reviser v2's)
    examples is grounded in its own sentence, and the reviser's outputs stand alone."""
    for sentence, atoms in _EXAMPLES_V3:
        assert all(ungrounded_terms(atom, sentence) == [] for atom in atoms), sentence
    assert all(ungrounded_terms(atom, _EXAMPLE_TEXT_V2) == [] for atom in _EXAMPLE_OUT_V2)
    assert all(unresolved_reference(atom) is None for atom in _EXAMPLE_OUT_V2)
    assert all(needs_revision(atom, _EXAMPLE_TEXT_V2) for atom in _EXAMPLE_IN_V2)


def test_v3_prompt_shows_neither_the_question_nor_a_real_person():
    messages = build_messages("v3", "She sang.", previous="Earlier.", question="Tell me a bio of Ada Lovelace.")
    text = json.dumps(messages)
    assert "Question:" not in text and "Ada Lovelace" not in text and "Earlier." not in text
    assert "no name, number or date that is not in the sentence" in messages[0][1]
    assert messages[-1] == ("user", "Sentence: She sang.\nAtomic facts of the sentence as JSON:")
    # v1 keeps its Ada Lovelace examples: it reproduces earlier runs
    assert "Ada Lovelace was born in London." in json.dumps(build_messages("v1", "She sang."))


def test_check_atoms_sets_ungrounded_atoms_aside_and_marks_the_rest():
    atoms = [
        Atom(id="a0", text="Ada Lovelace was born in London in 1815.", original="She was born in London in 1815."),
        Atom(id="a1", text="It was first climbed in 1953."),
        Atom(id="a2", text="Ada Lovelace is often called the first computer programmer."),
    ]
    checked = check_atoms(atoms, ADA + " It was first climbed in 1953.", None, keep_ungrounded=False)
    assert [a.id for a in checked.judged] == ["a1", "a2"]
    assert checked.listed() == [
        {
            "id": "a0",
            "text": "Ada Lovelace was born in London in 1815.",
            "original": "She was born in London in 1815.",
            "reason": "not in the response: 'London', '1815'",
        }
    ]
    assert checked.counters() == {"ungrounded_atoms": 1, "unresolved_atoms": 1, "fragment_atoms": 0}
    kept = check_atoms(atoms, ADA, None, keep_ungrounded=True)
    assert [a.id for a in kept.judged] == ["a0", "a1", "a2"] and kept.ungrounded == []
    assert kept.counters()["ungrounded_atoms"] == 2  # 1953 is not in ADA alone


class ScriptedAtomizer:
    """Returns the atoms it was given, whatever the response (what the model returned)."""

    def __init__(self, texts):
        self.texts = texts

    def atomize(self, response, *, question=None):
        return [Atom(id=f"a{i}", text=t, original=t) for i, t in enumerate(self.texts)]


class ScriptedJudge:
    """Entails the hypotheses it lists as True, contradicts those listed False; records what it
    was asked."""

    name = identity = "scripted-judge"

    def __init__(self, verdicts):
        self.verdicts = verdicts
        self.asked = []

    def judge(self, pairs):
        self.asked += [hypothesis for _, hypothesis in pairs]
        return [
            NLIJudgement.from_probabilities(
                {"entailment": 0.9, "contradiction": 0.05, "neutral": 0.05}
                if self.verdicts[hypothesis]
                else {"entailment": 0.05, "contradiction": 0.9, "neutral": 0.05}
            )
            for _, hypothesis in pairs
        ]


def _assess(texts, output, verdicts, **options):
    record = {
        "input": "Who was Ada Lovelace?",
        "output": output,
        "contexts": [{"id": "c0", "text": "Ada Lovelace wrote notes on the Analytical Engine."}],
    }
    config = PipelineConfig(version=1, use_cache=False, revise=False, **options)
    judge = ScriptedJudge(verdicts)
    return FactReasoner(config, atomizer=ScriptedAtomizer(texts), nli=judge).assess(record), judge


ADA_ATOMS = [
    "Ada Lovelace is often called the first computer programmer.",
    "Ada Lovelace was born in London in 1815.",
    "Ada Lovelace wrote notes on Babbage's Analytical Engine.",
]
ADA_VERDICTS = dict(zip(ADA_ATOMS, (False, True, True)))


def test_an_invented_atom_is_not_judged_but_listed_counted_and_left_out_of_precision():
    row, judge = _assess(ADA_ATOMS, ADA, ADA_VERDICTS)
    assert ADA_ATOMS[1] not in judge.asked  # never judged
    assert [a.id for a in row.atoms] == ["a0", "a2"] and set(row.predictions) == {"a0", "a2"}
    assert row.num_atoms == 2 and row.factuality_score == 0.5  # a2 S, a0 NS; the invented a1 does not count
    assert "a1" not in {m.variable for m in row.marginals}
    assert row.ungrounded_atoms == [  # type: ignore[attr-defined]
        {
            "id": "a1",
            "text": "Ada Lovelace was born in London in 1815.",
            "original": "Ada Lovelace was born in London in 1815.",
            "reason": "not in the response: 'London', '1815'",
        }
    ]
    assert row.counters["ungrounded_atoms"] == 1 and row.counters["unresolved_atoms"] == 0
    assert row.settings["models"]["keep_ungrounded_atoms"] is False
    summary = summarize_rows([row.model_dump(mode="json")])
    assert summary.num_ungrounded_atoms == 1 and summary.num_unresolved_atoms == 0 and summary.num_atoms == 2


def test_keep_ungrounded_atoms_judges_them_and_still_marks_and_counts_them():
    row, judge = _assess(ADA_ATOMS, ADA, ADA_VERDICTS, keep_ungrounded_atoms=True)
    assert ADA_ATOMS[1] in judge.asked
    assert row.num_atoms == 3 and math.isclose(row.factuality_score, 2 / 3)
    marked = {a.id: getattr(a, "ungrounded_reason", None) for a in row.atoms}
    assert marked == {"a0": None, "a1": "not in the response: 'London', '1815'", "a2": None}
    assert not hasattr(row, "ungrounded_atoms") and row.counters["ungrounded_atoms"] == 1


def test_a_response_whose_every_atom_is_invented_has_no_precision():
    row, judge = _assess(ADA_ATOMS[1:2], ADA, ADA_VERDICTS)
    assert row.num_atoms == 0 and judge.asked == [] and math.isnan(row.factuality_score)
    assert len(row.ungrounded_atoms) == 1  # type: ignore[attr-defined]


def test_an_atom_that_does_not_stand_alone_is_judged_and_marked():
    texts = ["Mount Everest is the highest mountain on Earth.", "It was first climbed in 1953."]
    row, _ = _assess(texts, EVEREST, dict.fromkeys(texts, True))
    assert row.num_atoms == 2
    assert [getattr(a, "unresolved_reference", None) for a in row.atoms] == [None, "It"]
    assert row.counters["unresolved_atoms"] == 1
    assert summarize_rows([row.model_dump(mode="json")]).num_unresolved_atoms == 1


def test_atoms_the_record_carries_are_not_checked():
    record = {
        "output": ADA,
        "atoms": [{"id": "a0", "text": "She was born in London in 1815."}],
        "contexts": [{"id": "c0", "text": "Ada Lovelace wrote notes."}],
        "relations": [{"source": "c0", "target": "a0", "relation": "entailment", "probability": 0.9}],
    }
    row = FactReasoner(PipelineConfig(version=1, nli="precomputed", use_cache=False)).assess(record)
    assert row.num_atoms == 1 and "ungrounded_atoms" not in row.counters
    assert summarize_rows([row.model_dump(mode="json")]).num_ungrounded_atoms is None


# -- #43.5: atoms that stand alone, clauses that state nothing, revisions that only resolve --------


@pytest.mark.parametrize(
    "atom, word",
    [
        ("George Mallory climbed it.", "it"),
        ("Marie Curie married him in 1895.", "him"),
        ("The Beatles toured with them.", "them"),
        ("This album sold a million copies.", "This"),
        ("Kang Ji-hwan starred in these films.", "these"),
        ("That year, Kang Ji-hwan moved to Seoul.", "That"),
    ],
)
def test_object_pronouns_and_demonstratives_are_unresolved(atom, word):
    from fact_reasoner.atoms.grounding import unresolved_reference

    assert unresolved_reference(atom) == word


@pytest.mark.parametrize(
    "atom",
    [
        "Ada Lovelace published her notes.",
        "Marie Curie said that radium glowed.",
        "The Great Wall of China was built by the Ming dynasty.",
        "Mount Everest was first climbed in 1953.",
    ],
)
def test_atoms_that_name_what_they_are_about_stay_resolved(atom):
    from fact_reasoner.atoms.grounding import unresolved_reference

    assert unresolved_reference(atom) is None


def test_a_clause_without_a_claim_is_set_aside_not_judged():
    from fact_reasoner.atoms.grounding import check_atoms, claimless_clause

    assert claimless_clause("The Great Wall of China was built.")
    assert claimless_clause("The Great Wall of China was built mainly.")
    assert claimless_clause("The wall was mainly built.")
    for claim in (
        "The Great Wall of China was built in the 7th century BC.",
        "Marie Curie was born in Warsaw.",
        "Marie Curie was Polish.",
        "The tower was completed in 1889.",
    ):
        assert claimless_clause(claim) is None, claim
    atoms = [Atom(id="a0", text="The Great Wall of China was built."), Atom(id="a1", text="The wall is long.")]
    checked = check_atoms(atoms, "The Great Wall of China was built. The wall is long.", None, keep_ungrounded=False)
    assert [a.id for a in checked.judged] == ["a1"]
    assert checked.listed_fragments() == [
        {
            "id": "a0",
            "text": "The Great Wall of China was built.",
            "original": "The Great Wall of China was built.",
            "reason": "a clause without a claim: 'was built' says not what, when, where or by whom",
        }
    ]
    assert checked.counters()["fragment_atoms"] == 1


def test_a_revision_that_only_makes_a_reference_explicit_is_accepted():
    from fact_reasoner.atoms.grounding import unfaithful_revision

    response = "Mount Everest is the highest mountain. Its height is 8,849 metres."
    assert (
        unfaithful_revision("Its height is 8,849 metres.", "The height of Mount Everest is 8,849 metres.", response)
        is None
    )
    assert unfaithful_revision("Its height is 8,849 metres.", "The height of Mount Everest is 9,000 metres.", response)


@pytest.mark.parametrize("keep", [False, True])
def test_the_claims_line_adds_up_with_and_without_keep_ungrounded_atoms(keep):
    """The summary once said "claims 2: … · not judged 1": the total counted the judged atoms
    only, and with --keep-ungrounded-atoms the judged ungrounded atom was counted as not judged.
    Every claim made is in one category, and the line's parts add up to its total."""
    from fact_reasoner.report.terminal import verdict_counts_line

    row, judge = _assess(ADA_ATOMS, ADA, ADA_VERDICTS, keep_ungrounded_atoms=keep)
    claims = summarize_rows([row.model_dump(mode="json")]).as_dict()["claims"]
    assert claims["total"] == len(ADA_ATOMS) == claims["judged"] + claims["not_judged"]
    assert claims["judged"] == len(set(judge.asked))
    if keep:  # a1 judged (S on the scripted judge), marked, not set aside
        assert verdict_counts_line(claims) == (
            "claims 3: S 2 · NS on evidence 0 · no evidence 1 · not judged 0 (0 ungrounded, 0 stating nothing); "
            "of the 3 judged: 1 ungrounded, judged all the same (--keep-ungrounded-atoms)"
        )
    else:
        assert verdict_counts_line(claims) == (
            "claims 3: S 1 · NS on evidence 0 · no evidence 1 · not judged 1 (1 ungrounded, 0 stating nothing)"
        )
