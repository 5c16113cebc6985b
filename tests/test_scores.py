"""Scores against hand-computed values (precision, R@K, F1@K, entropy, gold agreement, the S/NS rule)."""

import math
import re

import pytest

from fact_reasoner.inference import make_engine
from fact_reasoner.metrics.support import ClaimSupport
from fact_reasoner.reasoner import FactReasoner
from fact_reasoner.schema import Label
from fact_reasoner.scores import (
    SUPPORTED_THRESHOLD,
    UNIFORM_TOLERANCE,
    compare_with_gold,
    describe_k,
    entropy_terms,
    f1_at_k,
    factual_precision,
    is_supported,
    is_uniform,
    predict_label,
    recall_at_k,
    resolve_k,
    score_record,
    summarize_rows,
)
from fact_reasoner.settings.config import PipelineConfig

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
        "input": "q",
        "output": "o",
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


def _written_row(probs, gold, k):
    """An output row as the pipeline writes it: the record's scores and its atoms."""
    ids = [f"a{i}" for i in range(len(probs))]
    scores = score_record(dict(zip(ids, probs)), k, dict(zip(ids, gold)))
    atoms = [
        {"id": i, "label": g.value if g else None, "probability": p, "prediction": predict_label(p).value}
        for i, p, g in zip(ids, probs, gold)
    ]
    return scores.as_fields() | {"atoms": atoms}


def test_dataset_summary_by_hand():
    # K as the records were scored: max(n // 2, 1) = 1 and 2 (the median of 2 and 4 atoms would be 3)
    rows = [_written_row([0.9, 0.1], [S, S], k=1), _written_row([0.8, 0.7, 0.6, 0.2], [S, NS, S, NS], k=2)]
    summary = summarize_rows(rows)
    assert summary.num_records == 2 and summary.num_atoms == 6 and summary.median_num_atoms == 3.0
    assert summary.k == (1, 2)
    # F1@1 of the first: S=1, Pr .5, R 1 → 2/3; F1@2 of the second: S=3, Pr .75, R 1 → 6/7
    assert [r["f1_k"] for r in rows] == [pytest.approx(2 / 3), pytest.approx(6 / 7)]
    assert summary.mean_f1_k == pytest.approx((2 / 3 + 6 / 7) / 2)  # not F1@3's (0.4 + 6/7) / 2
    # precisions .5 and .75; gold precisions 1 and .5 → MAE = (.5 + .25) / 2
    assert summary.mean_factuality_score == pytest.approx(0.625)
    assert summary.mean_gold_factuality_score == pytest.approx(0.75)
    assert summary.mae_factuality_score == pytest.approx(0.375)
    # atoms: TP = 3 (0.9, 0.8, 0.6), FN = 1 (0.1), FP = 1 (0.7), TN = 1 (0.2)
    assert summary.atom_accuracy == pytest.approx(4 / 6)
    assert summary.atom_f1_supported == pytest.approx(6 / 8)
    # recall of S 3/4, recall of NS 1/2
    assert summary.atom_balanced_accuracy == pytest.approx((3 / 4 + 1 / 2) / 2)
    assert summary.atom_brier_score == pytest.approx((0.01 + 0.81 + 0.04 + 0.49 + 0.16 + 0.04) / 6)
    # bins: 0.1 (y=1) | 0.2 (y=0) | 0.6 (y=1) | 0.7 (y=0) | 0.8 (y=1) | 0.9 (y=1)
    assert summary.atom_ece == pytest.approx((0.9 + 0.2 + 0.4 + 0.7 + 0.2 + 0.1) / 6)
    assert (summary.num_gold_atoms, summary.num_gold_records) == (6, 2)
    assert summary.as_dict()["k"] == [1, 2]


def test_dataset_summary_uses_what_the_rows_wrote():
    """The summary reads the written scores, even where a re-scoring would give another value."""
    rows = [_written_row([0.9, 0.8, 0.2], [None, None, None], k=5)]
    rows[0]["f1_k"] = 0.123  # a value no re-scoring of these atoms gives
    rows[0]["factuality_score"] = 0.456
    summary = summarize_rows(rows)
    assert summary.k == (5,) and summary.mean_f1_k == 0.123 and summary.mean_factuality_score == 0.456
    assert summary.atom_accuracy is None and summary.num_gold_atoms == 0  # no gold: no gold figures


