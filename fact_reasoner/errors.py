"""Errors shared across stages, and the one root every project error derives from.

Every exception the project raises on purpose is a :class:`FactReasonerError`, so a caller (the
command line among them) catches that one class instead of a list of unrelated ones. Each class
also keeps the built-in base it had before the root existed (``ValueError``, ``RuntimeError``),
so code that catches those still catches it. The tree (module in brackets where it is not this
one; ``exit`` is the command's exit status when the error ends it)::

    FactReasonerError                         exit 2 unless a subclass says otherwise
    ├── SetupError (RuntimeError)             a stage cannot be set up: a dataset run stops
    │   ├── StageUnavailable                  a stage's package or extra is missing
    │   ├── ModelUnavailable                  [llm.models] the local model cannot be found
    │   └── OutputLocked                      another run writes the same output
    ├── SettingsError (ValueError)            a setting that cannot work (unknown engine, bad option)
    │   ├── UnknownName                       [registry] no backend of that kind has that name
    │   │   └── UnknownService                [retrieval.base] no retriever of that name (a RetrievalError too)
    │   ├── PanelSpecError                    [settings.panel] an --nli value that is no judge or panel of judges
    │   ├── UnsafeSetting                     [server.settings] a setting a request may not change, or its bad value
    │   └── ConformalError                    a conformal filter that cannot be fitted, read or applied here
    │       └── CalibrationTooSmall           [conformal.maths] too few calibration answers for the α asked
    ├── RecordFailed (RuntimeError)           a stage could not run for one record (exit 1)
    │   └── NoEvidence                        no contexts and no retriever to find any: nothing scored
    ├── LocatedError                          about a place in a file: ``path:line: message``
    │   ├── InputError (ValueError)           an input file (records, contexts) cannot be read
    │   │   └── CorpusError                   [retrieval.corpus] a corpus file cannot be read
    │   └── OutputError (ValueError)          the output path or file cannot be used
    │       └── SettingsMismatch              the output holds results made with other settings
    ├── InferenceError (RuntimeError)         [inference.base] no marginals an engine stands behind
    │   └── MerlinError                       [merlin_bridge.errors] everything merlin raises
    │       ├── MerlinNotFoundError
    │       ├── MerlinExitError
    │       ├── MerlinTimeoutError
    │       ├── MerlinUnderflowError
    │       └── MerlinOutputError
    │           └── MerlinVariableMismatchError
    ├── LLMError (RuntimeError)               [llm.base] a model call failed for good
    ├── InvalidOutput (ValueError)            [llm.structured] a reply that fails the stage's check
    │   └── AskFewer                          a reply with the wrong number of items: ask about fewer
    ├── JudgeError (RuntimeError)             [metrics.llm_json] a metric's reply is not its JSON
    ├── RewriteFailed (RuntimeError)          [correction_rewrite] a rewrite the model could not give in usable form
    ├── RetrievalError (RuntimeError)         [retrieval.base] a retriever cannot answer
    ├── HTTPFailure                           [retrieval.http] an API request failed for good
    ├── WorkerError (RuntimeError)            [executors.base] a worker's error that did not pickle
    ├── WorkerLost (RuntimeError)             [executors.base] the workers holding an item kept dying
    ├── SampleNotScored (ValueError)          [integrations.scoring] a ragas/DeepEval sample with no score to give
    └── ApiError                              [server.service] a request answered with an HTTP error, not a row

A record that cannot be read is not an exception: :func:`fact_reasoner.io.read_records` yields a
:class:`~fact_reasoner.io.RecordError` for it and reading goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar


class FactReasonerError(Exception):
    """The root of every error the project raises on purpose.

    ``exit_code`` is the command's exit status when this error ends it (the CLI prints
    ``error: <message>`` and exits with it): 2 for a run that could not be done as asked.
    """

    exit_code: ClassVar[int] = 2


class SetupError(FactReasonerError, RuntimeError):
    """A stage cannot be set up at all (a model missing, an extra not installed).

    Unlike a failure on one record, this stops a dataset run: every other record would fail
    the same way.
    """


class SettingsError(FactReasonerError, ValueError):
    """A setting that cannot work: an unknown engine, an engine option it does not accept or
    whose value it rejects. Found when the stage is built, before any record."""


class ConformalError(SettingsError):
    """A conformal filter (``fact-reasoner conformal``, ``--conformal FILE``) that cannot be
    fitted, read or applied here: too few or unlabelled calibration answers, a file that is not
    one, or a run whose settings differ from those of the rows it was fitted on (its guarantee
    would not hold). Found before any record is assessed."""


class StageUnavailable(SetupError):
    """A record needs a stage (atomizer, retriever, NLI model) that cannot be set up (raised by
    :mod:`fact_reasoner.stages`)."""


class RecordFailed(FactReasonerError, RuntimeError):
    """A stage could not run for this record (its model calls failed, its retrieval could not be
    reached): the record gets no result — never a score computed without that stage — and is
    reported in the run's ``.errors.jsonl``; a rerun tries it again.

    ``unreachable`` marks a failure because a server could not be reached at all (connection
    refused, unknown host): if no record has succeeded yet, a dataset run stops there instead
    of waiting through every record's retries. Ending the command, it exits with 1 (a record
    failed), not 2.
    """

    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, *, unreachable: bool = False) -> None:
        super().__init__(message)
        self.unreachable = unreachable


class NoEvidence(RecordFailed):
    """A record with nothing to check its claims against: no contexts of its own and no retriever
    to find any (or one that found none). Nothing was checked, so nothing is scored — not a
    precision of 0 with every claim at its prior. ``stage`` is the stage that is missing
    (``retrieve``)."""

    stage = "retrieve"


class LocatedError(FactReasonerError):
    """An error about a place in a file: ``str()`` is ``path:line: message`` when the line is
    known, ``path: message`` when only the file is, else the message alone.

    ``path`` and ``line`` stay available as attributes. The location is part of the message
    itself, so the error still reads the same after a trip through pickle (a Ray worker's
    error comes back that way, rebuilt from its message alone).
    """

    def __init__(self, message: str, *, path: str | Path | None = None, line: int | None = None) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        if self.path is not None:
            message = f"{self.path}:{line}: {message}" if line is not None else f"{self.path}: {message}"
        super().__init__(message)


class InputError(LocatedError, ValueError):
    """An input file cannot be read: missing, a directory, empty, or (for a file read whole,
    such as ``--contexts``) a line that is not valid JSON or not a valid item. Also importable
    from :mod:`fact_reasoner.io`, which raises it."""


class OutputError(LocatedError, ValueError):
    """The output path cannot be used (a directory where a file is needed, or the reverse), or
    the output file was damaged other than by an interrupted last write. Also importable from
    :mod:`fact_reasoner.io`."""


class SettingsMismatch(OutputError):
    """The output file holds results made with other settings: resuming would mix two runs in
    one file (``--overwrite`` or another output is needed)."""


class OutputLocked(SetupError):
    """Another run is writing the same output file."""


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
