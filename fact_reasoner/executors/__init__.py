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

The executors are a kind of the registry (:data:`EXECUTORS`, ``--executor``): each is made as
``factory(options, code_paths=…)`` from the ``execution`` settings, and declares its own
settings in its registration (Ray's address, workers and batch size).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..settings.fields import Count, Threads, option
from ..settings.registry import Option, Registry
from .base import Executor, Job, Outcome, Worker, WorkerError, WorkerLost, WorkerStats, describe_error
from .local import LocalExecutor

if TYPE_CHECKING:  # pragma: no cover
    from ..settings.config import ExecutionOptions

__all__ = [
    "EXECUTORS",
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


#: every executor (``--executor`` takes any of these names; an installed package adds one
#: through the ``fact_reasoner.executors`` entry-point group)
EXECUTORS: Registry[Executor] = Registry("executors", noun="executor", entry_point_group="fact_reasoner.executors")


def _local(options: "ExecutionOptions", *, code_paths: Sequence[str | Path] = ()) -> Executor:
    return LocalExecutor()


#: the ``ray`` executor's settings (the ``execution`` group)
RAY_OPTIONS = (
    Option(
        "ray_address",
        str | None,
        option(
            None,
            "ray: the cluster to use; default: start a local Ray instance on this machine; 'auto' joins the "
            "cluster that `ray start` runs here; ray://HOST:10001 connects through Ray Client",
            affects_results=False,
        ),
    ),
    Option(
        "workers",
        Threads | None,
        option(None, "ray: number of actors (default: one per CPU of the cluster)", affects_results=False),
    ),
    Option(
        "batch_size",
        Count,
        option(
            4,
            "ray: records sent to an actor at a time (larger batches cost less in messages, smaller ones "
            "balance better and lose less work when a worker dies)",
            affects_results=False,
        ),
    ),
)

EXECUTORS.register("local", _local, description="this process, in input order", builtin=True)
EXECUTORS.register(
    "ray",
    "fact_reasoner.executors.ray_executor:RayExecutor",
    description="batches sent to Ray actors, each holding its own stages (the distributed extra); results "
    "come back in completion order",
    options=RAY_OPTIONS,
    builtin=True,
)


def make_executor(options: "ExecutionOptions", *, code_paths: Sequence[str | Path] = ()) -> Executor:
    """The executor ``options.executor`` names. ``ray`` without the package raises
    :class:`~fact_reasoner.errors.SetupError` naming the extra to install; ``code_paths`` are
    directories the Ray workers also need on their ``PYTHONPATH`` (a job defined outside the
    package)."""
    return EXECUTORS.make(options.executor, options, code_paths=code_paths)
