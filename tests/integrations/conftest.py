"""The integrations' tests need ragas and DeepEval: they run in .venv-integrations
(scripts/setup_integrations_env.sh, called by scripts/run_tests.sh), never in the main suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import require_extra

require_extra("ragas", "deepeval")

#: the samples the integrations are run on: the package's own RAG examples: a supported answer, a
#: contradicted one ("built in 1500"), one without a reference, a non-answer ("...")
EXAMPLES = Path(__file__).resolve().parents[2] / "fact_reasoner" / "examples" / "rag_samples.jsonl"


@pytest.fixture(scope="session")
def samples() -> list[dict]:
    """The example samples under ragas's field names."""
    rows = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [
        {
            "user_input": row["question"],
            "response": row["response"],
            "reference": row.get("reference"),
            "retrieved_contexts": row["retrieved_contexts"],
        }
        for row in rows
    ]


def command_rows(tmp_path: Path, rows: list[dict], metrics: str, *extra: str) -> list[dict]:
    """The rows ``fact-reasoner ragas`` writes for ``rows`` (one per sample, in order), run in
    this process with the sentence atomizer."""
    from fact_reasoner.cli import main

    source = tmp_path / "samples.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    output = tmp_path / "samples.ragas.jsonl"
    status = main(
        ["ragas", "--input-file", str(source), "--metrics", metrics, "--atomizer", "sentence"]
        + ["--output", str(output), "--quiet", "--overwrite", *extra]
    )
    written = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    assert status in (0, 1) and len(written) <= len(rows)
    return written
