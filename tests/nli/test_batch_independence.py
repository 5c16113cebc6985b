"""A pair's probabilities do not depend on what it is judged with: the shipped int8 judges
(version 3 and the contradiction specialist) give each pair bit-identical probabilities in one
call, shuffled into calls of other sizes, alone, on one thread or two, and beside the other
judge of a panel; and they are the numbers of the graph as written, run one item at a time (the
way the judges ran before their items ran in parallel)."""

from __future__ import annotations

import random

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("tokenizers")

from fact_reasoner.nli.base import batch_invariant  # noqa: E402
from fact_reasoner.nli.cross_encoder import CrossEncoderNLI, TextMemo, share_text_memo  # noqa: E402
from fact_reasoner.onnx_bert import cpu_session  # noqa: E402
from tests.nli.shipped_models import INT8_MODELS, PAIRS, real_items  # noqa: E402

#: each pair several times over, so that calls of every size hold repeats and new company
JUDGED = PAIRS * 3


def _probabilities(backend: CrossEncoderNLI, pairs, sizes, seed) -> dict[tuple[str, str], dict[str, float]]:
    """Each pair's probabilities, the pairs shuffled (``seed``) and judged in calls of the
    given sizes in turn; a pair judged twice must get the same numbers both times."""
    order = list(range(len(pairs)))
    random.Random(seed).shuffle(order)
    seen: dict[tuple[str, str], dict[str, float]] = {}
    start, call = 0, 0
    while start < len(order):
        chunk = [pairs[i] for i in order[start : start + sizes[call % len(sizes)]]]
        for pair, judged in zip(chunk, backend.judge(chunk)):
            assert not judged.failed
            assert seen.setdefault(pair, judged.probabilities) == judged.probabilities
        start += len(chunk)
        call += 1
    return seen


@pytest.mark.parametrize("folder", INT8_MODELS, ids=lambda folder: folder.name)
def test_a_pair_gets_the_same_probabilities_in_any_batch(folder):
    backend = CrossEncoderNLI(folder, threads=2)
    assert backend.items_per_run == 1 and backend.workers == 2
    assert batch_invariant(backend)  # what lets `serve` merge requests
    reference = _probabilities(backend, JUDGED, sizes=[len(JUDGED)], seed=0)  # one call
    assert len(reference) == len(PAIRS)
    for sizes, seed in (([1], 1), ([7], 2), ([3, 16, 1, 32], 3), ([64, 2], 4)):
        assert _probabilities(backend, JUDGED, sizes, seed) == reference, sizes
    # one thread, and a fresh judge with an empty memo: the same numbers
    fresh = CrossEncoderNLI(folder, threads=1)
    assert _probabilities(fresh, PAIRS, [len(PAIRS)], 5) == reference
    # the sentence re-judging ran: pairs judged contradictions whole were read sentence by sentence
    assert fresh.windows_scored > len(PAIRS)


@pytest.mark.parametrize("folder", INT8_MODELS, ids=lambda folder: folder.name)
def test_the_logits_are_those_of_the_graph_as_written(folder):
    """The backend's logits (gathered embedding rows, runs in parallel) against the graph from
    the file run one item at a time with two threads: bit-identical."""
    backend = CrossEncoderNLI(folder, threads=2)
    items = [(backend.selected_windows(p, h)[0], h) for p, h in PAIRS]
    as_written = cpu_session(folder / "model.onnx", 2)
    expected = np.vstack([as_written.run(["logits"], feeds)[0] for feeds in real_items(folder)])
    shuffled = list(range(len(items)))
    random.Random(7).shuffle(shuffled)
    got = backend.logits([items[i] for i in shuffled])
    assert np.array_equal(got, expected[shuffled])


@pytest.mark.skipif(len(INT8_MODELS) < 2, reason="the contradiction specialist is not in this checkout")
def test_a_panel_shares_what_it_reads_and_each_judge_keeps_its_numbers():
    version3, specialist = (CrossEncoderNLI(folder, threads=2) for folder in INT8_MODELS)
    alone = _probabilities(CrossEncoderNLI(INT8_MODELS[1], threads=2), PAIRS, [len(PAIRS)], 0)
    assert version3.reading == specialist.reading
    assert share_text_memo([version3, specialist]) == 1 and version3.memo is specialist.memo
    _probabilities(version3, PAIRS, [len(PAIRS)], 0)
    tokenised = dict(version3.memo._kinds["tokens"])
    assert _probabilities(specialist, PAIRS, [9], 1) == alone
    # the specialist read the items version 3 had tokenised (the same objects, not new ones)
    assert all(version3.memo._kinds["tokens"][item] is encoding for item, encoding in tokenised.items())


@pytest.mark.skipif(len(INT8_MODELS) < 2, reason="the contradiction specialist is not in this checkout")
def test_the_factory_gives_a_panel_of_cross_encoders_one_memo(tmp_path):
    from fact_reasoner.nli.factory import make_nli
    from fact_reasoner.settings.config import PipelineConfig

    config = PipelineConfig(
        models={"nli": "cross-encoder@entailment,specialist@contradiction", "threads": 1},
        cache={"cache_dir": tmp_path},
    )
    panel = make_nli(config)
    version3, specialist = (backend.backend for _, backend in panel.members)  # behind each pair cache
    assert version3.memo is specialist.memo


def test_judges_that_read_text_otherwise_keep_their_own_memo():
    if not INT8_MODELS:
        pytest.skip("no shipped int8 model in this checkout")
    short = CrossEncoderNLI(INT8_MODELS[0], threads=1, max_length=64)
    default = CrossEncoderNLI(INT8_MODELS[0], threads=1)
    assert short.reading != default.reading
    assert share_text_memo([default, short]) == 0 and short.memo is not default.memo


def test_the_text_memo_computes_what_it_lacks_together_and_stays_bounded():
    memo = TextMemo(limit=4)
    asked: list[list[str]] = []

    def upper(keys):
        asked.append(list(keys))
        return [key.upper() for key in keys]

    assert memo.get_many("k", ["a", "b", "a"], upper) == ["A", "B", "A"]
    assert memo.get_many("k", ["b", "c"], upper) == ["B", "C"]
    assert asked == [["a", "b"], ["c"]]  # each missing key once, the kept ones not again
    assert memo.get("other", "a", lambda: 1) == 1 and memo.get("other", "a", lambda: 2) == 1
    memo.get_many("k", ["d", "e"], upper)  # past the limit: emptied, then kept
    assert len(memo._kinds["k"]) == 2 and memo.get_many("k", ["a"], upper) == ["A"] and asked[-1] == ["a"]


@pytest.mark.skipif(not INT8_MODELS, reason="no shipped int8 model in this checkout")
def test_a_forked_child_judges_with_threads_of_its_own():
    """A child forked after the judge ran has none of its parent's run threads: it starts its
    own (else its runs would wait for threads that do not exist) and gets the same numbers."""
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    backend = CrossEncoderNLI(INT8_MODELS[0], threads=2)
    parent = [j.probabilities for j in backend.judge(PAIRS[:6])]
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=lambda: queue.put([j.probabilities for j in backend.judge(PAIRS[:6])]))
    child.start()
    try:
        assert queue.get(timeout=60) == parent
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()
