"""The GPU bundle of issue #38 (``experiments/nli_training/bundle.py``, ``gpu_train.py``), on a
tiny BERT built here so that it cannot rot while no GPU is at hand: a tiny bundle is built,
two training steps run on CPU through the same entry point the device call uses (with the
project package, ``onnx`` and ONNX Runtime made unimportable, as on the device machine), the
parts that come back are joined into a loadable checkpoint, and the failure paths (a damaged
part, a deadline already past, a bundle over its budget, a mix that repeats a held-out pair)
are refused loudly."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from experiments import behaviour  # noqa: E402
from experiments.nli_training import bundle, gpu_train  # noqa: E402
from experiments.nli_training.from_onnx import bert_from_shipped, read_initializers  # noqa: E402
from tests.helpers import REPO_ROOT  # noqa: E402
from tests.nli.test_cross_encoder import _build_tiny_model  # noqa: E402

CLASSES = {0: "entailment", 1: "neutral", 2: "contradiction"}
#: what the device machine lacks (or the run must not need): importing one fails in the dry run
UNAVAILABLE = ("fact_reasoner", "onnx", "onnxruntime")


def _row(premise: str, hypothesis: str, label: str, source: str = "snli", **extra) -> dict:
    return {"premise": premise, "hypothesis": hypothesis, "label": label, "source": source, "group": ""} | extra


def _inputs(folder, heldout_person: str) -> dict:
    labels = ["entailment", "neutral", "contradiction", "not_entailment"]
    words = "the cat sat on the mat . the dog was born in paris . she is an actor and a singer .".split()
    train = [
        _row(" ".join(words[i % 7 : i % 7 + 8]), " ".join(words[i % 5 : i % 5 + 3]), labels[i % 4]) for i in range(40)
    ]
    train.append(_row("he was born in paris .", "he was born in paris .", "entailment", "factscore_ChatGPT"))
    heldout_pair = {"premise": "a cat sat on a mat .", "hypothesis": "the dog sat .", "label": "neutral"}
    mix = {
        "train": train,
        "validation": [_row("a dog sat .", "a dog was on the mat .", labels[i % 3]) for i in range(6)],
        "heldout": {
            "mnli_mismatched": [heldout_pair],
            "factscore": [{"atom": "she is a singer .", "label": "S", "passages": ["she is an actor ."]}],
        },
        "heldout_topics": ["Nobody"],
    }
    capabilities = ["paraphrase", "role_swap", "other_attribute"]
    targeted_rows = [
        _row(f"he was born in {c} .", f"the {c} was born .", ["entailment", "not_entailment", "neutral"][i % 3])
        | {"source": f"targeted_{capabilities[i % 3]}", "group": "targeted:template"}
        for i, c in enumerate(["paris", "london", "one", "two", "three", "four", "five", "six"])
    ]
    suite = [
        _row("she is an actor .", "she is an actor .", "entailment", "targeted_word_for_word")
        | {"capability": "word_for_word"},
        _row("he sat on the mat .", "she was born in paris .", "neutral", "targeted_other_attribute")
        | {"capability": "other_attribute"},
    ]
    bag = {"model": "ChatGPT", "atom": "the cat sat .", "premises": ["the cat sat on the mat .", "a dog was born ."]}
    indomain = {
        "bags": {
            "train": [bag | {"label": "S"}, bag | {"label": "NS", "model": "InstructGPT"}, bag | {"label": "S"}],
            "validation": [bag | {"label": "S"}, bag | {"label": "NS"}],
        },
        "validation_topics": ["Somebody"],
    }
    factcg = folder / "data" / "nli_train" / "factcg"
    factcg.mkdir(parents=True)
    documents = [
        {"text_a": "the cat sat on the mat . the dog was born in paris .", "text_b": [f"the cat {i} sat ."]}
        | {"orig_label": i % 2}
        for i in range(30)
    ]
    documents.append({"text_a": f"{heldout_person} sat on the mat .", "text_b": ["a cat sat ."], "orig_label": 1})
    documents.append({"text_a": "", "text_b": ["an empty document ."], "orig_label": 1})
    (factcg / "CG2C_doc.json").write_text("\n".join(json.dumps(d) for d in documents) + "\n")
    (factcg / "CG2C_musique_minhop3_rbt_mnli_failed.json").write_text(
        json.dumps({"text_a": "the river of the city .", "text_b": ["it is a film ."], "orig_label": 0}) + "\n"
    )
    paths = {}
    for name, content in (("mix", mix), ("indomain", indomain), ("targeted", {"train": targeted_rows})):
        paths[name] = folder / f"{name}.json"
        if name == "targeted":
            content["validation"] = suite
        paths[name].write_text(json.dumps(content))
    return paths


def _build_args(folder, model, paths, out, *extra: str) -> list[str]:
    return [
        "build",
        "--out",
        str(out),
        "--model",
        str(model),
        "--mix",
        str(paths["mix"]),
        "--indomain",
        str(paths["indomain"]),
        "--targeted",
        str(paths["targeted"]),
        "--data-dir",
        str(folder / "data"),
        "--max-length",
        "32",
        "--factcg-max-length",
        "48",
        "--factcg-validation",
        "0.2",
        "--preset",
        "1",
        *extra,
    ]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny "shipped" int8 graph, its training inputs and the bundle built from them."""
    from experiments.nli_training.export import export

    folder = tmp_path_factory.mktemp("gpu_bundle")
    checkpoint = _build_tiny_model(folder / "checkpoint", id2label=CLASSES, seed=5)
    model = export(checkpoint, folder / "shipped", 48, "int8")
    heldout_person = sorted(behaviour.heldout_names())[0]
    paths = _inputs(folder, heldout_person)
    out = folder / "bundle"
    bundle.main(_build_args(folder, model, paths, out))
    return {"folder": folder, "model": model, "paths": paths, "bundle": out}


