"""Faithfulness: are the response's claims supported by the retrieved contexts?

The response's atoms and the retrieved chunks form an FR2 graph (claims × chunks, NLI
premise = chunk); each claim's verdict comes from its posterior P and its evidence:

==================== ======================================================================
verdict              rule (checked in this order)
==================== ======================================================================
NO_EVIDENCE          no entailing or contradicting factor touches the claim
FULLY_SUPPORTED      P > 0.5, strongest entailment p ≥ ``strong_entailment`` (0.75), and no
                     contradicting evidence
PARTIALLY_SUPPORTED  P > 0.5 otherwise (weaker entailment, or entailment that outweighs a
                     contradiction)
CONTRADICTORY        P ≤ 0.5 and some context contradicts the claim (contradiction dominates)
NO_EVIDENCE          P ≤ 0.5 with only weak entailment (it does not lift P above 0.5)
==================== ======================================================================

"P > 0.5" is the factuality scores' rule, :func:`fact_reasoner.scores.is_supported`: a P within
1e-9 of 0.5 (an atom the graph says nothing about) is not above it.

A claim whose every NLI judgement failed is UNJUDGED: counted in ``total_claims``, left out of
``judged_claims`` and of the score.

Scores over judged claims:

- binary (``weighted=False``, ragas): supported (FULLY or PARTIALLY) / judged claims;
- weighted (default, axion): mean of FULLY 1.0, PARTIALLY 0.5, NO_EVIDENCE 0.0 (−1.0 when
  ``strict_mode``), CONTRADICTORY −1.0, clamped to [0, 1]. ``verdict_scores`` overrides any of
  these weights and wins over ``strict_mode``.

No claims → ``no_claims_score`` (NaN by default, as ragas; 1.0 as axion). No retrieved
contexts → NaN (nothing to be faithful to).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from ..settings.fields import Probability, checked
from .base import Metric, describe, evidence_detail
from .context import MetricContext
from .results import MetricResult, clamp01
from .sample import RagSample
from .support import ClaimSupport, Evidence


class Verdict(str, Enum):
    FULLY_SUPPORTED = "FULLY_SUPPORTED"
    PARTIALLY_SUPPORTED = "PARTIALLY_SUPPORTED"
    NO_EVIDENCE = "NO_EVIDENCE"
    CONTRADICTORY = "CONTRADICTORY"
    UNJUDGED = "UNJUDGED"


DEFAULT_VERDICT_SCORES: dict[Verdict, float] = {
    Verdict.FULLY_SUPPORTED: 1.0,
    Verdict.PARTIALLY_SUPPORTED: 0.5,
    Verdict.NO_EVIDENCE: 0.0,
    Verdict.CONTRADICTORY: -1.0,
}
STRICT_NO_EVIDENCE = -1.0
SUPPORTED_VERDICTS = (Verdict.FULLY_SUPPORTED, Verdict.PARTIALLY_SUPPORTED)


class ClaimVerdict(NamedTuple):
    """A claim's faithfulness verdict, why, and the evidence that decided it (if any)."""

    verdict: Verdict
    reason: str
    deciding: Evidence | None


def classify_claim(support: ClaimSupport, strong_entailment: float = 0.75) -> ClaimVerdict:
    """The verdict on one claim (rules in the module docstring), a reason and the deciding evidence."""
    p = support.probability
    entail, contra = support.best_entailment, support.best_contradiction
    if not support.judged:
        reasons = "; ".join(support.failure_reasons) or "no judgement"
        return ClaimVerdict(Verdict.UNJUDGED, f"every NLI judgement failed ({reasons})", None)
    if entail is None and contra is None:
        return ClaimVerdict(Verdict.NO_EVIDENCE, f"no context entails or contradicts it (P={p:.3f})", None)
    if support.supported:
        if entail is not None and entail.probability >= strong_entailment and contra is None:
            return ClaimVerdict(Verdict.FULLY_SUPPORTED, f"P={p:.3f}; {describe(entail)}", entail)
        why = (
            f"entailment outweighs a contradiction ({describe(contra)})"
            if contra is not None
            else f"entailment weaker than {strong_entailment}"
        )
        return ClaimVerdict(Verdict.PARTIALLY_SUPPORTED, f"P={p:.3f}; {describe(entail)}; {why}", entail)
    if contra is not None:
        return ClaimVerdict(Verdict.CONTRADICTORY, f"P={p:.3f}; {describe(contra)}", contra)
    return ClaimVerdict(
        Verdict.NO_EVIDENCE, f"P={p:.3f}; entailment too weak to support it ({describe(entail)})", entail
    )


