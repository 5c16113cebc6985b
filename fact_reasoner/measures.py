"""The evaluation measures, written once: agreement with gold labels and calibration.

Brier score, MAE, reliability bins, ECE, balanced accuracy, AUROC and a paired bootstrap of the
difference of any of them between two systems on the same items (:func:`paired_bootstrap`).
Every measure takes ``(y_true, y_pred)`` or ``(y_true, y_prob)``, in scikit-learn's order:
``y_true`` the gold truth (y_i = 1 for an item labelled true or supported), ``y_prob``
probabilities or scores, ``y_pred`` predictions. A measure that is undefined (no items, one
class absent) is NaN. :mod:`fact_reasoner.scores` (the dataset figures), the experiments and the
NLI training scripts all use these.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

ECE_BINS = 10


def brier_score(y_true: Sequence[bool], y_prob: Sequence[float]) -> float:
    """Brier score = (1/N) Σ_i (P(a_i) − y_i)², y_i = 1 for gold S; NaN for no atoms."""
    if len(y_true) != len(y_prob):
        raise ValueError("y_true and y_prob differ in length")
    if not y_prob:
        return math.nan
    return sum((p - float(y)) ** 2 for y, p in zip(y_true, y_prob)) / len(y_prob)


def mean_absolute_error(y_true: Sequence[float], y_pred: Sequence[float]) -> float:
    """MAE = (1/R) Σ_r |ŷ_r − y_r| (e.g. predicted vs gold factual precision per response);
    NaN for no responses."""
    if len(y_true) != len(y_pred):
        raise ValueError("y_true and y_pred differ in length")
    return sum(abs(p - g) for g, p in zip(y_true, y_pred)) / len(y_pred) if y_pred else math.nan


@dataclass(frozen=True)
class ReliabilityBin:
    """One bin [lower, upper) of a reliability diagram."""

    lower: float
    upper: float
    count: int
    mean_probability: float  # conf(B) = mean P(a_i) over the bin; NaN when empty
    fraction_true: float  # acc(B) = mean y_i over the bin; NaN when empty


def bin_index(p: float, bins: int = ECE_BINS) -> int:
    """Equal-width bin of p ∈ [0, 1]: b = min(⌊p·bins⌋, bins − 1), so p = 1 is in the last bin."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"probability out of [0, 1]: {p}")
    return min(int(p * bins), bins - 1)


def reliability_bins(y_true: Sequence[bool], y_prob: Sequence[float], bins: int = ECE_BINS) -> list[ReliabilityBin]:
    """Per equal-width bin B_b = [b/bins, (b+1)/bins) (the last includes 1): |B_b|,
    conf(B_b) = mean P(a_i) and acc(B_b) = mean y_i over the atoms in it."""
    if len(y_true) != len(y_prob):
        raise ValueError("y_true and y_prob differ in length")
    sums = [[0, 0.0, 0] for _ in range(bins)]
    for y, p in zip(y_true, y_prob):
        b = sums[bin_index(p, bins)]
        b[0] += 1
        b[1] += p
        b[2] += bool(y)
    return [
        ReliabilityBin(i / bins, (i + 1) / bins, int(n), s / n if n else math.nan, t / n if n else math.nan)
        for i, (n, s, t) in enumerate(sums)
    ]


def expected_calibration_error(y_true: Sequence[bool], y_prob: Sequence[float], bins: int = ECE_BINS) -> float:
    """ECE = Σ_b (|B_b| / N) · |acc(B_b) − conf(B_b)| over the bins of :func:`reliability_bins`;
    NaN for no atoms."""
    if len(y_true) != len(y_prob):
        raise ValueError("y_true and y_prob differ in length")
    total = len(y_prob)
    if not total:
        return math.nan
    return sum(
        b.count / total * abs(b.fraction_true - b.mean_probability)
        for b in reliability_bins(y_true, y_prob, bins)
        if b.count
    )


