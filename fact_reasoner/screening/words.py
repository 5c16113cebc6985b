"""The word rules for the judge's relations (``--entailments same-subject``, ``--contradictions
same-attribute``): text frames without a parser (:mod:`fact_reasoner.atoms.frames`).

``same-subject`` keeps an atom–context entailment only when the passage or its title names the
atom's subject — found in the atom, the response sentence it was made from, or the record's
topic (:func:`~fact_reasoner.atoms.frames.atom_subject`); ``same-attribute`` keeps a contradiction
only when a sentence of the passage speaks about the atom's attribute with a value or a negation
that can disagree (:func:`~fact_reasoner.atoms.frames.same_attribute`). The sentence screen
(:mod:`fact_reasoner.screening.checks`) reads the same questions with a parser.
"""

from __future__ import annotations

from functools import lru_cache

from ..atoms.frames import SUBJECT_SOURCES, atom_subject, passage_names, same_attribute
from ..nli.alignment_features import content_stems
from ..schema import Atom, Context
from ..text.sentences import passage_sentences

__all__ = ["SUBJECT_SOURCES", "another_attribute", "another_subject", "deciding_sentence"]


@lru_cache(maxsize=8192)
def _stems(text: str) -> frozenset[str]:
    return frozenset(content_stems(text))


def deciding_sentence(atom_text: str, passage_text: str) -> str | None:
    """The passage sentence — or two adjacent ones, when they hold more — with the largest share
    of the atom's content words but its subject's (stems; the first on ties): what the row and the
    terminal quote under the word rules, found without a parser (the sentence screen finds its
    own with one).

    >>> deciding_sentence("Marie Curie was born in Warsaw.", "Marie Curie was a physicist. She was born in Warsaw.")
    'She was born in Warsaw.'
    """
    sentences = [s for s in passage_sentences(passage_text) if s.strip()]
    if not sentences:
        return None
    # the subject's words left out: a passage names its subject in one sentence and says "she"
    # in the next, which is the one that states the fact ("She was born in Warsaw.")
    subject = _stems(" ".join(atom_subject(atom_text)[0]))
    content = _stems(atom_text) - subject or _stems(atom_text)
    if not content:
        return sentences[0]
    best, best_score = sentences[0], -1
    for window in sentences + [f"{a} {b}" for a, b in zip(sentences, sentences[1:])]:
        score = len(content & _stems(window))
        if score > best_score:
            best, best_score = window, score
    return best


def another_attribute(atom: Atom, context: Context) -> bool:
    """``same-attribute``: the passage speaks about no attribute of the atom that can disagree."""
    return same_attribute(atom.text, context.text) == "other attribute"


def another_subject(atom: Atom, context: Context, sentence: str | None, topic: str | None) -> tuple[bool, str, str]:
    """``same-subject``: whether the passage (with its title) does not name the atom's subject,
    where the subject was found (:data:`SUBJECT_SOURCES`), and the subject as the user wrote it
    ("Marie Curie": its words in the order of the text they came from)."""
    subject, source = atom_subject(atom.text, sentence, topic)
    origin = {"atom": atom.text, "sentence": sentence or "", "topic": topic or ""}.get(source, "")
    order = {word: origin.find(word) for word in subject}
    named = " ".join(sorted(subject, key=lambda word: (order[word] < 0, order[word], word)))
    return not passage_names(subject, context.text, context.title), source, named
