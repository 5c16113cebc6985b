"""The RAG metrics by name: :data:`METRICS`, the ``metrics`` kind of :mod:`fact_reasoner.settings.registry`.

``make_metric(name, **params)`` and ``fact-reasoner ragas --metrics`` take these names (or an
alias). Each built-in metric is registered here once: its class as ``"module:Class"`` (imported
when the metric is first made, so listing the names imports no metric), its description (the
first line of the class's docstring), the extras it needs and its aliases. Installed packages
add theirs through the ``fact_reasoner.metrics`` entry-point group; code registers its own with
``METRICS.register(name, factory, description=…)``.

This module imports no metric, so the evaluation's stages (:mod:`.context`) can look entries up
while the metrics themselves build on those stages.
"""

from __future__ import annotations

from typing import Any

from ..embeddings import EMBEDDER_EXTRAS
from ..settings.registry import TORCH_FIRST, Extra, Registry

__all__ = ["ALIASES", "METRICS", "available_metrics"]

#: every RAG metric; a factory is called with the metric's parameters and returns a
#: :class:`~fact_reasoner.metrics.base.Metric` (not named in the type: that module imports this one)
METRICS: Registry[Any] = Registry("metrics", noun="metric", entry_point_group="fact_reasoner.metrics")

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

_BUILTIN: tuple[tuple[str, str, str, tuple[Extra, ...]], ...] = (
    (
        "faithfulness",
        "faithfulness:Faithfulness",
        "Share of the response's claims supported by the retrieved contexts (see module docs).",
        (),
    ),
    (
        "factual_correctness",
        "correctness:FactualCorrectness",
        "Precision, recall or F-beta of the response's claims against the reference's.",
        (),
    ),
    (
        "context_precision",
        "retrieval_metrics:ContextPrecision",
        "Relevance of the retrieved contexts in rank order: average precision or mean relevance.",
        (),
    ),
    (
        "context_recall",
        "retrieval_metrics:ContextRecall",
        "Share of the reference's claims that the retrieved contexts support.",
        (),
    ),
    (
        "answer_relevance",
        "relevance:AnswerRelevance",
        "How directly the response answers the question (see module docs).",
        EMBEDDER_EXTRAS,
    ),
    (
        "ragas_score",
        "composite:RagasScore",
        "Weighted mean of faithfulness, context precision, context recall and answer relevance.",
        EMBEDDER_EXTRAS,
    ),
    (
        "factual_accuracy",
        "correctness:FactualAccuracy",
        "GEval-style accuracy: 50 % correctness + 30 % completeness + 20 % consistency, graded A–E.",
        (),
    ),
    (
        "semantic_similarity",
        "similarity:SemanticSimilarity",
        "Cosine of the sentence embeddings of response and reference (at least 0).",
        EMBEDDER_EXTRAS,
    ),
    (
        "bert_score",
        "similarity:BertScoreF1",
        "BERTScore F1 of response against reference, over a local model (no baseline rescaling).",
        # bert-score requires torch: without it, the extra would bring the CUDA build
        (Extra("torch", "bertscore", first=TORCH_FIRST), Extra("bert_score", "bertscore")),
    ),
    (
        "answer_classification",
        "classification:AnswerClassification",
        "CORRECT, WRONG or DON'T KNOW: an uncertainty phrase, else factual correctness against a threshold.",
        (),
    ),
)

for _name, _target, _description, _extras in _BUILTIN:
    METRICS.register(
        _name,
        f"{__package__}.{_target}",
        description=_description,
        extras=_extras,
        aliases=[alias for alias, target in ALIASES.items() if target == _name],
        builtin=True,
    )


def available_metrics() -> list[str]:
    """The metric names ``make_metric`` and ``fact-reasoner ragas --metrics`` take."""
    return sorted(METRICS.available())
