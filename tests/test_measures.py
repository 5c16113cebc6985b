"""The evaluation measures (fact_reasoner.measures) against hand-computed values, and the
experiments that report them computing them through this one module."""

import math

import numpy as np
import pytest

from fact_reasoner.measures import auroc, balanced_accuracy


def test_balanced_accuracy_is_the_mean_of_both_recalls():
    gold = [True] * 7 + [False] * 3
    assert balanced_accuracy(gold, [True] * 10) == 0.5  # always-S: 0.5 whatever the balance
    assert balanced_accuracy(gold, [True] * 6 + [False] + [False, False, True]) == pytest.approx((6 / 7 + 2 / 3) / 2)
    assert math.isnan(balanced_accuracy([True, True], [True, False]))


def test_auroc_counts_ties_as_half_and_matches_the_pairwise_definition():
    rng = np.random.default_rng(0)
    gold = rng.random(60) < 0.4
    scores = np.round(rng.random(60), 1)  # many ties
    pairs = [(p, n) for p in scores[gold] for n in scores[~gold]]
    expected = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p, n in pairs) / len(pairs)
    assert auroc(gold.tolist(), scores.tolist()) == pytest.approx(expected)
    assert math.isnan(auroc([True, True], [0.1, 0.2]))


def test_paired_bootstrap_is_seeded_and_tells_better_from_noise():
    from fact_reasoner.measures import paired_bootstrap

    rng = np.random.default_rng(1)
    gold = rng.random(400) < 0.6
    good = np.where(rng.random(400) < 0.9, gold, ~gold)  # right 90 % of the time
    noisy = np.where(rng.random(400) < 0.7, gold, ~gold)  # right 70 %
    better = paired_bootstrap(balanced_accuracy, (gold, good), (gold, noisy), resamples=300)
    assert better.low > 0 and better.reaches_zero_or_above
    worse = paired_bootstrap(balanced_accuracy, (gold, noisy), (gold, good), resamples=300)
    assert worse.high < 0 and not worse.reaches_zero_or_above
    same = paired_bootstrap(balanced_accuracy, (gold, good), (gold, good), resamples=50)
    assert same.difference == same.low == same.high == 0.0
    assert paired_bootstrap(balanced_accuracy, (gold, good), (gold, noisy), resamples=300) == better  # seeded
    with pytest.raises(ValueError, match="same items"):
        paired_bootstrap(balanced_accuracy, (gold, good), (gold[:10], noisy[:10]))


def test_a_missing_class_counts_as_absent_says():
    """NaN by default (undefined); 0.0 where the NLI training reports have always written it."""
    assert math.isnan(balanced_accuracy([True, True], [True, False]))
    assert balanced_accuracy([True, True], [True, False], absent=0.0) == 0.25
    assert balanced_accuracy([False, False, False], [False, True, False], absent=0.0) == pytest.approx(1 / 3)
    assert balanced_accuracy([True, False], [True, True], absent=0.0) == balanced_accuracy([True, False], [True, True])


def test_the_experiments_report_the_shared_measures():
    from experiments import eval_rag_metrics
    from experiments.nli_training.evaluate import binary_metrics

    gold = [True, True, False, True, False, False, True]
    scores = [0.9, 0.4, 0.6, 0.7, 0.2, 0.5, 0.5]
    predicted = [s > 0.5 for s in scores]
    assert binary_metrics(gold, predicted)["balanced_accuracy"] == round(balanced_accuracy(gold, predicted), 4)
    assert binary_metrics([True, True], [True, False])["balanced_accuracy"] == 0.25  # a class absent: recall 0
    labels = [int(g) for g in gold]
    assert eval_rag_metrics.balanced_accuracy(scores, labels, 0.5) == balanced_accuracy(
        gold, [s >= 0.5 for s in scores]
    )
    assert math.isnan(eval_rag_metrics.balanced_accuracy([0.1, 0.9], [1, 1], 0.5))


def test_a_threshold_is_not_chosen_by_an_undefined_balanced_accuracy():
    """One class only: no threshold has a balanced accuracy, and the lowest candidate is kept
    (not whichever a comparison of NaNs happens to favour)."""
    from experiments import eval_rag_metrics

    assert eval_rag_metrics.best_threshold([0.2, 0.9, 0.6], [1, 1, 1]) == 0.2 - 1e-9
    assert eval_rag_metrics.best_threshold([0.2, 0.9, 0.6, 0.1], [0, 1, 1, 0]) == 0.4
