"""The equality check on the shared HaluBench dev sample (100 rows, ``../shared/data/rag/halubench_dev.csv``):
ragas's ``evaluate`` with :class:`FRFaithfulness` and DeepEval's ``measure`` with
:class:`FRFaithfulnessMetric` give every row exactly the faithfulness ``fact-reasoner ragas``
writes for it, with the same settings (sentence atomizer, the embedded NLI judge, no model-call
cache). Marked slow: it needs the shared data and takes about a minute here (2 cores)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from tests.helpers import REPO_ROOT
from tests.integrations.conftest import command_rows

DATA = REPO_ROOT.parent / "shared" / "data" / "rag" / "halubench_dev.csv"


@pytest.mark.slow
def test_every_halubench_row_gets_the_commands_faithfulness_in_ragas_and_deepeval(tmp_path):
    if not DATA.is_file():
        pytest.skip(f"no shared HaluBench sample at {DATA}")
    from deepeval.test_case import LLMTestCase
    from ragas import EvaluationDataset, evaluate

    from fact_reasoner.integrations.deepeval import FRFaithfulnessMetric
    from fact_reasoner.integrations.ragas import FRFaithfulness

    table = pd.read_csv(DATA)
    samples = [
        {"user_input": r.question, "response": str(r.answer), "retrieved_contexts": [r.context]}
        for r in table.itertuples()
    ]
    rows = command_rows(tmp_path, samples, "faithfulness", "--no-cache")
    assert len(rows) == len(samples) == 100
    expected = [row["metrics"]["faithfulness"]["score"] for row in rows]
    assert all(isinstance(score, float) for score in expected), "the command scored every row"

    settings = {"use_cache": False}
    result = evaluate(
        EvaluationDataset.from_list(samples),
        metrics=[FRFaithfulness(atomizer="sentence", config=settings)],
        raise_exceptions=True,
        show_progress=False,
    )
    assert [float(v) for v in result.to_pandas()["fr_faithfulness"]] == expected
    # the verdicts in ragas's traces are the command's, claim by claim
    for trace, row in zip(result.traces, rows):
        claims = trace["fr_faithfulness"]["fr_verdicts"]["output"]["claims"]
        assert [(c["claim"], c["verdict"]) for c in claims] == [
            (d["claim"], d["verdict"]) for d in row["metrics"]["faithfulness"]["details"]
        ], json.dumps(row["question"])

    metric = FRFaithfulnessMetric(atomizer="sentence", config=settings)
    measured = [
        metric.measure(
            LLMTestCase(input=s["user_input"], actual_output=s["response"], retrieval_context=s["retrieved_contexts"])
        )
        for s in samples
    ]
    assert measured == expected
