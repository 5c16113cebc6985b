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

``mode`` (the specification's): ``GRANULAR`` (the default: per claim, as above) or
``HOLISTIC``: the response judged as a whole against the context — one verdict, one weight.
The whole response (with its question, for a bare short answer:
:func:`~fact_reasoner.metrics.atoms.short_answer_claim`) is the one claim of the same FR2 graph,
and the retrieved contexts, joined, its one premise (facts taken from different passages are
supported by them together), judged by the run's NLI judge; no atomizer runs. A judge that reads fewer tokens than the
response has (the shipped cross-encoder reads at most 64: half its 128-token window;
:func:`~fact_reasoner.nli.base.reads_whole`) reads it in consecutive pieces of whole sentences
(:func:`reading_pieces`), never cut short, and the response's verdict is their conjunction
(:func:`holistic_verdict`): CONTRADICTORY if a piece is, FULLY_SUPPORTED if every piece is,
PARTIALLY_SUPPORTED if every piece is supported, else NO_EVIDENCE; its probability the lowest
of theirs. The score is that verdict's weight (clamped to [0, 1]; ``weighted=False``: 1 if
supported, else 0). One supported claim and one without evidence: GRANULAR 0.5, HOLISTIC 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from ..nli.base import reads_whole
from ..settings.fields import Probability, checked
from ..text.sentences import claim_lines
from .atoms import short_answer_claim
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
#: how a holistic judgement puts the retrieved contexts together into the one premise it reads
CONTEXT_JOINER = "\n\n"
#: ``mode``: per claim (the default), or the response as a whole (one verdict, one weight)
GRANULAR, HOLISTIC = "GRANULAR", "HOLISTIC"
MODES = (GRANULAR, HOLISTIC)


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


def holistic_verdict(verdicts: Sequence[Verdict]) -> Verdict:
    """The verdict on a whole response read in pieces (:func:`reading_pieces`): their
    conjunction. UNJUDGED if a piece could not be judged, CONTRADICTORY if a piece is
    contradicted, FULLY_SUPPORTED if every piece is, PARTIALLY_SUPPORTED if every piece is
    supported, else NO_EVIDENCE.

    >>> holistic_verdict([Verdict.FULLY_SUPPORTED, Verdict.NO_EVIDENCE]).value
    'NO_EVIDENCE'
    """
    found = set(verdicts)
    for verdict in (Verdict.UNJUDGED, Verdict.CONTRADICTORY):
        if verdict in found:
            return verdict
    if found <= {Verdict.FULLY_SUPPORTED}:
        return Verdict.FULLY_SUPPORTED
    if found <= set(SUPPORTED_VERDICTS):
        return Verdict.PARTIALLY_SUPPORTED
    return Verdict.NO_EVIDENCE


def reading_pieces(text: str, nli: Any) -> list[str]:
    """``text`` as the judge ``nli`` reads it: whole when it reads it whole
    (:func:`~fact_reasoner.nli.base.reads_whole`), else consecutive pieces of whole sentences,
    each as long as the judge reads (a sentence longer than that: consecutive runs of its words),
    so that no part of it goes unread."""
    if reads_whole(nli, text):
        return [text]
    pieces: list[str] = []
    current = ""
    for sentence in claim_lines(text) or [text]:
        joined = f"{current} {sentence}".strip()
        if reads_whole(nli, joined):
            current = joined
            continue
        if current:
            pieces.append(current)
        current = ""
        for word in sentence.split():
            longer = f"{current} {word}".strip()
            if current and not reads_whole(nli, longer):
                pieces.append(current)
                longer = word
            current = longer
    if current:
        pieces.append(current)
    return pieces


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
    #: GRANULAR (per claim) or HOLISTIC (the response as a whole); left out of the key at its
    #: default, so results written before it existed are still resumed
    mode: str = field(default=GRANULAR, metadata={"omit_default": True})

    def __post_init__(self) -> None:
        # NaN (the default) means "no score"; any number given must be a score
        if not math.isnan(self.no_claims_score):
            self.no_claims_score = checked(Probability, self.no_claims_score, "no_claims_score")
        self.strong_entailment = checked(Probability, self.strong_entailment, "strong_entailment")
        mode = str(self.mode).upper()
        if mode not in MODES:
            raise ValueError(f"faithfulness mode {self.mode!r}: use {' or '.join(MODES)}")
        self.mode = mode

    def needs(self) -> frozenset[str]:
        """The NLI judge; claims too, unless the response is judged as a whole."""
        return frozenset({"nli"}) if self.mode == HOLISTIC else super().needs()

    def _score(self, sample: RagSample, context: MetricContext) -> MetricResult:
        missing = sample.require("response")
        if missing:
            return MetricResult.nan(self.name, missing)
        if not sample.retrieved_contexts:
            return MetricResult.nan(self.name, "no retrieved contexts to be faithful to")
        if self.mode == HOLISTIC:
            return self._holistic(sample, context)
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

    def _holistic(self, sample: RagSample, context: MetricContext) -> MetricResult:
        """The response as a whole: one verdict (the conjunction of the pieces the judge reads),
        one weight (module docstring)."""
        response = (sample.response or "").strip()
        whole = short_answer_claim(response, sample.question) or response
        pieces = reading_pieces(whole, context.nli)
        # the context as a whole: a response whose facts come from different passages is
        # supported by them together, not by any one of them
        support = context.support(pieces, [CONTEXT_JOINER.join(sample.retrieved_contexts or [])])
        judged = [classify_claim(claim, self.strong_entailment) for claim in support.claims]
        details = [
            evidence_detail(claim, support.premises, verdict.value, reason, deciding, "response")
            for claim, (verdict, reason, deciding) in zip(support.claims, judged)
        ]
        verdict = holistic_verdict([v.verdict for v in judged])
        extra: dict[str, Any] = dict(
            mode=HOLISTIC,
            verdict=verdict.value,
            probability=min(claim.probability for claim in support.claims),
            pieces=len(pieces),
            verdict_counts={verdict.value: 1},
            total_claims=1,
            judged_claims=int(verdict != Verdict.UNJUDGED),
            form="weighted" if self.weighted else "binary",
            inference=support.algorithm,
        )
        read = "whole" if len(pieces) == 1 else f"in {len(pieces)} pieces, longer than the judge reads at once"
        if verdict == Verdict.UNJUDGED:
            return MetricResult.failure(
                self.name, "the response could not be judged (an NLI call failed)", details=details, **extra
            )
        if self.weighted:
            score = clamp01(resolve_verdict_scores(self.strict_mode, self.verdict_scores)[verdict])
        else:
            score = float(verdict in SUPPORTED_VERDICTS)
        reason = f"holistic: the response as a whole is {verdict.value} (read {read})"
        return MetricResult(name=self.name, score=score, reason=reason, details=details, **extra)

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
    "GRANULAR",
    "HOLISTIC",
    "MODES",
    "ClaimVerdict",
    "DEFAULT_VERDICT_SCORES",
    "Faithfulness",
    "Verdict",
    "classify_claim",
    "holistic_verdict",
    "reading_pieces",
    "resolve_verdict_scores",
]