def test_dataset_summary_of_partly_labelled_and_empty_rows():
    rows = [
        _written_row([0.9, 0.3, 0.7], [S, None, NS], k=2),  # Pr 2/3 written; over labelled atoms 1 (both S)
        _written_row([0.8], [None], k=2),  # no gold label: in Pr and F1@K, not in the gold figures
        _written_row([], [], k=2),  # no atoms: factuality_score NaN (null on disk), F1@K 0
    ]
    rows[2]["factuality_score"] = None  # as read back from JSON
    summary = summarize_rows(rows)
    assert summary.num_records == 3 and summary.num_atoms == 4 and summary.k == (2,)
    assert summary.mean_factuality_score == pytest.approx((2 / 3 + 1.0) / 2)
    assert summary.mean_f1_k == pytest.approx((rows[0]["f1_k"] + rows[1]["f1_k"] + 0.0) / 3)
    assert summary.num_gold_records == 1 and summary.num_gold_atoms == 2
    assert summary.mean_gold_factuality_score == 0.5 and summary.mae_factuality_score == pytest.approx(0.5)
    assert summary.atom_accuracy == 0.5
    assert summary.atom_balanced_accuracy == 0.5  # the S atom found (1), the NS atom missed (0)
    empty = summarize_rows([])
    assert empty.num_records == 0 and empty.k == () and math.isnan(empty.mean_f1_k)
    assert empty.as_dict()["k"] is None


def test_balanced_accuracy_does_not_reward_saying_yes():
    always_s = [_written_row([0.9, 0.9, 0.9, 0.9], [S, S, S, NS], k=2)]
    summary = summarize_rows(always_s)
    assert summary.atom_f1_supported == pytest.approx(6 / 7)  # looks good
    assert summary.atom_balanced_accuracy == 0.5  # is chance
    one_class = summarize_rows([_written_row([0.9, 0.2], [S, S], k=1)])
    assert math.isnan(one_class.atom_balanced_accuracy)  # no NS atom: the recall of NS is undefined


def test_describe_k():
    assert describe_k([7]) == "7" and describe_k((9, 4, 4)) == "4, 9" and describe_k(range(2, 31)) == "2–30"
    assert describe_k([]) == ""


# -- FActScore's length penalty and respond ratio (issue #25) ----------------------------------


def test_length_penalty_by_hand():
    """exp(1 − γ/|A|) below γ: |A| = 5, γ = 10 → exp(−1) = 0.367879; |A| = 1 → exp(−9) =
    0.00012341; |A| ≥ γ → 1; γ = 0 → 1 (off); no atoms with γ > 0 → NaN (no precision)."""
    from fact_reasoner.scores import length_penalty

    assert length_penalty(5, 10) == pytest.approx(0.3678794412)
    assert length_penalty(1, 10) == pytest.approx(0.0001234098)
    assert length_penalty(10, 10) == 1.0 and length_penalty(25, 10) == 1.0
    assert length_penalty(0, 0) == 1.0 and length_penalty(3, 0) == 1.0
    assert math.isnan(length_penalty(0, 10))
    with pytest.raises(ValueError):
        length_penalty(3, -1)


def test_respond_ratio_by_hand():
    from fact_reasoner.scores import respond_ratio

    assert respond_ratio([False, False, True, False, True]) == pytest.approx(3 / 5)
    assert respond_ratio([True]) == 0.0
    assert math.isnan(respond_ratio([]))


