"""The ``cross-encoder`` NLI backend: a sequence-classification NLI model, run on the CPU by
ONNX Runtime with ``tokenizers`` — no torch.

Which model (``model_path``):

- ``None``: the model the package ships in ``fact_reasoner/models/nli-minilm-l6`` (trained by
  ``experiments/nli_training/``; see its ``MODEL_CARD.md``): an ONNX graph with fp16
  weights (cast to fp32 at load), its ``tokenizer.json`` and ``config.json``;
- a folder with ``model.onnx`` + ``tokenizer.json`` + ``config.json`` (``id2label``): run as is;
- a BERT checkpoint folder (transformers layout: ``config.json``, ``model.safetensors``,
  ``tokenizer.json``): its ONNX graph is written once from the weights
  (:mod:`fact_reasoner.onnx_bert`) under ``<cache dir>/onnx/`` — still no torch;
- any other transformers model or a hub id already in the local hub cache: run by torch
  (``runtime="torch"``; needs torch and transformers; nothing is downloaded).

How a pair is judged:

1. **Label order** comes from ``config.json``'s ``id2label`` (names such as ``ENTAILMENT``,
   ``not_entailment``, ``contradiction``, ``supports`` are recognised); ``label_order``
   overrides it for models whose config only says ``LABEL_0``….
2. **Sentence-aligned windows**: a premise longer than the token budget (``max_length`` minus
   the hypothesis and the special tokens) is cut into windows of whole sentences (a sentence
   longer than the budget is cut at tokens), consecutive windows sharing one sentence. With
   per-window probabilities ``p_w`` the pair gets ``e = max_w p_w(entailment)``,
   ``c = max_w p_w(contradiction)``, ``n = min_w p_w(neutral)``, renormalised — one window
   that entails (or contradicts) the hypothesis is enough, as for a long Wikipedia passage.
   ``max_windows`` (default: the model's ``config.json`` ``fact_reasoner.max_windows``, else
   all) keeps only the windows sharing most words with the hypothesis, bounding the cost of
   very long premises.
3. **Batching by length**: the windows of all pairs are sorted by token count and run in
   batches of ``batch_size`` with padding to the longest in the batch, then put back in order.
   A model whose ``config.json`` says ``fact_reasoner.items_per_run: 1`` (an int8 export: its
   activations are quantised with one scale per batch) runs one item at a time, so that a pair's
   probabilities never depend on the pairs judged with it.
4. **Calibration**: the logits are divided by a temperature ``T`` before the softmax,
   ``p = softmax(z / T)``. ``T`` comes from ``temperature``, else the model's ``config.json``
   ``fact_reasoner.temperature`` (fitted on validation rows by
   ``experiments/nli_training/calibrate.py``), else 1. The factor graph multiplies these
   probabilities, so an over-confident model (``T > 1`` fitted) would otherwise let one
   passage's contradiction outweigh another's entailment.
5. **Short passages of several sentences** (``sentences``): with ``off`` a passage that fits
   one window is judged whole. With ``all``, such a passage of two or more sentences is
   judged sentence by sentence instead — a sentence that opens with a pronoun ("It is 330
   metres tall.") together with the sentence before it — and combined as windows are, except
   that a sentence's contradiction counts only where the sentence speaks about the claim's
   attribute (:func:`fact_reasoner.atoms.frames.same_attribute`; elsewhere its contradiction mass
   counts as neutral): entailment from the best sentence, contradiction only from a sentence
   that can disagree. With ``contradictions`` (the default) only the pairs the whole passage
   calls contradiction are re-judged so (cheap: most pairs are not). Why: judged whole, "The Eiffel
   Tower is … in Paris, designed by … Gustave Eiffel and completed in 1889. It is 330 metres
   tall." was called a contradiction of "The Eiffel Tower was completed in 1889." (0.58).
6. **Cache**: the NLI pair cache (:mod:`fact_reasoner.nli.cache`) keeps each pair's verdict
   under the backend's identity (model fingerprint, window length).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..embeddings import model_fingerprint
from ..errors import SetupError
from ..text.sentences import sentence_spans
from .base import NLIJudgement, judge_scored

if TYPE_CHECKING:  # pragma: no cover
    from ..settings.config import ModelOptions

__all__ = [
    "CrossEncoderNLI",
    "combine_windows",
    "label_names_from_config",
    "make_cross_encoder",
    "shipped_model_path",
    "softmax",
]

SHIPPED_MODEL_NAME = "nli-minilm-l6"
#: the contradiction specialist a panel asks for contradictions (``--nli …,specialist@contradiction``)
SPECIALIST_MODEL_NAME = "nli-minilm-l6-contradictions"
PROMPT_VERSION = "nli-cross-encoder/v2"
DEFAULT_MAX_LENGTH = 256

# Label names models use → our three labels. "not_entailment" (2-way models) counts as neutral.
_LABEL_ALIASES = {
    "entailment": "entailment",
    "entail": "entailment",
    "entailed": "entailment",
    "supports": "entailment",
    "support": "entailment",
    "supported": "entailment",
    "neutral": "neutral",
    "not_entailment": "neutral",
    "non_entailment": "neutral",
    "not enough info": "neutral",
    "nei": "neutral",
    "contradiction": "contradiction",
    "contradict": "contradiction",
    "contradicted": "contradiction",
    "refutes": "contradiction",
    "refute": "contradiction",
}


def shipped_model_path() -> Path:
    """The directory of the NLI model that ships inside the package."""
    return Path(__file__).resolve().parents[1] / "models" / SHIPPED_MODEL_NAME


def label_names_from_config(id2label: dict[Any, str]) -> list[str]:
    """Our label name for each output index, from a transformers ``config.id2label``.

    Raises ValueError when a name is not recognised (e.g. ``LABEL_0``): pass ``label_order``.
    """
    names = []
    for index in range(len(id2label)):
        raw = id2label.get(index, id2label.get(str(index)))
        if raw is None:
            raise ValueError(f"config.id2label has no entry for output {index}: {id2label}")
        key = str(raw).strip().lower().replace("-", "_")
        if key not in _LABEL_ALIASES and key.replace("_", " ") in _LABEL_ALIASES:
            key = key.replace("_", " ")
        if key not in _LABEL_ALIASES:
            raise ValueError(
                f"cannot tell which NLI label output {index} ({raw!r}) is; give label_order, "
                "e.g. ['contradiction', 'entailment', 'neutral']"
            )
        names.append(_LABEL_ALIASES[key])
    if "entailment" not in names:
        raise ValueError(f"the model has no entailment output: id2label={id2label}")
    return names


def combine_windows(window_probabilities: Sequence[dict[str, float]]) -> dict[str, float]:
    """One pair's probabilities from its windows' probabilities.

    ``e = max_w e_w``, ``c = max_w c_w``, ``n = min_w n_w``, then divided by ``e + n + c``. With
    one window this is that window's distribution.
    """
    if not window_probabilities:
        raise ValueError("no windows")
    e = max(p["entailment"] for p in window_probabilities)
    c = max(p["contradiction"] for p in window_probabilities)
    n = min(p["neutral"] for p in window_probabilities)
    total = e + n + c
    return {"entailment": e / total, "neutral": n / total, "contradiction": c / total}


def softmax(logits: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Row-wise ``softmax(z / T)_k = exp(z_k / T) / Σ_j exp(z_j / T)`` (computed after
    subtracting each row's maximum, so large logits do not overflow)."""
    scaled = np.asarray(logits, dtype=np.float64) / temperature
    scaled = scaled - scaled.max(axis=-1, keepdims=True)
    exp = np.exp(scaled)
    return exp / exp.sum(axis=-1, keepdims=True)


