"""The pipeline and the RAG metrics run the same judge → graph → infer sequence
(fact_reasoner.stages.judge_and_infer) with the same failure policy: when NLI calls fail on
more pairs than --max-failed-pairs allows, the record (or the sample's metric) fails loudly;
it is never scored without its evidence."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

import fact_reasoner.stages
from fact_reasoner import FactReasoner, PipelineConfig
from fact_reasoner.errors import RecordFailed
from fact_reasoner.inference import BruteForceEngine
from fact_reasoner.metrics import Faithfulness, MetricContext, evaluate
from fact_reasoner.nli import NLIJudgement

DOWN = "Berlin"


class FlakyJudge:
    """Entails every pair except those whose premise mentions Berlin: for those the model call
    fails (as when the server answers 500 after every retry)."""

    name = "flaky-judge"
    identity = "flaky-judge"

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        return [
            NLIJudgement.call_failed("judge", RuntimeError("HTTP 500"))
            if DOWN in premise
            else NLIJudgement.from_probabilities({"entailment": 0.9, "contradiction": 0.05, "neutral": 0.05})
            for premise, _ in pairs
        ]


CONTEXTS = ["Paris is the capital of France.", "Berlin is the capital of Germany."]
RESPONSE = "Paris is the capital of France."


def _record() -> dict:
    return {
        "input": "What is the capital of France?",
        "output": RESPONSE,
        "atoms": [{"id": "a0", "text": RESPONSE}],
        "contexts": [{"id": f"c{i}", "text": text} for i, text in enumerate(CONTEXTS)],
    }


def _sample() -> dict:
    return {"question": "What is the capital of France?", "response": RESPONSE, "retrieved_contexts": CONTEXTS}


def _assess(config: PipelineConfig):
    return FactReasoner(config, nli=FlakyJudge(), engine=BruteForceEngine()).assess(_record())


def _faithfulness(config: PipelineConfig):
    context = MetricContext(config, atomizer="sentence", nli=FlakyJudge(), engine=BruteForceEngine(), atom_cache=None)
    return Faithfulness().score(_sample(), context)


@pytest.fixture
def checks(monkeypatch):
    """Every call of the one failure policy, as (pairs, max_failed_pairs)."""
    calls: list[tuple[int, float]] = []
    real = fact_reasoner.stages.check_judged

    def spy(judged, pairs, max_failed_pairs):
        calls.append((pairs, max_failed_pairs))
        return real(judged, pairs, max_failed_pairs)

    monkeypatch.setattr(fact_reasoner.stages, "check_judged", spy)
    return calls


def test_a_judge_that_fails_on_some_pairs_fails_the_record_in_the_pipeline_and_the_metrics(checks, tmp_path):
    config = PipelineConfig(version=2, use_cache=False, cache_dir=tmp_path)
    with pytest.raises(RecordFailed, match=r"NLI: 1 of 2 pair\(s\) could not be judged .*HTTP 500"):
        _assess(config)
    with pytest.raises(RecordFailed, match=r"NLI: 1 of 2 pair\(s\) could not be judged .*HTTP 500"):
        _faithfulness(config)
    assert checks == [(2, 0.0), (2, 0.0)]  # both went through the same sequence and policy

    # a batch evaluation keeps its row: the metric is NaN with the failure as its error
    context = MetricContext(config, atomizer="sentence", nli=FlakyJudge(), engine=BruteForceEngine(), atom_cache=None)
    result = evaluate([_sample()], [Faithfulness()], context=context, progress=False)
    assert math.isnan(result.scores("faithfulness")[0])
    assert "could not be judged" in result.errors[0]["error"]


def test_max_failed_pairs_tolerates_the_same_failures_in_both(checks, tmp_path):
    config = PipelineConfig(version=2, use_cache=False, cache_dir=tmp_path, max_failed_pairs=0.5)
    output = _assess(config)
    assert output.counters["nli_call_failures"] == 1 and output.atoms[0].probability > 0.5
    faithfulness = _faithfulness(config)
    assert faithfulness.score == pytest.approx(1.0)
    assert checks == [(2, 0.5), (2, 0.5)]
