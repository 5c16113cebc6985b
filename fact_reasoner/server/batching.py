"""Micro-batching: the NLI pairs of concurrent requests judged by one call of the judge.

Each request thread hands its pairs to :meth:`MicroBatchNLI.judge` and waits. One thread, the
batcher's, takes the first waiting request, gathers the requests that arrive within a short
window (``wait_seconds``) or until ``max_pairs`` pairs are waiting, asks the judge once for the
distinct pairs of all of them, and gives each request its own judgements, in its own order. A
pair that two requests share is judged once.

Batching must not change a number. The shipped cross-encoder runs one item at a time
(``items_per_run: 1`` in its ``config.json``: its int8 activations are quantised per run), so
a pair's probabilities do not depend on the pairs judged with it, and requests are merged. A
judge that does not say so (:func:`batch_invariant`) — one that pads a batch, say — still gets
one call per request, in arrival order, so that each request's pairs are judged exactly as the
command line judges them.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future
from typing import Any

from ..nli.base import NLIBackend, NLIJudgement, backend_identity, batch_invariant

__all__ = ["MicroBatchNLI", "batch_invariant"]


class _Waiting:
    """One request's pairs and the future its thread waits on."""

    __slots__ = ("future", "pairs")

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self.pairs = pairs
        self.future: Future[list[NLIJudgement]] = Future()


class MicroBatchNLI:
    """An NLI backend in front of ``backend`` that judges the pairs of concurrent callers
    together (see the module docstring). Thread-safe; :meth:`close` stops its thread.

    Counters (:meth:`stats`): ``requests``, ``batches``, ``pairs`` (asked), ``judged`` (distinct
    pairs sent to the judge), ``largest_batch`` (pairs).
    """

    def __init__(self, backend: NLIBackend, *, wait_seconds: float = 0.005, max_pairs: int = 512) -> None:
        if wait_seconds < 0 or max_pairs < 1:
            raise ValueError("wait_seconds must be ≥ 0 and max_pairs ≥ 1")
        self.backend = backend
        self.name = getattr(backend, "name", type(backend).__name__)
        self.identity = backend_identity(backend)
        self.wait_seconds = wait_seconds
        self.max_pairs = max_pairs
        self.merges = batch_invariant(backend)
        self._queue: deque[_Waiting] = deque()
        self._condition = threading.Condition()
        self._closed = False
        self.requests = self.batches = self.pairs = self.judged = self.largest_batch = 0
        self._thread = threading.Thread(target=self._serve, name="fact-reasoner-nli-batcher", daemon=True)
        self._thread.start()

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        """The judgements of ``pairs``, in their order (an exception of the judge is raised here,
        in every request of the batch it broke)."""
        if not pairs:
            return []
        waiting = _Waiting([(str(p), str(h)) for p, h in pairs])
        with self._condition:
            if self._closed:
                raise RuntimeError("the NLI batcher is closed")
            self._queue.append(waiting)
            self._condition.notify_all()
        return waiting.future.result()

    def waiting(self) -> int:
        """Requests waiting for a batch (not yet taken by the batcher's thread)."""
        with self._condition:
            return len(self._queue)

    def close(self, wait_seconds: float = 30.0) -> None:
        """Stop the batcher's thread once the waiting requests are judged (waiting at most
        ``wait_seconds`` for a batch still being judged: the thread is a daemon)."""
        with self._condition:
            self._closed = True
            self._condition.notify_all()
        self._thread.join(timeout=wait_seconds)

    def stats(self) -> dict[str, Any]:
        with self._condition:
            return {
                "requests": self.requests,
                "batches": self.batches,
                "pairs": self.pairs,
                "judged": self.judged,
                "largest_batch": self.largest_batch,
                "merges_requests": self.merges,
            }

    # -- the batcher's thread -----------------------------------------------------------------

    def _take(self) -> list[_Waiting] | None:
        """The requests of the next batch (None once closed and drained)."""
        with self._condition:
            while not self._queue:
                if self._closed:
                    return None
                self._condition.wait()
            if not self.merges:
                return [self._queue.popleft()]
            # a short window for the requests of other clients to arrive
            deadline = time.monotonic() + self.wait_seconds
            while sum(len(w.pairs) for w in self._queue) < self.max_pairs and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._condition.wait(left)
            batch = [self._queue.popleft()]
            size = len(batch[0].pairs)
            while self._queue and size + len(self._queue[0].pairs) <= self.max_pairs:
                size += len(self._queue[0].pairs)
                batch.append(self._queue.popleft())
            return batch

    def _serve(self) -> None:
        while True:
            batch = self._take()
            if batch is None:
                return
            distinct = list(dict.fromkeys(pair for waiting in batch for pair in waiting.pairs))
            try:
                judged = self.backend.judge(distinct)
                if len(judged) != len(distinct):
                    raise RuntimeError(
                        f"NLI backend {self.name} returned {len(judged)} judgements for {len(distinct)} pairs"
                    )
            except BaseException as error:  # every request of the batch fails with it
                for waiting in batch:
                    waiting.future.set_exception(error)
                continue
            verdicts = dict(zip(distinct, judged))
            with self._condition:
                self.requests += len(batch)
                self.batches += 1
                self.pairs += sum(len(w.pairs) for w in batch)
                self.judged += len(distinct)
                self.largest_batch = max(self.largest_batch, len(distinct))
            for waiting in batch:
                waiting.future.set_result([verdicts[pair] for pair in waiting.pairs])
