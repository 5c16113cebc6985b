"""The composite RAGAS score.

score = Σ_c w_c · s_c / Σ_c w_c over the components c whose score s_c is not NaN, with
w = faithfulness 0.30, context precision 0.20, context recall 0.20, answer relevance 0.30;
all components NaN → NaN. A component that *failed* (a model call, an error; not NaN by
definition such as context recall without a reference) makes the composite a failure (NaN,
the component named): a mean of the others would be a score it did not compute. No response →
NaN. Seed vectors (0–100): (100, NaN, 100, 83.27) → 93.73;
(NaN, NaN, NaN, 82.29) → 82.29.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..errors import SetupError
from .base import Metric
from .context import MetricContext
from .faithfulness import Faithfulness
from .relevance import AnswerRelevance
from .results import MetricResult
from .retrieval_metrics import ContextPrecision, ContextRecall
from .sample import RagSample

RAGAS_WEIGHTS: dict[str, float] = {
    "faithfulness": 0.30,
    "context_precision": 0.20,
    "context_recall": 0.20,
    "answer_relevance": 0.30,
}
_KEY_ALIASES = {"answer_relevancy": "answer_relevance", "relevance": "answer_relevance"}


def weighted_nan_mean(values: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """Σ w·v / Σ w over the entries whose value is not NaN; NaN when none is left."""
    used = [(weights[k], v) for k, v in values.items() if v is not None and not math.isnan(v)]
    total = sum(w for w, _ in used)
    return sum(w * v for w, v in used) / total if total > 0 else float("nan")


@dataclass
class RagasScore(Metric):
    """Weighted mean of faithfulness, context precision, context recall and answer relevance."""

    name = "ragas_score"
    weights: dict = field(default_factory=lambda: dict(RAGAS_WEIGHTS))
    faithfulness: Faithfulness = field(default_factory=Faithfulness)
    context_precision: ContextPrecision = field(default_factory=ContextPrecision)
    context_recall: ContextRecall = field(default_factory=ContextRecall)
    answer_relevance: AnswerRelevance = field(default_factory=AnswerRelevance)

    def __post_init__(self) -> None:
        unknown = set(self.weights) - set(RAGAS_WEIGHTS)
        if unknown:
            raise ValueError(f"unknown components {sorted(unknown)}; known: {sorted(RAGAS_WEIGHTS)}")
        if any(w < 0 for w in self.weights.values()) or not sum(self.weights.values()) > 0:
            raise ValueError("weights must be non-negative with a positive sum")

    def combine(self, components: Mapping[str, float]) -> float:
        """The composite of component scores in [0, 1] (missing or NaN components are skipped)."""
        values: dict[str, float] = {}
        for key, value in components.items():
            name = _KEY_ALIASES.get(key, key)
            if name not in self.weights:
                raise ValueError(f"unknown component {key!r}; known: {sorted(self.weights)}")
            value = float("nan") if value is None else float(value)
            if not math.isnan(value) and not 0.0 <= value <= 1.0:
                raise ValueError(f"component {key!r} = {value} is outside [0, 1] (pass scores, not 0–100)")
            values[name] = value
        return weighted_nan_mean(values, self.weights)

    def needs(self) -> frozenset[str]:
        return frozenset().union(*(getattr(self, name).needs() for name in self.weights))

    def _score(self, sample: RagSample, context: MetricContext) -> MetricResult:
        if not sample.response:
            # the retrieval components alone would make a perfect-looking score for no answer
            return MetricResult.nan(self.name, "sample has no response: the composite judges the answer")
        parts: dict[str, MetricResult] = {}
        for name in self.weights:
            metric = getattr(self, name)
            try:
                parts[name] = context.result(metric, sample)
            except SetupError:
                raise  # a stage that cannot be set up: every sample would fail the same way
            except Exception as error:  # a failed component is a failure, named in the reason
                parts[name] = MetricResult.failure(name, f"{type(error).__name__}: {error}")
        components = {name: r.score for name, r in parts.items()}
        failed = {name: r.reason for name, r in parts.items() if r.is_failure}
        if failed:
            named = "; ".join(f"{k} ({v})" for k, v in failed.items())
            return MetricResult.failure(self.name, f"not computed: component(s) failed: {named}", components=components)
        score = self.combine(components)
        skipped = {name: r.reason for name, r in parts.items() if r.is_nan}
        reason = None
        if skipped:
            reason = "skipped (NaN): " + "; ".join(f"{k}: {v}" for k, v in skipped.items())
        return MetricResult(name=self.name, score=score, reason=reason, components=components)


__all__ = ["RAGAS_WEIGHTS", "RagasScore", "weighted_nan_mean"]
