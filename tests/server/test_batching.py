"""Micro-batching (:mod:`fact_reasoner.server.batching`): requests merged into one call of a
batch-invariant judge, one call per request otherwise, the same judgements either way, and a
judge's exception in every request of its batch. The order of events is forced with a gate,
never by timing."""

from __future__ import annotations

import threading

import pytest

from tests.helpers import require_extra

require_extra("embeddings")

from fact_reasoner.server.batching import MicroBatchNLI, batch_invariant

from .serving import GatedJudge, shipped_judge, wait_until

PAIRS = [
    [("Marie Curie was born in Warsaw in 1867.", "Marie Curie was born in Warsaw."),
     ("Marie Curie was born in Warsaw in 1867.", "Marie Curie was born in Paris.")],
    [("Ada Lovelace was a mathematician.", "Ada Lovelace was a mathematician."),
     ("Marie Curie was born in Warsaw in 1867.", "Marie Curie was born in Warsaw.")],
    [("Alan Turing was born in London.", "Alan Turing was born in Berlin.")],
]  # fmt: skip


class Recording:
    """The real judge, recording the pairs of each call it gets."""

    def __init__(self, backend, invariant: bool):
        self.backend = backend
        self.name = backend.name
        self.identity = backend.identity
        self.items_per_run = 1 if invariant else 32
        self.calls: list[int] = []

    def judge(self, pairs):
        self.calls.append(len(pairs))
        return self.backend.judge(pairs)


def _run_held(batcher: MicroBatchNLI, gated: GatedJudge) -> list[list]:
    """The first request holds the judge at its gate; the other two wait meanwhile; then the
    gate opens. Returns each request's judgements."""
    results: list[list | None] = [None] * len(PAIRS)

    def ask(i: int) -> None:
        results[i] = batcher.judge(PAIRS[i])

    first = threading.Thread(target=ask, args=(0,))
    first.start()
    wait_until(lambda: gated.entered == 1, "the first batch at the gate")
    rest = [threading.Thread(target=ask, args=(i,)) for i in (1, 2)]
    for thread in rest:
        thread.start()
    wait_until(lambda: batcher.waiting() == 2, "two requests waiting")
    gated.gate.set()
    for thread in [first, *rest]:
        thread.join(60)
    return results  # type: ignore[return-value]


def test_waiting_requests_are_judged_together_with_the_same_numbers():
    judge = shipped_judge()
    alone = [judge.judge(pairs) for pairs in PAIRS]
    recording = Recording(judge, invariant=True)
    gated = GatedJudge(recording)
    batcher = MicroBatchNLI(gated, wait_seconds=0)
    try:
        assert batcher.merges
        results = _run_held(batcher, gated)
    finally:
        batcher.close()
    assert results == alone  # every probability, bit for bit
    # the two waiting requests went in one call; their shared pair was judged once
    assert recording.calls == [2, 3]
    assert batcher.stats()["batches"] == 2 and batcher.stats()["requests"] == 3


def test_a_judge_that_may_depend_on_its_batch_gets_one_call_per_request():
    judge = shipped_judge()
    recording = Recording(judge, invariant=False)
    gated = GatedJudge(recording)
    gated.items_per_run = recording.items_per_run
    batcher = MicroBatchNLI(gated, wait_seconds=0)
    try:
        assert not batch_invariant(gated) and not batcher.merges
        results = _run_held(batcher, gated)
    finally:
        batcher.close()
    assert recording.calls == [2, 2, 1]
    assert results == [judge.judge(pairs) for pairs in PAIRS]


def test_the_judges_exception_reaches_every_request_of_its_batch():
    class Crashing:
        name = identity = "crashing"
        batch_invariant = True

        def judge(self, pairs):
            raise RuntimeError("model crashed")

    batcher = MicroBatchNLI(Crashing())
    try:
        for pairs in PAIRS:
            with pytest.raises(RuntimeError, match="model crashed"):
                batcher.judge(pairs)
        assert batcher.judge([]) == []
    finally:
        batcher.close()
    with pytest.raises(RuntimeError, match="closed"):
        batcher.judge(PAIRS[0])
