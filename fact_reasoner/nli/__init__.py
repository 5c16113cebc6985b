"""NLI backends behind one protocol (:class:`NLIBackend`)."""

from .base import LABELS, NLIBackend, NLIJudgement
from .precomputed import PrecomputedNLI

__all__ = ["LABELS", "NLIBackend", "NLIJudgement", "PrecomputedNLI"]
