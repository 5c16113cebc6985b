"""The record service: a dataset job's stages loaded once, and its rows made one item at a time
(what ``fact-reasoner serve`` does with each request)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .loop import DatasetJob


class RecordService:
    """A job's stages loaded once, and rows made one item at a time: what a server does with
    each request, and what ``fact-reasoner --response`` does with its one response.

    :meth:`row` gives exactly the row :func:`~fact_reasoner.runner.loop.run_dataset` writes for
    the item: the worker job and :meth:`~fact_reasoner.runner.loop.DatasetJob.row` are the same
    code. ``items`` are those the worker job is made
    for (the dataset median of their atoms, when the K rule needs one).
    """

    def __init__(self, job: DatasetJob, items: Sequence[Any] = ()) -> None:
        self.job = job
        self.work = job.worker_job(list(items))
        local = job.local_state()
        self.state = local if local is not None else self.work.setup(self.work.config)

    def row(self, item: Any) -> dict[str, Any]:
        """The row of one item; the stages' own exceptions are raised as they are."""
        (work_item,) = self.job.work_items([item])
        return self.job.row(item, self.work.run(self.state, work_item))