def _gpu_train(*args: str) -> subprocess.CompletedProcess:
    """``python3 -m experiments.nli_training.gpu_train ARGS`` with the project package, onnx and
    ONNX Runtime unimportable (the device machine has neither the project installed nor needs them)."""
    blocked = "; ".join(f"sys.modules[{name!r}] = None" for name in UNAVAILABLE)
    code = (
        f"import runpy, sys; {blocked}; sys.argv = ['gpu_train', *{list(args)!r}]; "
        "runpy.run_module('experiments.nli_training.gpu_train', run_name='__main__')"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT)


def test_the_bundle_holds_the_streams_and_nothing_held_out(tiny):
    manifest, arrays = gpu_train.read_bundle(tiny["bundle"])
    assert sorted(p.name for p in tiny["bundle"].iterdir()) == ["data.npz.xz", "manifest.json"]
    streams = manifest["streams"]
    # the single-pair FActScore row of the mix is left out (the bags replace it)
    assert streams["mix"]["rows"] == 40 and "factscore_ChatGPT" not in streams["mix"]["sources"]
    assert streams["bags"]["bags"] == 3 and streams["bags"]["rows"] == 6
    assert streams["val_suite"]["sources"] == ["other_attribute", "word_for_word"]
    # FactCG: the row naming a held-out person and the empty document are not there
    assert manifest["dropped"]["factcg"] == {"names a person of the held-out part": 1}
    assert streams["factcg"]["rows"] + streams["val_factcg"]["rows"] == 31
    assert manifest["model"]["sha256"] == gpu_train.sha256_file(tiny["model"] / "model.onnx")
    weights = arrays["targeted.weight"]
    assert weights.shape == (8,) and np.isclose(weights.sum(), 1.0)


