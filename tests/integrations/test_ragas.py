"""The ragas metrics, run by the pinned ragas itself on the package's RAG examples: the numbers
are the command's, the verdicts are in ragas's traces, a sample that cannot be scored raises."""

from __future__ import annotations

import asyncio
import math

import pytest
from ragas import EvaluationDataset, evaluate
from ragas.dataset_schema import SingleTurnSample
from ragas.metrics.base import MetricWithEmbeddings, MetricWithLLM, SingleTurnMetric

from fact_reasoner.integrations.ragas import (
    TRACE_NAME,
    ContextPrecisionMetric,
    ContextRecallMetric,
    FactualCorrectnessMetric,
    FaithfulnessMetric,
    FRContextPrecision,
    FRContextRecall,
    FRFactualCorrectness,
    FRFaithfulness,
    SampleNotScored,
)
from tests.integrations.conftest import command_rows

#: ragas metric → the command's metric of the same name
PAIRS = {
    "fr_faithfulness": "faithfulness",
    "fr_factual_correctness": "factual_correctness",
    "fr_context_precision": "context_precision",
    "fr_context_recall": "context_recall",
}


def metrics():
    return [
        FRFaithfulness(atomizer="sentence"),
        FRFactualCorrectness(atomizer="sentence"),
        FRContextPrecision(atomizer="sentence"),
        FRContextRecall(atomizer="sentence"),
    ]


def test_they_are_single_turn_metrics_that_ragas_gives_no_model(monkeypatch):
    for metric in metrics():
        assert isinstance(metric, SingleTurnMetric)
        assert not isinstance(metric, MetricWithLLM | MetricWithEmbeddings)
        assert (
            "response" in metric.required_columns["SINGLE_TURN"]
            or "reference" in metric.required_columns["SINGLE_TURN"]
        )


