"""Targeted training pairs (``experiments/nli_training/targeted.py``) cannot come from the held-out
part of the behavioural suite; the fine-tuning script stops and resumes; ``from_onnx`` turns an
int8 graph back into the weights it quantised."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys

import numpy as np
import pytest

from experiments import behaviour
from experiments.behaviour import CAPABILITIES, Item
from experiments.nli_training import targeted
from experiments.nli_training.mix import normalise
from tests.helpers import REPO_ROOT

FACTSCORE = REPO_ROOT.parent / "shared" / "data" / "factscore_bios_dev"


@pytest.fixture(scope="module")
def generated():
    folder = FACTSCORE if (FACTSCORE / "topic_passages_dev.json").is_file() else None
    return targeted.generate(factscore_dir=folder, people=60, samples=1), folder


def test_no_training_row_names_a_heldout_person_or_repeats_a_heldout_pair(generated):
    result, folder = generated
    suite = behaviour.load_suite()
    names = behaviour.heldout_names(suite) | {p["short"] for p in suite["parts"]["heldout"]["people"]}
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in names) + r")\b")
    held_pairs = {
        (normalise(i.premise), normalise(i.hypothesis)) for i in behaviour.suite_items("heldout", folder, suite=suite)
    }
    assert len(result["train"]) > 5000
    for row in result["train"]:
        assert not pattern.search(row["premise"] + " " + row["hypothesis"]), row
        assert (normalise(row["premise"]), normalise(row["hypothesis"])) not in held_pairs
    # the validation rows (the suite's train part) are never trained on either
    validation = {(r["premise"], r["hypothesis"]) for r in result["validation"]}
    assert validation and not validation & {(r["premise"], r["hypothesis"]) for r in result["train"]}
    validation_people = {p["name"] for p in suite["parts"]["train"]["people"]}
    assert not any(name in row["hypothesis"] for row in result["train"] for name in validation_people)


def test_every_capability_gets_rows_with_its_label(generated):
    result, _ = generated
    by_source = {}
    for row in result["train"]:
        by_source.setdefault(row["source"], set()).add(row["label"])
    # each negative capability's rows are balanced by entailed rows of the same forms (forms.py),
    # named `targeted_<capability>_positive`
    negatives = ("role_swap", "substitution", "negation", "other_attribute", "someone_else", "hedged")
    expected = {f"targeted_{c}" for c in CAPABILITIES} | {f"targeted_{c}_positive" for c in negatives}
    assert set(by_source) == expected
    assert all(by_source[f"targeted_{c}_positive"] == {"entailment"} for c in negatives)
    assert by_source["targeted_role_swap"] == {"not_entailment"}
    assert by_source["targeted_substitution"] == by_source["targeted_negation"] == {"contradiction"}
    assert by_source["targeted_other_attribute"] == by_source["targeted_hedged"] == {"neutral"}
    assert all(row["synthetic"] for row in result["train"])


def test_the_guard_refuses_heldout_templates_names_and_pairs():
    suite = behaviour.load_suite()
    guard = targeted.heldout_guard(suite, None)
    heldout_template = suite["parts"]["heldout"]["templates"][0]
    with pytest.raises(targeted.HeldOutLeak, match="held-out premise"):
        targeted.check_not_heldout([], [heldout_template], guard)
    naming = Item("negation", "v", "Alexander Fleming never swam.", "Alexander Fleming swam.", "train", "t")
    with pytest.raises(targeted.HeldOutLeak, match="Alexander Fleming"):
        targeted.check_not_heldout([naming], [], guard)
    # a held-out pair reworded only in case and punctuation is still refused
    pair = behaviour.template_items("heldout", suite=suite)[0]
    copy = Item(pair.capability, pair.variant, pair.premise.upper(), pair.hypothesis + "!", "train", "t")
    with pytest.raises(targeted.HeldOutLeak):
        targeted.check_not_heldout([copy], [], targeted.heldout_guard(suite, None)[:1] + guard[1:])


def test_extra_templates_are_not_heldout_ones():
    premises = {t["premise"] for t in behaviour.load_suite()["parts"]["heldout"]["templates"]}
    assert not premises & {t["premise"] for t in targeted.EXTRA_TEMPLATES}
    assert {t["capability"] for t in targeted.EXTRA_TEMPLATES} <= set(CAPABILITIES)


def test_capability_weights_give_each_capability_the_same_share():
    from experiments.nli_training.finetune import capability_weights

    rows = [{"source": "targeted_a", "group": "targeted:t"}] * 90 + [
        {"source": "targeted_b", "group": "targeted:t"}
    ] * 10
    rows += [{"source": "targeted_b", "group": "targeted:passage:x"}] * 5
    weights = capability_weights(rows, passage_share=0.4)
    assert sum(weights[:90]) == pytest.approx(0.5)
    assert sum(weights[90:100]) == pytest.approx(0.5 * 0.6)
    assert sum(weights[100:]) == pytest.approx(0.5 * 0.4)


def test_capability_weights_split_forms_and_templates_and_halve_the_positives():
    from experiments.nli_training.finetune import capability_weights

    rows = [{"source": "targeted_role_swap", "group": "targeted:t"}] * 80
    rows += [{"source": "targeted_role_swap", "group": "targeted:forms"}] * 20
    rows += [{"source": "targeted_role_swap_positive", "group": "targeted:forms"}] * 10
    weights = capability_weights(rows, passage_share=0.3)
    total = sum(weights)
    # the negatives' templates and forms share their capability's weight; the positives get half
    assert sum(weights[:80]) / total == pytest.approx(sum(weights[80:100]) / total)
    assert sum(weights[100:]) / total == pytest.approx(0.5 * sum(weights[:100]) / total)
    # a boost multiplies the capability, not its positives
    boosted = capability_weights(rows, passage_share=0.3, boost={"role_swap": 3})
    assert sum(boosted[:100]) == pytest.approx(3 * sum(weights[:100]))
    assert sum(boosted[100:]) == pytest.approx(sum(weights[100:]))


def test_forms_balance_every_negative_with_positives_of_its_form():
    from experiments.nli_training import forms

    rng = random.Random(3)
    people = targeted.invented_people(30, rng, set())
    relatives = [p["name"] for p in targeted.invented_people(12, random.Random(4), set())]
    rows = forms.generate_rows(people, targeted.PLACES, relatives, seed=3, samples=1)
    by = {}
    for row in rows:
        by.setdefault(row.capability, []).append(row)
    for negative in ("role_swap", "substitution", "negation", "other_attribute", "someone_else", "hedged"):
        assert by[negative] and by[negative + "_positive"], negative
        assert {r.label for r in by[negative + "_positive"]} == {"entailment"}
        assert "entailment" not in {r.label for r in by[negative]}
    # a positive repeats its negative's form: the same premise, the true value
    substituted = {r.premise for r in by["substitution"]}
    assert substituted & {r.premise for r in by["substitution_positive"]}
    # date formats: the life dates in brackets entail the birth and death years
    dates = [r for r in by["part"] if r.variant == "dates in brackets"]
    assert any("born in" in r.hypothesis for r in dates) and any("died in" in r.hypothesis for r in dates)
    # another attribute is never a premise that states the claimed value
    for row in by["other_attribute"]:
        assert row.hypothesis not in row.premise


def _row(premise: str, hypothesis: str, label: str, source: str = "snli", **extra) -> dict:
    return {"premise": premise, "hypothesis": hypothesis, "label": label, "source": source, **extra}


def test_finetune_runs_stops_and_resumes(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tests.nli.test_cross_encoder import _build_tiny_model

    init = _build_tiny_model(tmp_path / "init", id2label={0: "entailment", 1: "neutral", 2: "contradiction"})
    labels = ["entailment", "neutral", "contradiction", "not_entailment"]
    mix = {
        "train": [_row(f"the cat sat on the mat {i} .", "a cat sat .", labels[i % 4]) for i in range(20)],
        "validation": [_row("the dog sat .", "a dog sat .", "entailment")] * 4,
        # what no training row may repeat, FactCG's replayed documents included
        "heldout": {"wice_dev": [_row("the dog sat .", "a dog sat .", "entailment")]},
    }
    bag = {"atom": "he was born in paris .", "premises": ["he was born in paris .", "she is an actor ."]}
    indomain = {
        "bags": {"train": [bag | {"label": "S"}, bag | {"label": "NS"}], "validation": [bag | {"label": "S"}]},
        "pool": [
            {"premise": "the cat sat on the mat .", "hypothesis": f"a cat sat {i} .", "source": "indomain_x"}
            for i in range(5)
        ]
        # a pair on a validation bag's passage is never kept: it chooses the checkpoint
        + [{"premise": "he was born in paris .", "hypothesis": "he is an actor .", "source": "indomain_x"}],
    }
    aimed = {
        "train": [
            _row(
                "he was born in paris .",
                "he was born in london .",
                "contradiction",
                "targeted_substitution",
                group="targeted:t",
            ),
            _row(
                "he was born in paris .", "she is an actor .", "neutral", "targeted_other_attribute", group="targeted:t"
            ),
        ],
        "validation": [
            _row("she is an actor .", "she is an actor .", "entailment", capability="word_for_word"),
            _row("he was born in paris .", "he is an actor .", "neutral", capability="other_attribute"),
        ],
    }
    for name, data in (("mix", mix), ("indomain", indomain), ("targeted", aimed)):
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
    out = tmp_path / "out"
    command = [sys.executable, "-m", "experiments.nli_training.finetune", "--init", str(init)]
    command += ["--mix", str(tmp_path / "mix.json"), "--indomain", str(tmp_path / "indomain.json")]
    command += ["--targeted", str(tmp_path / "targeted.json"), "--out", str(out), "--threads", "1"]
    command += ["--targeted-rows", "2", "--replay-rows", "2", "--bags", "1", "--eval-every", "2", "--log-every", "1"]
    command += ["--keep-entailment-of", str(init), "--keep-rows", "2", "--factcg-max-length", "64"]
    subprocess.run(
        [*command, "--steps", "4", "--warmup", "1"], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    first = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]
    # FactCG's documents are replayed, and the frozen word embeddings are not trained
    assert first[0]["phase"] == "data" and first[0]["factcg"] > 0
    assert first[1]["phase"] == "parameters" and first[1]["trained"] < first[1]["total"]
    evaluated = [p for p in first if "suite_train" in p]
    assert [p["step"] for p in evaluated] == [0, 2, 4]
    assert set(evaluated[0]["suite_train"]["accuracy"]) == {"word_for_word", "other_attribute"}
    assert (out / "step_4" / "config.json").is_file() and (out / "last.pt").is_file()
    kept = np.load(out / "keep_entailment.npy")
    assert kept.shape == (5,) and np.all((kept > 0) & (kept < 1))
    # a longer plan resumes from step 4, not from the start
    subprocess.run(
        [*command, "--steps", "6", "--warmup", "1", "--resume"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    )
    second = [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()][len(first) :]
    # the data and parameter counts are logged again, then the plan goes on from step 4
    assert [p.get("phase") for p in second[:3]] == ["data", "parameters", "resumed"]
    assert second[2]["step"] == 4
    assert [p["step"] for p in second if "suite_train" in p] == [6]


def test_from_onnx_dequantises_an_int8_graph(tmp_path):
    pytest.importorskip("onnxruntime")
    torch = pytest.importorskip("torch")
    from experiments.nli_training.export import export
    from experiments.nli_training.from_onnx import state_dict_from_onnx
    from tests.nli.test_cross_encoder import _build_tiny_model

    checkpoint = _build_tiny_model(tmp_path / "tiny", seed=5)
    export(checkpoint, tmp_path / "int8", max_length=64, weights_format="int8")
    restored = state_dict_from_onnx(tmp_path / "int8" / "model.onnx")
    from transformers import BertForSequenceClassification

    original = BertForSequenceClassification.from_pretrained(checkpoint).state_dict()
    query = "bert.encoder.layer.0.attention.self.query.weight"
    assert restored[query].shape == tuple(original[query].shape)
    step = np.abs(original[query].numpy()).max(axis=1) / 127  # per output channel
    assert np.all(np.abs(restored[query] - original[query].numpy()) <= step[:, None] / 2 + 1e-7)
    assert torch.allclose(torch.from_numpy(restored["classifier.bias"]), original["classifier.bias"])
    # every parameter of the BERT is there, no scale or zero point is left over
    wanted = {k for k in original if not k.endswith("position_ids")}
    assert wanted <= set(restored) and not [k for k in restored if k.endswith(("_scale", "_zero_point"))]


def test_fp16_rows_export_judges_as_the_fp32_graph_and_reads_back(tmp_path):
    """``--weights fp16-rows``: the word table as int8 rows, the rest fp16, both restored to fp32
    when the session loads — the probabilities stay those of the fp32 graph (int8 matrix products
    lost most of what version 4's fine-tuning taught, see the model card), and the GPU bundle can
    still start from the shipped file."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("torch")
    from experiments.nli_training.export import export
    from experiments.nli_training.from_onnx import state_dict_from_onnx
    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI
    from tests.nli.test_cross_encoder import _build_tiny_model

    checkpoint = _build_tiny_model(tmp_path / "tiny", seed=5)
    fp32 = export(checkpoint, tmp_path / "fp32", max_length=64, weights_format="fp32")
    rows = export(checkpoint, tmp_path / "rows", max_length=64, weights_format="fp16-rows")
    assert (rows / "model.onnx").stat().st_size < 0.6 * (fp32 / "model.onnx").stat().st_size
    config = json.loads((rows / "config.json").read_text())["fact_reasoner"]
    assert "items_per_run" not in config  # fp32 arithmetic: a batch does not change an item's numbers
    pairs = [("the cat sat on the mat .", "a cat sat ."), ("a dog ran home .", "the dog slept .")]
    for a, b in zip(CrossEncoderNLI(rows).judge(pairs), CrossEncoderNLI(fp32).judge(pairs)):
        assert max(abs(a.probabilities[k] - b.probabilities[k]) for k in a.probabilities) < 0.02
    from transformers import BertForSequenceClassification

    original = BertForSequenceClassification.from_pretrained(checkpoint).state_dict()
    restored = state_dict_from_onnx(rows / "model.onnx")
    query = "bert.encoder.layer.0.attention.self.query.weight"
    assert np.allclose(restored[query], original[query].numpy(), atol=1e-3)
    words = "bert.embeddings.word_embeddings.weight"
    step = np.abs(original[words].numpy()).max(axis=1) / 127
    assert np.all(np.abs(restored[words] - original[words].numpy()) <= step[:, None] / 2 + 1e-3)
