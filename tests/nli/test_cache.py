"""The one NLI pair cache (:class:`fact_reasoner.nli.cache.CachedNLI`): repeats are never
judged twice — in one batch, across calls, and across processes through the SQLite file — and
another backend identity never reads the entries."""

from __future__ import annotations

import json
from pathlib import Path

from fact_reasoner.cache import ModelCache
from fact_reasoner.nli import NLIJudgement, PrecomputedNLI
from fact_reasoner.nli.cache import CachedNLI
from fact_reasoner.schema import InputRecord, RelationType
from fact_reasoner.settings.config import PipelineConfig
from tests.helpers import REPO_ROOT

EXAMPLE = REPO_ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"


def _backend_and_pairs():
    record = InputRecord.model_validate(json.loads(EXAMPLE.read_text().splitlines()[0]))
    texts = {a.id: a.text for a in record.atoms} | {c.id: c.text for c in record.contexts}
    backend = PrecomputedNLI(record.relations, texts)
    return backend, [(texts[r.source], texts[r.target]) for r in record.relations]


def test_pair_cache_answers_repeats_without_the_backend(tmp_path: Path) -> None:
    backend, pairs = _backend_and_pairs()
    first = CachedNLI(backend, ModelCache.in_dir(tmp_path), identity="precomputed|test")
    answers = first.judge(pairs + pairs[:2])  # repeats inside one batch are judged once
    assert first.backend_pairs == len(set(pairs)) and first.hits == 0
    first.judge(pairs[:3])  # the memo answers within the process
    assert first.backend_pairs == len(set(pairs)) and first.hits == len(set(pairs[:3]))
    # a new process (new wrapper, same file): everything from the cache, identical judgements
    second = CachedNLI(backend, ModelCache.in_dir(tmp_path), identity="precomputed|test")
    again = second.judge(pairs)
    assert second.backend_pairs == 0 and second.hits == len(set(pairs))
    assert [(a.label, a.probability) for a in again] == [(a.label, a.probability) for a in answers[: len(pairs)]]
    # another backend identity never reads these entries
    other = CachedNLI(backend, ModelCache.in_dir(tmp_path), identity="other-model")
    other.judge(pairs[:1])
    assert other.hits == 0 and other.backend_pairs == 1


class _FailsOnce:
    name = "flaky"
    identity = "flaky|v1"

    def __init__(self) -> None:
        self.calls = 0

    def judge(self, pairs):
        self.calls += 1
        if self.calls == 1:
            return [NLIJudgement.failure("server down") for _ in pairs]
        return [
            NLIJudgement(RelationType.ENTAILMENT, 0.9, {"entailment": 0.9, "neutral": 0.05, "contradiction": 0.05})
            for _ in pairs
        ]


def test_failed_judgements_are_never_cached(tmp_path: Path) -> None:
    backend = _FailsOnce()
    cached = CachedNLI(backend, ModelCache.in_dir(tmp_path))
    assert cached.judge([("p", "h")])[0].failed
    retried = cached.judge([("p", "h")])[0]
    assert not retried.failed and retried.probability == 0.9 and backend.calls == 2


def test_the_factory_puts_the_pair_cache_in_front(tmp_path: Path) -> None:
    from fact_reasoner.stages import Stages

    config = PipelineConfig(nli="align", cache_dir=tmp_path)
    nli = Stages(config).nli()
    assert isinstance(nli, CachedNLI) and nli.identity.startswith("align:")
    assert nli.cache is not None and nli.cache.path == tmp_path / "model_calls.sqlite"
    off = Stages(config.with_options(use_cache=False)).nli()
    assert isinstance(off, CachedNLI) and off.cache is None
