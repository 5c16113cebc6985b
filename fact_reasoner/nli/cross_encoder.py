"""The ``cross-encoder`` NLI backend: a transformers sequence-classification NLI model on CPU.

The model is a local directory or a hub id (hub ids work only when already in the local hub
cache: nothing is downloaded). ``None`` means the model the package ships in
``fact_reasoner/models/nli-minilm-l6`` — none yet: the recipe and the model card of the first
attempt are in ``experiments/nli_training/``.

How a pair is judged:

1. **Label order** comes from ``config.id2label`` (names such as ``ENTAILMENT``,
   ``not_entailment``, ``contradiction``, ``supports`` are recognised); ``label_order`` overrides
   it for models whose config only says ``LABEL_0``….
2. **Windows**: a premise longer than the model's token budget (``max_length`` minus the
   hypothesis and special tokens) is cut into overlapping windows that end on sentence
   boundaries where possible. With per-window probabilities ``p_w``, the pair gets
   ``e = max_w p_w(entailment)``, ``c = max_w p_w(contradiction)``, ``n = min_w p_w(neutral)``,
   renormalised to sum to 1 — one window that entails (or contradicts) the hypothesis is enough,
   as for a long Wikipedia passage.
3. **Batching by length**: all windows of all pairs are sorted by token count and run in batches
   of ``batch_size`` with dynamic padding, then put back in input order.
4. **Cache**: the NLI pair cache (:mod:`fact_reasoner.nli.cache`) keeps each pair's verdict
   under the backend's identity (model fingerprint, window length).
5. Optional **ONNX Runtime** (``use_onnx=True``): the model is exported once to
   ``<cache_dir>/onnx/<fingerprint>.onnx`` and run by onnxruntime instead of torch.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..embeddings import model_fingerprint
from .base import NLIJudgement, judge_scored

if TYPE_CHECKING:  # pragma: no cover
    from ..config import PipelineConfig

SHIPPED_MODEL_NAME = "nli-minilm-l6"
PROMPT_VERSION = "nli-cross-encoder/v1"

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

_SENTENCE_END = re.compile(r"[.!?](?:[\"')\]]*)\s+")


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


def _dtype_argument() -> str:
    """``dtype`` (transformers ≥ 4.56) or ``torch_dtype`` (older) for from_pretrained."""
    import transformers

    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


class CrossEncoderNLI:
    """NLI judgements from a sequence-classification cross-encoder (see the module docstring)."""

    name = "cross-encoder"

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        batch_size: int = 32,
        max_length: int | None = None,
        window_overlap_tokens: int = 32,
        threads: int | None = None,
        label_order: Sequence[str] | None = None,
        use_onnx: bool = False,
        onnx_dir: str | Path | None = None,
    ):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        if batch_size < 1:
            raise ValueError("batch_size must be ≥ 1")
        if threads is not None:
            torch.set_num_threads(max(1, int(threads)))
        self.model_path = str(model_path) if model_path is not None else str(shipped_model_path())
        if model_path is None and not shipped_model_path().is_dir():
            raise FileNotFoundError(
                f"no NLI cross-encoder ships with this version ({shipped_model_path()} is absent): "
                "give one with --nli-model PATH (experiments/nli_training/ trains one), or use --nli align "
                "(the fast classifier that ships) or --nli llm (the embedded judge)"
            )
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
            # fp16 shipped weights are upcast: fp16 matmuls are slow on CPU.
            self.model = AutoModelForSequenceClassification.from_pretrained(
                self.model_path, **{_dtype_argument(): torch.float32}
            )
        except OSError as error:
            raise FileNotFoundError(
                f"cannot load NLI model {self.model_path!r}: give a local directory (no model "
                f"hub is reached; a hub id works only if it is already cached): {error}"
            ) from error
        self.model.eval()
        if label_order is not None:
            names = [_LABEL_ALIASES.get(str(l).lower(), str(l).lower()) for l in label_order]
            if sorted(set(names)) != sorted(set(names) & {"entailment", "neutral", "contradiction"}) or len(
                names
            ) != self.model.config.num_labels:
                raise ValueError(f"label_order must name each of the model's {self.model.config.num_labels} outputs")
            self.label_names = names
        else:
            self.label_names = label_names_from_config(self.model.config.id2label)
        # Window size in tokens: explicit, else the tokenizer's model_max_length (the shipped
        # model sets the length it was trained at), never past the position embeddings.
        model_max = min(getattr(self.model.config, "max_position_embeddings", 512), 512)
        tokenizer_max = getattr(self.tokenizer, "model_max_length", None) or model_max
        self.max_length = min(int(max_length or tokenizer_max), model_max)
        if self.max_length < 16:
            raise ValueError(f"max_length {self.max_length} is too short for NLI windows")
        self.window_overlap_tokens = window_overlap_tokens
        self.batch_size = batch_size
        self.model_id = model_fingerprint(self.model_path)
        self.pairs_scored = 0
        self.windows_scored = 0
        self._onnx_session = None
        if use_onnx:
            self._onnx_session = self._onnx(onnx_dir)

    # -- windows ------------------------------------------------------------------------

    def premise_windows(self, premise: str, hypothesis: str) -> list[str]:
        """The premise cut into windows that fit beside the hypothesis in ``max_length`` tokens.

        Windows end at a sentence end when one lies in their second half, and the next window
        starts ``window_overlap_tokens`` before (rounded to a sentence start when possible).
        """
        hyp_tokens = len(self.tokenizer(hypothesis, add_special_tokens=False)["input_ids"])
        special = self.tokenizer.num_special_tokens_to_add(pair=True)
        budget = self.max_length - special - min(hyp_tokens, self.max_length // 2)
        budget = max(budget, 16)
        # The whole premise is tokenized only to find window offsets, so no length warning.
        enc = self.tokenizer(premise, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
        offsets = enc["offset_mapping"]
        if len(offsets) <= budget:
            return [premise]
        sentence_starts = {m.end() for m in _SENTENCE_END.finditer(premise)}
        # Token index i starts a sentence when its first character follows a sentence end.
        starts_sentence = [i == 0 or offsets[i][0] in sentence_starts for i in range(len(offsets))]
        windows = []
        start = 0
        n = len(offsets)
        while start < n:
            end = min(start + budget, n)
            if end < n:
                cut = next((j for j in range(end, start + budget // 2, -1) if starts_sentence[j]), None)
                if cut is not None:
                    end = cut
            windows.append(premise[offsets[start][0] : offsets[end - 1][1]])
            if end >= n:
                break
            nxt = max(end - self.window_overlap_tokens, start + 1)
            snapped = next((j for j in range(nxt, end) if starts_sentence[j]), None)
            start = snapped if snapped is not None and snapped > start else nxt
        return windows

    # -- scoring ------------------------------------------------------------------------

    def _probabilities(self, items: list[tuple[str, str]]) -> list[dict[str, float]]:
        """Label probabilities of (window, hypothesis) items, batched by token length."""
        import numpy as np
        import torch

        if not items:
            return []
        lengths = [
            len(ids)
            for ids in self.tokenizer(
                [w for w, _ in items], [h for _, h in items], truncation="longest_first", max_length=self.max_length
            )["input_ids"]
        ]
        order = sorted(range(len(items)), key=lambda i: lengths[i])
        out: list[dict[str, float] | None] = [None] * len(items)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            batch = self.tokenizer(
                [items[i][0] for i in idx],
                [items[i][1] for i in idx],
                truncation="longest_first",
                max_length=self.max_length,
                padding=True,
                return_tensors="np",
            )
            if self._onnx_session is not None:
                feeds = {
                    k.name: batch[k.name].astype(np.int64)
                    for k in self._onnx_session.get_inputs()
                    if k.name in batch
                }
                logits = torch.from_numpy(self._onnx_session.run(None, feeds)[0])
            else:
                with torch.inference_mode():
                    logits = self.model(**{k: torch.from_numpy(v) for k, v in batch.items()}).logits
            probs = torch.softmax(logits.float(), dim=-1).numpy()
            for row, i in zip(probs, idx):
                p = {"entailment": 0.0, "neutral": 0.0, "contradiction": 0.0}
                for name, value in zip(self.label_names, row):
                    p[name] += float(value)
                out[i] = p
        self.windows_scored += len(items)
        return out  # type: ignore[return-value]

    @property
    def identity(self) -> str:
        return f"cross-encoder:{self.model_id}:max_length={self.max_length}:{PROMPT_VERSION}"

    def _score(self, pairs: list[tuple[str, str]]) -> list[dict[str, float]]:
        """Per pair: the window-combined probabilities."""
        items: list[tuple[str, str]] = []
        owner: list[int] = []
        for i, (premise, hypothesis) in enumerate(pairs):
            for window in self.premise_windows(premise, hypothesis):
                items.append((window, hypothesis))
                owner.append(i)
        grouped: list[list[dict[str, float]]] = [[] for _ in pairs]
        for i, p in zip(owner, self._probabilities(items)):
            grouped[i].append(p)
        return [combine_windows(windows) for windows in grouped]

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        """Judge (premise, hypothesis) pairs; output order = input order."""
        results = judge_scored(pairs, self._score)
        self.pairs_scored += sum(not r.failed for r in results)
        return results

    def stats(self) -> dict[str, int]:
        return {"pairs_scored": self.pairs_scored, "windows_scored": self.windows_scored}

    # -- ONNX ---------------------------------------------------------------------------

    def _onnx(self, onnx_dir: str | Path | None):
        """An onnxruntime session for the model, exported once and kept under ``onnx_dir``."""
        import onnxruntime
        import torch

        from ..config import default_cache_dir

        folder = Path(onnx_dir) if onnx_dir is not None else default_cache_dir() / "onnx"
        folder.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.@-]", "_", self.model_id)
        path = folder / f"{safe}.onnx"
        if not path.exists():
            sample = self.tokenizer(["a premise"], ["a hypothesis"], return_tensors="pt")
            names = [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in sample]
            axes = {k: {0: "batch", 1: "tokens"} for k in names}
            tmp = path.with_suffix(".tmp.onnx")
            torch.onnx.export(
                self.model,
                tuple(sample[k] for k in names),
                str(tmp),
                input_names=names,
                output_names=["logits"],
                dynamic_axes=axes | {"logits": {0: "batch"}},
                opset_version=17,
                dynamo=False,
            )
            os.replace(tmp, path)
        options = onnxruntime.SessionOptions()
        threads = torch.get_num_threads()
        options.intra_op_num_threads = threads
        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def make_cross_encoder(config: "PipelineConfig") -> CrossEncoderNLI:
    """The ``cross-encoder`` backend for a pipeline config.

    ``config.models.nli_model``: a local model directory or a cached hub id; None → the shipped model.
    ``config.models.threads`` sets the thread count.
    """
    return CrossEncoderNLI(config.models.nli_model, threads=config.models.threads)
