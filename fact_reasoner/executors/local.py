"""The local executor: every item in this process, one after the other, in input order.

Its outcomes come in input order. Each item runs on a worker thread while the calling thread
waits (:func:`~fact_reasoner.interrupts.call_interruptibly`), so that Ctrl-C stops the run at
once instead of when the model call in progress returns: the item is abandoned and the
``KeyboardInterrupt`` raised to the caller.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..interrupts import call_interruptibly
from .base import Executor, Job, Outcome, Worker

__all__ = ["LocalExecutor"]


class LocalExecutor(Executor):
    """Runs a job in this process, item by item (``--executor local``, the default)."""

    name = "local"

    def map(self, job: Job, items: Sequence[Any], *, local_state: Any = None) -> Iterator[Outcome]:
        worker = Worker(job, "local", state=local_state)
        for index, item in enumerate(items):
            yield self._count(call_interruptibly(worker.run, index, item))