class CrossEncoderNLI:
    """NLI judgements from a sequence-classification cross-encoder (see the module docstring)."""

    name = "cross-encoder"

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        batch_size: int = 32,
        max_length: int | None = None,
        threads: int | None = None,
        label_order: Sequence[str] | None = None,
        runtime: Literal["auto", "onnx", "torch"] = "auto",
        onnx_dir: str | Path | None = None,
        max_tokens_per_batch: int = 4096,
        max_windows: int | None = None,
        temperature: float | None = None,
        sentences: Literal["off", "contradictions", "all"] = "contradictions",
    ):
        if sentences not in ("off", "contradictions", "all"):
            raise ValueError(f"sentences must be off, contradictions or all, not {sentences!r}")
        self.sentences = sentences
        if batch_size < 1:
            raise ValueError("batch_size must be ≥ 1")
        self.model_path = str(model_path) if model_path is not None else str(shipped_model_path())
        folder = Path(self.model_path)
        if model_path is None and not folder.is_dir():
            raise SetupError(
                f"no NLI cross-encoder ships with this installation ({folder} is absent): give one with "
                "--nli-model PATH (experiments/nli_training/ trains one), or use --nli align or --nli llm"
            )
        if (
            model_path is not None
            and not folder.exists()
            and (os.sep in str(model_path) or str(model_path).startswith("."))
        ):
            raise FileNotFoundError(f"cannot load NLI model {self.model_path!r}: no such directory")
        config = json.loads((folder / "config.json").read_text()) if (folder / "config.json").is_file() else {}
        self.batch_size = batch_size
        # An int8 graph quantises its activations with one scale per tensor (ONNX Runtime's
        # dynamic quantisation): in a batch, an item's numbers would depend on the other items
        # (their range, their padding), so the same pair would get other probabilities in another
        # batch or from the cache. Such a model says `items_per_run: 1` and runs one item at a time.
        items_per_run = config.get("fact_reasoner", {}).get("items_per_run")
        self.items_per_run = min(batch_size, int(items_per_run)) if items_per_run else batch_size
        self.max_tokens_per_batch = max_tokens_per_batch
        self.threads = threads
        self.pairs_scored = 0
        self.windows_scored = 0
        if runtime == "auto":
            onnx_ready = (folder / "model.onnx").is_file() or (
                config.get("model_type") == "bert" and (folder / "model.safetensors").is_file()
            )
            runtime = "onnx" if onnx_ready and (folder / "tokenizer.json").is_file() else "torch"
        self.runtime = runtime
        self._model: _OnnxClassifier | _TorchClassifier
        if runtime == "onnx":
            self._model = _OnnxClassifier(folder, config, onnx_dir, threads)
        elif runtime == "torch":
            torch_model = _TorchClassifier(self.model_path, threads)
            self._model, config = torch_model, torch_model.config
        else:
            raise ValueError(f"unknown runtime {runtime!r}: use auto, onnx or torch")
        self.tokenizer = self._model.tokenizer
        num_labels = self._model.num_labels
        if label_order is not None:
            names = [_LABEL_ALIASES.get(str(label).lower(), str(label).lower()) for label in label_order]
            if len(names) != num_labels or not set(names) <= {"entailment", "neutral", "contradiction"}:
                raise ValueError(f"label_order must name each of the model's {num_labels} outputs")
            self.label_names = names
        else:
            self.label_names = label_names_from_config(config.get("id2label") or {})
        # Window size in tokens: explicit, else the length the model was trained for, never past
        # its position embeddings.
        positions = int(config.get("max_position_embeddings", 512))
        trained = config.get("fact_reasoner", {}).get("max_length") or config.get("max_length")
        self.max_length = min(int(max_length or trained or DEFAULT_MAX_LENGTH), positions, 512)
        if self.max_length < 16:
            raise ValueError(f"max_length {self.max_length} is too short for NLI windows")
        # Like the window length, the number of windows scored per premise defaults to what the
        # model was exported with (None: every window).
        if max_windows is None:
            max_windows = config.get("fact_reasoner", {}).get("max_windows")
        if max_windows is not None and int(max_windows) < 1:
            raise ValueError("max_windows must be ≥ 1")
        self.max_windows = int(max_windows) if max_windows is not None else None
        if temperature is None:
            temperature = config.get("fact_reasoner", {}).get("temperature", 1.0)
        if temperature is None or not float(temperature) > 0 or not np.isfinite(float(temperature)):
            raise ValueError(f"temperature must be a positive number, not {temperature!r}")
        self.temperature = float(temperature)
        self.model_id = self._model.fingerprint
        own = config.get("fact_reasoner", {}) if isinstance(config.get("fact_reasoner"), dict) else {}
        version = own.get("version")
        self.description = f"cross-encoder {own.get('name') or folder.name}" + (
            f" version {version}" if version else ""
        )
        plain = len(self.tokenizer.encode("a", add_special_tokens=False).ids)
        self._special_tokens = len(self.tokenizer.encode("a", "a").ids) - 2 * plain  # [CLS] … [SEP] … [SEP]

    @property
    def identity(self) -> str:
        windows = f":max_windows={self.max_windows}" if self.max_windows else ""
        # T = 1 keeps the identity (and so the cached verdicts) of models without calibration
        temperature = f":T={self.temperature:g}" if self.temperature != 1.0 else ""
        sentences = f":sentences={self.sentences}" if self.sentences != "off" else ""
        return (
            f"cross-encoder:{self.model_id}:max_length={self.max_length}{windows}{temperature}{sentences}"
            f":{PROMPT_VERSION}"
        )

    def reads_hypothesis(self, hypothesis: str) -> bool:
        """Whether the whole of ``hypothesis`` is read: a pair is at most ``max_length`` tokens,
        of which the hypothesis gets at most half (:meth:`premise_windows`); a longer one is cut
        at that length (:func:`~fact_reasoner.nli.base.reads_whole` asks this)."""
        return len(self.tokenizer.encode(hypothesis, add_special_tokens=False).ids) <= self.max_length // 2

    # -- windows ------------------------------------------------------------------------

    def premise_windows(self, premise: str, hypothesis: str) -> list[str]:
        """The premise cut into windows of whole sentences that fit beside the hypothesis.

        Consecutive windows share their boundary sentence; a sentence longer than the budget is
        cut at token boundaries.
        """
        hyp_tokens = len(self.tokenizer.encode(hypothesis, add_special_tokens=False).ids)
        budget = max(self.max_length - self._special_tokens - min(hyp_tokens, self.max_length // 2), 16)
        encoding = self.tokenizer.encode(premise, add_special_tokens=False)
        offsets = encoding.offsets
        if len(offsets) <= budget:
            return [premise]
        # tokens per sentence, from the character offsets
        spans = sentence_spans(premise)
        pieces: list[tuple[int, int, int]] = []  # (char start, char end, tokens)
        token = 0
        for start, end in spans:
            first = token
            while token < len(offsets) and offsets[token][0] < end:
                token += 1
            count = token - first
            if count <= budget:
                pieces.append((start, end, count))
                continue
            for chunk in range(first, token, budget):  # one over-long sentence: cut at tokens
                last = min(chunk + budget, token) - 1
                pieces.append((offsets[chunk][0], offsets[last][1], last - chunk + 1))
        windows: list[str] = []
        i = 0
        while i < len(pieces):
            total, j = 0, i
            while j < len(pieces) and total + pieces[j][2] <= budget:
                total += pieces[j][2]
                j += 1
            j = max(j, i + 1)
            windows.append(premise[pieces[i][0] : pieces[j - 1][1]].strip())
            if j >= len(pieces):
                break
            i = j - 1 if j - 1 > i else j  # share the last sentence with the next window
        return windows

    # -- scoring ------------------------------------------------------------------------

    def logits(self, items: Sequence[tuple[str, str]]) -> np.ndarray:
        """The model's raw outputs for (window, hypothesis) items, shape ``(len(items),
        num_labels)`` in the model's label order (:attr:`label_names`), before the temperature;
        each item is truncated to 512 tokens, not cut into windows. Batched by token length."""
        out = np.zeros((len(items), self._model.num_labels), dtype=np.float64)
        if not items:
            return out
        encodings = self.tokenizer.encode_batch(list(items))
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        start = 0
        while start < len(order):
            end = start + 1
            while (
                end < len(order)
                and end - start < self.items_per_run
                and len(encodings[order[end]].ids) * (end - start + 1) <= self.max_tokens_per_batch
            ):
                end += 1
            batch = order[start:end]
            width = max(len(encodings[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            types = np.zeros_like(ids)
            mask = np.zeros_like(ids)
            for row, i in enumerate(batch):
                e = encodings[i]
                ids[row, : len(e.ids)] = e.ids
                types[row, : len(e.ids)] = e.type_ids
                mask[row, : len(e.ids)] = 1
            out[batch] = self._model.logits(ids, mask, types)
            start = end
        return out

    def _probabilities(self, items: list[tuple[str, str]]) -> list[dict[str, float]]:
        """Label probabilities ``softmax(z / T)`` of (window, hypothesis) items."""
        if not items:
            return []
        probs = softmax(self.logits(items), self.temperature)
        out = []
        for row in probs:
            p = {"entailment": 0.0, "neutral": 0.0, "contradiction": 0.0}
            for name, value in zip(self.label_names, row):
                p[name] += float(value)
            out.append(p)
        self.windows_scored += len(items)
        return out

    def selected_windows(self, premise: str, hypothesis: str) -> list[str]:
        """The windows that are scored: all of them, or with ``max_windows`` the ones that share
        most content words with the hypothesis (a window sharing none can hardly entail or
        contradict it), in premise order."""
        windows = self.premise_windows(premise, hypothesis)
        if self.max_windows is None or len(windows) <= self.max_windows:
            return windows
        from .alignment_features import content_stems

        wanted = content_stems(hypothesis)
        ranked = sorted(range(len(windows)), key=lambda i: (-len(wanted & content_stems(windows[i])), i))
        return [windows[i] for i in sorted(ranked[: self.max_windows])]

    def _score(self, pairs: list[tuple[str, str]]) -> list[dict[str, float]]:
        """Per pair: the window-combined probabilities (and, with ``sentences``, those of a
        short passage's sentences)."""
        by_sentence = {
            i: units
            for i, (premise, hypothesis) in enumerate(pairs)
            if self.sentences != "off" and len(units := self.sentence_units(premise, hypothesis)) > 1
        }
        whole = [i for i in range(len(pairs)) if self.sentences != "all" or i not in by_sentence]
        results: list[dict[str, float] | None] = [None] * len(pairs)
        for i, probabilities in zip(whole, self._score_windows([pairs[i] for i in whole])):
            results[i] = probabilities
        if self.sentences == "contradictions":
            by_sentence = {
                i: units
                for i, units in by_sentence.items()
                if _arg_max(results[i]) == "contradiction"  # type: ignore[arg-type]
            }
        for i, probabilities in zip(
            by_sentence, self._score_sentences([(pairs[i][1], u) for i, u in by_sentence.items()])
        ):
            results[i] = probabilities
        return results  # type: ignore[return-value]

    def _score_windows(self, pairs: list[tuple[str, str]]) -> list[dict[str, float]]:
        items: list[tuple[str, str]] = []
        owner: list[int] = []
        for i, (premise, hypothesis) in enumerate(pairs):
            for window in self.selected_windows(premise, hypothesis):
                items.append((window, hypothesis))
                owner.append(i)
        grouped: list[list[dict[str, float]]] = [[] for _ in pairs]
        for i, p in zip(owner, self._probabilities(items)):
            grouped[i].append(p)
        return [combine_windows(windows) for windows in grouped]

    def sentence_units(self, premise: str, hypothesis: str) -> list[str]:
        """The units a short passage is judged by with ``sentences``: its sentences, one that
        opens with a pronoun joined to the sentence before it; a single unit (the passage
        itself) when it has one sentence or does not fit one window."""
        if len(self.premise_windows(premise, hypothesis)) > 1:
            return [premise]
        sentences = [premise[a:b].strip() for a, b in sentence_spans(premise)]
        units = []
        for k, sentence in enumerate(sentences):
            opens = sentence.split(maxsplit=1)[0].lower() if sentence.split() else ""
            units.append(f"{sentences[k - 1]} {sentence}" if k and opens in _PRONOUN_OPENERS else sentence)
        return units if len(units) > 1 else [premise]

    def _score_sentences(self, jobs: list[tuple[str, list[str]]]) -> list[dict[str, float]]:
        """``(hypothesis, units)`` → combined probabilities: ``e = max e_u``, ``c = max c_u`` over
        the units that speak about the hypothesis's attribute (elsewhere ``c_u`` counts as
        neutral), ``n = min n_u``, renormalised (:func:`combine_windows`)."""
        from ..atoms.frames import SAME_ATTRIBUTE, same_attribute

        items = [(unit, hypothesis) for hypothesis, units in jobs for unit in units]
        probabilities = iter(self._probabilities(items))
        out = []
        for hypothesis, units in jobs:
            judged = []
            for unit in units:
                p = dict(next(probabilities))
                if p["contradiction"] and same_attribute(hypothesis, unit) not in SAME_ATTRIBUTE:
                    p["neutral"] += p["contradiction"]
                    p["contradiction"] = 0.0
                judged.append(p)
            out.append(combine_windows(judged))
        return out

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        """Judge (premise, hypothesis) pairs; output order = input order."""
        results = judge_scored(pairs, self._score)
        self.pairs_scored += sum(not r.failed for r in results)
        return results

    def stats(self) -> dict[str, int]:
        return {"pairs_scored": self.pairs_scored, "windows_scored": self.windows_scored}


#: words that refer back: a sentence opening with one is judged with the sentence before it
_PRONOUN_OPENERS = frozenset("he she it they his her its their this these that those there".split())


def _arg_max(probabilities: dict[str, float]) -> str:
    return max(probabilities, key=lambda label: probabilities[label])


def _truncating(tokenizer: Any, max_length: int) -> Any:
    tokenizer.enable_truncation(max_length=max_length, strategy="longest_first")
    tokenizer.no_padding()
    return tokenizer


class _OnnxClassifier:
    """``logits(ids, mask, types)`` from an ONNX graph (shipped, or written from BERT weights)."""

    def __init__(self, folder: Path, config: dict, onnx_dir: str | Path | None, threads: int | None):
        try:
            import onnxruntime  # noqa: F401
            from tokenizers import Tokenizer
        except ImportError as error:
            raise SetupError(
                "the cross-encoder needs onnxruntime and tokenizers: pip install 'fact-reasoner-offline[nli]'"
            ) from error
        from ..onnx_bert import cpu_session

        graph = folder / "model.onnx"
        self.fingerprint = model_fingerprint(folder)
        if not graph.is_file():
            from ..onnx_bert import build_bert_onnx, load_bert_weights
            from ..settings.config import default_cache_dir

            cache = Path(onnx_dir) if onnx_dir is not None else default_cache_dir() / "onnx"
            graph = cache / f"{self.fingerprint.replace('/', '_')}.classifier.onnx"
            if not graph.is_file():
                build_bert_onnx(load_bert_weights(folder), graph)
        self.session = cpu_session(graph, threads)
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.num_labels = int(self.session.get_outputs()[-1].shape[-1] or len(config.get("id2label") or {}) or 3)
        self.tokenizer = _truncating(Tokenizer.from_file(str(folder / "tokenizer.json")), 512)

    def logits(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return self.session.run(["logits"], {k: v for k, v in feeds.items() if k in self.inputs})[0]


class _TorchClassifier:
    """A transformers sequence-classification model on the CPU (any architecture)."""

    def __init__(self, model_path: str, threads: int | None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as error:
            raise SetupError(
                f"{model_path} is not an ONNX or BERT model folder; running it needs torch and transformers"
            ) from error
        if threads is not None:
            torch.set_num_threads(max(1, int(threads)))
        try:
            tokenizer = AutoTokenizer.from_pretrained(model_path)
            self.model = AutoModelForSequenceClassification.from_pretrained(model_path).float().eval()
        except OSError as error:
            raise FileNotFoundError(
                f"cannot load NLI model {model_path!r}: give a local directory (no model hub is reached; "
                f"a hub id works only if it is already cached): {error}"
            ) from error
        if not getattr(tokenizer, "is_fast", False):
            raise SetupError(f"{model_path}: the cross-encoder needs a fast (tokenizers) tokenizer")
        self.tokenizer = _truncating(tokenizer.backend_tokenizer, 512)
        self.config = self.model.config.to_dict()
        self.num_labels = int(self.model.config.num_labels)
        self.fingerprint = model_fingerprint(model_path)

    def logits(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            out = self.model(
                input_ids=torch.from_numpy(ids),
                attention_mask=torch.from_numpy(mask),
                token_type_ids=torch.from_numpy(types),
            )
        return out.logits.float().numpy()


def specialist_model_path() -> Path:
    """The directory of the contradiction specialist that ships inside the package."""
    return Path(__file__).resolve().parents[1] / "models" / SPECIALIST_MODEL_NAME


def make_specialist(models: "ModelOptions") -> CrossEncoderNLI:
    """The ``specialist`` backend: the shipped contradiction specialist, read as the
    cross-encoder reads any model folder (``models.nli_sentences`` its sentence rule)."""
    folder = specialist_model_path()
    if not (folder / "model.onnx").is_file():
        raise SetupError(
            f"no contradiction specialist ships with this installation ({folder} is absent): name another judge "
            "for contradictions, e.g. --nli cross-encoder@entailment,cross-encoder=DIR@contradiction"
        )
    return CrossEncoderNLI(folder, threads=models.threads, sentences=models.nli_sentences)


def make_cross_encoder(models: "ModelOptions") -> CrossEncoderNLI:
    """The ``cross-encoder`` backend for the ``models`` group of a configuration.

    ``models.nli_model``: a model folder or a cached hub id; None → the shipped model.
    ``models.threads`` sets the CPU threads; ``models.nli_sentences`` the sentence rule.
    """
    return CrossEncoderNLI(models.nli_model, threads=models.threads, sentences=models.nli_sentences)
