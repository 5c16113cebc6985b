"""Errors shared across stages.

- :class:`SetupError`: a stage cannot be set up at all; a dataset run stops.
- :class:`RecordFailed`: a stage could not run for one record; that record fails.
- :class:`OutputLocked`: another run writes the same output.
"""


class SetupError(RuntimeError):
    """A stage cannot be set up at all (a model missing, an extra not installed).

    Unlike a failure on one record, this stops a dataset run: every other record would fail
    the same way.
    """


class RecordFailed(RuntimeError):
    """A stage could not run for this record (its model calls failed, its retrieval could not be
    reached): the record gets no result — never a score computed without that stage — and is
    reported in the run's ``.errors.jsonl``; a rerun tries it again.

    ``unreachable`` marks a failure because a server could not be reached at all (connection
    refused, unknown host): if no record has succeeded yet, a dataset run stops there instead
    of waiting through every record's retries.
    """

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


def connect_reason(error: BaseException) -> str:
    """``connection refused`` / ``unknown host`` …: the short reason behind a connect error
    (shared by every HTTP client of the project, so their one-line messages agree)."""
    text = str(error).lower()
    for needle, reason in (
        ("refused", "connection refused"),
        ("name or service not known", "unknown host"),
        ("nodename nor servname", "unknown host"),
        ("temporary failure in name resolution", "unknown host"),
        ("no route", "no route to host"),
        ("unreachable", "network unreachable"),
    ):
        if needle in text:
            return reason
    return str(error) or type(error).__name__


class OutputLocked(SetupError):
    """Another run is writing the same output file."""
