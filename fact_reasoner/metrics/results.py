"""What every metric returns: a score in [0, 1] (NaN + reason when not computable) with evidence."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field


class ClaimDetail(BaseModel):
    """The evidence behind one claim: its verdict, posterior and the context that decided it."""

    claim: str
    verdict: str
    probability: float | None = Field(default=None, description="posterior P(claim is true)")
    context: str | None = Field(default=None, description="text of the deciding context")
    context_index: int | None = Field(default=None, description="position of that context")
    reason: str = ""
    source: str | None = Field(default=None, description="whose claim: response or reference")


class MetricResult(BaseModel):
    """A metric's value for one sample.

    ``score`` lies in [0, 1], or is NaN with ``reason`` saying why it could not be computed
    (never a silent 0). Metric-specific fields (``verdict_counts``, ``precision`` …) are
    extra attributes, e.g. ``result.verdict_counts``.
    """

    model_config = ConfigDict(extra="allow")

    name: str
    score: float
    reason: str | None = None
    details: list[ClaimDetail] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def score_100(self) -> float:
        """The score on a 0–100 scale (NaN stays NaN)."""
        return self.score * 100.0

    @property
    def is_nan(self) -> bool:
        return math.isnan(self.score)

    @property
    def is_failure(self) -> bool:
        """NaN because something failed (a model call, a component), not by definition (no
        reference, no contexts): a composite built on it would be a score it did not compute."""
        return self.is_nan and (self.model_extra or {}).get("error") is True

    @classmethod
    def nan(cls, name: str, reason: str, **extra: Any) -> "MetricResult":
        """NaN by definition: the sample lacks what the metric needs (``reason`` says what)."""
        return cls(name=name, score=float("nan"), reason=reason, **extra)

    @classmethod
    def failure(cls, name: str, reason: str, **extra: Any) -> "MetricResult":
        """NaN because the metric could not be computed (``error=True``; see :attr:`is_failure`)."""
        return cls(name=name, score=float("nan"), reason=reason, error=True, **extra)


def clamp01(value: float) -> float:
    """Clamp into [0, 1]; NaN stays NaN."""
    if math.isnan(value):
        return value
    return min(1.0, max(0.0, value))


__all__ = ["ClaimDetail", "MetricResult", "clamp01"]