def balanced_accuracy(y_true: Sequence[bool], y_pred: Sequence[bool], *, absent: float = math.nan) -> float:
    """BA = (TPR + TNR) / 2 = ½ (TP / (TP + FN) + TN / (TN + FP)): the mean of the recalls of
    both classes, so answering one class for everything scores 0.5 whatever the class balance.

    A class absent from ``y_true`` has no recall: it counts as ``absent``, NaN by default (the
    measure is undefined, and NaN says so); the NLI training reports give it 0.0 (``absent=0.0``:
    a set of one class then scores half its one recall), as they always have.

    >>> balanced_accuracy([True, True, True, False], [True, True, True, True])
    0.5
    >>> balanced_accuracy([True, True], [True, False], absent=0.0)
    0.25
    """
    if len(y_true) != len(y_pred):
        raise ValueError("y_true and y_pred differ in length")
    tp = sum(bool(y) and bool(p) for y, p in zip(y_true, y_pred))
    tn = sum(not y and not p for y, p in zip(y_true, y_pred))
    positives = sum(bool(y) for y in y_true)
    negatives = len(y_true) - positives
    if (not positives or not negatives) and math.isnan(absent):
        return math.nan
    tpr = tp / positives if positives else absent
    tnr = tn / negatives if negatives else absent
    return (tpr + tnr) / 2


def auroc(y_true: Sequence[bool], y_score: Sequence[float]) -> float:
    """Area under the ROC curve = P(a random positive scores above a random negative), ties
    counting half — the rank form (R₊ − n₊(n₊ + 1)/2) / (n₊ n₋), R₊ the sum of the positives'
    ranks with tied scores given their mean rank; NaN when either class is absent.

    >>> auroc([True, False, True, False], [0.9, 0.1, 0.4, 0.4])
    0.875
    """
    import numpy as np

    if len(y_true) != len(y_score):
        raise ValueError("y_true and y_score differ in length")
    y = np.asarray(y_true, dtype=bool)
    scores = np.asarray(y_score, dtype=float)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if not n_pos or not n_neg:
        return math.nan
    order = np.argsort(scores, kind="mergesort")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    # tied scores share their mean rank
    unique, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    if len(unique) < len(scores):
        sums = np.zeros(len(unique))
        np.add.at(sums, inverse, ranks)
        ranks = (sums / counts)[inverse]
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


@dataclass(frozen=True)
class BootstrapInterval:
    """A paired bootstrap of a difference between two systems on the same items."""

    difference: float  # the measure of the first system minus the second's, on all items
    low: float  # the percentile interval's bounds
    high: float
    level: float
    resamples: int  # resamples where both measures were defined (NaN ones are left out)
    seed: int

    @property
    def reaches_zero_or_above(self) -> bool:
        """The first system is not worse beyond chance: the interval's upper bound is ≥ 0."""
        return self.high >= 0

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def paired_bootstrap(
    measure: Callable[..., float],
    first: Sequence[Sequence[Any]],
    second: Sequence[Sequence[Any]],
    *,
    resamples: int = 1000,
    seed: int = 13,
    level: float = 0.95,
) -> BootstrapInterval:
    """Paired bootstrap of Δ = measure(first) − measure(second) over the same n items.

    ``first`` and ``second`` are tuples of per-item columns in one item order, e.g. ``(y_true,
    y_score)`` of each system; ``measure(*columns)`` gives a number (any measure above). Each of
    ``resamples`` draws n item indices with replacement (one seeded generator), and Δ is
    computed on the same draw for both systems, so what the items share (an easy or a hard
    item) cancels. The interval is the percentile interval of the resampled Δ at ``level``;
    draws where a measure is NaN (one class missing) are left out and counted.

    >>> gold = [True, False] * 20
    >>> better, worse = (gold, [g for g in gold]), (gold, [True] * 40)
    >>> interval = paired_bootstrap(balanced_accuracy, better, worse, resamples=200)
    >>> interval.difference, interval.low > 0
    (0.5, True)
    """
    import numpy as np

    columns_a = [np.asarray(c) for c in first]
    columns_b = [np.asarray(c) for c in second]
    n = len(columns_a[0])
    if any(len(c) != n for c in columns_a + columns_b):
        raise ValueError("paired_bootstrap needs the same items, in one order, for both systems")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    observed = measure(*columns_a) - measure(*columns_b)
    rng = np.random.default_rng(seed)
    deltas = []
    for _ in range(resamples):
        index = rng.integers(0, n, n)
        delta = measure(*(c[index] for c in columns_a)) - measure(*(c[index] for c in columns_b))
        if not math.isnan(delta):
            deltas.append(delta)
    if not deltas:
        return BootstrapInterval(float(observed), math.nan, math.nan, level, 0, seed)
    low, high = np.quantile(deltas, [(1 - level) / 2, 1 - (1 - level) / 2])
    return BootstrapInterval(float(observed), float(low), float(high), level, len(deltas), seed)
