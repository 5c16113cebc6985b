"""Batch evaluation: every metric on every sample, with errors recorded per sample and metric.

``evaluate(samples, metrics)`` never drops a row: a sample that cannot be read, or a metric
that raises, gives NaN with the error as the reason (``errors`` lists them). Results go to
JSONL (:meth:`EvaluationResult.to_jsonl`) and to a pandas DataFrame (:meth:`to_dataframe`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import Metric, as_sample
from .classification import AnswerClassification
from .composite import RagasScore
from .context import MetricContext
from .correctness import FactualAccuracy, FactualCorrectness
from .faithfulness import Faithfulness
from .relevance import AnswerRelevance
from .results import MetricResult
from .retrieval_metrics import ContextPrecision, ContextRecall
from .sample import RagSample
from .similarity import BertScoreF1, SemanticSimilarity

METRICS: dict[str, type[Metric]] = {
    "faithfulness": Faithfulness,
    "factual_correctness": FactualCorrectness,
    "context_precision": ContextPrecision,
    "context_recall": ContextRecall,
    "answer_relevance": AnswerRelevance,
    "ragas_score": RagasScore,
    "factual_accuracy": FactualAccuracy,
    "semantic_similarity": SemanticSimilarity,
    "bert_score": BertScoreF1,
    "answer_classification": AnswerClassification,
}
ALIASES = {
    "answer_relevancy": "answer_relevance",
    "ragas": "ragas_score",
    "composite": "ragas_score",
    "bertscore": "bert_score",
    "bert_score_f1": "bert_score",
    "bertscore_f1": "bert_score",
    "geval": "factual_accuracy",
    "classification": "answer_classification",
}


def available_metrics() -> list[str]:
    """The metric names ``make_metric`` and ``fact-reasoner ragas --metrics`` take."""
    return sorted(METRICS)


def make_metric(name: str, **params: Any) -> Metric:
    """A metric by its name (``faithfulness``, ``factual_correctness`` … or an alias)."""
    key = name.strip().lower().replace("-", "_")
    key = ALIASES.get(key, key)
    if key not in METRICS:
        raise ValueError(f"unknown metric {name!r}; known: {', '.join(sorted(METRICS))}")
    return METRICS[key](**params)


@dataclass
class SampleEvaluation:
    index: int
    sample: RagSample | None
    results: dict[str, MetricResult]
    errors: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def row(self) -> dict[str, Any]:
        """One JSON-able line: the sample's fields, each metric's full result, errors, time."""
        sample = self.sample.model_dump(exclude_none=True) if self.sample else {}
        return {
            "index": self.index,
            **sample,
            "metrics": {name: r.model_dump(mode="json") for name, r in self.results.items()},
            "errors": self.errors,
            "seconds": self.seconds,
        }


@dataclass
class EvaluationResult:
    samples: list[SampleEvaluation]
    metric_names: list[str]
    notes: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[dict[str, Any]]:
        return [{"index": s.index, "metric": m, "error": e} for s in self.samples for m, e in s.errors.items()]

    def scores(self, name: str) -> list[float]:
        return [s.results[name].score for s in self.samples]

    def to_dataframe(self):
        """One row per sample: ``index``, ``question``, one column per metric score, ``errors``."""
        import pandas as pd

        rows = []
        for s in self.samples:
            row: dict[str, Any] = {"index": s.index, "question": s.sample.question if s.sample else None}
            for name, result in s.results.items():
                row[name] = result.score
                for extra in ("grade", "label"):
                    if getattr(result, extra, None) is not None:
                        row[f"{name}_{extra}"] = getattr(result, extra)
            row["errors"] = "; ".join(f"{k}: {v}" for k, v in s.errors.items()) or None
            row["seconds"] = s.seconds
            rows.append(row)
        return pd.DataFrame(rows)

    def to_jsonl(self, path: str | Path) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            for s in self.samples:
                handle.write(json.dumps(_json_safe(s.row()), ensure_ascii=False) + "\n")
        return path

    def summary(self) -> dict[str, Any]:
        """Mean of each metric over samples where it is not NaN, counts, and label counts."""
        out: dict[str, Any] = {"num_samples": len(self.samples), "num_errors": len(self.errors)}
        for name in self.metric_names:
            values = [v for v in self.scores(name) if not math.isnan(v)]
            out[name] = {
                "mean": sum(values) / len(values) if values else float("nan"),
                "scored": len(values),
                "nan": len(self.samples) - len(values),
            }
            labels = [s.results[name] for s in self.samples if hasattr(s.results[name], "label")]
            if labels:
                out[name]["counts"] = AnswerClassification.counts(labels)
            grades = [getattr(s.results[name], "grade", None) for s in self.samples]
            if any(grades):
                out[name]["grades"] = {g: grades.count(g) for g in "ABCDE"}
        seconds = [s.seconds for s in self.samples]
        out["seconds_per_sample"] = sum(seconds) / len(seconds) if seconds else float("nan")
        return out


def _json_safe(value: Any) -> Any:
    """NaN → None (JSON has no NaN)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def _column_names(metrics: Sequence[Metric]) -> list[str]:
    names: list[str] = []
    seen: dict[str, int] = {}
    for metric in metrics:
        count = seen.get(metric.name, 0)
        seen[metric.name] = count + 1
        names.append(metric.name if count == 0 else f"{metric.name}_{count + 1}")
    return names


