"""Planning a correction: pure functions, no model (the second step of :mod:`fact_reasoner.correction.corrector`).

Each atom of the assessed response is *kept* (posterior > 0.5, the S rule of
:func:`~fact_reasoner.scores.predict_label`), *rewritten* (not supported, and a context
contradicts it with P > 0.5: that context says what is true) or *removed* (not supported, and no
context says otherwise), and belongs to the sentence it was made from: the atomizer records it
(``Atom.sentence``); an atom a record supplies without it goes to the sentence whose words it
shares most, a pronoun read as the response's subject (:func:`attach_atoms`). A sentence whose atoms are all kept is kept word for word, one whose
atoms are all removed is removed, any other is rewritten (:func:`plan_sentences`). The citations
(:func:`number_references`, :func:`add_citations`), the evidence shown for a change
(:func:`evidence_snippet`, :func:`why`) and the check of the corrected text's atoms
(:func:`introduced_atoms`) are here too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..atoms.grounding import PRONOUNS
from ..scores import is_supported
from ..text.sentences import response_sentences

__all__ = [
    "CONTRADICTION_THRESHOLD",
    "MAX_CITATIONS",
    "SNIPPET_CHARS",
    "AtomAction",
    "AtomDecision",
    "CitedEvidence",
    "SentenceAction",
    "SentencePlan",
    "add_citations",
    "assign_sentences",
    "attach_atoms",
    "decide_atom",
    "evidence_snippet",
    "introduced_atoms",
    "number_references",
    "plan_sentences",
    "resolve_pronouns",
    "response_subject",
    "strongest",
    "why",
    "word_overlap",
    "words",
]

#: a contradiction must be more likely than not to count as saying what is true
CONTRADICTION_THRESHOLD = 0.5
#: citation markers after one sentence, at most
MAX_CITATIONS = 3
#: characters of a context shown as the evidence of a change or a reference
SNIPPET_CHARS = 240

AtomAction = Literal["keep", "rewrite", "remove"]
SentenceAction = Literal["keep", "rewrite", "remove"]


_WORD = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> set[str]:
    """The lower-cased words (``\\w+``) of ``text``."""
    return {w.lower() for w in _WORD.findall(text)}


def word_overlap(claim: str, sentence: str) -> float:
    """The share of the claim's words found in the sentence: |W(claim) ∩ W(sentence)| / |W(claim)|
    (0 for a claim without words)."""
    claim_words = words(claim)
    if not claim_words:
        return 0.0
    return len(claim_words & words(sentence)) / len(claim_words)


def response_subject(sentences: Sequence[str], topic: str | None = None) -> str:
    """What a pronoun of the response stands for: the record's ``topic``, else the proper name
    the first sentence opens with ("Marie Curie was …" → "Marie Curie"; "" when it opens with
    none)."""
    if topic and topic.strip():
        return topic.strip()
    opening = []
    for word in (sentences[0] if sentences else "").split():
        if not word[:1].isupper() or word.lower() in PRONOUNS:
            break
        opening.append(word)
    return " ".join(opening)


def resolve_pronouns(sentence: str, subject: str) -> str:
    """``sentence`` as matched against self-contained atoms: when it has a third-person pronoun
    ("She was born in Vienna in 1867."), the ``subject`` the response is about is added to it
    ("She was born in Vienna in 1867. Marie Curie"), as the reviser names it in the atoms."""
    if subject and words(sentence) & PRONOUNS:
        return f"{sentence} {subject}"
    return sentence


def assign_sentences(
    claims: Sequence[Sequence[str]], sentences: Sequence[str], subject: str | None = None
) -> list[int]:
    """For each atom (given by one or more spellings: its text, its text before revision), the
    index of the sentence with the largest :func:`word_overlap` over its spellings; the first
    such sentence on a tie. With a ``subject`` (:func:`response_subject`), a sentence with a
    pronoun is read with the subject it stands for (:func:`resolve_pronouns`): the atom "Marie
    Curie was born in Vienna." belongs to "She was born in Vienna in 1867.", not to the first
    sentence, which names Marie Curie. The fallback for atoms a record supplies without their
    ``sentence`` (:func:`attach_atoms`). Raises ``ValueError`` when there is no sentence."""
    if not sentences:
        raise ValueError("no sentence to assign atoms to")
    read = [resolve_pronouns(sentence, subject or "") for sentence in sentences]
    assigned = []
    for spellings in claims:
        scores = [max((word_overlap(s, sentence) for s in spellings if s), default=0.0) for sentence in read]
        assigned.append(max(range(len(sentences)), key=lambda i: (scores[i], -i)))
    return assigned


def attach_atoms(
    atoms: Sequence[tuple[int | None, Sequence[str]]], sentences: Sequence[str], topic: str | None = None
) -> list[int]:
    """The sentence each atom belongs to: the one the atomizer recorded it was made from (its
    ``sentence``), or — for an atom without one, such as those a record supplies — the one
    :func:`assign_sentences` finds by words, pronouns read as the response's subject. ``atoms``
    are ``(recorded sentence or None, spellings)`` pairs. Raises ``ValueError`` when there is
    no sentence."""
    if not sentences:
        raise ValueError("no sentence to assign atoms to")
    unknown = [i for i, (recorded, _) in enumerate(atoms) if recorded is None or not 0 <= recorded < len(sentences)]
    found = dict(
        zip(unknown, assign_sentences([atoms[i][1] for i in unknown], sentences, response_subject(sentences, topic)))
    )
    return [found[i] if i in found else int(recorded or 0) for i, (recorded, _) in enumerate(atoms)]


@dataclass(frozen=True)
class CitedEvidence:
    """A context an atom's verdict rests on: the relation and its NLI probability."""

    context: str
    relation: str
    probability: float


