"""The ``align`` NLI backend: a small classifier over sentence-alignment features.

For each pair, the premise is split into sentences, the hypothesis and every sentence are
embedded (all-MiniLM-L6-v2 by default; vectors memoised per text, so a passage shared by many
claims is embedded once), and :mod:`~fact_reasoner.nli.alignment_features` computes how well
the best sentence covers the hypothesis: cosine similarities, content-word / name / number
coverage, number conflicts and negation mismatches, and — when the model's config sets
``use_vectors`` — the vector pair h ⊙ s*, |h − s*| (the shipped model uses the scalars only).
A feed-forward network (standardised input → ReLU layers → softmax over entailment / neutral /
contradiction) trained by ``experiments/nli_training/train_align.py`` turns them into
probabilities.

The model is a folder with ``config.json`` (feature list, label order, embedder, metrics) and
``weights.npz`` (``mean``, ``scale``, ``W0``, ``b0``, ``W1``, ``b1``, …; plain numpy arrays
loaded with ``allow_pickle=False``). The package ships one in ``fact_reasoner/models/nli-align``.

Judgements are cached by the NLI pair cache (:mod:`fact_reasoner.nli.cache`) under the
backend's identity (``align``, the model's fingerprint, the feature version).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..embeddings import Embedder
from ..hashing import files_fingerprint
from ..text.sentences import premise_sentences
from .alignment_features import SCALAR_FEATURES, scalar_features, vector_features
from .base import LABELS, NLIJudgement, judge_scored

if TYPE_CHECKING:  # pragma: no cover
    from ..settings.config import ModelOptions

SHIPPED_ALIGN_MODEL = "nli-align"
FEATURE_VERSION = "align-features/v2"


def shipped_align_model_path() -> Path:
    """The align model folder that ships inside the package (``models/nli-align``)."""
    return Path(__file__).resolve().parents[1] / "models" / SHIPPED_ALIGN_MODEL


def pair_features(pairs: Sequence[tuple[str, str]], embedder: Embedder, use_vectors: bool = True) -> np.ndarray:
    """Feature matrix (len(pairs), n_features) for (premise, hypothesis) pairs.

    All distinct texts (hypotheses and premise sentences) are embedded in one call.
    """
    sentence_lists = [premise_sentences(premise) for premise, _ in pairs]
    texts = list(dict.fromkeys([h for _, h in pairs] + [s for ss in sentence_lists for s in ss]))
    vectors = embedder.encode(texts) if texts else np.zeros((0, 0), dtype=np.float32)
    index = {text: i for i, text in enumerate(texts)}
    rows = []
    for (_, hypothesis), sentences in zip(pairs, sentence_lists):
        h = vectors[index[hypothesis]]
        s = vectors[[index[x] for x in sentences]]
        scalars, best = scalar_features(hypothesis, sentences, h, s)
        rows.append(np.concatenate([scalars, vector_features(h, s[best])]) if use_vectors else scalars)
    return np.stack(rows).astype(np.float32) if rows else np.zeros((0, len(SCALAR_FEATURES)), np.float32)


class AlignClassifier:
    """Standardise → dense ReLU layers → softmax. ``predict_proba(X) -> (n, 3)`` in LABELS order."""

    def __init__(self, mean: np.ndarray, scale: np.ndarray, layers: list[tuple[np.ndarray, np.ndarray]]):
        self.mean = mean.astype(np.float32)
        self.scale = scale.astype(np.float32)
        self.layers = [(w.astype(np.float32), b.astype(np.float32)) for w, b in layers]
        if self.layers[-1][0].shape[1] != len(LABELS):
            raise ValueError(f"the last layer must have {len(LABELS)} outputs")

    def predict_proba(self, features: np.ndarray) -> np.ndarray:
        """Probabilities of each row; a row's probabilities depend on that row alone.

        Each layer multiplies row by row (vector × matrix): a matrix product over the whole
        batch gives a row results that differ in the last bits (≈1e-7 here) with the rows
        beside it, so a pair judged with other pairs — in another record, by another worker —
        would not get exactly the same probability. The layers are small, so the loop costs
        little (``docs/measurements.md``).
        """
        x = (features - self.mean) / self.scale
        for i, (w, b) in enumerate(self.layers):
            x = (np.stack([row @ w for row in x]) if len(x) else np.zeros((0, w.shape[1]), np.float32)) + b
            if i < len(self.layers) - 1:
                x = np.maximum(x, 0.0)
        x -= x.max(axis=1, keepdims=True)
        e = np.exp(x)
        return e / e.sum(axis=1, keepdims=True)

    def arrays(self) -> dict[str, np.ndarray]:
        out = {"mean": self.mean, "scale": self.scale}
        for i, (w, b) in enumerate(self.layers):
            out[f"W{i}"], out[f"b{i}"] = w, b
        return out

    @classmethod
    def from_arrays(cls, arrays) -> "AlignClassifier":
        layers = []
        i = 0
        while f"W{i}" in arrays:
            layers.append((np.asarray(arrays[f"W{i}"]), np.asarray(arrays[f"b{i}"])))
            i += 1
        if not layers:
            raise ValueError("no layers (W0, b0, …) in the weights")
        return cls(np.asarray(arrays["mean"]), np.asarray(arrays["scale"]), layers)


def save_align_model(folder: str | Path, classifier: AlignClassifier, config: dict) -> None:
    """Write an align model folder: ``config.json`` and the arrays in ``weights.npz``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / "weights.npz", **classifier.arrays())  # type: ignore[arg-type]
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n")