def test_two_steps_on_cpu_come_back_in_parts_and_reassemble(tiny, tmp_path):
    out = tmp_path / "OUT"
    manifest = json.loads((tiny["bundle"] / "manifest.json").read_text())
    part_bytes = manifest["model"]["fp16_checkpoint_bytes"] // 3 + 1  # three parts per checkpoint
    done = _gpu_train(
        *("--bundle", str(tiny["bundle"]), "--out", str(out), "--device", "cpu", "--threads", "1"),
        *("--max-steps", "2", "--warmup-steps", "1", "--lr", "1e-3", "--part-bytes", str(part_bytes)),
        *("--keep", "best,last"),
        *("--mix-batch", "4", "--targeted-batch", "2", "--factcg-batch", "2", "--bags", "2", "--eval-seconds", "1e6"),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["status"] == "finished" and report["steps"] == 2
    assert [v["step"] for v in report["validation"]] == [0, 2]
    assert {"mix", "suite", "factcg", "bags", "score"} <= set(report["validation"][-1])
    assert report["curve"][-1]["step"] == 2 and report["curve"][-1]["seen"]["bags"] == 4
    # what comes back: at most 8 files, each at most the part size, named as the device tool allows
    files = sorted(p.name for p in out.iterdir())
    assert len(files) <= gpu_train.CALL_FILES and not [f for f in files if f.endswith(".tmp")]
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", f) for f in files)
    assert all((out / f).stat().st_size <= part_bytes for f in files if f != "report.json")
    assert report["checkpoints"]["last"]["step"] == 2 and len(report["checkpoints"]["last"]["parts"]) == 3

    start = bert_from_shipped(tiny["model"]).state_dict()
    last = bundle.reassemble(out, tmp_path / "last", "last", tiny["model"])
    best = bundle.reassemble(out, tmp_path / "best", "best", tiny["model"])
    from safetensors.numpy import load_file
    from transformers import BertForSequenceClassification

    trained = load_file(str(last / "model.safetensors"))
    assert trained.keys() == {k for k in start if not k.endswith("position_ids")}
    assert any(not np.array_equal(trained[k], start[k].numpy().astype(np.float16)) for k in trained)
    assert BertForSequenceClassification.from_pretrained(best).config.num_labels == 3
    provenance = json.loads((last / "provenance.json").read_text())
    assert provenance["step"] == 2 and provenance["validation"]["step"] == 2
    # evaluation uses the mix and bags the bundle was built from, or refuses
    paths = tiny["paths"]
    bundle.check_same_inputs(last, {"mix": paths["mix"], "indomain": paths["indomain"]})
    with pytest.raises(SystemExit, match="not the mix the bundle was built from"):
        bundle.check_same_inputs(last, {"mix": paths["targeted"], "indomain": paths["indomain"]})

    # a damaged part is refused, nothing is written
    part = out / report["checkpoints"]["last"]["parts"][1]["file"]
    part.write_bytes(part.read_bytes()[:-1] + b"\0")
    with pytest.raises(SystemExit, match="sha256"):
        bundle.reassemble(out, tmp_path / "damaged", "last", tiny["model"])
    assert not (tmp_path / "damaged").exists()


def test_a_deadline_already_past_trains_nothing_and_says_so(tiny, tmp_path):
    out = tmp_path / "OUT"
    common = ("--bundle", str(tiny["bundle"]), "--out", str(out), "--device", "cpu", "--threads", "1")
    past = str(time.time() - 1000)
    done = _gpu_train(*common, "--train-seconds", "1", "--started-at", past, "--grace", "1e6")
    assert done.returncode == 2, done.stderr[-3000:]
    report = json.loads((out / "report.json").read_text())
    assert report["status"].startswith("no time left") and report["curve"] == []
    assert report["checkpoints"]["best"]["step"] == 0  # the starting model, validated, comes back
    # past the deadline and its grace: the watchdog ends the run and leaves the report saying why
    done = _gpu_train(*common, "--train-seconds", "1", "--started-at", past, "--grace", "0")
    assert done.returncode == 3
    assert "watchdog" in json.loads((out / "report.json").read_text())["status"]


def test_a_bundle_over_its_budget_or_repeating_a_heldout_pair_is_refused(tiny, tmp_path):
    folder, paths = tiny["folder"], tiny["paths"]
    with pytest.raises(SystemExit, match="refused"):
        bundle.main(_build_args(folder, tiny["model"], paths, tmp_path / "small", "--max-mib", "0.001"))
    assert not (tmp_path / "small").exists()
    mix = json.loads(paths["mix"].read_text())
    mix["train"].append(_row("a cat sat on a mat .", "the dog sat .", "entailment"))
    leaking = dict(paths, mix=tmp_path / "mix.json")
    leaking["mix"].write_text(json.dumps(mix))
    with pytest.raises(SystemExit, match="repeat a held-out pair"):
        bundle.main(_build_args(folder, tiny["model"], leaking, tmp_path / "leak"))


def test_one_minilm_checkpoint_comes_back_per_call_two_tiny_ones_do():
    minilm = 45_440_750  # MiniLM-L6's fp16 safetensors: 3 parts of 15 MiB; two would be 87 MiB of the 64
    assert gpu_train.parts_needed(minilm) == 3
    assert gpu_train.checkpoints_that_fit(["best", "last"], minilm) == ["best"]
    assert gpu_train.checkpoints_that_fit(["last", "best"], minilm) == ["last"]
    assert gpu_train.checkpoints_that_fit(["best", "last"], 40_000, 14_000) == ["best", "last"]
    assert gpu_train.checkpoints_that_fit(["best"], 9 * gpu_train.PART_BYTES) == []  # 1 + 9 + 1 files


def test_the_onnx_reader_gives_what_onnx_gives(tmp_path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    graph_path = REPO_ROOT / "fact_reasoner" / "models" / "nli-minilm-l6" / "model.onnx"
    if not graph_path.is_file():
        pytest.skip("no shipped model")
    expected = {init.name: numpy_helper.to_array(init) for init in onnx.load(str(graph_path)).graph.initializer}
    read = read_initializers(graph_path)
    assert read.keys() == expected.keys()
    assert all(read[k].dtype == v.dtype and np.array_equal(read[k], v) for k, v in expected.items())
    # values stored in the typed fields instead of raw_data (negative int8 and int64 too)
    tensors = [
        helper.make_tensor("f", TensorProto.FLOAT, [2, 2], [1.5, -2.0, 0.0, 3.25]),
        helper.make_tensor("q", TensorProto.INT8, [3], [-128, 5, 127]),
        helper.make_tensor("i", TensorProto.INT64, [2], [-7, 1 << 40]),
        helper.make_tensor("h", TensorProto.FLOAT16, [2], np.array([0.5, -1.25], dtype=np.float16).view(np.uint16)),
    ]
    node = helper.make_node("Identity", ["f"], ["y"])
    output = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])
    model = helper.make_model(helper.make_graph([node], "g", [], [output], initializer=tensors))
    onnx.save(model, str(tmp_path / "typed.onnx"))
    read = read_initializers(tmp_path / "typed.onnx")
    for tensor in tensors:
        assert np.array_equal(read[tensor.name], numpy_helper.to_array(tensor)), tensor.name
        assert read[tensor.name].dtype == numpy_helper.to_array(tensor).dtype