@dataclass(frozen=True)
class AtomDecision:
    """What happens to one atom, and the context that justifies it (None: no context does)."""

    atom: str
    text: str
    probability: float
    sentence: int
    action: AtomAction
    evidence: CitedEvidence | None = None
    #: removed although supported: the conformal filter (``--conformal``) did not keep it
    filtered: bool = False


def strongest(evidence: Sequence[Mapping[str, Any]], relation: str) -> CitedEvidence | None:
    """The link of ``relation`` with the largest probability, if that probability is above
    :data:`CONTRADICTION_THRESHOLD` (0.5); else None. ``evidence`` is an output atom's
    ``evidence`` list (``context``, ``relation``, ``probability``)."""
    best = None
    for link in evidence:
        if str(link["relation"]) != relation or float(link["probability"]) <= CONTRADICTION_THRESHOLD:
            continue
        if best is None or float(link["probability"]) > best.probability:
            best = CitedEvidence(str(link["context"]), relation, float(link["probability"]))
    return best


def decide_atom(
    atom: str,
    text: str,
    probability: float,
    evidence: Sequence[Mapping[str, Any]],
    sentence: int,
    kept: bool | None = None,
) -> AtomDecision:
    """keep when P(atom) > 0.5 (cite its strongest entailing context, if one is above 0.5);
    else rewrite when a context contradicts it with P > 0.5 (cite the strongest); else remove.
    With a conformal filter (``kept`` not None: the atom's ``kept`` from ``--conformal``) a
    supported atom the filter did not keep is removed (``filtered``): what stays word for word
    is what the filter kept."""
    if is_supported(probability):
        if kept is False:
            return AtomDecision(atom, text, probability, sentence, "remove", None, filtered=True)
        return AtomDecision(atom, text, probability, sentence, "keep", strongest(evidence, "entailment"))
    contradiction = strongest(evidence, "contradiction")
    if contradiction is not None:
        return AtomDecision(atom, text, probability, sentence, "rewrite", contradiction)
    return AtomDecision(atom, text, probability, sentence, "remove", None)


@dataclass(frozen=True)
class SentencePlan:
    """One sentence of the response: its atoms' decisions, what happens to it, what it cites."""

    index: int
    text: str
    action: SentenceAction
    atoms: tuple[AtomDecision, ...]
    cited: tuple[str, ...]


