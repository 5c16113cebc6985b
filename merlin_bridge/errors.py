"""Errors of the merlin bridge.

Every error is an :class:`~fact_reasoner.inference.InferenceError`, so a pipeline that catches
engine failures per record reports it and goes on with the next record. None of them ever
carries marginals: a failed run never returns numbers.
"""

from __future__ import annotations

from fact_reasoner.inference import InferenceError


class MerlinError(InferenceError):
    """Base class of everything the merlin bridge raises."""


class MerlinNotFoundError(MerlinError):
    """No merlin binary at the given path / ``MERLIN_PATH``, or it is not executable."""


class MerlinExitError(MerlinError):
    """merlin exited with a non-zero status (the message carries its stderr tail)."""

    def __init__(self, message: str, returncode: int, stderr_tail: str) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr_tail = stderr_tail


class MerlinTimeoutError(MerlinError):
    """merlin ran longer than the engine's timeout and was killed."""


class MerlinUnderflowError(MerlinError):
    """merlin reported ``status: false``: Z (the probability of evidence) was 0 in double
    precision, either inconsistent evidence or underflow. Its marginals are meaningless."""


class MerlinOutputError(MerlinError):
    """merlin's output file is missing, truncated or malformed."""


class MerlinVariableMismatchError(MerlinOutputError):
    """merlin's output lists a different number (or set) of variables than the model has."""