def test_the_summary_checks_the_ship_rule_line_by_line(tmp_path):
    """Issue #42's rule: the quick start right, the suite through the graph at its thresholds and
    the judge alone no worse per capability, FR2 balanced accuracy no lower and MAE at most 0.01
    higher, every held-out bootstrap interval reaching 0, pairs/s at least 0.85 ×."""

    def outputs(name: str, *, passed: bool = True, alone: float = 0.9, fr2=(0.70, 0.09), penicillin: str = "NS"):
        capability = {"threshold": 0.85, "accuracy": 0.97 if passed else 0.5, "passed": passed}
        suite = {"capabilities": {"negation": capability}, "spurious_contradiction": 0.01}
        suite["spurious_contradiction_limit"] = 0.05
        judged = {"capabilities": {"negation": {**capability, "accuracy": alone}}}
        report = {"parts": {"heldout": suite}, "judge_alone": {"heldout": judged}}
        (tmp_path / f"behaviour_{name}.json").write_text(json.dumps(report))
        header = "assessor,tier,records,precision,balanced_accuracy,mae\n"
        (tmp_path / f"bios_{name}.csv").write_text(header + f"FR2,all,14,0.7,{fr2[0]},{fr2[1]}\n")
        rows = tmp_path / f"quickstart_{name}" / "short_answer.fr3.jsonl"
        rows.parent.mkdir(exist_ok=True)
        atoms = list(bundle.QUICK_START_EXPECTED)
        verdicts = ["S", "S", penicillin]
        row = {"atoms": [{"id": f"a{i}", "text": t} for i, t in enumerate(atoms)]}
        row["predictions"] = {f"a{i}": v for i, v in enumerate(verdicts)}
        rows.write_text(json.dumps(row) + "\n")

    def bootstrap(high: float) -> None:
        row = {"set": "factscore", "measure": "auroc", "n": 505, "new": 0.79, "old": 0.78, "difference": 0.01}
        row |= {"low": -0.01, "high": high, "level": 0.95, "resamples": 1000, "seed": 13, "not_worse": high >= 0}
        (tmp_path / "bootstrap.json").write_text(json.dumps([row]))

    def speed(trained: float) -> None:
        rows = [
            {"judge": "cross-encoder:shipped", "pairs_per_s": 60.0},
            {"judge": "cross-encoder:x", "pairs_per_s": trained},
        ]
        (tmp_path / "speed.json").write_text(json.dumps(rows))

    outputs("shipped", passed=False, alone=0.5, fr2=(0.70, 0.088), penicillin="S")
    outputs("trained", alone=0.9, fr2=(0.71, 0.095))
    bootstrap(0.03)
    speed(55.0)
    summary = bundle.summarise(tmp_path, compare=True)
    assert "| Marie Curie discovered penicillin. | NS | S | NS |" in summary
    assert "| negation | 0.85 | 0.5000 | 0.9700 | met | 0.5000 | 0.9000 | no worse |" in summary
    assert "| factscore | auroc | 505 |" in summary and "ratio trained / shipped: 0.92" in summary
    assert "Ship rule of version 4: MET" in summary  # MAE 0.095 ≤ 0.088 + 0.01
    for broken in (
        lambda: outputs("trained", fr2=(0.71, 0.099)),  # MAE more than 0.01 worse
        lambda: outputs("trained", fr2=(0.69, 0.09)),  # FR2 balanced accuracy lower
        lambda: outputs("trained", alone=0.4),  # the judge alone worse on a capability
        lambda: outputs("trained", passed=False),  # a capability under its threshold through the graph
        lambda: outputs("trained", penicillin="S"),  # the quick start wrong
        lambda: bootstrap(-0.001),  # worse beyond chance on a held-out set
        lambda: speed(50.0),  # slower than 0.85 ×
    ):
        broken()
        assert "Ship rule of version 4: NOT MET" in bundle.summarise(tmp_path, compare=True)
        outputs("trained", alone=0.9, fr2=(0.71, 0.095))
        bootstrap(0.03)
        speed(55.0)
    assert "MET" in bundle.summarise(tmp_path, compare=True)
    assert "NOT MET" in bundle.summarise(tmp_path, compare=False)  # nothing to compare with
