"""The conformal filters' mathematics, as pure functions (no files, no settings).

Notation. A calibration set of n answers (responses) i = 1..n; answer i has m_i claims with
scores s_ij ∈ [0, 1] (the claim's posterior P(true)) and gold labels y_ij (true or false). A
threshold τ *keeps* the claims whose score is strictly above it:

    kept_i(τ) = { j : s_ij > τ }.

So τ = 0 keeps every claim with a positive score and τ = 1 keeps none. A new answer (the test
answer, n + 1) is filtered with a threshold fitted on the n calibration answers. Both guarantees
below are **marginal**: they hold on average over the draw of the calibration answers and of the
test answer, when the n + 1 answers are exchangeable (for example drawn independently from the
same source) — not for one answer in particular, and not for answers of another kind.

**response** — the probability that the kept claims include a false one is at most α (Mohri &
Hashimoto, ICML 2024, "Language Models with Conformal Factuality Guarantees"). Each calibration
answer's non-conformity score is the smallest threshold that keeps none of its false claims,

    r_i = max{ s_ij : y_ij false }   (r_i = 0 when the answer has no false claim),

and the threshold is their split-conformal quantile: the k-th smallest of r_1..r_n with

    k = ⌈(n + 1)(1 − α)⌉   (:func:`quantile_index`).

Then P(r_{n+1} ≤ τ̂) ≥ 1 − α, and r_{n+1} ≤ τ̂ is exactly "no false claim of the test answer is
kept". When k > n — that is n < 1/α − 1 — the quantile is infinite (keep nothing): the
calibration set is too small for that α and :class:`CalibrationTooSmall` says so.

**claims** — the expected share of false claims among an answer's kept claims is at most α
(conformal risk control, Angelopoulos, Bates, Fisch, Lei & Schuster, ICLR 2024). Answer i's loss
at τ is its false-discovery proportion

    L_i(τ) = |{ j ∈ kept_i(τ) : y_ij false }| / |kept_i(τ)|   (0 when nothing is kept),

which is not monotone in τ (dropping a true claim can raise it), so the method controls its
monotone envelope L̃_i(τ) = max_{τ' ≥ τ} L_i(τ') ≥ L_i(τ), non-increasing in τ and bounded by
B = 1, and takes

    τ̂ = min{ τ : (n / (n + 1)) · R̂(τ) + B / (n + 1) ≤ α },   R̂(τ) = (1/n) Σ_i L̃_i(τ),

over the thresholds where a kept set changes (0 and the calibration scores). Then
E[L_{n+1}(τ̂)] ≤ E[L̃_{n+1}(τ̂)] ≤ α. At τ = 1 every loss is 0, so a τ̂ exists exactly when
1/(n + 1) ≤ α — again n ≥ 1/α − 1.

**adaptive** (``response`` only) — the threshold adapts to the answer through features φ(x) (a
constant, its number of claims, its mean posterior), by the conditional conformal method of
Gibbs, Cherian & Candès (2023), used for claims by Cherian, Gibbs & Candès (NeurIPS 2024): for
a candidate value S of the test answer's r, fit the (1 − α)-quantile regression of r on φ over
the n calibration answers and the test answer with r_{n+1} = S,

    ĝ_S = argmin_{g = βᵀφ} Σ_{i=1}^{n+1} ρ_{1−α}(r_i − g(x_i)),   ρ_q(u) = q·u⁺ + (1 − q)·u⁻,

and accept S when S ≤ ĝ_S(x_{n+1}). The threshold of the test answer is the largest accepted
candidate among {0} ∪ {its own scores} (the only values r_{n+1} can take). Since the constant is
among the features, P(r_{n+1} ≤ τ̂(x_{n+1})) ≥ 1 − α marginally, as for the plain threshold; more
strongly, E[f(x)·(1{no false claim kept} − (1 − α))] ≥ 0 for every non-negative f = βᵀφ — the
error is held at α on long and short answers, confident and unsure ones alike, in that linear
sense. It needs a linear program per candidate (scipy's HiGHS).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..errors import ConformalError

__all__ = [
    "ADAPTIVE_FEATURES",
    "TIE_TOLERANCE",
    "CalibrationTooSmall",
    "Claims",
    "adaptive_threshold",
    "claims_threshold",
    "error_spread",
    "false_share",
    "features",
    "includes_false",
    "kept",
    "min_calibration_size",
    "quantile_index",
    "response_nonconformity",
    "response_threshold",
]

#: losses and fitted values within this of a bound count as meeting it (floating-point sums)
TIE_TOLERANCE = 1e-9
#: the features the adaptive threshold is a linear function of, besides the constant
ADAPTIVE_FEATURES = ("claims", "mean_posterior")


class CalibrationTooSmall(ConformalError):
    """The calibration set has too few answers for the requested α: the finite-sample quantile
    would be infinite (every claim dropped). Never replaced by a number."""

    def __init__(self, n: int, alpha: float) -> None:
        self.n = n
        self.alpha = alpha
        self.needed = min_calibration_size(alpha)
        k = quantile_index_unchecked(n, alpha)
        super().__init__(
            f"{n} calibration answer(s) are too few for alpha {alpha:g}: the finite-sample quantile index "
            f"ceil((n+1)(1-alpha)) = {k} is above n = {n}, so the threshold is infinite (every claim dropped); "
            f"alpha {alpha:g} needs at least {self.needed} answers (n >= 1/alpha - 1), or a larger alpha"
        )


def _exact(alpha: float) -> Fraction:
    """α as the decimal it is written as (0.1 → 1/10), so (n + 1)(1 − α) is not 8.999…"""
    if not 0.0 < float(alpha) < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    return Fraction(repr(float(alpha)))


def quantile_index_unchecked(n: int, alpha: float) -> int:
    """k = ⌈(n + 1)(1 − α)⌉, computed exactly, whether or not k ≤ n."""
    return math.ceil((n + 1) * (1 - _exact(alpha)))


def quantile_index(n: int, alpha: float) -> int:
    """The split-conformal quantile's rank, k = ⌈(n + 1)(1 − α)⌉ (1-based, among n scores),
    computed in exact arithmetic on α's decimal value. Raises :class:`CalibrationTooSmall` when
    k > n (n < 1/α − 1: the quantile is infinite).

    >>> quantile_index(9, 0.1), quantile_index(19, 0.1), quantile_index(20, 0.2)
    (9, 18, 17)
    """
    if n < 0:
        raise ValueError(f"n must be ≥ 0, got {n}")
    k = quantile_index_unchecked(n, alpha)
    if k > n:
        raise CalibrationTooSmall(n, alpha)
    return k


def error_spread(n: int, alpha: float) -> tuple[float, float]:
    """How much the error of one fitted ``response`` filter varies with its calibration set:
    given the n calibration answers, the probability that a new answer keeps a false claim is
    (for continuous scores without ties) Beta(n + 1 − k, k)-distributed over the draw of the
    calibration set, k = ⌈(n + 1)(1 − α)⌉ (Vovk 2012; Angelopoulos & Bates 2023, §3.2), with

        mean = (n + 1 − k)/(n + 1) ≤ α,   sd = √(a·b / ((a + b)²(a + b + 1))),  a = n + 1 − k, b = k.

    The guarantee is the mean; the sd says how far one calibration set's filter may be from it,
    which only more calibration answers reduce (about √(α(1 − α)/n)).

    >>> [round(v, 3) for v in error_spread(21, 0.1)]
    [0.091, 0.06]
    >>> [round(v, 3) for v in error_spread(1000, 0.1)]
    [0.1, 0.009]
    """
    k = quantile_index(n, alpha)
    a, b = n + 1 - k, k
    return a / (a + b), math.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))


def min_calibration_size(alpha: float) -> int:
    """The fewest calibration answers with a finite threshold at level α: the smallest n with
    ⌈(n + 1)(1 − α)⌉ ≤ n, i.e. (n + 1)·α ≥ 1, n = ⌈1/α⌉ − 1 (the same bound holds for the
    ``claims`` guarantee, whose condition at τ = 1 is 1/(n + 1) ≤ α).

    >>> min_calibration_size(0.1), min_calibration_size(0.05), min_calibration_size(0.2), min_calibration_size(0.3)
    (9, 19, 4, 3)
    """
    return math.ceil(1 / _exact(alpha)) - 1


@dataclass(frozen=True)
class Claims:
    """One answer's claims: their scores and, for calibration and measurement, whether each is
    true (gold S) — ``truths`` is empty for an answer to filter."""

    scores: tuple[float, ...]
    truths: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        if self.truths and len(self.truths) != len(self.scores):
            raise ValueError(f"{len(self.scores)} scores but {len(self.truths)} labels")
        for s in self.scores:
            if not (isinstance(s, (int, float)) and 0.0 <= s <= 1.0):
                raise ValueError(f"a claim score must be a number in [0, 1], got {s!r}")


def kept(scores: Sequence[float], threshold: float) -> list[bool]:
    """Which claims a threshold keeps: s > τ (τ = inf keeps none).

    >>> kept([0.2, 0.5, 0.9], 0.5)
    [False, False, True]
    """
    return [s > threshold for s in scores]


def response_nonconformity(claims: Claims) -> float:
    """r = max{ s_j : claim j false }, 0 when no claim is false: the smallest threshold that
    keeps no false claim of the answer.

    >>> response_nonconformity(Claims((0.9, 0.4, 0.7), (True, False, False)))
    0.7
    >>> response_nonconformity(Claims((0.9, 0.8), (True, True)))
    0.0
    """
    return max((s for s, true in zip(claims.scores, claims.truths) if not true), default=0.0)


def response_threshold(nonconformity: Sequence[float], alpha: float) -> float:
    """The plain ``response`` threshold: the k-th smallest of r_1..r_n, k = ⌈(n + 1)(1 − α)⌉
    (:func:`quantile_index`; :class:`CalibrationTooSmall` when n < 1/α − 1).

    >>> response_threshold([0.1, 0.3, 0.2, 0.9, 0.0, 0.5, 0.4, 0.8, 0.7, 0.6], 0.2)   # k = ⌈11·0.8⌉ = 9
    0.8
    """
    k = quantile_index(len(nonconformity), alpha)
    return float(sorted(nonconformity)[k - 1])


def includes_false(claims: Claims, threshold: float) -> bool:
    """Whether the kept claims include a false one (the ``response`` guarantee's error)."""
    return any(keep and not true for keep, true in zip(kept(claims.scores, threshold), claims.truths))


def false_share(claims: Claims, threshold: float) -> float:
    """L(τ): the share of false claims among the kept ones, 0 when none is kept (the ``claims``
    guarantee's loss).

    >>> false_share(Claims((0.9, 0.8, 0.3), (True, False, True)), 0.5)
    0.5
    >>> false_share(Claims((0.9, 0.8, 0.3), (True, False, True)), 0.95)
    0.0
    """
    flags = kept(claims.scores, threshold)
    n_kept = sum(flags)
    if not n_kept:
        return 0.0
    return sum(keep and not true for keep, true in zip(flags, claims.truths)) / n_kept


def _envelope(claims: Claims, candidates: Sequence[float]) -> list[float]:
    """L̃(τ) = max_{τ' ≥ τ} L(τ') at each of the sorted ``candidates`` (the thresholds where any
    kept set changes: between two of them every L is constant); :func:`false_share` at each
    candidate, counted with sorted scores."""
    import numpy as np

    scores = np.asarray(claims.scores, dtype=float)
    false = ~np.asarray(claims.truths, dtype=bool) if claims.truths else np.zeros(len(scores), dtype=bool)
    taus = np.asarray(candidates, dtype=float)
    all_sorted = np.sort(scores)
    false_sorted = np.sort(scores[false])
    n_kept = len(all_sorted) - np.searchsorted(all_sorted, taus, side="right")  # #{s > τ}
    n_false = len(false_sorted) - np.searchsorted(false_sorted, taus, side="right")
    losses = np.where(n_kept > 0, n_false / np.maximum(n_kept, 1), 0.0)
    return [float(v) for v in np.maximum.accumulate(losses[::-1])[::-1]]


def claims_threshold(answers: Sequence[Claims], alpha: float) -> float:
    """The ``claims`` threshold by conformal risk control on the monotone envelope of each
    answer's false share (module doc): the smallest τ among 0 and the calibration scores with
    Σ_i L̃_i(τ) + 1 ≤ α(n + 1) (the same condition as (n/(n+1))·R̂(τ) + 1/(n+1) ≤ α, with B = 1).
    Raises :class:`CalibrationTooSmall` when n < 1/α − 1.

    >>> one = Claims((0.9, 0.6), (True, False))   # L = 1/2 at τ < 0.6, 0 from 0.6 on
    >>> claims_threshold([one] * 9, 0.1)          # 9 answers: α(n+1) = 1, so Σ L̃ must be 0
    0.6
    """
    n = len(answers)
    if (n + 1) * _exact(alpha) < 1:
        raise CalibrationTooSmall(n, alpha)
    import numpy as np

    candidates = sorted({0.0, *(s for a in answers for s in a.scores)})
    totals = np.zeros(len(candidates))
    for answer in answers:
        totals += np.asarray(_envelope(answer, candidates))
    budget = float(_exact(alpha) * (n + 1)) - 1.0
    for tau, total in zip(candidates, totals):
        if total <= budget + TIE_TOLERANCE:
            return float(tau)
    return float(candidates[-1])  # pragma: no cover - every loss is 0 at the largest score


def features(scores: Sequence[float]) -> tuple[float, float]:
    """An answer's features for the adaptive threshold (:data:`ADAPTIVE_FEATURES`): its number
    of claims and its mean score (0 for no claims)."""
    return (float(len(scores)), (sum(scores) / len(scores)) if scores else 0.0)


def _quantile_fit(design: list[list[float]], targets: list[float], level: float) -> list[float]:
    """β of the ``level``-quantile regression of ``targets`` on ``design`` (rows of features),
    as the linear program min Σ level·u_i + (1 − level)·v_i with Φβ + u − v = y, u, v ≥ 0."""
    import numpy as np
    from scipy.optimize import linprog

    phi = np.asarray(design, dtype=float)
    y = np.asarray(targets, dtype=float)
    rows, d = phi.shape
    identity = np.eye(rows)
    cost = np.concatenate([np.zeros(d), np.full(rows, level), np.full(rows, 1.0 - level)])
    bounds = [(None, None)] * d + [(0, None)] * (2 * rows)
    solved = linprog(cost, A_eq=np.hstack([phi, identity, -identity]), b_eq=y, bounds=bounds, method="highs")
    if not solved.success:  # pragma: no cover - the program is always feasible and bounded
        raise ConformalError(f"the quantile regression of the adaptive threshold failed: {solved.message}")
    return [float(b) for b in solved.x[:d]]


def _design_row(point: Sequence[float], scale: Sequence[float]) -> list[float]:
    return [1.0, *(value / unit for value, unit in zip(point, scale))]


def adaptive_threshold(
    calibration: Sequence[tuple[Sequence[float], float]],
    answer: Sequence[float],
    alpha: float,
) -> float:
    """The adaptive ``response`` threshold of one answer with claim scores ``answer``
    (module doc): the largest candidate S in {0} ∪ {the answer's scores} with
    S ≤ ĝ_S(x_{n+1}), ĝ_S the (1 − α)-quantile regression of r on (1, claims, mean posterior)
    over the ``calibration`` answers — ``(features, r)`` pairs (:func:`features`,
    :func:`response_nonconformity`) — and the answer with r = S. Returns ``inf`` (keep nothing)
    when no candidate is accepted. Raises :class:`CalibrationTooSmall` when n < 1/α − 1.

    When every answer has the same features the regression is the (1 − α) sample quantile of
    the n + 1 values, and a candidate is accepted when it is at most their k-th smallest (or,
    where that quantile is not unique, at most a larger value): the plain threshold's decision,
    or a more cautious one.
    """
    n = len(calibration)
    quantile_index(n, alpha)  # refuses a calibration set too small for α
    point = features(answer)
    scale = [max(1.0, max(abs(f[i]) for f, _ in calibration)) for i in range(len(point))] if calibration else [1.0]
    design = [_design_row(f, scale) for f, _ in calibration] + [_design_row(point, scale)]
    targets = [float(r) for _, r in calibration]
    level = float(1 - _exact(alpha))
    for candidate in sorted({0.0, *answer}, reverse=True):
        beta = _quantile_fit(design, targets + [candidate], level)
        fitted = sum(b * x for b, x in zip(beta, design[-1]))
        if candidate <= fitted + TIE_TOLERANCE:
            return float(candidate)
    return math.inf
