"""The local executor: every item in this process, one after the other, in input order.

This is the loop the commands always had; its outcomes come in input order and an exception
that is not an ``Exception`` (Ctrl-C) stops it at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from .base import Executor, Job, Outcome, Worker

__all__ = ["LocalExecutor"]


class LocalExecutor(Executor):
    """Runs a job in this process, item by item (``--executor local``, the default)."""

    name = "local"

    def map(self, job: Job, items: Sequence[Any], *, local_state: Any = None) -> Iterator[Outcome]:
        worker = Worker(job, "local", state=local_state)
        for index, item in enumerate(items):
            yield self._count(worker.run(index, item))
