"""The cross-encoder NLI backend on a tiny BERT built here (random weights, own vocab): judged
through ONNX Runtime + tokenizers (no torch at run time), with torch as the reference."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from fact_reasoner.cache import ModelCache  # noqa: E402
from fact_reasoner.nli.cross_encoder import (  # noqa: E402
    CrossEncoderNLI,
    combine_windows,
    label_names_from_config,
    make_cross_encoder,
)
from fact_reasoner.settings.config import PipelineConfig  # noqa: E402

WORDS = (
    "the a cat dog sat on mat was born in paris london is an actor singer he she it and of "
    "city river film year one two three four five six seven eight nine ten . , not"
).split()
# The model's outputs in an unusual order, as some hub models have them.
ID2LABEL = {0: "CONTRADICTION", 1: "ENTAILMENT", 2: "NEUTRAL"}


def _build_tiny_model(folder, id2label=ID2LABEL, seed=0):
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(folder / "vocab.txt"), do_lower_case=True)
    tokenizer.model_max_length = 64
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return _build_tiny_model(tmp_path_factory.mktemp("tiny_nli"))


def test_label_order_comes_from_id2label(tmp_path):
    folder = _build_tiny_model(tmp_path / "m")
    # Make output 1 (ENTAILMENT in id2label) win whatever the input.
    from transformers import BertForSequenceClassification

    model = BertForSequenceClassification.from_pretrained(folder)
    with torch.no_grad():
        model.classifier.weight.zero_()
        model.classifier.bias.copy_(torch.tensor([0.0, 4.0, 1.0]))
    model.save_pretrained(folder)
    backend = CrossEncoderNLI(folder, onnx_dir=tmp_path / "onnx")
    assert backend.runtime == "onnx"
    assert backend.label_names == ["contradiction", "entailment", "neutral"]
    (j,) = backend.judge([("the cat sat on the mat .", "a cat sat .")])
    assert j.label.value == "entailment"
    expected = torch.softmax(torch.tensor([0.0, 4.0, 1.0]), 0)
    assert j.probabilities["entailment"] == pytest.approx(float(expected[1]), abs=1e-5)
    assert j.probabilities["contradiction"] == pytest.approx(float(expected[0]), abs=1e-5)
    assert j.probabilities["neutral"] == pytest.approx(float(expected[2]), abs=1e-5)


def test_label_names_from_config_variants():
    assert label_names_from_config({"0": "entailment", "1": "neutral", "2": "contradiction"}) == [
        "entailment",
        "neutral",
        "contradiction",
    ]
    assert label_names_from_config({0: "entailment", 1: "not_entailment"}) == ["entailment", "neutral"]
    assert label_names_from_config({0: "SUPPORTS", 1: "REFUTES", 2: "NOT ENOUGH INFO"}) == [
        "entailment",
        "contradiction",
        "neutral",
    ]
    with pytest.raises(ValueError, match="label_order"):
        label_names_from_config({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})


def test_label_order_override_for_generic_names(tmp_path):
    folder = _build_tiny_model(tmp_path / "g", id2label={0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})
    with pytest.raises(ValueError, match="label_order"):
        CrossEncoderNLI(folder, onnx_dir=tmp_path / "onnx")
    backend = CrossEncoderNLI(
        folder, label_order=["neutral", "contradiction", "entailment"], onnx_dir=tmp_path / "onnx"
    )
    assert backend.label_names == ["neutral", "contradiction", "entailment"]


def test_combine_windows_takes_max_entailment_and_contradiction():
    windows = [
        {"entailment": 0.1, "neutral": 0.8, "contradiction": 0.1},
        {"entailment": 0.7, "neutral": 0.2, "contradiction": 0.1},
        {"entailment": 0.1, "neutral": 0.6, "contradiction": 0.3},
    ]
    # e = 0.7, c = 0.3, n = 0.2 → total 1.2
    combined = combine_windows(windows)
    assert combined["entailment"] == pytest.approx(0.7 / 1.2)
    assert combined["contradiction"] == pytest.approx(0.3 / 1.2)
    assert combined["neutral"] == pytest.approx(0.2 / 1.2)
    assert combine_windows(windows[:1]) == pytest.approx(windows[0])


def _long_premise(n_sentences=12):
    base = ["the cat sat on the mat .", "he was born in paris .", "she is an actor and a singer ."]
    return " ".join(base[i % 3] for i in range(n_sentences))


def test_long_premise_is_windowed_within_budget(tiny_model):
    backend = CrossEncoderNLI(tiny_model, max_length=32)
    premise = _long_premise()
    hypothesis = "the dog was born in london ."
    windows = backend.premise_windows(premise, hypothesis)
    assert len(windows) > 1
    for window in windows:
        assert len(backend.tokenizer.encode(window, hypothesis).ids) <= 32
        assert window in premise
    # Together the windows cover the premise: first starts it, last ends it, and consecutive
    # windows share a sentence.
    assert premise.startswith(windows[0]) and premise.endswith(windows[-1])
    for a, b in zip(windows, windows[1:]):
        assert a.split(" . ")[-1].rstrip(" .") in b
    # Windows are whole sentences.
    assert all(w.endswith(".") for w in windows)
    short = "the cat sat ."
    assert backend.premise_windows(short, hypothesis) == [short]


def test_a_sentence_longer_than_the_window_is_cut_at_tokens(tiny_model):
    backend = CrossEncoderNLI(tiny_model, max_length=24)
    sentence = " ".join(["the cat sat on the mat and"] * 6) + " ."
    windows = backend.premise_windows(sentence, "a cat .")
    assert len(windows) > 1
    assert all(len(backend.tokenizer.encode(w, "a cat .").ids) <= 24 for w in windows)
    assert "".join(w.replace(" ", "") for w in windows) == sentence.replace(" ", "")


def test_judge_aggregates_windows_by_max(tiny_model):
    backend = CrossEncoderNLI(tiny_model, max_length=32)
    premise, hypothesis = _long_premise(), "the dog was born in london ."
    windows = backend.premise_windows(premise, hypothesis)
    # Each window on its own, through the real model, one at a time.
    per_window = [backend.judge([(w, hypothesis)])[0].probabilities for w in windows]
    (j,) = backend.judge([(premise, hypothesis)])
    assert j.probabilities == pytest.approx(combine_windows(per_window), abs=1e-5)
    assert j.probabilities["entailment"] >= max(p["entailment"] for p in per_window) - 1e-6
    assert backend.windows_scored >= 2 * len(windows)


def test_batching_by_length_keeps_input_order(tiny_model):
    pairs = [
        (_long_premise(n), h)
        for n, h in [
            (1, "a cat ."),
            (5, "he is an actor ."),
            (2, "paris is a city ."),
            (9, "she sat ."),
            (3, "it was one year ."),
        ]
    ]
    one_by_one = [CrossEncoderNLI(tiny_model, batch_size=1).judge([p])[0] for p in pairs]
    batched = CrossEncoderNLI(tiny_model, batch_size=2).judge(pairs)
    assert len(batched) == len(pairs)
    for a, b in zip(one_by_one, batched):
        assert b.probabilities == pytest.approx(a.probabilities, abs=1e-4)
    # The pairs differ, so a mix-up would show.
    assert len({round(j.probabilities["entailment"], 6) for j in batched}) > 1


def test_cache_hits_replay_the_same_probabilities(tiny_model):
    from fact_reasoner.nli.cache import CachedNLI

    cache = ModelCache(None)
    model = CrossEncoderNLI(tiny_model)
    pairs = [("the cat sat on the mat .", "a cat sat ."), ("he was born in paris .", "he was born in london .")]
    first = CachedNLI(model, cache).judge(pairs)
    assert cache.misses == 2 and cache.writes == 2
    scored = model.pairs_scored
    backend = CachedNLI(model, cache)  # a new wrapper: answers from the cache file, not its memo
    second = backend.judge(pairs)
    assert cache.hits == 2
    assert model.pairs_scored == scored  # the model was not run again
    for a, b in zip(first, second):
        assert b.probabilities == pytest.approx(a.probabilities)
    assert backend.stats()["pair_cache_hits"] == 2


def test_empty_text_fails_without_crashing(tiny_model):
    backend = CrossEncoderNLI(tiny_model)
    judgements = backend.judge([("", "a cat ."), ("the cat sat .", "a cat .")])
    assert judgements[0].failed and not judgements[1].failed


def test_missing_model_path_gives_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="cannot load NLI model"):
        CrossEncoderNLI(tmp_path / "nowhere")


def test_no_shipped_cross_encoder_points_to_what_ships(monkeypatch, tmp_path):
    import fact_reasoner.nli.cross_encoder as module
    from fact_reasoner.errors import SetupError

    monkeypatch.setattr(module, "shipped_model_path", lambda: tmp_path / "absent")
    with pytest.raises(SetupError, match="--nli-model PATH.*--nli align.*--nli llm"):
        CrossEncoderNLI()


def test_make_cross_encoder_from_config(tiny_model, tmp_path):
    config = PipelineConfig(nli="cross-encoder", nli_model=str(tiny_model), cache_dir=tmp_path, threads=1)
    backend = make_cross_encoder(config.models)
    assert backend.name == "cross-encoder" and backend.runtime == "onnx"
    assert backend._model.session.get_session_options().intra_op_num_threads == 1
    assert backend.judge([("the cat sat .", "a cat .")])[0].probabilities
    assert backend.identity.startswith("cross-encoder:tiny_nli")


def test_onnx_graph_from_the_weights_matches_torch(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from transformers import BertForSequenceClassification

    folder = _build_tiny_model(tmp_path / "o", seed=3)
    model = BertForSequenceClassification.from_pretrained(folder)
    with torch.no_grad():  # large logits, so a wrong graph could not pass by near-uniform outputs
        model.classifier.weight.mul_(200.0)
    model.save_pretrained(folder)
    pairs = [(_long_premise(6), "he was born in london ."), ("the cat sat .", "a dog sat on the mat .")]
    with_torch = CrossEncoderNLI(folder, max_length=32, runtime="torch").judge(pairs)
    with_onnx_backend = CrossEncoderNLI(folder, max_length=32, onnx_dir=tmp_path / "onnx")
    assert with_onnx_backend.runtime == "onnx"
    assert list((tmp_path / "onnx").glob("*.onnx"))  # written once from the safetensors
    with_onnx = with_onnx_backend.judge(pairs)
    assert max(max(j.probabilities.values()) for j in with_torch) > 0.6
    for a, b in zip(with_torch, with_onnx):
        assert b.probabilities == pytest.approx(a.probabilities, abs=1e-4)
    # a folder holding model.onnx itself runs without the weights
    shipped_like = tmp_path / "shipped"
    shipped_like.mkdir()
    for name in ("tokenizer.json", "config.json"):
        (shipped_like / name).write_bytes((folder / name).read_bytes())
    (shipped_like / "model.onnx").write_bytes(next((tmp_path / "onnx").glob("*.onnx")).read_bytes())
    from_onnx_file = CrossEncoderNLI(shipped_like, max_length=32).judge(pairs)
    for a, b in zip(with_onnx, from_onnx_file):
        assert b.probabilities == pytest.approx(a.probabilities, abs=1e-6)


def test_max_windows_scores_only_the_windows_that_share_words_with_the_hypothesis(tiny_model):
    premise = _long_premise(9) + " the dog was born in london ."
    hypothesis = "a dog born in london ."
    every = CrossEncoderNLI(tiny_model, max_length=32)
    assert len(every.premise_windows(premise, hypothesis)) > 2
    one = CrossEncoderNLI(tiny_model, max_length=32, max_windows=1)
    (window,) = one.selected_windows(premise, hypothesis)
    assert "the dog was born in london" in window
    one.judge([(premise, hypothesis)])
    assert one.windows_scored == 1
    assert "max_windows=1" in one.identity and "max_windows" not in every.identity  # cached apart


def test_a_short_passage_is_judged_sentence_by_sentence_with_sentences(tiny_model, monkeypatch):
    """``sentences``: entailment from the best sentence; a sentence's contradiction counts only
    where it speaks about the claim's attribute; a pronoun sentence is judged with the one before
    it; ``contradictions`` re-judges only what the whole passage calls contradiction. The model's
    numbers are scripted per unit, so only the combining is tested."""
    premise = "The Eiffel Tower was completed in 1889. It is 330 metres tall."
    claim = "The Eiffel Tower was completed in 1889."
    first, second = "The Eiffel Tower was completed in 1889.", premise  # "It …" joined to the one before
    scripted = {
        premise: {"entailment": 0.2, "neutral": 0.22, "contradiction": 0.58},  # judged whole
        first: {"entailment": 0.83, "neutral": 0.12, "contradiction": 0.05},
    }

    def scripted_probabilities(self, items):
        return [dict(scripted[window]) for window, _ in items]

    monkeypatch.setattr(CrossEncoderNLI, "_probabilities", scripted_probabilities)
    whole = CrossEncoderNLI(tiny_model, max_length=64, sentences="off")
    assert whole.judge([(premise, claim)])[0].label.value == "contradiction"
    for mode in ("all", "contradictions"):
        backend = CrossEncoderNLI(tiny_model, max_length=64, sentences=mode)
        assert backend.sentence_units(premise, claim) == [first, second]
        (judged,) = backend.judge([(premise, claim)])
        # the joined unit's 0.58 contradiction is about the same values (1889 agrees): neutral mass
        assert judged.label.value == "entailment" and judged.probability > 0.5
        assert "sentences=" + mode in backend.identity
    # a contradiction from a sentence about the attribute stays one
    scripted[first] = {"entailment": 0.05, "neutral": 0.1, "contradiction": 0.85}
    (judged,) = CrossEncoderNLI(tiny_model, max_length=64, sentences="all").judge(
        [(premise, "The Eiffel Tower was completed in 1890.")]
    )
    assert judged.label.value == "contradiction"
    # "contradictions" leaves a pair the whole passage does not call contradiction as it was
    scripted[premise] = {"entailment": 0.7, "neutral": 0.2, "contradiction": 0.1}
    (kept,) = CrossEncoderNLI(tiny_model, max_length=64, sentences="contradictions").judge([(premise, claim)])
    assert kept.probabilities == pytest.approx(scripted[premise])
    with pytest.raises(ValueError, match="sentences must be"):
        CrossEncoderNLI(tiny_model, sentences="some")
