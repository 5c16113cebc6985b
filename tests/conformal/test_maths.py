"""The conformal filters' mathematics: exact small cases worked by hand, the refusal of a
calibration set too small for α, and the guarantees checked empirically on synthetic
exchangeable answers (fixed seeds: the same draws every run, no timing in it).

The empirical checks draw T independent trials, each a fresh calibration set and a fresh test
answer from the same distribution; the realised error (the share of trials whose test answer
keeps a false claim, or the mean false share among the kept) estimates a quantity the guarantee
bounds by α, with a standard error of at most √(α(1−α)/T) (a Bernoulli error) or 1/(2√T) (a
share in [0, 1]). The tests allow α + 4 standard errors: a correct method fails that with
probability below 1e-4 per check, a method that ignores the finite-sample correction (the plain
empirical quantile) does not pass it (:func:`test_the_naive_quantile_would_not_pass`).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fact_reasoner.conformal.maths import (
    CalibrationTooSmall,
    Claims,
    adaptive_threshold,
    claims_threshold,
    false_share,
    features,
    includes_false,
    kept,
    min_calibration_size,
    quantile_index,
    response_nonconformity,
    response_threshold,
)
from fact_reasoner.errors import ConformalError, SettingsError

# -- exact small cases -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n, alpha, k",
    [
        (9, 0.1, 9),  # ⌈10 · 0.9⌉ = 9: exactly enough
        (10, 0.1, 10),  # ⌈11 · 0.9⌉ = ⌈9.9⌉ = 10
        (19, 0.1, 18),  # ⌈20 · 0.9⌉ = 18
        (19, 0.05, 19),  # ⌈20 · 0.95⌉ = 19
        (4, 0.2, 4),  # ⌈5 · 0.8⌉ = 4
        (20, 0.2, 17),  # ⌈21 · 0.8⌉ = ⌈16.8⌉ = 17
        (9, 0.3, 7),  # ⌈10 · 0.7⌉ = 7 (not 8: 0.3 is taken as the decimal it is written as)
    ],
)
def test_the_quantile_index_is_the_ceiling_of_n_plus_one_times_one_minus_alpha(n, alpha, k):
    assert quantile_index(n, alpha) == k


@pytest.mark.parametrize("n, alpha", [(8, 0.1), (18, 0.05), (3, 0.2), (0, 0.5)])
def test_a_calibration_set_too_small_for_alpha_is_refused_with_the_reason(n, alpha):
    with pytest.raises(CalibrationTooSmall) as raised:
        quantile_index(n, alpha)
    message = str(raised.value)
    assert f"{n} calibration answer(s) are too few for alpha {alpha:g}" in message
    assert "threshold is infinite" in message and f"at least {min_calibration_size(alpha)} answers" in message
    assert isinstance(raised.value, ConformalError) and isinstance(raised.value, SettingsError)
    with pytest.raises(CalibrationTooSmall):
        response_threshold([0.5] * n, alpha)
    with pytest.raises(CalibrationTooSmall):
        claims_threshold([Claims((0.9,), (True,))] * n, alpha)


def test_the_smallest_calibration_set_is_one_over_alpha_minus_one():
    for alpha in (0.05, 0.1, 0.2, 0.25, 0.3, 0.5):
        n = min_calibration_size(alpha)
        assert n >= 1 / alpha - 1 - 1e-12
        quantile_index(n, alpha)  # enough
        with pytest.raises(CalibrationTooSmall):
            quantile_index(n - 1, alpha)


def test_a_response_threshold_by_hand():
    # four answers; their largest false-claim scores r = 0.7, 0 (no false claim), 0.4, 0.9
    answers = [
        Claims((0.95, 0.7, 0.2), (True, False, False)),
        Claims((0.8, 0.6), (True, True)),
        Claims((0.4, 0.99), (False, True)),
        Claims((0.9, 0.1), (False, True)),
    ]
    r = [response_nonconformity(a) for a in answers]
    assert r == [0.7, 0.0, 0.4, 0.9]
    # alpha 0.2, n = 4: k = ⌈5 · 0.8⌉ = 4, the largest: 0.9 — keep only claims above 0.9
    assert response_threshold(r, 0.2) == 0.9
    # alpha 0.4: k = ⌈5 · 0.6⌉ = 3, the third smallest of (0, 0.4, 0.7, 0.9): 0.7
    assert response_threshold(r, 0.4) == 0.7
    assert kept([0.95, 0.7, 0.2], 0.7) == [True, False, False]  # strictly above: the 0.7 itself goes
    assert not includes_false(answers[0], 0.7) and includes_false(answers[0], 0.69)


def test_a_claims_threshold_by_hand():
    # answer A: true 0.9, false 0.8, true 0.3 → L(τ) = 1/3 for τ < 0.3, 1/2 on [0.3, 0.8), 0 from 0.8
    # (not monotone: dropping the true 0.3 raises it); its envelope L̃ = 1/2 below 0.8, 0 from 0.8.
    a = Claims((0.9, 0.8, 0.3), (True, False, True))
    assert false_share(a, 0.0) == pytest.approx(1 / 3) and false_share(a, 0.5) == 0.5 and false_share(a, 0.8) == 0
    # answer B: all true → L = 0 everywhere
    b = Claims((0.7, 0.6), (True, True))
    # n = 4 answers (A, A, B, B), alpha 0.5: Σ L̃(τ) + 1 ≤ 0.5 · 5 = 2.5 ⟺ Σ L̃ ≤ 1.5:
    # below 0.8 Σ L̃ = 1/2 + 1/2 = 1 ≤ 1.5, so the smallest candidate, τ = 0, keeps everything
    assert claims_threshold([a, a, b, b], 0.5) == 0.0
    # alpha 0.3: Σ L̃ ≤ 0.3 · 5 − 1 = 0.5 fails below 0.8 (Σ = 1), holds from 0.8 (Σ = 0)
    assert claims_threshold([a, a, b, b], 0.3) == 0.8
    # more all-true answers dilute the loss: n = 9 (A, A and seven B), Σ L̃ = 1 ≤ 0.3 · 10 − 1 = 2 at τ = 0
    assert claims_threshold([a, a, b, b, b, b, b, b, b], 0.3) == 0.0


def test_the_adaptive_threshold_with_alike_answers_is_no_bolder_than_the_plain_one():
    # every answer has the same features: the regression is a sample quantile of the n + 1 values
    scores = (0.2, 0.5, 0.9)
    rng = np.random.default_rng(3)
    calibration = [(features(scores), float(r)) for r in rng.uniform(0, 1, size=19)]
    for alpha in (0.1, 0.2, 0.5):
        plain = response_threshold([r for _, r in calibration], alpha)
        adaptive = adaptive_threshold(calibration, scores, alpha)
        # the largest candidate (0 or one of the answer's scores) at or under the plain threshold,
        # or a larger one: never a smaller one (that would keep more than the guarantee allows)
        at_or_under = max(c for c in (0.0, *scores) if c <= plain)
        assert adaptive >= at_or_under


def test_scores_outside_zero_one_or_labels_of_another_length_are_refused():
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        Claims((1.2,))
    with pytest.raises(ValueError, match="labels"):
        Claims((0.5, 0.6), (True,))


# -- the guarantees, empirically --------------------------------------------------------------


def synthetic_answer(rng: np.random.Generator) -> Claims:
    """One answer: 3–12 claims, each true with a probability drawn per answer (answers differ in
    how right they are), its score a noisy, informative posterior (higher when true)."""
    m = int(rng.integers(3, 13))
    right = rng.beta(4, 2)
    truths = rng.uniform(size=m) < right
    scores = np.clip(rng.normal(np.where(truths, 0.72, 0.45), 0.16), 0.0, 1.0)
    return Claims(tuple(float(s) for s in scores), tuple(bool(t) for t in truths))


def trials(seed: int, count: int, n: int) -> list[tuple[list[Claims], Claims]]:
    rng = np.random.default_rng(seed)
    return [([synthetic_answer(rng) for _ in range(n)], synthetic_answer(rng)) for _ in range(count)]


def bernoulli_allowance(alpha: float, count: int) -> float:
    return 4 * math.sqrt(alpha * (1 - alpha) / count)


@pytest.mark.parametrize("alpha, n", [(0.1, 9), (0.1, 25), (0.2, 12), (0.05, 20)])
def test_the_response_guarantee_holds_on_exchangeable_answers(alpha, n):
    count = 3000
    errors = 0
    for seed in range(3):  # three independent seeds, each alone within the allowance
        drawn = trials(1000 * seed + n, count // 3, n)
        here = 0
        for calibration, test in drawn:
            tau = response_threshold([response_nonconformity(c) for c in calibration], alpha)
            here += includes_false(test, tau)
        assert here / len(drawn) <= alpha + bernoulli_allowance(alpha, len(drawn)), (seed, here / len(drawn))
        errors += here
    assert errors / count <= alpha + bernoulli_allowance(alpha, count)
    # and it is not vacuous: the split-conformal error is at least α − 1/(n + 1) with continuous
    # scores (the answers without a false claim, r = 0, make it a little lower)
    assert errors / count >= alpha - 1 / (n + 1) - 0.08


def test_the_naive_quantile_would_not_pass():
    """The empirical (1 − α) quantile without the (n + 1) correction errs more than α on small
    calibration sets: the allowance of the tests above is tight enough to see it."""
    alpha, n, count = 0.1, 9, 3000
    errors = 0
    for calibration, test in trials(77, count, n):
        r = sorted(response_nonconformity(c) for c in calibration)
        naive = r[math.ceil(n * (1 - alpha)) - 1 - 1]  # one rank lower than ⌈(n+1)(1−α)⌉ = 9 here
        errors += includes_false(test, naive)
    assert errors / count > alpha + bernoulli_allowance(alpha, count)


@pytest.mark.parametrize("alpha, n", [(0.1, 9), (0.1, 20), (0.2, 12)])
def test_the_claims_guarantee_holds_on_exchangeable_answers(alpha, n):
    count = 2000
    losses = []
    for calibration, test in trials(500 + n, count, n):
        losses.append(false_share(test, claims_threshold(calibration, alpha)))
    assert sum(losses) / count <= alpha + 4 * 0.5 / math.sqrt(count)


def test_the_adaptive_guarantee_holds_on_exchangeable_answers():
    alpha, n, count = 0.2, 14, 300
    errors = 0
    for calibration, test in trials(4242, count, n):
        points = [(features(c.scores), response_nonconformity(c)) for c in calibration]
        errors += includes_false(test, adaptive_threshold(points, test.scores, alpha))
    assert errors / count <= alpha + bernoulli_allowance(alpha, count)