def test_evaluate_gives_the_commands_scores_and_the_verdicts_in_the_traces(samples, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # no LLM service: ragas would need a key for one
    scorable = samples[:2]  # the third has no reference, the fourth answers nothing
    result = evaluate(
        EvaluationDataset.from_list(scorable), metrics=metrics(), raise_exceptions=True, show_progress=False
    )
    table = result.to_pandas()
    rows = command_rows(tmp_path, scorable, ",".join(PAIRS.values()))
    assert len(rows) == len(scorable) == len(table)
    for i, row in enumerate(rows):
        for ours, theirs in PAIRS.items():
            assert table[ours][i] == row["metrics"][theirs]["score"], (i, ours)
    # the contradicted sample ("built in 1500") is less faithful than the supported one
    assert table["fr_faithfulness"][0] > table["fr_faithfulness"][1]
    trace = result.traces[1]["fr_faithfulness"][TRACE_NAME]
    assert trace["input"]["response"] == scorable[1]["response"]
    claims = trace["output"]["claims"]
    expected = [(d["claim"], d["verdict"]) for d in rows[1]["metrics"]["faithfulness"]["details"]]
    assert [(c["claim"], c["verdict"]) for c in claims] == expected
    assert dict(expected)["It was built in 1500."] in ("NO_EVIDENCE", "CONTRADICTORY")  # not supported


def test_single_turn_ascore_is_the_same_number(samples, tmp_path):
    rows = command_rows(tmp_path, samples[:3], "faithfulness")
    assert len(rows) == 3
    for sample, row in zip(samples[:3], rows):
        score = asyncio.run(FRFaithfulness(atomizer="sentence").single_turn_ascore(SingleTurnSample(**sample)))
        assert score == row["metrics"]["faithfulness"]["score"]


def test_the_metric_parameters_are_the_commands_flags(samples, tmp_path):
    # the whole response is supported, half of the reference is covered: precision 1, F1 2/3
    partial = {**samples[0], "response": "The Eiffel Tower is in Paris."}
    rows = command_rows(
        tmp_path, [samples[1], partial], "faithfulness,factual_correctness", "--strict", "--fc-mode", "PRECISION"
    )
    strict = asyncio.run(
        FRFaithfulness(atomizer="sentence", strict=True).single_turn_ascore(SingleTurnSample(**samples[1]))
    )
    precision = asyncio.run(
        FRFactualCorrectness(atomizer="sentence", fc_mode="PRECISION").single_turn_ascore(SingleTurnSample(**partial))
    )
    assert strict == rows[0]["metrics"]["faithfulness"]["score"]
    assert precision == rows[1]["metrics"]["factual_correctness"]["score"]
    # and the parameters reached the command's metric: the defaults give other numbers here
    assert strict != asyncio.run(FRFaithfulness(atomizer="sentence").single_turn_ascore(SingleTurnSample(**samples[1])))
    assert precision != asyncio.run(
        FRFactualCorrectness(atomizer="sentence").single_turn_ascore(SingleTurnSample(**partial))
    )


def test_a_sample_that_cannot_be_scored_raises_and_evaluate_makes_it_nan_unless_told(samples):
    no_answer = SingleTurnSample(**samples[3])  # "...": answers nothing
    no_contexts = SingleTurnSample(**{**samples[0], "retrieved_contexts": []})
    with pytest.raises(SampleNotScored, match="not answerable"):
        asyncio.run(FRFaithfulness(atomizer="sentence").single_turn_ascore(no_answer))
    with pytest.raises(SampleNotScored, match="no retrieved contexts"):
        asyncio.run(FRFaithfulness(atomizer="sentence").single_turn_ascore(no_contexts))
    with pytest.raises(SampleNotScored, match="no reference"):
        asyncio.run(FRFactualCorrectness(atomizer="sentence").single_turn_ascore(SingleTurnSample(**samples[2])))
    dataset = EvaluationDataset.from_list([samples[0], samples[3]])
    with pytest.raises(SampleNotScored, match="not answerable"):
        evaluate(dataset, metrics=[FRFaithfulness(atomizer="sentence")], raise_exceptions=True, show_progress=False)
    # ragas's default: the exception is logged and the cell is NaN (what docs/integrations.md says)
    quiet = evaluate(dataset, metrics=[FRFaithfulness(atomizer="sentence")], show_progress=False).to_pandas()
    assert not math.isnan(quiet["fr_faithfulness"][0]) and math.isnan(quiet["fr_faithfulness"][1])


@pytest.mark.parametrize(
    ("collection", "single_turn"),
    [
        (FaithfulnessMetric, FRFaithfulness),
        (FactualCorrectnessMetric, FRFactualCorrectness),
        (ContextPrecisionMetric, FRContextPrecision),
        (ContextRecallMetric, FRContextRecall),
    ],
)
def test_the_collections_form_gives_the_same_numbers(samples, collection, single_turn):
    sample = samples[1]
    result = collection(atomizer="sentence").score(**sample)
    assert result.value == asyncio.run(single_turn(atomizer="sentence").single_turn_ascore(SingleTurnSample(**sample)))
    assert result.traces["output"]["claims"], "the verdicts are in the result"
    with pytest.raises(SampleNotScored):
        collection(atomizer="sentence").score(
            **{**sample, "response": "...", "reference": None, "retrieved_contexts": []}
        )


def test_faithfulness_mode_holistic_is_the_commands_holistic_score(samples, tmp_path):
    """``FRFaithfulness(faithfulness_mode="HOLISTIC")`` is ``--faithfulness-mode holistic``: one
    verdict for the response as a whole; the column keeps its name."""
    rows = command_rows(tmp_path, samples[:2], "faithfulness", "--faithfulness-mode", "holistic")
    metric = FRFaithfulness(atomizer="sentence", faithfulness_mode="HOLISTIC")
    for sample, row in zip(samples[:2], rows):
        score = asyncio.run(metric.single_turn_ascore(SingleTurnSample(**sample)))
        assert score == row["metrics"]["faithfulness"]["score"]
        assert row["metrics"]["faithfulness"]["mode"] == "HOLISTIC"
    result = evaluate(EvaluationDataset.from_list(samples[:2]), metrics=[metric], show_progress=False)
    assert list(result.to_pandas().columns)[-1] == "fr_faithfulness"
