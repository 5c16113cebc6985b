"""Context recall and context precision on the same FR2 graphs.

- **Context recall** = reference claims supported (P > 0.5) by the retrieved contexts /
  reference claims. NaN without a reference or when it has no claims; 0 when nothing was
  retrieved.
- **Context precision**: context k is relevant when its NLI judgement entails at least one
  reference claim with probability ≥ ``relevance_threshold`` (the same judgements context
  recall uses). Without a reference it is not computed (NaN, the reason said): relevance is
  defined through the reference's claims, and the response's claims standing in (ragas'
  "without reference" variant) would rate the contexts by what the answer happened to say,
  under the same name. With rel_k ∈ {0, 1} over the K contexts in rank order:

  mean relevance = Σ rel_k / K  (the seed formula)
  average precision = Σ_k rel_k · (Σ_{j≤k} rel_j / k) / Σ_k rel_k, exactly (no ε); 0 when
  nothing is relevant.

  ``mode`` picks which one is ``score``; both are in the result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..schema import RelationType
from .base import Metric, describe, evidence_detail
from .context import MetricContext
from .results import ClaimDetail, MetricResult
from .sample import RagSample


def mean_relevance(relevant: list[bool]) -> float:
    """Σ rel_k / K (NaN for no contexts)."""
    return sum(relevant) / len(relevant) if relevant else float("nan")


def average_precision(relevant: list[bool]) -> float:
    """Σ_k rel_k · precision@k / (number relevant); 0 when none is relevant; NaN for no contexts."""
    if not relevant:
        return float("nan")
    hits, total = 0, 0.0
    for k, rel in enumerate(relevant, start=1):
        if rel:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


@dataclass
class ContextRecall(Metric):
    """Share of the reference's claims that the retrieved contexts support."""

    name = "context_recall"
    needs_response = False

    def _score(self, sample: RagSample, context: MetricContext) -> MetricResult:
        missing = sample.require("reference")
        if missing:
            return MetricResult.nan(self.name, missing)
        claims = context.claims(sample.reference, sample.question)
        if not claims:
            return MetricResult.nan(self.name, "the reference has no claims")
        if not sample.retrieved_contexts:
            return MetricResult(
                name=self.name,
                score=0.0,
                reason="no contexts were retrieved",
                total_claims=len(claims),
                attributed_claims=0,
            )
        support = context.support(claims, sample.retrieved_contexts)
        details = []
        for claim in support.claims:
            if claim.supported:
                verdict, deciding = "ATTRIBUTED", claim.best_entailment
            else:
                verdict, deciding = "NOT_ATTRIBUTED", claim.best_contradiction
            reason = f"P={claim.probability:.3f}; {describe(deciding) or 'no entailing context'}"
            details.append(evidence_detail(claim, support.premises, verdict, reason, deciding, "reference"))
        attributed = support.num_supported
        return MetricResult(
            name=self.name,
            score=attributed / len(claims),
            details=details,
            total_claims=len(claims),
            attributed_claims=attributed,
        )


@dataclass
class ContextPrecision(Metric):
    """Relevance of the retrieved contexts in rank order: average precision or mean relevance."""

    name = "context_precision"
    needs_response = False
    mode: Literal["average_precision", "mean"] = "average_precision"
    relevance_threshold: float = 0.5

    def _score(self, sample: RagSample, context: MetricContext) -> MetricResult:
        if not sample.retrieved_contexts:
            return MetricResult.nan(self.name, "no retrieved contexts")
        missing = sample.require("reference")
        if missing:
            return MetricResult.nan(self.name, f"{missing}: a context's relevance is judged by the reference's claims")
        claims, basis = context.claims(sample.reference, sample.question), "reference"
        if not claims:
            return MetricResult.nan(self.name, f"the {basis} has no claims")
        contexts = sample.retrieved_contexts
        support = context.support(claims, contexts)
        relevant: list[bool] = []
        details: list[ClaimDetail] = []
        for k, text in enumerate(contexts):
            best_claim, best_p = None, 0.0
            for i in range(len(claims)):
                judgement = support.judgements.get((i, k))
                if (
                    judgement is not None
                    and judgement.label == RelationType.ENTAILMENT
                    and judgement.probability > best_p
                ):
                    best_claim, best_p = i, judgement.probability
            is_relevant = best_claim is not None and best_p >= self.relevance_threshold
            relevant.append(is_relevant)
            details.append(
                ClaimDetail(
                    claim=claims[best_claim] if best_claim is not None else "",
                    verdict="RELEVANT" if is_relevant else "NOT_RELEVANT",
                    probability=best_p,
                    context=text,
                    context_index=k,
                    reason=(
                        f"entails the {basis} claim with p={best_p:.2f}"
                        if best_claim is not None
                        else f"entails no {basis} claim"
                    ),
                    source=basis,
                )
            )
        ap, mean = average_precision(relevant), mean_relevance(relevant)
        return MetricResult(
            name=self.name,
            score=ap if self.mode == "average_precision" else mean,
            details=details,
            average_precision=ap,
            mean_relevance=mean,
            relevance=[int(r) for r in relevant],
            mode=self.mode,
            basis=basis,
        )


__all__ = ["ContextPrecision", "ContextRecall", "average_precision", "mean_relevance"]
