"""The DeepEval metrics, run by the pinned DeepEval itself (``measure``, ``a_measure``,
``assert_test``, ``evaluate``) on the package's RAG examples: the command's numbers, a reason
naming the unsupported claims, a test case that cannot be scored fails."""

from __future__ import annotations

import asyncio

import pytest
from deepeval import assert_test, evaluate
from deepeval.metrics import BaseMetric
from deepeval.test_case import LLMTestCase
from deepeval.test_case.llm_test_case import RetrievedContextData

from fact_reasoner.integrations.deepeval import FRFactualCorrectnessMetric, FRFaithfulnessMetric, SampleNotScored
from tests.integrations.conftest import command_rows


def case(sample: dict, *, objects: bool = False, reference: bool = True) -> LLMTestCase:
    contexts = sample["retrieved_contexts"]
    return LLMTestCase(
        input=sample["user_input"],
        actual_output=sample["response"],
        expected_output=sample["reference"] if reference else None,
        retrieval_context=[RetrievedContextData(context=c, source=f"doc{i}") for i, c in enumerate(contexts)]
        if objects
        else contexts,
    )


def test_measure_gives_the_commands_scores_and_names_the_unsupported_claims(samples, tmp_path):
    rows = command_rows(tmp_path, samples[:2], "faithfulness,factual_correctness")
    for sample, row in zip(samples[:2], rows):
        faithfulness = FRFaithfulnessMetric(threshold=0.7, atomizer="sentence")
        correctness = FRFactualCorrectnessMetric(threshold=0.7, atomizer="sentence")
        assert isinstance(faithfulness, BaseMetric) and isinstance(correctness, BaseMetric)
        assert faithfulness.measure(case(sample)) == row["metrics"]["faithfulness"]["score"] == faithfulness.score
        assert correctness.measure(case(sample)) == row["metrics"]["factual_correctness"]["score"]
        assert faithfulness.success == (faithfulness.score >= 0.7)
    # the second answer's "It was built in 1500." is not supported by the contexts
    assert not faithfulness.success and faithfulness.is_successful() is False
    assert "not supported: 'It was built in 1500.'" in faithfulness.reason
    assert "'It was built in 1500.'" in correctness.reason
    assert faithfulness.scored is not None
    assert [line.split()[0] for line in faithfulness.verbose_logs.splitlines()] == [
        d["verdict"] for d in faithfulness.scored.details
    ]
    assert "] It was built in 1500." in faithfulness.verbose_logs


def test_context_objects_and_strings_give_the_same_score_and_a_measure_too(samples):
    metric = FRFaithfulnessMetric(atomizer="sentence")
    as_strings = metric.measure(case(samples[0]))
    as_objects = metric.measure(case(samples[0], objects=True))
    assert as_strings == as_objects
    assert (
        asyncio.run(FRFaithfulnessMetric(atomizer="sentence").a_measure(case(samples[0], objects=True))) == as_strings
    )


def test_assert_test_passes_a_grounded_answer_and_fails_a_contradicted_one(samples):
    assert_test(case(samples[0]), [FRFaithfulnessMetric(threshold=0.7, atomizer="sentence")])
    with pytest.raises(AssertionError, match="It was built in 1500"):
        assert_test(case(samples[1]), [FRFaithfulnessMetric(threshold=0.7, atomizer="sentence")])


def test_evaluate_reports_each_metric_of_each_test_case(samples):
    cases = [case(samples[0]), case(samples[1])]
    metrics = [
        FRFaithfulnessMetric(threshold=0.7, atomizer="sentence"),
        FRFactualCorrectnessMetric(atomizer="sentence"),
    ]
    result = evaluate(cases, metrics)
    by_case = [{m.name: m for m in test.metrics_data} for test in result.test_results]
    assert [test.success for test in result.test_results] == [True, False]
    assert by_case[1]["FR Faithfulness"].success is False and "1500" in by_case[1]["FR Faithfulness"].reason
    expected = FRFaithfulnessMetric(atomizer="sentence").measure(cases[1])
    assert by_case[1]["FR Faithfulness"].score == expected


def test_a_test_case_that_cannot_be_scored_fails(samples):
    metric = FRFactualCorrectnessMetric(atomizer="sentence")
    with pytest.raises(SampleNotScored, match="no reference"):
        metric.measure(case(samples[0], reference=False))
    assert metric.score is None and metric.success is False and "SampleNotScored" in metric.error
    with pytest.raises(SampleNotScored, match="not answerable"):
        FRFaithfulnessMetric(atomizer="sentence").measure(case(samples[3]))  # "..." answers nothing
    with pytest.raises(SampleNotScored):
        assert_test(case(samples[3]), [FRFaithfulnessMetric(atomizer="sentence")])


def test_the_reason_says_how_a_contradicted_claim_makes_the_score(samples):
    """ "1 of 2 claims … supported" once stood beside a score of 0.0 with no word of why: a
    contradicted claim weighs -1 and cancels a supported one. The reason now says so."""
    sample = dict(samples[0], response="The Eiffel Tower is in Paris. The Eiffel Tower is in Berlin.")
    metric = FRFaithfulnessMetric(atomizer="sentence")
    assert metric.measure(case(sample)) == 0.0
    assert metric.reason.startswith(
        "1 of 2 claims of the output are supported by the retrieval context (CONTRADICTORY 1, FULLY_SUPPORTED 1); "
        "score 0: the mean of the claims' weights (CONTRADICTORY -1, FULLY_SUPPORTED 1: a contradicted claim "
        "counts -1), clamped to [0, 1]; not supported: "
    ), metric.reason
    binary = FRFaithfulnessMetric(atomizer="sentence", binary=True)
    assert (
        binary.measure(case(sample)) == 0.5 and "score 0.5: the supported share of the judged claims" in binary.reason
    )


def test_faithfulness_mode_holistic_gives_one_verdict_for_the_output(samples):
    metric = FRFaithfulnessMetric(atomizer="sentence", faithfulness_mode="HOLISTIC")
    assert metric.measure(case(samples[0])) == 1.0
    assert metric.reason.startswith("the output as a whole is FULLY_SUPPORTED by the retrieval context (holistic)")
    assert metric.scored.result["total_claims"] == 1 and metric.scored.result["mode"] == "HOLISTIC"
