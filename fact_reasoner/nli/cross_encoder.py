"""The ``cross-encoder`` NLI backend: a sequence-classification NLI model, run on the CPU by
ONNX Runtime with ``tokenizers`` — no torch.

Which model (``model_path``):

- ``None``: the model the package ships in ``fact_reasoner/models/nli-minilm-l6`` (trained by
  ``experiments/nli_training/``; see its ``MODEL_CARD.md``): an ONNX graph with int8 weights
  (its ``config.json`` says how they were quantised), its ``tokenizer.json`` and ``config.json``;
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
   batches of ``batch_size`` with padding to the longest in the batch, then put back in order;
   an item asked twice in one call is run once. A model whose ``config.json`` says
   ``fact_reasoner.items_per_run: 1`` (an int8 export: its activations are quantised with one
   scale per batch) runs one item at a time, so that a pair's probabilities never depend on the
   pairs judged with it; its items run in parallel instead, one single-threaded run per CPU
   thread (``threads``), which gives the same numbers as one run with every thread, and its
   int8 embedding rows are gathered before they are dequantised
   (:mod:`~fact_reasoner.nli.graph_rewrite`: the same numbers, about 1.4× the items per
   CPU-second).
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
   under the backend's identity (model fingerprint, window length). What is read from text alone
   — a pair's windows and sentence units, an item's tokens — is kept in a bounded memo
   (:class:`TextMemo`) that the judges of a panel share when they read text alike (the same
   tokenizer, window length and window count: :func:`share_text_memo`).
"""

from __future__ import annotations

import hashlib
import json
import os
import weakref
from array import array
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

import numpy as np

from ..embeddings import model_fingerprint
from ..errors import SetupError
from ..installer import forbid_hub_downloads
from ..settings.registry import install_hint
from ..text.sentences import sentence_spans
from .base import NLIJudgement, judge_scored

if TYPE_CHECKING:  # pragma: no cover
    from ..settings.config import ModelOptions

__all__ = [
    "CrossEncoderNLI",
    "TextMemo",
    "combine_windows",
    "label_names_from_config",
    "make_cross_encoder",
    "share_text_memo",
    "shipped_model_path",
    "softmax",
]

_T = TypeVar("_T")
_ABSENT = object()

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


def length_batches(lengths: Sequence[int], items_per_run: int, max_tokens: int) -> list[list[int]]:
    """Item indices in runs: sorted by token count, each run at most ``items_per_run`` items and
    at most ``max_tokens`` tokens once padded to its longest (``len(run) · max length ≤ max_tokens``;
    an item longer than that runs alone).

    >>> length_batches([5, 2, 9, 3], 2, 100)
    [[1, 3], [0, 2]]
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    start = 0
    while start < len(order):
        end = start + 1
        while (
            end < len(order) and end - start < items_per_run and lengths[order[end]] * (end - start + 1) <= max_tokens
        ):
            end += 1
        batches.append(order[start:end])
        start = end
    return batches


class _Tokens(NamedTuple):
    """An item's token ids and token types, as the memo keeps them (small arrays, not the
    tokenizer's ``Encoding`` with its strings and offsets)."""

    ids: np.ndarray
    types: np.ndarray

    @classmethod
    def of(cls, encoding: Any) -> "_Tokens":
        return cls(np.asarray(encoding.ids, dtype=np.int32), np.asarray(encoding.type_ids, dtype=np.int8))