def _evaluate_sample(
    index: int, raw: Any, names: list[str], metric_objects: list[Metric], context: MetricContext
) -> SampleEvaluation:
    """One row: every metric of one sample; an unreadable sample or a failing metric gives NaN."""
    start = time.perf_counter()
    try:
        sample = as_sample(raw)
    except Exception as error:  # unreadable sample: still one row, every metric NaN
        message = f"invalid sample: {type(error).__name__}: {error}"
        return SampleEvaluation(
            index,
            None,
            {n: MetricResult.nan(m.name, message) for n, m in zip(names, metric_objects)},
            {"sample": message},
        )
    results: dict[str, MetricResult] = {}
    errors: dict[str, str] = {}
    for name, metric in zip(names, metric_objects):
        try:
            results[name] = context.result(metric, sample)
        except Exception as error:  # one failing metric must not lose the others
            message = f"{type(error).__name__}: {error}"
            errors[name] = message
            results[name] = MetricResult.nan(metric.name, f"error: {message}", error=True)
    return SampleEvaluation(index, sample, results, errors, time.perf_counter() - start)


def evaluate(
    samples: Iterable[RagSample | dict],
    metrics: Sequence[Metric | str],
    *,
    context: MetricContext | None = None,
    progress: bool = True,
    output: str | Path | None = None,
) -> EvaluationResult:
    """Score every sample with every metric; atoms, NLI judgements and graphs are shared.

    ``metrics`` are :class:`Metric` objects or names. ``output`` also writes the JSONL.
    """
    from ..progress import progress_bar

    metric_objects = [make_metric(m) if isinstance(m, str) else m for m in metrics]
    if not metric_objects:
        raise ValueError("no metrics to compute")
    names = _column_names(metric_objects)
    context = context or MetricContext()
    samples = list(samples)
    evaluations: list[SampleEvaluation] = []
    with progress_bar(len(samples), desc="ragas", unit="sample", quiet=not progress) as bar:
        for index, raw in enumerate(samples):
            evaluations.append(_evaluate_sample(index, raw, names, metric_objects, context))
            bar.update(1)
    context.forget_results()
    result = EvaluationResult(evaluations, names, list(context.notes))
    if output is not None:
        result.to_jsonl(output)
    return result


__all__ = [
    "ALIASES",
    "EvaluationResult",
    "METRICS",
    "SampleEvaluation",
    "available_metrics",
    "evaluate",
    "make_metric",
]
