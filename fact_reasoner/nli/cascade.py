"""The ``cascade`` NLI backend: a fast judge decides the pairs it is sure of, a second judge the rest.

With the fast judge's probabilities ``e = P(entailment)`` and ``c = P(contradiction)`` for a
pair and an uncertainty band ``(low, high)``, the pair is *uncertain* iff

    low < e < high   or   low < c < high,

i.e. the fast judge neither clearly asserts nor clearly rules out either label that makes a
factor in the graph. Uncertain pairs (and pairs the fast judge could not judge) are sent to the
second judge in one call, and its verdict replaces the fast one; every other pair keeps the fast
verdict. A pair the second judge fails on stays failed — it is never given the fast judge's
uncertain verdict in silence.

The band trades speed for accuracy: ``(0.5, 0.5)`` is the fast judge alone, ``(0, 1)`` the second
judge alone. ``stats()`` counts the pairs each judge decided, so a run reports how many pairs
paid for the slow judge.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .base import NLIBackend, NLIJudgement, backend_identity

__all__ = ["CascadeNLI", "is_uncertain"]


def is_uncertain(judgement: NLIJudgement, band: tuple[float, float]) -> bool:
    """``low < P(entailment) < high or low < P(contradiction) < high`` (a failed fast verdict
    is uncertain too)."""
    if judgement.failed:
        return True
    low, high = band
    return any(low < judgement.probabilities.get(label, 0.0) < high for label in ("entailment", "contradiction"))


class CascadeNLI:
    """``fast`` judges every pair; pairs inside ``band`` go to ``second`` (see the module docstring)."""

    name = "cascade"

    def __init__(self, fast: NLIBackend, second: NLIBackend, band: tuple[float, float] = (0.2, 0.8)) -> None:
        low, high = band
        if not 0.0 <= low <= high <= 1.0:
            raise ValueError(f"the cascade band must satisfy 0 ≤ low ≤ high ≤ 1, not {band}")
        self.fast = fast
        self.second = second
        self.band = (float(low), float(high))
        self.decided_by_fast = 0
        self.sent_to_second = 0

    @property
    def identity(self) -> str:
        low, high = self.band
        return f"cascade:[{backend_identity(self.fast)}]:[{backend_identity(self.second)}]:band={low:g},{high:g}"

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        """Judge (premise, hypothesis) pairs; output order = input order."""
        results = list(self.fast.judge(pairs))
        uncertain = [i for i, judgement in enumerate(results) if is_uncertain(judgement, self.band)]
        if uncertain:
            for i, judgement in zip(uncertain, self.second.judge([pairs[i] for i in uncertain])):
                results[i] = judgement
        self.sent_to_second += len(uncertain)
        self.decided_by_fast += len(results) - len(uncertain)
        return results

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = {"decided_by_fast": self.decided_by_fast, "sent_to_second": self.sent_to_second}
        for role, backend in (("fast", self.fast), ("second", self.second)):
            inner = getattr(backend, "stats", None)
            if callable(inner):
                stats |= {f"{role}_{key}": value for key, value in inner().items()}
        return stats
