"""Calibration of the cross-encoder: the temperature it reads from its config.json, and the
fitting and measuring functions of ``experiments/nli_training/calibrate.py``."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from experiments.nli_training.calibrate import (
    ALLOWED,
    expected_calibration_error,
    fit_temperature,
    set_nll,
)
from fact_reasoner.nli.cross_encoder import CrossEncoderNLI, shipped_model_path, softmax

PAIRS = [
    ("Marie Curie was born in Warsaw in 1867.", "Marie Curie was born in 1867."),
    ("Marie Curie was born in Warsaw in 1867.", "Marie Curie was born in Vienna."),
    ("The Seine flows through Paris.", "Marie Curie liked cycling."),
]


def test_softmax_with_temperature():
    z = np.array([[2.0, 0.0, -1.0], [0.5, 0.5, 3.0]])
    plain = np.exp(z) / np.exp(z).sum(1, keepdims=True)
    assert np.allclose(softmax(z), plain)
    hot = softmax(z, 4.0)
    assert np.allclose(hot, np.exp(z / 4) / np.exp(z / 4).sum(1, keepdims=True))
    assert (hot.argmax(1) == plain.argmax(1)).all()  # a temperature never changes the verdict
    assert (hot.max(1) < plain.max(1)).all()  # only less sure
    assert np.allclose(softmax(np.array([[1000.0, 0.0, 0.0]])), [[1.0, 0.0, 0.0]])  # no overflow


@pytest.fixture(scope="module")
def calibrated_copy(tmp_path_factory):
    folder = tmp_path_factory.mktemp("calibrated") / "nli"
    shutil.copytree(shipped_model_path(), folder)
    config = json.loads((folder / "config.json").read_text())
    config["fact_reasoner"]["temperature"] = 2.5
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_cross_encoder_reads_its_temperature_from_config(calibrated_copy):
    plain = CrossEncoderNLI(calibrated_copy, temperature=1.0)
    calibrated = CrossEncoderNLI(calibrated_copy)
    assert calibrated.temperature == 2.5
    assert plain.identity != calibrated.identity  # cached verdicts of one are not the other's
    assert ":T=2.5:" in calibrated.identity and ":T=" not in plain.identity
    logits = plain.logits(PAIRS)
    order = [plain.label_names.index(k) for k in ("entailment", "neutral", "contradiction")]
    expected = softmax(logits, 2.5)[:, order]
    for pair, row in zip(PAIRS, expected):
        probabilities = calibrated.judge([pair])[0].probabilities
        got = [probabilities[k] for k in ("entailment", "neutral", "contradiction")]
        assert np.allclose(got, row, atol=1e-6)
    for a, b in zip(plain.judge(PAIRS), calibrated.judge(PAIRS)):
        assert a.label == b.label
        assert max(b.probabilities.values()) < max(a.probabilities.values())


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf")])
def test_a_temperature_must_be_positive_and_finite(bad):
    with pytest.raises(ValueError, match="temperature"):
        CrossEncoderNLI(None, temperature=bad)


def test_expected_calibration_error_by_hand():
    # bin [0.8, 0.867): confidences 0.8, 0.8, correct 1 of 2 → gap 0.3, weight 2/4
    # bin [0.6, 0.667): confidence 0.6, correct → gap 0.4, weight 1/4
    # bin [0.2, 0.267): confidence 0.2, wrong → gap 0.2, weight 1/4
    ece = expected_calibration_error([0.8, 0.8, 0.6, 0.2], [True, False, True, False])
    assert ece == pytest.approx(0.5 * 0.3 + 0.25 * 0.4 + 0.25 * 0.2)
    assert expected_calibration_error([1.0, 0.0], [True, False]) == 0.0
    with pytest.raises(ValueError):
        expected_calibration_error([], [])


def test_fit_temperature_recovers_the_temperature_that_made_the_labels():
    rng = np.random.default_rng(0)
    logits = rng.normal(0, 3, size=(6000, 3))
    true_t = 2.0
    probs = softmax(logits, true_t)
    labels = [rng.choice(3, p=p) for p in probs]
    allowed = np.eye(3)[labels]
    fitted = fit_temperature(logits, allowed)
    assert fitted == pytest.approx(true_t, rel=0.08)
    assert set_nll(logits, allowed, fitted) <= set_nll(logits, allowed, 1.0)


def test_set_nll_counts_a_two_way_label_as_either_class():
    logits = np.array([[0.0, 0.0, 0.0]])
    # "not entailment" allows neutral or contradiction: probability 2/3
    assert set_nll(logits, np.array([ALLOWED["not_entailment"]], dtype=float), 1.0) == pytest.approx(-np.log(2 / 3))
    assert set_nll(logits, np.array([ALLOWED["entailment"]], dtype=float), 1.0) == pytest.approx(np.log(3))


def test_the_precision_temperature_moves_fr2_predicted_precision_towards_gold():
    """``--fit-on precision``: the pairs' logits once, then FR2 re-assessed per temperature
    through the default graph; the temperature kept is the one whose predicted precision is
    nearest gold record by record, and the curve reports each point."""
    from experiments.nli_training.calibrate import RecordPairs, fit_precision_temperature

    record = {
        "output": "x",
        "atoms": [
            {"id": "a0", "text": "Marie Curie was born in 1867.", "label": "S"},
            {"id": "a1", "text": "Marie Curie was born in Vienna.", "label": "NS"},
            {"id": "a2", "text": "Marie Curie liked cycling.", "label": "NS"},
        ],
        "contexts": [{"id": "c0", "title": "Marie Curie", "text": PAIRS[0][0]}],
    }
    pairs = RecordPairs(CrossEncoderNLI(shipped_model_path(), temperature=1.0), [record])
    assert pairs.logits.shape == (3, 3)  # one window per FR2 pair
    best, curve = fit_precision_temperature(pairs, [0.5, 1.0, 4.0])
    assert [point["temperature"] for point in curve] == [0.5, 1.0, 4.0]
    errors = {point["temperature"]: (point["mae"], abs(point["gap"])) for point in curve}
    assert errors[best] == min(errors.values())  # the smallest MAE, then the smallest gap
    assert all(point["mean_gold_precision"] == pytest.approx(1 / 3, abs=1e-4) for point in curve)
