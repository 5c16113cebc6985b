"""The NLI stage: (premise, hypothesis) pairs in, three-way judgements out.

Every backend (an LLM judge, a cross-encoder, the record's precomputed relations) implements
:class:`NLIBackend`. A judgement that could not be made is returned with ``failed=True`` and a
``reason``; the graph treats it as neutral, so a failure never becomes a confident factor.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ..schema import RelationType

UNJUDGED = "no judgement available for this pair"
LABELS = (RelationType.ENTAILMENT, RelationType.NEUTRAL, RelationType.CONTRADICTION)


@dataclass(frozen=True)
class NLIJudgement:
    """The verdict on one pair: the predicted label and its probability.

    ``probabilities`` maps each of entailment / neutral / contradiction to its probability when
    the backend can give all three.
    """

    label: RelationType
    probability: float
    probabilities: dict[str, float] = field(default_factory=dict)
    failed: bool = False
    reason: str | None = None

    @classmethod
    def from_probabilities(cls, probabilities: dict[str, float]) -> "NLIJudgement":
        """The arg-max label of normalised three-way probabilities."""
        total = sum(probabilities.get(l.value, 0.0) for l in LABELS)
        if not total > 0:
            return cls.failure("all label probabilities are zero")
        normalised = {l.value: probabilities.get(l.value, 0.0) / total for l in LABELS}
        best = max(LABELS, key=lambda l: normalised[l.value])
        return cls(best, normalised[best.value], normalised)

    @classmethod
    def failure(cls, reason: str) -> "NLIJudgement":
        return cls(RelationType.NEUTRAL, 0.0, {}, failed=True, reason=reason)

    @classmethod
    def unjudged(cls) -> "NLIJudgement":
        """No verdict exists for the pair (e.g. absent from precomputed relations): no factor."""
        return cls(RelationType.NEUTRAL, 0.0, {}, failed=True, reason=UNJUDGED)

    @property
    def is_unjudged(self) -> bool:
        return self.failed and self.reason == UNJUDGED


@runtime_checkable
class NLIBackend(Protocol):
    """Judges (premise, hypothesis) pairs in batches."""

    name: str

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]: ...