def _padded(items: Sequence[_Tokens]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ids, attention mask, token types) of tokenised items, padded with 0 to the longest."""
    width = max(len(item.ids) for item in items)
    ids = np.zeros((len(items), width), dtype=np.int64)
    types = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for row, item in enumerate(items):
        ids[row, : len(item.ids)] = item.ids
        types[row, : len(item.ids)] = item.types
        mask[row, : len(item.ids)] = 1
    return ids, mask, types


def _token_spans(encoding: Any) -> tuple[array, array]:
    """The character start and end of each token of an encoding, as two compact arrays."""
    return array("l", (start for start, _ in encoding.offsets)), array("l", (end for _, end in encoding.offsets))


class TextMemo:
    """What a cross-encoder computes from text alone (a pair's windows, its sentence units, an
    item's tokens), by kind and key, for the next call and for the judges of a panel that read
    text alike. Bounded: a kind that reaches ``limit`` entries is emptied and starts again."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._kinds: dict[str, dict[Hashable, Any]] = {}

    def get(self, kind: str, key: Hashable, compute: Callable[[], _T]) -> _T:
        """The value kept under (``kind``, ``key``), else ``compute()``, kept."""
        return self.get_many(kind, [key], lambda missing: [compute()])[0]

    def get_many(self, kind: str, keys: Sequence[Hashable], compute: Callable[[list[Any]], Sequence[_T]]) -> list[_T]:
        """The values of ``keys``, in order: those kept, and the others computed together
        (``compute(missing)``, one value per missing key, in order) and kept."""
        table = self._kinds.setdefault(kind, {})
        values: dict[Hashable, Any] = {}
        for key in keys:
            value = table.get(key, _ABSENT)  # one look-up: another thread may empty the table
            if value is not _ABSENT:
                values[key] = value
        missing = [key for key in dict.fromkeys(keys) if key not in values]
        if missing:
            computed = dict(zip(missing, compute(missing)))
            if len(table) + len(computed) > self.limit:
                table.clear()
            table.update(computed)
            values.update(computed)
        return [values[key] for key in keys]


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
        # one item per run: the runs go in parallel, each on one thread (ONNX Runtime's threads
        # split an operator's rows and give the same numbers; a run per thread wastes less of them)
        self.workers = (threads or os.cpu_count() or 1) if self.items_per_run == 1 and runtime == "onnx" else 1
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = 0
        self._model: _OnnxClassifier | _TorchClassifier
        if runtime == "onnx":
            self._model = _OnnxClassifier(folder, config, onnx_dir, 1 if self.workers > 1 else threads)
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
        self.memo = TextMemo()

    @property
    def reading(self) -> tuple[str, int, int | None]:
        """What decides how this judge reads text (its tokenizer, window length and window
        count): judges with the same reading cut and tokenise every pair alike."""
        vocabulary = hashlib.sha256(self.tokenizer.to_str().encode("utf-8")).hexdigest()
        return (vocabulary, self.max_length, self.max_windows)

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
        return self._hypothesis_tokens(hypothesis) <= self.max_length // 2

    # -- windows ------------------------------------------------------------------------

    def premise_windows(self, premise: str, hypothesis: str) -> list[str]:
        """The premise cut into windows of whole sentences that fit beside the hypothesis.

        Consecutive windows share their boundary sentence; a sentence longer than the budget is
        cut at token boundaries.
        """
        budget = self._budget(hypothesis)
        return self.memo.get("windows", (premise, budget), lambda: self._cut_windows(premise, budget))

    def _budget(self, hypothesis: str) -> int:
        """The premise's tokens in one window beside ``hypothesis``: the window less the special
        tokens and the hypothesis (of which at most half the window is read), at least 16."""
        hyp_tokens = self._hypothesis_tokens(hypothesis)
        return max(self.max_length - self._special_tokens - min(hyp_tokens, self.max_length // 2), 16)

    def _hypothesis_tokens(self, hypothesis: str) -> int:
        """How many tokens ``hypothesis`` is, read once (the memo's "hypothesis tokens")."""
        return self.memo.get(
            "hypothesis tokens",
            hypothesis,
            lambda: len(self.tokenizer.encode(hypothesis, add_special_tokens=False).ids),
        )

    def _read_texts(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Tokenise the premises and hypotheses of ``pairs`` not read before, in one batch each
        (the tokenizer's threads), for :meth:`premise_windows` to find in the memo."""
        self.memo.get_many(
            "premise token spans",
            [premise for premise, _ in pairs],
            lambda texts: [_token_spans(e) for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)],
        )
        self.memo.get_many(
            "hypothesis tokens",
            [hypothesis for _, hypothesis in pairs],
            lambda texts: [len(e.ids) for e in self.tokenizer.encode_batch(texts, add_special_tokens=False)],
        )

    def _cut_windows(self, premise: str, budget: int) -> list[str]:
        starts, ends = self.memo.get(
            "premise token spans",
            premise,
            lambda: _token_spans(self.tokenizer.encode(premise, add_special_tokens=False)),
        )
        if len(starts) <= budget:
            return [premise]
        # tokens per sentence, from the character offsets
        spans = self.memo.get("sentences", premise, lambda: sentence_spans(premise))
        pieces: list[tuple[int, int, int]] = []  # (char start, char end, tokens)
        token = 0
        for start, end in spans:
            first = token
            while token < len(starts) and starts[token] < end:
                token += 1
            count = token - first
            if count <= budget:
                pieces.append((start, end, count))
                continue
            for chunk in range(first, token, budget):  # one over-long sentence: cut at tokens
                last = min(chunk + budget, token) - 1
                pieces.append((starts[chunk], ends[last], last - chunk + 1))
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
        distinct = list(dict.fromkeys(items))
        encodings = self._encodings(distinct)
        batches = length_batches([len(e.ids) for e in encodings], self.items_per_run, self.max_tokens_per_batch)
        logits = np.zeros((len(distinct), self._model.num_labels), dtype=np.float64)

        def run(batch: list[int]) -> None:
            logits[batch] = self._model.logits(*_padded([encodings[i] for i in batch]))

        if self.workers > 1 and len(batches) > 1:
            list(self._executor().map(run, batches))  # list(): an error of a run is raised here
        else:
            for batch in batches:
                run(batch)
        row = {item: i for i, item in enumerate(distinct)}
        out[:] = logits[[row[item] for item in items]]
        return out

    def _encodings(self, items: list[tuple[str, str]]) -> list[_Tokens]:
        """The tokenizer's encoding of each (window, hypothesis) item, from the memo where an
        item was read before (by this judge, or by a judge of its panel that reads alike)."""
        return self.memo.get_many(
            "tokens", items, lambda missing: [_Tokens.of(e) for e in self.tokenizer.encode_batch(missing)]
        )

    def _executor(self) -> ThreadPoolExecutor:
        """The threads the runs go to, started at the first call that needs them (and again in a
        forked child, which has none of its parent's threads)."""
        if self._pool is None or self._pool_pid != os.getpid():
            self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="fact-reasoner-nli")
            self._pool_pid = os.getpid()
            weakref.finalize(self, self._pool.shutdown, wait=False)
        return self._pool

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

        def stems(text: str) -> set[str]:
            return self.memo.get("stems", text, lambda: content_stems(text))

        wanted = stems(hypothesis)
        ranked = sorted(range(len(windows)), key=lambda i: (-len(wanted & stems(windows[i])), i))
        return [windows[i] for i in sorted(ranked[: self.max_windows])]

    def _score(self, pairs: list[tuple[str, str]]) -> list[dict[str, float]]:
        """Per pair: the window-combined probabilities (and, with ``sentences``, those of a
        short passage's sentences; with ``contradictions`` a passage is cut into sentences only
        once it is judged a contradiction whole)."""
        by_sentence: dict[int, list[str]] = {}
        if self.sentences == "all":
            by_sentence = {i: units for i, pair in enumerate(pairs) if len(units := self.sentence_units(*pair)) > 1}
        whole = [i for i in range(len(pairs)) if i not in by_sentence]
        results: list[dict[str, float] | None] = [None] * len(pairs)
        for i, probabilities in zip(whole, self._score_windows([pairs[i] for i in whole])):
            results[i] = probabilities
        if self.sentences == "contradictions":
            by_sentence = {
                i: units
                for i in whole
                if _arg_max(results[i]) == "contradiction"  # type: ignore[arg-type]
                and len(units := self.sentence_units(*pairs[i])) > 1
            }
        for i, probabilities in zip(
            by_sentence, self._score_sentences([(pairs[i][1], u) for i, u in by_sentence.items()])
        ):
            results[i] = probabilities
        return results  # type: ignore[return-value]

    def _score_windows(self, pairs: list[tuple[str, str]]) -> list[dict[str, float]]:
        self._read_texts(pairs)
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
        budget = self._budget(hypothesis)
        return self.memo.get("units", (premise, budget), lambda: self._cut_units(premise, hypothesis))

    def _cut_units(self, premise: str, hypothesis: str) -> list[str]:
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
            raise SetupError(f"the cross-encoder needs onnxruntime and tokenizers: {install_hint('nli')}") from error
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
        from .graph_rewrite import load_rewritten

        # an int8 export (export.py: int8, int8-static) keeps its embedding tables as int8 rows
        int8 = "int8" in str(config.get("fact_reasoner", {}).get("weights", ""))
        self.session = cpu_session(load_rewritten(graph) if int8 else graph, threads)
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.num_labels = int(self.session.get_outputs()[-1].shape[-1] or len(config.get("id2label") or {}) or 3)
        self.tokenizer = _truncating(Tokenizer.from_file(str(folder / "tokenizer.json")), 512)

    def logits(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return self.session.run(["logits"], {k: v for k, v in feeds.items() if k in self.inputs})[0]


class _TorchClassifier:
    """A transformers sequence-classification model on the CPU (any architecture)."""

    def __init__(self, model_path: str, threads: int | None):
        forbid_hub_downloads()
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


def share_text_memo(backends: Sequence[Any]) -> int:
    """Give the cross-encoders among ``backends`` (looked for behind the pair cache, as
    ``backend``) that read text alike (:attr:`CrossEncoderNLI.reading`) one :class:`TextMemo`, so
    that a panel's judges cut and tokenise each pair once. Returns how many judges now share
    another's memo."""
    first: dict[tuple[str, int, int | None], TextMemo] = {}
    shared = 0
    for backend in backends:
        inner = getattr(backend, "backend", backend)
        if isinstance(inner, CrossEncoderNLI):
            memo = first.setdefault(inner.reading, inner.memo)
            shared += memo is not inner.memo
            inner.memo = memo
    return shared


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