class AlignModel(NamedTuple):
    """A loaded align model: the classifier and its ``config.json``."""

    classifier: AlignClassifier
    config: dict


def load_align_model(folder: str | Path) -> AlignModel:
    """The classifier and config of an align model folder (``config.json`` + ``weights.npz``),
    checked against the features this code computes."""
    folder = Path(folder)
    config_path, weights_path = folder / "config.json", folder / "weights.npz"
    if not config_path.is_file() or not weights_path.is_file():
        raise FileNotFoundError(f"{folder}: an align NLI model needs config.json and weights.npz")
    config = json.loads(config_path.read_text())
    if config.get("feature_version") != FEATURE_VERSION:
        raise ValueError(
            f"{config_path}: feature_version {config.get('feature_version')!r}, this code computes "
            f"{FEATURE_VERSION!r}; retrain the model"
        )
    if list(config.get("labels", [])) != [label.value for label in LABELS]:
        raise ValueError(f"{config_path}: labels must be {[label.value for label in LABELS]}")
    with np.load(weights_path, allow_pickle=False) as arrays:
        classifier = AlignClassifier.from_arrays({name: arrays[name] for name in arrays.files})
    expected = len(SCALAR_FEATURES) + (2 * int(config["embedding_dim"]) if config.get("use_vectors") else 0)
    if classifier.mean.shape[0] != expected:
        raise ValueError(f"{weights_path}: {classifier.mean.shape[0]} inputs, the features have {expected}")
    return AlignModel(classifier, config)


def _fingerprint(folder: Path) -> str:
    return files_fingerprint(folder, ("config.json", "weights.npz"), digits=12)


class AlignNLI:
    """The ``align`` NLI backend (see the module docstring)."""

    name = "align"

    def __init__(
        self,
        model_path: str | Path | None = None,
        embedder: Embedder | None = None,
        batch_size: int = 256,
        threads: int | None = None,
    ):
        folder = Path(model_path) if model_path else shipped_align_model_path()
        self.classifier, self.config = load_align_model(folder)
        self.model_id = _fingerprint(folder)
        if embedder is None:
            from ..embeddings import shared_embedder

            # threads: ONNX Runtime's intra-op threads (None: all cores); a Ray actor sharing
            # the cores with others gets its share
            embedder = shared_embedder(self.config.get("embedder_path"), threads=threads)
        self.embedder = embedder
        self.batch_size = batch_size
        self.pairs_scored = 0

    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """(len(pairs), 3) probabilities in LABELS order, no cache."""
        out = []
        for start in range(0, len(pairs), self.batch_size):
            chunk = pairs[start : start + self.batch_size]
            features = pair_features(chunk, self.embedder, bool(self.config.get("use_vectors")))
            out.append(self.classifier.predict_proba(features))
        return np.concatenate(out) if out else np.zeros((0, len(LABELS)))

    def _score(self, pairs: list[tuple[str, str]]) -> list[dict[str, float]]:
        return [{label.value: float(p) for label, p in zip(LABELS, row)} for row in self.probabilities(pairs)]

    @property
    def identity(self) -> str:
        return f"align:{self.model_id}:{FEATURE_VERSION}"

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        """Judge (premise, hypothesis) pairs; output order = input order."""
        results = judge_scored(pairs, self._score)
        self.pairs_scored += sum(not r.failed for r in results)
        return results

    def stats(self) -> dict[str, int]:
        return {"pairs_scored": self.pairs_scored}


def make_align(models: "ModelOptions") -> AlignNLI:
    """The ``align`` backend for the ``models`` group of a configuration: ``models.nli_model`` is
    the model folder (None → the shipped one); ``models.threads`` the embedder's CPU threads."""
    return AlignNLI(models.nli_model, threads=models.threads)


__all__ = [
    "AlignClassifier",
    "AlignModel",
    "AlignNLI",
    "FEATURE_VERSION",
    "load_align_model",
    "make_align",
    "pair_features",
    "save_align_model",
    "shipped_align_model_path",
]
