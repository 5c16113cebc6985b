"""What the relation screen says of the relations it did not let through: the data it hands to
the graph builder (which carries it to the output) and the wording of its reasons.

Here, apart from the rules, so that the graph builder can carry it without reading any of them.
"""

from __future__ import annotations

from typing import NamedTuple

from ..schema import RelationType

__all__ = ["UNUSED_RULES", "UnusedRelation", "unused_reason"]


#: the short reasons of the relation floor and the word rule for contradictions
#: (:class:`UnusedRelation`) → what they mean and the setting whose rule set the relation aside;
#: the other rules give their reasons in words of their own ("the passage never names Marie
#: Curie", "the sentence names Alexander Fleming, not Marie Curie")
UNUSED_RULES: dict[str, tuple[str, str]] = {
    "below the floor": ("the judge's probability is at most the relation floor", "--min-relation-probability"),
    "another attribute": (
        "no sentence of the passage gives a value of the claim's attribute that could disagree",
        "--contradictions same-attribute",
    ),
}


def unused_reason(reason: str, rule: str | None = None) -> str:
    """The reason an output row gives for a relation the graph left out (``unused_evidence``):
    what the rule saw, in the user's terms, and the setting that set it aside — worded as the
    screen's decision about the judge's relation, never as a verdict on the claim.

    >>> unused_reason("another attribute")
    "another attribute — no sentence of the passage gives a value of the claim's attribute that could disagree (--contradictions same-attribute)"
    >>> unused_reason("the sentence names Alexander Fleming, not Marie Curie", "--entailments sentence")
    'the sentence names Alexander Fleming, not Marie Curie (--entailments sentence)'
    """
    if reason in UNUSED_RULES:
        meaning, setting = UNUSED_RULES[reason]
        return f"{reason} — {meaning} ({setting})"
    return f"{reason} ({rule})" if rule else reason


class UnusedRelation(NamedTuple):
    """An atom–context entailment or contradiction the judge gave that the graph did not use,
    and why: ``reason`` (the floor's and the word rules' short reasons, :data:`UNUSED_RULES`, or
    the sentence screen's own words), the ``rule`` (setting) that decided, and the deciding
    ``sentence`` where the sentence screen read one."""

    source: str
    target: str
    relation: RelationType
    probability: float
    reason: str
    judge: str | None = None
    rule: str | None = None
    sentence: str | None = None
