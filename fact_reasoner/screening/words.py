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

from ..atoms.frames import SUBJECT_SOURCES, atom_subject, passage_names, same_attribute
from ..schema import Atom, Context

__all__ = ["SUBJECT_SOURCES", "another_attribute", "another_subject"]


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
