"""The export of a trained checkpoint to the shipped ONNX form, on a tiny BERT built here:
dynamic int8 runs one item at a time; static int8 has fixed activation scales, so a pair gets
the same numbers alone and in a batch, and the backend batches it."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
from experiments.nli_training.export import export  # noqa: E402
from fact_reasoner.nli.cross_encoder import CrossEncoderNLI  # noqa: E402
from tests.nli.test_cross_encoder import _build_tiny_model  # noqa: E402

PREMISES = [
    "the cat sat on the mat .",
    "he was born in paris in one year .",
    "she is an actor and a singer in london .",
    "the dog was not on the mat and it sat .",
    "the river of the city is one two three four five six .",
]
HYPOTHESES = ["a cat sat .", "he was born in london .", "she is a singer .", "the dog sat on the mat ."]
PAIRS = [(p, h) for p in PREMISES for h in HYPOTHESES]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return _build_tiny_model(tmp_path_factory.mktemp("tiny_checkpoint"), seed=3)


def _logits(backend: CrossEncoderNLI, one_at_a_time: bool) -> np.ndarray:
    items = [(backend.selected_windows(p, h)[0], h) for p, h in PAIRS]
    if one_at_a_time:
        return np.vstack([backend.logits([item]) for item in items])
    return backend.logits(items)


def test_static_int8_is_batch_invariant_and_close_to_fp32(checkpoint, tmp_path):
    static = export(checkpoint, tmp_path / "static", 48, "int8-static", calibration=PAIRS[::2])
    fp32 = export(checkpoint, tmp_path / "fp32", 48, "fp32")
    config = json.loads((static / "config.json").read_text())["fact_reasoner"]
    assert "items_per_run" not in config and config["weights"].startswith("int8 (static")

    backend = CrossEncoderNLI(static, threads=1)
    assert backend.items_per_run == backend.batch_size > 1
    batched = _logits(backend, one_at_a_time=False)
    assert np.array_equal(batched, _logits(backend, one_at_a_time=True))
    reference = _logits(CrossEncoderNLI(fp32, threads=1), one_at_a_time=False)
    assert not np.array_equal(batched, reference)  # quantised, not a copy of the fp32 graph
    spread = reference.max() - reference.min()
    assert np.abs(batched - reference).max() < 0.15 * spread


def test_dynamic_int8_runs_one_item_at_a_time(checkpoint, tmp_path):
    dynamic = export(checkpoint, tmp_path / "dynamic", 48, "int8")
    assert json.loads((dynamic / "config.json").read_text())["fact_reasoner"]["items_per_run"] == 1
    backend = CrossEncoderNLI(dynamic, threads=1)
    assert backend.items_per_run == 1
    # what items_per_run prevents: run as a batch, the per-tensor activation scale is shared
    backend.items_per_run = backend.batch_size
    assert not np.array_equal(_logits(backend, one_at_a_time=False), _logits(backend, one_at_a_time=True))


def test_static_int8_without_calibration_pairs_is_refused(checkpoint, tmp_path):
    with pytest.raises(SystemExit, match="calibration pairs"):
        export(checkpoint, tmp_path / "static", 48, "int8-static")