def resolve_verdict_scores(strict_mode: bool, overrides: dict | None) -> dict[Verdict, float]:
    """Default weights, then strict mode, then ``overrides`` (which win)."""
    scores = dict(DEFAULT_VERDICT_SCORES)
    if strict_mode:
        scores[Verdict.NO_EVIDENCE] = STRICT_NO_EVIDENCE
    for key, value in (overrides or {}).items():
        scores[Verdict(key.upper() if isinstance(key, str) else key)] = float(value)
    return scores


@dataclass
class Faithfulness(Metric):
    """Share of the response's claims supported by the retrieved contexts (see module docs)."""

    name = "faithfulness"
    weighted: bool = True
    strict_mode: bool = False
    verdict_scores: dict | None = None
    no_claims_score: float = float("nan")
    strong_entailment: float = 0.75

    def __post_init__(self) -> None:
        # NaN (the default) means "no score"; any number given must be a score
        if not math.isnan(self.no_claims_score):
            self.no_claims_score = checked(Probability, self.no_claims_score, "no_claims_score")
        self.strong_entailment = checked(Probability, self.strong_entailment, "strong_entailment")

    def _score(self, sample: RagSample, context: MetricContext) -> MetricResult:
        missing = sample.require("response")
        if missing:
            return MetricResult.nan(self.name, missing)
        if not sample.retrieved_contexts:
            return MetricResult.nan(self.name, "no retrieved contexts to be faithful to")
        claims = context.claims(sample.response, sample.question)
        if not claims:
            score = self.no_claims_score
            return MetricResult(
                name=self.name,
                score=score,
                reason="the response has no claims",
                verdict_counts={},
                total_claims=0,
                judged_claims=0,
            )
        support = context.support(claims, sample.retrieved_contexts)
        return self.from_support(support)

    def from_support(self, support) -> MetricResult:
        """Score an already judged :class:`~.support.SupportResult` (claims vs contexts)."""
        weights = resolve_verdict_scores(self.strict_mode, self.verdict_scores)
        details, verdicts = [], []
        for claim in support.claims:
            verdict, reason, deciding = classify_claim(claim, self.strong_entailment)
            verdicts.append(verdict)
            details.append(evidence_detail(claim, support.premises, verdict.value, reason, deciding, "response"))
        judged = [v for v in verdicts if v != Verdict.UNJUDGED]
        counts = Counter(v.value for v in verdicts)
        extra = dict(
            verdict_counts=dict(counts),
            total_claims=len(verdicts),
            judged_claims=len(judged),
            form="weighted" if self.weighted else "binary",
            inference=support.algorithm,
        )
        if not judged:
            return MetricResult.failure(
                self.name, "no claim could be judged (every NLI call failed)", details=details, **extra
            )
        if self.weighted:
            score = clamp01(sum(weights[v] for v in judged) / len(judged))
        else:
            score = sum(v in SUPPORTED_VERDICTS for v in judged) / len(judged)
        summary = None if len(judged) == len(verdicts) else f"{len(verdicts) - len(judged)} claim(s) unjudged"
        return MetricResult(name=self.name, score=score, reason=summary, details=details, **extra)


__all__ = [
    "ClaimVerdict",
    "DEFAULT_VERDICT_SCORES",
    "Faithfulness",
    "Verdict",
    "classify_claim",
    "resolve_verdict_scores",
]
