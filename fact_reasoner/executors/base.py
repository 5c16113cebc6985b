"""What every executor shares: the job a worker runs, one item's outcome, per-worker counters.

A dataset run is a list of work items (records, RAG samples) and a :class:`Job`: how a worker
builds its state — its stages, from the :class:`~fact_reasoner.settings.config.PipelineConfig` — and
what it does with one item. The job is a small picklable object (the config and plain
parameters), so a worker on another machine rebuilds its stages itself and never receives a
loaded model. An :class:`Executor` runs the job over the items and yields one :class:`Outcome`
per item as it completes: the item's result, or the exception that failed it.

The command that drives the run keeps everything else: resume, writing, the rules for failed
records, the progress bar and signal handling.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import FactReasonerError

if TYPE_CHECKING:  # pragma: no cover
    from ..settings.config import PipelineConfig

__all__ = [
    "Executor",
    "Job",
    "Outcome",
    "Worker",
    "WorkerError",
    "WorkerLost",
    "WorkerStats",
    "describe_error",
]

ItemT = TypeVar("ItemT")
ResultT = TypeVar("ResultT")


class Job(ABC, Generic[ItemT, ResultT]):
    """The work of a run, as each worker does it; picklable (a config and plain parameters).

    Subclasses hold ``config``: the settings every worker builds its stages from.
    """

    config: "PipelineConfig"

    @abstractmethod
    def setup(self, config: "PipelineConfig") -> Any:
        """The worker's state (e.g. a :class:`~fact_reasoner.reasoner.FactReasoner`), built once per
        worker from ``config``: the job's config, with the worker's CPU threads filled in."""

    @abstractmethod
    def run(self, state: Any, item: ItemT) -> ResultT:
        """One item's result. An exception fails this item only; the driver decides what it means
        (a :class:`~fact_reasoner.errors.SetupError` stops a dataset run)."""


@dataclass(frozen=True)
class Outcome(Generic[ResultT]):
    """One item done: ``index`` is its position in the list given to :meth:`Executor.map`;
    either ``value`` or ``error`` is set; ``seconds`` is the worker's time on it."""

    index: int
    value: ResultT | None = None
    error: BaseException | None = None
    worker: str = "local"
    seconds: float = 0.0


class WorkerError(FactReasonerError, RuntimeError):
    """An exception raised on a worker that could not travel back as itself (it does not pickle);
    keeps the original type's name for the message."""

    def __init__(self, type_name: str, message: str) -> None:
        super().__init__(message)
        self.type_name = type_name


class WorkerLost(FactReasonerError, RuntimeError):
    """The worker processes that held this item kept dying (the item was retried and gave up);
    the item fails like a record whose stage could not run, and a rerun tries it again."""


def describe_error(error: BaseException) -> str:
    """``TypeName: message``, naming the original type of an error raised on a worker."""
    name = error.type_name if isinstance(error, WorkerError) else type(error).__name__
    return f"{name}: {error}"


class Worker:
    """A worker's side of a job: its state, built on first use, and the items it runs.

    ``state`` given: use it instead of building one (the local executor reuses the stages the
    command built already).
    """

    def __init__(self, job: Job, name: str, config: "PipelineConfig | None" = None, state: Any = None) -> None:
        self.job = job
        self.name = name
        self.config = config if config is not None else job.config
        self._state = state
        self._ready = state is not None

    def run(self, index: int, item: Any) -> Outcome:
        """One item; an ``Exception`` (also one while building the state) becomes its outcome's
        error. ``KeyboardInterrupt`` is not caught: it stops the run."""
        start = time.perf_counter()
        try:
            if not self._ready:
                self._state = self.job.setup(self.config)
                self._ready = True
            value = self.job.run(self._state, item)
        except Exception as error:
            return Outcome(index, error=error, worker=self.name, seconds=time.perf_counter() - start)
        return Outcome(index, value=value, worker=self.name, seconds=time.perf_counter() - start)

    def run_batch(self, batch: Sequence[tuple[int, Any]]) -> list[Outcome]:
        """Every ``(index, item)`` of a batch, in order."""
        return [self.run(index, item) for index, item in batch]


@dataclass
class WorkerStats:
    """What one worker did in a run: items done and failed, and its seconds of work on them."""

    records: int = 0
    failed: int = 0
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    def add(self, outcome: Outcome) -> None:
        self.records += 1
        self.failed += outcome.error is not None
        self.seconds += outcome.seconds

    def as_dict(self) -> dict[str, Any]:
        """JSON for the run summary; ``records_per_second`` is items over the worker's busy seconds."""
        rate = self.records / self.seconds if self.seconds > 0 else None
        return {
            "records": self.records,
            "failed": self.failed,
            "busy_seconds": round(self.seconds, 3),
            "records_per_second": None if rate is None else round(rate, 3),
            **self.info,
        }


class Executor(ABC):
    """Runs a :class:`Job` over items and yields their :class:`Outcome`\\ s as they complete.

    Use as a context manager (or call :meth:`close`): an executor may hold workers across
    several :meth:`map` calls with the same job.
    """

    name: str = "executor"

    def __init__(self) -> None:
        self.stats: dict[str, WorkerStats] = {}

    @abstractmethod
    def map(self, job: Job, items: Sequence[Any], *, local_state: Any = None) -> Iterator[Outcome]:
        """Run ``job`` on every item; one outcome per item, in completion order.

        ``local_state`` is a state the caller built already in this process; executors that
        run the job here use it instead of calling ``job.setup`` (others ignore it). Stopping
        the iteration early (``break``, an exception, Ctrl-C) abandons the items not yet done.
        """

    def close(self) -> None:  # noqa: B027 - most executors hold nothing to release
        """Release the workers (nothing to do for the local executor)."""

    def __enter__(self) -> "Executor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _count(self, outcome: Outcome) -> Outcome:
        self.stats.setdefault(outcome.worker, WorkerStats()).add(outcome)
        return outcome

    def worker_summary(self) -> dict[str, dict[str, Any]]:
        """Per worker: records, failed, busy seconds, records per second (and where it ran)."""
        return {name: stats.as_dict() for name, stats in self.stats.items()}
