"""Executors: where the items of a dataset run are worked on — this process, or Ray actors.

``fact-reasoner``, ``fact-reasoner ragas`` and ``experiments/run_biographies.py`` share them::

    executor = make_executor(config.execution)          # --executor local|ray
    with executor:
        for outcome in executor.map(job, todo):         # in completion order
            ...                                         # the command writes, counts, shows progress

- :class:`LocalExecutor` (default): in this process, in input order — the loop the commands
  always had.
- :class:`~fact_reasoner.executors.ray_executor.RayExecutor`: batches to Ray actors that each
  rebuild the job's stages from its config once (see that module).

A :class:`Job` holds the config and plain parameters; ``job.setup(config)`` builds a worker's
state and ``job.run(state, item)`` does one item. Results are the same whichever executor runs
them; only their order differs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .base import Executor, Job, Outcome, Worker, WorkerError, WorkerLost, WorkerStats, describe_error
from .local import LocalExecutor

if TYPE_CHECKING:  # pragma: no cover
    from ..config import ExecutionOptions

__all__ = [
    "Executor",
    "Job",
    "LocalExecutor",
    "Outcome",
    "Worker",
    "WorkerError",
    "WorkerLost",
    "WorkerStats",
    "describe_error",
    "make_executor",
]


def make_executor(options: "ExecutionOptions", *, code_paths: Sequence[str | Path] = ()) -> Executor:
    """The executor ``options.executor`` names. ``ray`` without the package raises
    :class:`~fact_reasoner.errors.SetupError` naming the extra to install; ``code_paths`` are
    directories the Ray workers also need on their ``PYTHONPATH`` (a job defined outside the
    package)."""
    if options.executor == "ray":
        from .ray_executor import RayExecutor

        return RayExecutor(options, code_paths=code_paths)
    return LocalExecutor()