def test_response_score_fields_are_the_record_scores_with_the_length_penalty():
    """Both pipelines' rows get their scores here: K resolved against the dataset median, gold
    agreement over the scored atoms only, and with γ > 0 precision × exp(1 − γ/n)."""
    from fact_reasoner.scores import length_penalty, response_score_fields, score_record

    probabilities = {"a0": 0.9, "a1": 0.2, "a2": 0.7}
    gold = {"a0": "S", "a1": "NS", "a2": "S", "a3": "NS"}  # a3 not scored: not in the agreement
    fields = response_score_fields(probabilities, "median", gold, dataset_median_atoms=5)
    expected = score_record(probabilities, 5, {k: v for k, v in gold.items() if k != "a3"}).as_fields()
    assert fields == expected | {
        "k_rule": "median",
        "k_reason": "--k median: the median number of claims per response in the input, 5",
    }
    unknown = response_score_fields(probabilities, "median", {})  # no median known: max(n // 2, 1)
    assert (unknown["k"], unknown["k_rule"]) == (1, "half") and "this run finds the claims as it goes" in unknown[
        "k_reason"
    ]
    penalised = response_score_fields(probabilities, 2, {}, gamma=10)
    assert penalised["unpenalized_factuality_score"] == pytest.approx(2 / 3)
    assert penalised["length_penalty"] == length_penalty(3, 10)
    assert penalised["factuality_score"] == pytest.approx(2 / 3 * length_penalty(3, 10))


def test_k_is_one_rule_for_the_command_and_the_python_api(tmp_path):
    """``--k median`` on records without atoms: the command fell back to max(n // 2, 1) while
    ``FactReasoner.assess`` used the record's own atom count, and neither row said which. Now
    both choose K by :func:`choose_k`, and the row and the summary say why."""
    import json

    from fact_reasoner.reasoner import FactReasoner
    from fact_reasoner.runner import AssessDataset, run_dataset
    from fact_reasoner.settings.config import PipelineConfig

    class FourClaims:  # a real atomizer's interface: one claim per sentence
        def atomize(self, text, question=None):
            from fact_reasoner.schema import Atom

            return [Atom(id=f"a{i}", text=f"{s.strip()}.") for i, s in enumerate(text.split(".")) if s.strip()]

    config = PipelineConfig().with_options(nli="precomputed", use_cache=False, revise=False)
    answer = "Paris is in France. Rome is in Italy. Berlin is in Germany. Madrid is in Spain."
    record = {"input": "Where are they?", "output": answer, "contexts": ["A passage."], "relations": []}
    assessor = FactReasoner(config, atomizer=FourClaims())
    row = assessor.assess(record).model_dump(mode="json")
    assert row["num_atoms"] == 4 and row["k"] == 2  # max(4 // 2, 1), as the command
    assert row.get("k_rule") == "half" and "--k median needs the number of claims" in row["k_reason"]

    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(record) + "\n")
    report = run_dataset(AssessDataset(assessor=assessor, input_file=source, output_dir=tmp_path, progress=False))
    (written,) = report.rows
    assert {key: written[key] for key in ("k", "k_rule", "k_reason")} == {
        key: row[key] for key in ("k", "k_rule", "k_reason")
    }
    assert report.summary["k"] == [2] and report.summary["k_reasons"] == [row["k_reason"]]

    carried = dict(record, atoms=[{"id": f"a{i}", "text": f"claim {i}"} for i in range(3)])
    own = assessor.assess(carried)  # a record with its atoms: the median of a dataset of one
    assert (own.k, own.k_rule) == (3, "median")


@pytest.mark.parametrize(
    ("k", "median", "reason"),
    [
        (
            "median",
            None,
            "half of each response's claims, rounded down, at least 1, since --k median needs the number of claims "
            "of every response before scoring and this run finds the claims as it goes",
        ),
        ("median", 5.0, "--k median: the median number of claims per response in the input, 5"),
        ("half", None, "--k half: half of each response's claims, rounded down, at least 1"),
        (3, None, "--k 3"),
    ],
)
def test_why_k_is_what_it_is_reads_in_the_users_words(k, median, reason):
    """The summary printed `k 1 (--k median, but the atoms were made by the run (no median known
    before scoring): max(n // 2, 1))` (issue #60 item 5): code, not words. Each reason says what K
    is in the terms a user sees (claims, responses, the input) and, for the fallback, why."""
    from fact_reasoner.scores import choose_k

    chosen = choose_k(k, 3, median)
    assert chosen.reason == reason
    assert not re.search(r"//|max\(|\batoms?\b|\bn\b|dataset", chosen.reason), chosen.reason