def plan_sentences(sentences: Sequence[str], decisions: Sequence[AtomDecision]) -> list[SentencePlan]:
    """keep a sentence without atoms or whose atoms are all kept; remove one whose atoms are all
    removed; rewrite the others. A sentence cites, in atom order and without repeats, the
    contexts of its kept and rewritten atoms (at most :data:`MAX_CITATIONS`)."""
    plans = []
    for index, text in enumerate(sentences):
        own = tuple(d for d in decisions if d.sentence == index)
        actions = {d.action for d in own}
        action: SentenceAction
        if actions <= {"keep"}:
            action = "keep"
        elif actions == {"remove"}:
            action = "remove"
        else:
            action = "rewrite"
        cited = list(dict.fromkeys(d.evidence.context for d in own if d.evidence is not None and d.action != "remove"))
        plans.append(SentencePlan(index, text, action, own, tuple(cited[:MAX_CITATIONS] if action != "remove" else ())))
    return plans


def number_references(cited_per_sentence: Sequence[Sequence[str]]) -> dict[str, int]:
    """Context id → its reference number, 1, 2, … in order of first citation."""
    numbers: dict[str, int] = {}
    for cited in cited_per_sentence:
        for context in cited:
            numbers.setdefault(context, len(numbers) + 1)
    return numbers


_END = re.compile(r"([.!?…]+[\"'”’)]*)$")


def add_citations(sentence: str, numbers: Sequence[int]) -> str:
    """``sentence`` with ``[n]`` markers before its final punctuation
    (``"born in 1942."`` + [2] → ``"born in 1942 [2]."``), or after it when it has none."""
    if not numbers or not sentence:
        return sentence
    markers = "".join(f"[{n}]" for n in numbers)
    match = _END.search(sentence)
    if match is None:
        return f"{sentence} {markers}"
    return f"{sentence[: match.start()].rstrip()} {markers}{match.group(1)}"


def introduced_atoms(
    unsupported: Sequence[Mapping[str, Any]], entailed_by_kept: Sequence[float | None]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Split the corrected text's unsupported atoms into those the rewrite *introduced* and those
    it *carried over*.

    An atom is carried over when the atoms the plan kept (those the first assessment found
    supported), read together as a premise, entail it: ``P(entailment) > 0.5``. It restates a
    fact the original response made and the first assessment supported, and its new verdict is
    the judge disagreeing with itself over a rewording — not a new claim. Every other unsupported
    atom, and one whose check could not be judged (``None``), is introduced: the record fails.
    Both lists keep the atoms' fields, with ``carried_over`` set.
    """
    introduced, carried = [], []
    for atom, p in zip(unsupported, entailed_by_kept, strict=True):
        if p is not None and p > 0.5:
            carried.append(dict(atom) | {"carried_over": True, "entailed_by_kept": p})
        else:
            introduced.append(dict(atom) | {"carried_over": False, "entailed_by_kept": p})
    return introduced, carried


def evidence_snippet(context_text: str, claim: str, max_chars: int = SNIPPET_CHARS) -> str:
    """The sentence of a context that shares most words with ``claim`` (:func:`word_overlap` of
    the claim in the sentence; the first on a tie), cut to ``max_chars`` with an ellipsis."""
    sentences = response_sentences(context_text) or [context_text]
    best = max(sentences, key=lambda s: (word_overlap(claim, s), -sentences.index(s)))
    best = " ".join(best.split())
    return best if len(best) <= max_chars else best[: max_chars - 1].rstrip() + "…"


def why(decision: AtomDecision) -> str:
    """One line saying why an atom was rewritten or removed."""
    if decision.action == "rewrite" and decision.evidence is not None:
        return (
            f"not supported (P = {decision.probability:.2f}); context {decision.evidence.context} contradicts it "
            f"(P = {decision.evidence.probability:.2f}) and says what is true"
        )
    if decision.action == "remove" and decision.filtered:
        return (
            f"supported (P = {decision.probability:.2f}) but dropped by the conformal filter (--conformal): its "
            "posterior is not above the filter's threshold"
        )
    if decision.action == "remove":
        return f"not supported (P = {decision.probability:.2f}) and no context says what is true instead"
    return f"supported (P = {decision.probability:.2f})"
