"""Table maths (ECE, MAE, Brier, F1, F1@K) on hand-computed values, and the baselines' rules."""

from __future__ import annotations

import math

import pytest

from experiments import baselines
from fact_reasoner import measures, scores
from fact_reasoner.nli import NLIJudgement, PrecomputedNLI
from fact_reasoner.report import plots, rows, tables
from fact_reasoner.schema import InputRecord, Relation, RelationType
from tests.helpers import REPO_ROOT

ROOT = REPO_ROOT


def test_ece_by_hand() -> None:
    # bins: [0.1,0.2): 0.15, 0.15 -> conf .15, acc 0 ; [0.8,0.9): 0.85, 0.85 -> conf .85, acc .5 ;
    # p = 1.0 falls in the last bin [0.9, 1]: conf 1, acc 1
    p = [0.15, 0.15, 0.85, 0.85, 1.0]
    y = [False, False, True, False, True]
    expected = 2 / 5 * 0.15 + 2 / 5 * abs(0.5 - 0.85) + 1 / 5 * 0.0
    assert measures.expected_calibration_error(y, p) == pytest.approx(expected)
    assert measures.bin_index(1.0) == 9 and measures.bin_index(0.0) == 0 and measures.bin_index(0.1) == 1
    bins = measures.reliability_bins(y, p)
    assert [b.count for b in bins] == [0, 2, 0, 0, 0, 0, 0, 0, 2, 1]
    assert math.isnan(measures.expected_calibration_error([], []))


def test_mae_and_brier_by_hand() -> None:
    # scikit-learn's order and names: (y_true, y_pred) / (y_true, y_prob)
    assert measures.mean_absolute_error(y_true=[0.75, 0.5], y_pred=[0.5, 1.0]) == pytest.approx((0.25 + 0.5) / 2)
    assert measures.brier_score(y_true=[True, False], y_prob=[0.8, 0.3]) == pytest.approx((0.04 + 0.09) / 2)
    # ECE is not symmetric: probabilities are binned, truths averaged
    assert measures.expected_calibration_error(y_true=[True, False], y_prob=[0.95, 0.95]) == pytest.approx(0.45)
    with pytest.raises(ValueError):
        measures.expected_calibration_error(y_true=[0.95, 0.95], y_prob=[True, 2.0])


def _row(assessor: str, atoms: list[tuple[str, float]], tier: str = "rare", k: int = 3) -> dict:
    """A result row as the runner writes it: per-record scores (with the K chosen for the run)
    and the atoms."""
    n, supported = len(atoms), sum(scores.is_supported(p) for _, p in atoms)
    return {
        "assessor": assessor,
        "cat": [tier, "Asia"],
        "factuality_score": scores.factual_precision(supported, n),
        "k": k,
        "f1_k": scores.f1_at_k(supported, n, k),
        "atoms": [
            {"id": f"a{i}", "label": g, "probability": p, "prediction": scores.predict_label(p).value}
            for i, (g, p) in enumerate(atoms)
        ],
    }


def test_summary_line_by_hand() -> None:
    rows = [
        _row("X", [("S", 0.9), ("S", 0.2), ("NS", 0.7), ("NS", 0.1)], "rare"),  # Pr .5, gold .5
        _row("X", [("S", 0.6), ("S", 0.8)], "very rare"),  # Pr 1, gold 1
    ]
    line = tables.table_line(rows, "X")
    summary = line.summary
    # K = 3 as written (the run's median of 4 and 2 atoms)
    assert summary.k == (3,) and summary.num_records == 2 and summary.num_gold_atoms == 6
    assert summary.mean_factuality_score == pytest.approx(0.75)
    assert summary.mean_gold_factuality_score == pytest.approx(0.75)
    # TP = 3 (0.9, 0.6, 0.8), FP = 1 (0.7), FN = 1 (0.2), TN = 1
    assert summary.atom_f1_supported == pytest.approx(6 / 8) and summary.atom_accuracy == pytest.approx(4 / 6)
    assert summary.mae_factuality_score == pytest.approx(0.0)
    # F1@3: row 1: S=2, Pr .5, R 2/3 -> 2·.5·(2/3)/(.5+2/3) = 4/7; row 2: S=2, Pr 1, R 2/3 -> 0.8
    assert summary.mean_f1_k == pytest.approx((4 / 7 + 0.8) / 2)
    table = tables.summary_table({"X": rows})
    assert [(t.tier, t.summary.num_records) for t in table] == [("all", 2), ("very rare", 1), ("rare", 1)]
    assert all(t.summary.k == (3,) for t in table)
    markdown = tables.to_markdown(table)
    # bal acc: recall of S 3/4, of NS 1/2 → 0.625
    # claims (every atom) and gold atoms (the labelled ones: here all 6) side by side
    assert "| X | all | 2 | 6 | 6 | 3 | 0.750 | 0.750 | 0.750 | 0.667 | 0.625 | 0.686 | 0.000 |" in markdown
    csv_lines = tables.to_csv(table).splitlines()
    assert csv_lines[0] == (
        "assessor,tier,records,claims,atoms,k,precision,gold_precision,f1,accuracy,balanced_accuracy,f1_k,mae,brier,ece"
    )
    assert csv_lines[1].startswith("X,all,2,6,6,3,0.75,0.75,0.75,")
    assert "granite-8b | FR2 | 0.62 | 0.78 | 0.61 | 0.12" in tables.published_markdown()


