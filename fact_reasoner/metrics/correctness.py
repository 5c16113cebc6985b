"""Factual correctness (response vs reference) and the GEval-style factual accuracy grade.

Both run the FR2 support machinery twice:

- precision side: the response's claims against the reference (one premise);
- recall side: the reference's claims against the response (one premise).

precision = supported response claims / response claims; recall = supported reference claims
/ reference claims (computed from the reference side — ragas 0.4 computes it from the
precision direction, which is wrong); F-beta = (1 + β²)·P·R / (β²·P + R), 0 when P = R = 0.
A claim is supported when its posterior P > 0.5 (:func:`fact_reasoner.scores.is_supported`:
P − 0.5 > 1e-9, a uniform 0.5 is not supported).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from ..settings.fields import Weight, checked
from .base import Metric, describe, evidence_detail
from .context import MetricContext
from .results import ClaimDetail, MetricResult, clamp01
from .sample import RagSample
from .support import ClaimSupport, Evidence, SupportResult


def f_beta(precision: float, recall: float, beta: float = 1.0) -> float:
    """(1 + β²)·P·R / (β²·P + R); 0 when both are 0; NaN if either is NaN."""
    if math.isnan(precision) or math.isnan(recall):
        return float("nan")
    denominator = beta * beta * precision + recall
    return (1 + beta * beta) * precision * recall / denominator if denominator > 0 else 0.0


def _claim_verdict(claim: ClaimSupport) -> tuple[str, str, Evidence | None]:
    if claim.supported:
        return "SUPPORTED", f"P={claim.probability:.3f}; {describe(claim.best_entailment)}", claim.best_entailment
    if claim.best_contradiction is not None:
        return (
            "CONTRADICTED",
            f"P={claim.probability:.3f}; {describe(claim.best_contradiction)}",
            claim.best_contradiction,
        )
    return "NOT_SUPPORTED", f"P={claim.probability:.3f}; no entailing evidence", None


def side_details(support: SupportResult, source: str) -> list[ClaimDetail]:
    out = []
    for claim in support.claims:
        verdict, reason, deciding = _claim_verdict(claim)
        out.append(evidence_detail(claim, support.premises, verdict, reason, deciding, source))
    return out


@dataclass
class CorrectnessSides:
    """Both directions of response ↔ reference support, with their ratios."""

    response_claims: list[str]
    reference_claims: list[str]
    precision_side: SupportResult | None
    recall_side: SupportResult | None

    @property
    def precision(self) -> float:
        s = self.precision_side
        return s.num_supported / len(s.claims) if s and s.claims else float("nan")

    @property
    def recall(self) -> float:
        s = self.recall_side
        return s.num_supported / len(s.claims) if s and s.claims else float("nan")

    @property
    def contradicted_share(self) -> float:
        """Share of response claims that the reference contradicts (P ≤ 0.5 with contradiction)."""
        s = self.precision_side
        if not s or not s.claims:
            return float("nan")
        return sum((not c.supported) and bool(c.contradicting) for c in s.claims) / len(s.claims)

    def details(self) -> list[ClaimDetail]:
        out: list[ClaimDetail] = []
        if self.precision_side:
            out += side_details(self.precision_side, "response")
        if self.recall_side:
            out += side_details(self.recall_side, "reference")
        return out


def correctness_sides(
    sample: RagSample, context: MetricContext, need_precision=True, need_recall=True
) -> CorrectnessSides:
    """Atomize response and reference (shared atoms) and judge each against the other."""
    response_claims = context.claims(sample.response, sample.question)
    reference_claims = context.claims(sample.reference, sample.question)
    precision_side = (
        context.support(response_claims, [sample.reference or ""]) if need_precision and response_claims else None
    )
    recall_side = (
        context.support(reference_claims, [sample.response or ""]) if need_recall and reference_claims else None
    )
    return CorrectnessSides(response_claims, reference_claims, precision_side, recall_side)


Mode = Literal["F1", "PRECISION", "RECALL"]


@dataclass
class FactualCorrectness(Metric):
    """Precision, recall or F-beta of the response's claims against the reference's."""

    name = "factual_correctness"
    mode: Mode = "F1"
    beta: float = 1.0

    def __post_init__(self) -> None:
        self.mode = self.mode.upper()  # type: ignore[assignment]
        if self.mode not in ("F1", "PRECISION", "RECALL"):
            raise ValueError(f"mode must be F1, PRECISION or RECALL, not {self.mode!r}")
        self.beta = checked(Weight, self.beta, "beta")

    def _score(self, sample: RagSample, context: MetricContext) -> MetricResult:
        missing = sample.require("response", "reference")
        if missing:
            return MetricResult.nan(self.name, missing)
        sides = correctness_sides(
            sample, context, need_precision=self.mode != "RECALL", need_recall=self.mode != "PRECISION"
        )
        p, r = sides.precision, sides.recall
        value = {"PRECISION": p, "RECALL": r}.get(self.mode, f_beta(p, r, self.beta))
        reasons = []
        if self.mode != "RECALL" and not sides.response_claims:
            reasons.append("the response has no claims")
        if self.mode != "PRECISION" and not sides.reference_claims:
            reasons.append("the reference has no claims")
        return MetricResult(
            name=self.name,
            score=value,
            reason="; ".join(reasons) if math.isnan(value) else None,
            details=sides.details(),
            precision=p,
            recall=r,
            mode=self.mode,
            beta=self.beta,
        )


GRADE_CUTOFFS = ((80.0, "A"), (60.0, "B"), (40.0, "C"), (20.0, "D"))


def letter_grade(score_100: float) -> str | None:
    """A ≥ 80, B ≥ 60, C ≥ 40, D ≥ 20, else E; ``None`` for NaN."""
    if math.isnan(score_100):
        return None
    for cutoff, grade in GRADE_CUTOFFS:
        if score_100 >= cutoff:
            return grade
    return "E"


GEVAL_WEIGHTS = {"correctness": 0.5, "completeness": 0.3, "consistency": 0.2}

_GEVAL_SCHEMA = {
    "type": "object",
    "properties": {k: {"type": "integer", "minimum": 0, "maximum": 10} for k in GEVAL_WEIGHTS}
    | {"reason": {"type": "string"}},
    "required": [*GEVAL_WEIGHTS, "reason"],
}
_GEVAL_PROMPT = """Compare the RESPONSE with the REFERENCE answer to the QUESTION. Rate from 0 to 10:
- correctness: are the facts the response states true according to the reference?
- completeness: does the response cover the facts of the reference?
- consistency: is the response free of statements that contradict the reference or each other?
Reply as JSON: {{"correctness": int, "completeness": int, "consistency": int, "reason": "one sentence"}}.

