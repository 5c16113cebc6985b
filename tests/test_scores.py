"""Scores against hand-computed values (precision, R@K, F1@K, entropy, gold agreement, the S/NS rule)."""

import math

import pytest

from fact_reasoner.config import PipelineConfig
from fact_reasoner.inference import make_engine
from fact_reasoner.metrics.support import ClaimSupport
from fact_reasoner.pipeline import FactReasoner
from fact_reasoner.schema import Label
from fact_reasoner.scores import (
    SUPPORTED_THRESHOLD,
    UNIFORM_TOLERANCE,
    compare_with_gold,
    entropy_terms,
    f1_at_k,
    factual_precision,
    is_supported,
    is_uniform,
    predict_label,
    recall_at_k,
    resolve_k,
    score_record,
    summarize,
)

S, NS = Label.SUPPORTED, Label.NOT_SUPPORTED


def test_precision_recall_f1_by_hand():
    # 3 of 4 atoms supported, K = 5: Pr = .75, R = .6, F1 = 2·.75·.6/1.35 = 0.6667
    assert factual_precision(3, 4) == 0.75
    assert recall_at_k(3, 5) == 0.6
    assert f1_at_k(3, 4, 5) == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    assert recall_at_k(9, 5) == 1.0
    assert f1_at_k(0, 4, 5) == 0.0
    assert math.isnan(factual_precision(0, 0))


def test_exactly_one_half_is_uniform_and_not_supported():
    scores = score_record({"a0": 0.5, "a1": 0.9, "a2": 0.2}, k=2)
    assert scores.num_true_atoms == 1
    assert scores.num_uniform_atoms == 1
    assert scores.num_false_atoms == 2
    assert scores.factuality_score == pytest.approx(1 / 3)


# P = 0.5 exactly, 0.5 ± floating-point noise, and a real (if small) lean towards true
TIES = {"a0": 0.5, "a1": 0.5 + 1e-15, "a2": 0.5 - 1e-15, "a3": 0.5 + 1e-6}
TIE_LABELS = {"a0": NS, "a1": NS, "a2": NS, "a3": S}


def test_threshold_and_tie_rule():
    assert SUPPORTED_THRESHOLD == 0.5 and UNIFORM_TOLERANCE == 1e-9
    assert 0.5 + 1e-15 > 0.5  # the noise is real: a plain "P > 0.5" would call a1 supported
    assert {a: predict_label(p) for a, p in TIES.items()} == TIE_LABELS
    assert [is_supported(p) for p in TIES.values()] == [False, False, False, True]
    assert [is_uniform(p) for p in TIES.values()] == [True, True, True, False]
    assert is_supported(0.9) and not is_supported(0.1) and not is_supported(math.nan)
    scores = score_record(TIES, k=1)
    assert (scores.num_true_atoms, scores.num_uniform_atoms, scores.num_false_atoms) == (1, 3, 3)
    truth = [S, S, S, S]
    assert compare_with_gold(truth, list(TIES.values())).true_positive == 1
    # the RAG metrics' claims use the same rule
    assert [ClaimSupport("c", p).supported for p in TIES.values()] == [False, False, False, True]


class _FixedAtomMarginals:
    """A real engine whose atom posteriors are then replaced (to pin P at a tie)."""

    name = "fixed"

    def __init__(self, atoms: dict[str, float]):
        self.inner = make_engine("brute-force")
        self.atoms = atoms

    def infer(self, graph):
        result = self.inner.infer(graph)
        result.marginals.update({a: p for a, p in self.atoms.items() if a in result.marginals})
        return result


@pytest.mark.parametrize("version", [1, 2, 3])
def test_ties_are_decided_alike_in_fr1_fr2_fr3(version):
    record = {
        "input": "q", "output": "o",
        "atoms": [{"id": a, "text": f"claim {a}"} for a in TIES],
        "contexts": [{"id": "c0", "text": "one passage"}, {"id": "c1", "text": "another passage"}],
        "relations": [],
    }
    fr = FactReasoner(PipelineConfig(version=version), engine=_FixedAtomMarginals(TIES))
    row = fr.assess(record, k=1).model_dump(mode="json")
    assert {a["id"]: a["probability"] for a in row["atoms"]} == TIES
    assert row["predictions"] == {a: label.value for a, label in TIE_LABELS.items()}
    assert (row["num_true_atoms"], row["num_uniform_atoms"]) == (1, 3)
    assert row["factuality_score"] == 0.25


def test_entropy_uses_natural_log():
    # −0.5 ln 0.5 = 0.34657…; the README's 0.150515 is the log10 value
    assert entropy_terms([0.5]) == [pytest.approx(0.5 * math.log(2))]
    scores = score_record({"a0": 0.5, "a1": 1.0}, k=1)
    assert scores.entropy == pytest.approx(0.5 * math.log(2))
    assert scores.avg_entropy == pytest.approx(0.25 * math.log(2))


def test_resolve_k_rules():
    assert resolve_k(7, 3) == 7
    assert resolve_k("half", 9) == 4
    assert resolve_k("half", 1) == 1
    assert resolve_k("median", 3, 10.5) == 11
    with pytest.raises(ValueError):
        resolve_k("median", 3)
    with pytest.raises(ValueError):
        resolve_k(0, 3)


def test_gold_comparison_by_hand():
    probs = [0.9, 0.2, 0.7, 0.4]
    gold = [S, NS, NS, S]
    cmp = compare_with_gold(gold, probs)
    assert (cmp.true_positive, cmp.true_negative, cmp.false_positive, cmp.false_negative) == (1, 1, 1, 1)
    assert cmp.gold_factuality_score == 0.5
    assert cmp.brier_score == pytest.approx((0.01 + 0.04 + 0.49 + 0.36) / 4)


def test_record_scores_with_partial_gold():
    scores = score_record({"a0": 0.9, "a1": 0.1, "a2": 0.8}, k=2, gold={"a0": S, "a1": S, "a2": None})
    assert scores.gold.true_positive == 1 and scores.gold.false_negative == 1
    assert scores.gold.gold_factuality_score == 1.0
    assert scores.as_fields()["gold_true_atoms"] == 2


def test_dataset_summary_by_hand():
    probs = [[0.9, 0.1], [0.8, 0.7, 0.6, 0.2]]
    gold = [[S, S], [S, NS, S, NS]]
    summary = summarize(probs, gold, k="median")
    assert summary.median_num_atoms == 3.0 and summary.k == 3
    # precisions .5 and .75; gold precisions 1 and .5 → MAE = (.5 + .25) / 2
    assert summary.mean_factuality_score == pytest.approx(0.625)
    assert summary.mae_factuality_score == pytest.approx(0.375)
    # atoms: TP = 3 (0.9, 0.8, 0.6), FN = 1 (0.1), FP = 1 (0.7), TN = 1 (0.2)
    assert summary.atom_accuracy == pytest.approx(4 / 6)
    assert summary.atom_f1_supported == pytest.approx(6 / 8)
    # F1@3: first S=1 → Pr .5, R 1/3, F1 .4; second S=3 → Pr .75, R 1, F1 6/7
    assert summary.mean_f1_k == pytest.approx((0.4 + 6 / 7) / 2)