def test_table_reports_the_k_each_response_was_scored_with() -> None:
    # K = max(n // 2, 1) per response (the "half" rule): 2 and 1, where the median of 4 and 2
    # atoms would be 3; the table shows the written K and the mean of the written F1@K
    rows = [
        _row("X", [("S", 0.9), ("S", 0.2), ("NS", 0.7), ("NS", 0.1)], k=2),
        _row("X", [("S", 0.6), ("S", 0.8)], k=1),
    ]
    (line,) = tables.summary_table({"X": rows}, by_tier=False)
    assert line.summary.k == (1, 2)
    # F1@2 of row 1: S=2, Pr .5, R 1 -> 2/3; F1@1 of row 2: Pr 1, R 1 -> 1
    assert line.summary.mean_f1_k == pytest.approx((2 / 3 + 1.0) / 2)
    assert "| X | all | 2 | 6 | 6 | 1, 2 | 0.750 |" in tables.to_markdown([line])
    assert tables.to_csv([line]).splitlines()[1].startswith("X,all,2,6,6,1;2,0.75,")


def test_baseline_rules_on_fixed_relations() -> None:
    def j(label: str, p: float, pe: float, pc: float) -> baselines.ContextJudgement:
        return baselines.ContextJudgement("c", RelationType(label), p, pe, pc)

    mixed = [j("entailment", 0.6, 0.6, 0.1), j("contradiction", 0.9, 0.05, 0.9), j("neutral", 0.8, 0.1, 0.1)]
    # FactScore: any entailment -> S; P = max P_ent = 0.6
    assert baselines.factscore_verdict(mixed) == (0.6, "S")
    # vote: E = 0.6, C = 0.9 -> P = 0.4 -> NS
    p, label = baselines.vote_verdict(mixed)
    assert p == pytest.approx(0.4) and label == "NS"
    assert baselines.vote_verdict([j("neutral", 0.9, 0.05, 0.05)]) == (0.5, "NS")
    assert baselines.factscore_verdict([]) == (0.0, "NS")
    # P_ent from a judgement without three-way probabilities: p for its label, (1-p)/2 otherwise
    assert baselines.label_probability(
        NLIJudgement(RelationType.CONTRADICTION, 0.8), RelationType.ENTAILMENT
    ) == pytest.approx(0.1)


def test_vote_tie_is_decided_as_in_the_graph() -> None:
    def j(label: str, p: float) -> baselines.ContextJudgement:
        return baselines.ContextJudgement("c", RelationType(label), p, 0.0, 0.0)

    # E = 0.4 + 0.55, C = 0.95: P = E / (E + C) is 0.5 plus floating-point noise
    p, label = baselines.vote_verdict([j("entailment", 0.4), j("entailment", 0.55), j("contradiction", 0.95)])
    assert p == 0.5000000000000001 and label == "NS"
    p, label = baselines.vote_verdict([j("entailment", 0.6), j("contradiction", 0.4)])
    assert p == pytest.approx(0.6) and label == "S"


def test_baseline_rows_from_precomputed_nli() -> None:
    record = InputRecord.model_validate(
        {
            "input": "q",
            "output": "o",
            "topic": "T",
            "atoms": [
                {"id": "a0", "text": "A is B.", "label": "S", "contexts": ["c0", "c1"]},
                {"id": "a1", "text": "A is C.", "label": "NS", "contexts": ["c1"]},
                {"id": "a2", "text": "A is B.", "label": "S", "contexts": ["c0"]},
            ],  # duplicate text
            "contexts": [{"id": "c0", "text": "A is B, says X."}, {"id": "c1", "text": "A is not C."}],
        }
    )
    texts = {"a0": "A is B.", "a1": "A is C.", "c0": "A is B, says X.", "c1": "A is not C."}
    nli = PrecomputedNLI(
        [
            Relation(source="c0", target="a0", relation="entailment", probability=0.9),
            Relation(source="c1", target="a0", relation="neutral", probability=0.7),
            Relation(source="c1", target="a1", relation="contradiction", probability=0.95),
        ],
        texts,
    )
    rows = baselines.assess_baselines(record, nli, k=2, record_key="k1")
    fs = rows["factscore"]
    assert [a["id"] for a in fs["atoms"]] == ["a0", "a1"]  # a2 dropped as a duplicate text
    assert fs["predictions"] == {"a0": "S", "a1": "NS"}
    assert fs["factuality_score"] == 0.5 and fs["true_positive"] == 1 and fs["true_negative"] == 1
    assert fs["atoms"][0]["probability"] == pytest.approx(0.9)
    assert fs["atoms"][1]["evidence"] == [{"context": "c1", "relation": "contradiction", "probability": 0.95}]
    vote = rows["vote"]
    assert vote["atoms"][1]["probability"] == 0.0 and vote["atoms"][0]["probability"] == 1.0
    assert fs["counters"]["nli_pairs"] == 3
    assert tables.table_line([fs], "FactScore").summary.atom_accuracy == 1.0


def test_plots_are_png() -> None:
    pytest.importorskip("matplotlib", reason="plots need matplotlib")
    groups = {"X": [_row("X", [("S", 0.9), ("NS", 0.2), ("S", 0.4)])]}
    for plot in plots.PLOTS.values():
        assert plot(groups)[:8] == b"\x89PNG\r\n\x1a\n"


def test_restrict_to_common_responses() -> None:
    a = [dict(_row("A", [("S", 0.9)]), record_key="k1"), dict(_row("A", [("S", 0.9)]), record_key="k2")]
    b = [dict(_row("B", [("S", 0.1)]), record_key="k2")]
    groups, left_out = rows.restrict_to_common({"A": a, "B": b})
    assert left_out == 1 and [r["record_key"] for r in groups["A"]] == ["k2"] and len(groups["B"]) == 1
