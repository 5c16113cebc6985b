"""experiments/conformal_eval.py without its data: the splits per generator, the equal-error
reading of the curves, and the page it writes."""

from __future__ import annotations

import math

import pytest

from experiments.conformal_eval import GENERATORS, Answer, interpolate, render, run_splits
from fact_reasoner.conformal.maths import Claims


def answers(count: int = 12) -> list[Answer]:
    out = []
    for i in range(count):
        scores = tuple(round(0.3 + 0.05 * ((i * 7 + j * 3) % 13), 3) for j in range(5))
        truths = tuple(s > 0.5 or j == 0 for j, s in enumerate(scores))
        out.append(Answer(Claims(scores, truths), GENERATORS[i % 3], f"topic {i}", {}))
    return out


def test_run_splits_gives_the_evaluation_and_the_error_of_each_generator():
    evaluation, by_generator = run_splits(answers(), 0.2, "response", "plain", splits=20, seed=1)
    assert len(evaluation.outcomes) == 20 and evaluation.calibration_size == 6
    assert set(by_generator) == set(GENERATORS) and all(0.0 <= v <= 1.0 for v in by_generator.values())
    again, _ = run_splits(answers(), 0.2, "response", "plain", splits=20, seed=1)
    assert [o.error for o in again.outcomes] == [o.error for o in evaluation.outcomes]  # seeded


def test_interpolate_reads_a_curve_at_an_error_and_nothing_outside_it():
    curve = [{"error": 0.1, "retention": 0.2}, {"error": 0.3, "retention": 0.6}, {"error": 0.2, "retention": 0.3}]
    assert interpolate(curve, 0.15) == pytest.approx(0.25)
    assert interpolate(curve, 0.25) == pytest.approx(0.45)
    assert interpolate(curve, 0.05) is None and interpolate(curve, 0.35) is None


def test_the_page_has_every_table():
    evaluation, by_generator = run_splits(answers(), 0.2, "response", "plain", splits=5, seed=0)
    measured = {
        "scorer": "v3", "guarantee": "response", "method": "plain", "alpha": 0.2, "splits": 5,
        "calibration_answers": 6, "error": evaluation.error, "error_sd": evaluation.error_sd,
        "splits_over_alpha": evaluation.over_alpha, "retention": evaluation.retention,
        "retention_sd": evaluation.retention_sd, "kept_share": evaluation.kept_share,
        "error_by_generator": by_generator, "seconds": 0.0,
    }  # fmt: skip
    conformal = {"num_kept": 1, "threshold": 0.9, "kept_claims": ["A."], "statement": "marginal …"}
    numbers = {
        "measured": [measured],
        "curves": {"v3": {"plain": [{"alpha": 0.2, "error": 0.1, "retention": 0.3}] * 2,
                          "adaptive": [{"alpha": 0.2, "error": 0.1, "retention": 0.2}]}},
        "splits": 5, "grid_splits": 5, "seed": 0, "command": "python -m experiments.conformal_eval",
        "data": [{"generator": g, "responses": 4, "claims": 20, "false_claims": 5, "responses_without_false": 0}
                 for g in GENERATORS],
        "example": {"topic": "T", "generator": "ChatGPT", "alpha": 0.2,
                    "claims": [{"text": "A.", "posterior": 0.95, "gold": "S"}, {"text": "B.", "posterior": 0.4, "gold": "NS"}],
                    "filters": {"response": {"fit_command": "fit", "fit_output": "said", "apply_command": "apply",
                                             "conformal": conformal, "kept": [True, False]}}},
    }  # fmt: skip
    page = render(numbers)
    for heading in ("## Data", "## Realised error and retention", "## Realised error by generator",
                    "## Plain against adaptive at equal realised error", "## One answer before and after"):  # fmt: skip
        assert heading in page
    assert "| FR2, version 3 alone | response | plain | 0.2 |" in page
    assert "| A. | 0.950 | S | kept |" in page and "| B. | 0.400 | NS | dropped |" in page
    assert not math.isnan(evaluation.error)
