"""RAGAS-style metrics computed on FactReasoner's atoms, NLI relations and FR2 factor graphs.

::

    from fact_reasoner.metrics import Faithfulness, FactualCorrectness, RagasScore, evaluate
    result = evaluate(samples, [Faithfulness(), FactualCorrectness(mode="F1")])
    result.to_dataframe(); result.to_jsonl("out.jsonl")
    RagasScore().combine({"faithfulness": 1.0, "context_precision": float("nan"),
                          "context_recall": 1.0, "answer_relevance": 0.8327})  # 0.9373

Every metric returns a :class:`MetricResult` with ``score`` in [0, 1] (NaN + ``reason`` when
it cannot be computed), ``score_100`` and per-claim ``details``. Stages (atomizer, NLI,
engine, LLM, embedder) come from a :class:`MetricContext`, injected or built from a
:class:`~fact_reasoner.settings.config.PipelineConfig`.
"""

from .answerable import non_answer, uncertainty_match
from .atoms import AtomStore, SentenceAtomizer
from .base import make_metric
from .catalog import available_metrics
from .classification import AnswerClassification
from .composite import RAGAS_WEIGHTS, RagasScore
from .context import MetricContext
from .correctness import FactualAccuracy, FactualCorrectness, f_beta, letter_grade
from .evaluation import EvaluationResult, evaluate
from .faithfulness import Faithfulness, Verdict, classify_claim
from .relevance import AnswerRelevance
from .results import ClaimDetail, MetricResult
from .retrieval_metrics import ContextPrecision, ContextRecall, average_precision, mean_relevance
from .sample import RagSample
from .similarity import BertScoreF1, SemanticSimilarity
from .support import ClaimSupport, SupportResult, judge_support

__all__ = [
    "AnswerClassification",
    "AnswerRelevance",
    "AtomStore",
    "BertScoreF1",
    "ClaimDetail",
    "ClaimSupport",
    "ContextPrecision",
    "ContextRecall",
    "EvaluationResult",
    "FactualAccuracy",
    "FactualCorrectness",
    "Faithfulness",
    "MetricContext",
    "MetricResult",
    "RAGAS_WEIGHTS",
    "RagSample",
    "RagasScore",
    "SemanticSimilarity",
    "SentenceAtomizer",
    "SupportResult",
    "Verdict",
    "available_metrics",
    "average_precision",
    "classify_claim",
    "evaluate",
    "f_beta",
    "judge_support",
    "letter_grade",
    "make_metric",
    "mean_relevance",
    "non_answer",
    "uncertainty_match",
]
