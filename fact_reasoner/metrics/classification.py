"""Answer classification: CORRECT, WRONG or DON'T KNOW, and the counts over a dataset.

DON'T KNOW when the response contains an uncertainty phrase as whole words (case-insensitive,
any whitespace, curly apostrophes normalised): "I don't know" abstains, "The author is
unknown" does not (no phrase is a bare "unknown"); also when the response answers nothing
(:func:`~fact_reasoner.metrics.answerable.non_answer`: no words, a refusal, an echo of the
question), with that reason. Otherwise the judge decides: by default
factual correctness (the same atoms and graphs), CORRECT when its F1 ≥ ``correct_threshold``.
score: CORRECT 1, WRONG 0, DON'T KNOW 0 (so the mean is accuracy over all answers).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from .answerable import UNCERTAINTY_PHRASES, non_answer, uncertainty_match
from .base import Metric
from .context import MetricContext
from .correctness import FactualCorrectness
from .results import MetricResult
from .sample import RagSample

CORRECT, WRONG, DONT_KNOW = "CORRECT", "WRONG", "DON'T KNOW"
LABELS = (CORRECT, WRONG, DONT_KNOW)


@dataclass
class AnswerClassification(Metric):
    """CORRECT, WRONG or DON'T KNOW: an uncertainty phrase, else factual correctness against a threshold."""

    name = "answer_classification"
    #: a non-answer is what this metric labels (DON'T KNOW, with the reason), not a reason to skip it
    reports_non_answers = True
    phrases: tuple[str, ...] = UNCERTAINTY_PHRASES
    correct_threshold: float = 0.5
    judge: FactualCorrectness = field(default_factory=FactualCorrectness)

    def needs(self) -> frozenset[str]:
        return self.judge.needs()

    def _score(self, sample: RagSample, context: MetricContext) -> MetricResult:
        missing = sample.require("response")
        if missing:
            return MetricResult.nan(self.name, missing, label=None)
        phrase = uncertainty_match(sample.response or "", self.phrases)
        if phrase is not None:
            return MetricResult(name=self.name, score=0.0, label=DONT_KNOW, reason=f"uncertainty phrase {phrase!r}")
        unanswered = non_answer(sample.response, sample.question)
        if unanswered is not None:
            return MetricResult(name=self.name, score=0.0, label=DONT_KNOW, reason=f"not answerable: {unanswered}")
        if not sample.reference:
            return MetricResult.nan(self.name, "no reference to judge the answer against", label=None)
        judged = context.result(self.judge, sample)
        if judged.is_nan:
            return (MetricResult.failure if judged.is_failure else MetricResult.nan)(
                self.name, f"judge could not decide: {judged.reason}", label=None, details=judged.details
            )
        label = CORRECT if judged.score >= self.correct_threshold else WRONG
        return MetricResult(
            name=self.name,
            score=1.0 if label == CORRECT else 0.0,
            label=label,
            details=judged.details,
            reason=f"{self.judge.name} {judged.score:.3f} {'≥' if label == CORRECT else '<'} {self.correct_threshold}",
            judge_score=judged.score,
        )

    @staticmethod
    def counts(results: Iterable[MetricResult]) -> dict[str, int]:
        """How many results carry each label (``UNSCORED`` for NaN results)."""
        counter = Counter(getattr(r, "label", None) or "UNSCORED" for r in results)
        return {label: counter.get(label, 0) for label in (*LABELS, "UNSCORED")}


__all__ = [
    "AnswerClassification",
    "CORRECT",
    "DONT_KNOW",
    "WRONG",
]