QUESTION: {question}
REFERENCE: {reference}
RESPONSE: {response}"""


@dataclass
class FactualAccuracy(Metric):
    """GEval-style accuracy: 50 % correctness + 30 % completeness + 20 % consistency, graded A–E.

    ``judge="atoms"`` (default) reads the three criteria off the same FR2 graphs as factual
    correctness: correctness = precision, completeness = recall, consistency = 1 − share of
    response claims contradicted by the reference. ``judge="llm"`` asks the LLM for 0–10
    ratings of each (a direct rubric).
    """

    name = "factual_accuracy"
    judge: Literal["atoms", "llm"] = "atoms"
    weights: dict = field(default_factory=lambda: dict(GEVAL_WEIGHTS))

    def needs(self) -> frozenset[str]:
        return frozenset({"atoms", "nli"} if self.judge == "atoms" else {"llm"})

    def _score(self, sample: RagSample, context: MetricContext) -> MetricResult:
        missing = sample.require("response", "reference")
        if missing:
            return MetricResult.nan(self.name, missing)
        details: list[ClaimDetail] = []
        reason = None
        if self.judge == "atoms":
            sides = correctness_sides(sample, context)
            criteria = {
                "correctness": sides.precision,
                "completeness": sides.recall,
                "consistency": 1.0 - sides.contradicted_share,
            }
            details = sides.details()
        elif self.judge == "llm":
            from .llm_json import ask_json

            answer = ask_json(
                context.llm(),
                _GEVAL_PROMPT.format(
                    question=sample.question or "", reference=sample.reference, response=sample.response
                ),
                _GEVAL_SCHEMA,
                "metrics-geval/v1",
                max_tokens=200,
            )
            criteria = {k: clamp01(float(answer[k]) / 10.0) for k in GEVAL_WEIGHTS}
            reason = str(answer.get("reason", "")) or None
        else:
            raise ValueError(f"judge must be 'atoms' or 'llm', not {self.judge!r}")
        usable = {k: v for k, v in criteria.items() if not math.isnan(v)}
        if not usable:
            return MetricResult.nan(
                self.name, "no criterion could be computed (no claims)", details=details, **criteria
            )
        total_weight = sum(self.weights[k] for k in usable)
        score = sum(self.weights[k] * v for k, v in usable.items()) / total_weight
        if len(usable) < len(criteria):
            reason = f"criteria without claims skipped: {sorted(set(criteria) - set(usable))}"
        return MetricResult(
            name=self.name,
            score=score,
            reason=reason,
            details=details,
            grade=letter_grade(score * 100.0),
            judge=self.judge,
            **criteria,
        )


__all__ = ["FactualAccuracy", "FactualCorrectness", "GEVAL_WEIGHTS", "correctness_sides", "f_beta", "letter_grade"]
