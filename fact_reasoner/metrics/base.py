"""The metric base class and helpers shared by the metrics."""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from .answerable import non_answer
from .catalog import METRICS
from .context import MetricContext
from .results import ClaimDetail, MetricResult
from .sample import RagSample
from .support import ClaimSupport, Evidence


class Metric:
    """A metric with parameters (a dataclass) and ``score(sample, context) -> MetricResult``.

    ``context`` carries the stages and memos of the evaluation; without one a default
    :class:`MetricContext` is created (models built from the default configuration).
    """

    name: ClassVar[str] = "metric"
    #: whether a sample without a response cannot be scored by this metric (most judge the answer)
    needs_response: ClassVar[bool] = True
    #: whether the metric itself says what a non-answer is (answer classification: DON'T KNOW);
    #: every other metric that judges the answer gives a non-answer no score (:meth:`score`)
    reports_non_answers: ClassVar[bool] = False

    def needs(self) -> frozenset[str]:
        """The pipeline stages the metric uses: ``atoms`` (claims), ``nli``, ``llm``,
        ``embedder``; checked at start-up (:meth:`MetricContext.preflight`), together with the
        extras of the metric's own registry entry (``bert_score`` for BERTScore)."""
        return frozenset({"atoms", "nli"})

    def score(self, sample: RagSample | dict, context: MetricContext | None = None) -> MetricResult:
        """The metric's result for ``sample``; NaN with the reason ``not answerable: …`` when the
        metric judges the answer and the response answers nothing
        (:func:`~fact_reasoner.metrics.answerable.non_answer`): a non-answer is never scored."""
        sample = as_sample(sample)
        if self.needs_response and not self.reports_non_answers:
            unanswered = non_answer(sample.response, sample.question)
            if unanswered is not None:
                return MetricResult.nan(self.name, f"not answerable: {unanswered}", not_answerable=True)
        context = context or MetricContext()
        return self._score(sample, context)

    def _score(self, sample: RagSample, context: MetricContext) -> MetricResult:  # pragma: no cover
        raise NotImplementedError

    @property
    def key(self) -> str:
        """Name plus parameters: results are shared between metrics with the same key. A
        parameter declared with ``metadata={"omit_default": True}`` is left out at its default,
        so that a parameter added later keeps the key (and the outputs resumable) of the runs
        made before it existed."""
        if dataclasses.is_dataclass(self):
            params = ", ".join(
                f"{f.name}={getattr(self, f.name)!r}"
                for f in dataclasses.fields(self)
                if not (f.metadata.get("omit_default") and getattr(self, f.name) == f.default)
            )
            return f"{self.name}({params})"
        return self.name

    def params(self) -> dict[str, Any]:
        if not dataclasses.is_dataclass(self):
            return {}
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.key if isinstance(value, Metric) else value
        return out


def as_sample(sample: RagSample | dict) -> RagSample:
    """A :class:`RagSample` from a sample or a dict of its fields (their usual aliases accepted)."""
    if isinstance(sample, RagSample):
        return sample
    if isinstance(sample, dict):
        return RagSample.model_validate(sample)
    raise TypeError(f"a sample must be a RagSample or a dict, not {type(sample).__name__}")


def evidence_detail(
    support: ClaimSupport,
    premises: tuple[str, ...] | list[str],
    verdict: str,
    reason: str,
    deciding: Evidence | None,
    source: str,
) -> ClaimDetail:
    """A :class:`ClaimDetail` naming the deciding premise (if any) by text and position."""
    return ClaimDetail(
        claim=support.claim,
        verdict=verdict,
        probability=support.probability,
        context=premises[deciding.premise_index] if deciding is not None else None,
        context_index=deciding.premise_index if deciding is not None else None,
        reason=reason,
        source=source,
    )


def describe(evidence: Evidence | None) -> str:
    """``entailment p=0.93 from context 2``: one piece of evidence in words (empty for none)."""
    if evidence is None:
        return ""
    return f"{evidence.relation.value} p={evidence.probability:.2f} from context {evidence.premise_index}"


def make_metric(name: str, **params: Any) -> Metric:
    """A metric by its name (``faithfulness``, ``factual_correctness`` … or an alias); an
    unknown name raises :class:`~fact_reasoner.settings.registry.UnknownName`, listing the metrics."""
    key = name.strip().lower().replace("-", "_")
    if key not in METRICS:
        raise METRICS.unknown(name)
    metric: Metric = METRICS.make(key, **params)
    return metric


__all__ = ["Metric", "as_sample", "describe", "evidence_detail", "make_metric"]
