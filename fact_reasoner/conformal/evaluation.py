"""Measuring a conformal filter on labelled answers: many random calibration/test splits.

Each split draws half the answers (⌊n/2⌋) as calibration at random and keeps the rest as test;
the filter is fitted on the calibration half (:func:`~fact_reasoner.conformal.calibration.fit_filter`'s
mathematics) and applied to each test answer. Per split:

- **realised error**, the guarantee's own quantity on the test half: for ``response`` the share
  of test answers whose kept claims include a false one, for ``claims`` the mean over test
  answers of the share of false claims among the kept (0 for an answer with none kept);
- **retention**: the kept true claims over all true claims of the test half (how much of what
  was right survives the filter), and the kept share of all claims.

The guarantee bounds the realised error's expectation over splits (a marginal guarantee): one
split may exceed α, the mean over many must not, beyond the noise of a finite number of
splits. Seeds make every split reproducible (``numpy.random.default_rng(seed)``).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from .maths import (
    CalibrationTooSmall,
    Claims,
    adaptive_threshold,
    claims_threshold,
    false_share,
    features,
    includes_false,
    kept,
    response_nonconformity,
    response_threshold,
)

__all__ = ["Evaluation", "SplitOutcome", "evaluate", "fitted_thresholds", "outcome", "random_splits", "retention_curve"]


@dataclass(frozen=True)
class SplitOutcome:
    """One split's realised error, retention of true claims and kept share of all claims."""

    error: float
    retention: float
    kept_share: float


def random_splits(n: int, splits: int, seed: int) -> list[tuple[list[int], list[int]]]:
    """``splits`` random (calibration, test) index lists over n answers: ⌊n/2⌋ calibration,
    the rest test, from ``numpy.random.default_rng(seed)``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(splits):
        order = [int(i) for i in rng.permutation(n)]
        out.append((sorted(order[: n // 2]), sorted(order[n // 2 :])))
    return out


def fitted_thresholds(
    calibration: Sequence[Claims], test: Sequence[Claims], alpha: float, guarantee: str, method: str
) -> list[float]:
    """Each test answer's threshold from the calibration answers (``inf``: keep none)."""
    if guarantee == "claims":
        if method != "plain":
            raise ValueError("the adaptive method is implemented for the response guarantee only")
        tau = claims_threshold(calibration, alpha)
        return [tau] * len(test)
    r = [response_nonconformity(c) for c in calibration]
    if method == "plain":
        tau = response_threshold(r, alpha)
        return [tau] * len(test)
    points = [(features(c.scores), value) for c, value in zip(calibration, r)]
    return [adaptive_threshold(points, answer.scores, alpha) for answer in test]


def outcome(test: Sequence[Claims], thresholds: Sequence[float], guarantee: str) -> SplitOutcome:
    """The realised error, retention and kept share of test answers filtered at ``thresholds``."""
    if guarantee == "response":
        errors = [float(includes_false(c, t)) for c, t in zip(test, thresholds)]
    else:
        errors = [false_share(c, t) for c, t in zip(test, thresholds)]
    true_total = true_kept = claims_total = claims_kept = 0
    for answer, tau in zip(test, thresholds):
        flags = kept(answer.scores, tau)
        claims_total += len(flags)
        claims_kept += sum(flags)
        true_total += sum(answer.truths)
        true_kept += sum(k and t for k, t in zip(flags, answer.truths))
    return SplitOutcome(
        error=sum(errors) / len(errors) if errors else math.nan,
        retention=true_kept / true_total if true_total else math.nan,
        kept_share=claims_kept / claims_total if claims_total else math.nan,
    )


@dataclass(frozen=True)
class Evaluation:
    """The outcomes of every split at one α, guarantee and method, and their summaries."""

    alpha: float
    guarantee: str
    method: str
    outcomes: list[SplitOutcome] = field(default_factory=list)
    calibration_size: int = 0

    def _mean(self, name: str) -> float:
        values = self._values(name)
        return statistics.fmean(values) if values else math.nan

    def _sd(self, name: str) -> float:
        """The sample standard deviation over splits (n − 1), NaN below two splits."""
        values = self._values(name)
        return statistics.stdev(values) if len(values) >= 2 else math.nan

    def _values(self, name: str) -> list[float]:
        """One figure of every split that has it (NaN: no claim kept, or none true)."""
        return [value for o in self.outcomes if not math.isnan(value := getattr(o, name))]

    @property
    def error(self) -> float:
        """The mean realised error over splits (what the guarantee bounds by α)."""
        return self._mean("error")

    @property
    def error_sd(self) -> float:
        return self._sd("error")

    @property
    def retention(self) -> float:
        """The mean retention of true claims over splits."""
        return self._mean("retention")

    @property
    def retention_sd(self) -> float:
        return self._sd("retention")

    @property
    def kept_share(self) -> float:
        return self._mean("kept_share")

    @property
    def over_alpha(self) -> float:
        """The share of splits whose realised error is above α (the guarantee allows some)."""
        return sum(o.error > self.alpha for o in self.outcomes) / len(self.outcomes) if self.outcomes else math.nan


def evaluate(
    answers: Sequence[Claims],
    alpha: float,
    guarantee: str = "response",
    method: str = "plain",
    *,
    splits: int = 200,
    seed: int = 0,
) -> Evaluation:
    """The filter over ``splits`` random half/half splits of ``answers`` (module doc). Raises
    :class:`~fact_reasoner.conformal.maths.CalibrationTooSmall` when half the answers are too
    few for α."""
    outcomes = []
    for calibration_ids, test_ids in random_splits(len(answers), splits, seed):
        calibration = [answers[i] for i in calibration_ids]
        test = [answers[i] for i in test_ids]
        thresholds = fitted_thresholds(calibration, test, alpha, guarantee, method)
        outcomes.append(outcome(test, thresholds, guarantee))
    return Evaluation(alpha, guarantee, method, outcomes, len(answers) // 2)


def retention_curve(
    answers: Sequence[Claims],
    alphas: Sequence[float],
    guarantee: str = "response",
    *,
    splits: int = 100,
    seed: int = 0,
) -> list[Evaluation]:
    """The plain filter's :func:`evaluate` at each α of ``alphas`` for which half the answers
    are enough (the others are left out: their threshold would be infinite)."""
    out = []
    for alpha in alphas:
        try:
            out.append(evaluate(answers, alpha, guarantee, "plain", splits=splits, seed=seed))
        except CalibrationTooSmall:
            continue
    return out
