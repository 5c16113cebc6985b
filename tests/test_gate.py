"""The ``--fail-under`` gate (issue #25): the pure decision, then the real command's exit
statuses (pass 0, below the threshold 3, failed records 1) on records that carry their NLI
relations (no model), and ``fact-reasoner ragas --fail-under METRIC=X`` with the shipped
cross-encoder and the sentence atomizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fact_reasoner.cli import main
from fact_reasoner.gate import GATE_FAILED, evaluate_gate


def test_the_gate_by_hand():
    """Scores 0.9, 0.5, None (an abstention), NaN: mean over the two with a score = 0.7."""
    scores = {"p": [("r1", 0.9), ("r2", 0.5), ("r3", None), ("r4", float("nan"))]}
    assert evaluate_gate({"p": 0.7}, scores).passed
    failed = evaluate_gate({"p": 0.71}, scores)
    assert not failed.passed and failed.below_threshold
    assert failed.lines[0].startswith("gate FAILED: p mean 0.7000 < 0.71 (2 record(s))")
    assert [line.split()[-1] for line in failed.lines[1:]] == ["r2", "r1"]  # lowest first


def test_missing_numbers_never_pass():
    assert not evaluate_gate({"p": 0.0}, {"p": [("r1", None)]}).passed  # nothing to take a mean of
    with_failure = evaluate_gate({"p": 0.0}, {"p": [("r1", 1.0)]}, failed=["in.jsonl:2: boom"])
    assert not with_failure.passed and not with_failure.below_threshold
    assert any("could not be assessed" in line for line in with_failure.lines)


def record(topic: str, relation: str | None) -> dict:
    """One atom, one context; entailment → P ≈ 0.9 (S, precision 1), contradiction → NS
    (precision 0); None: no relations, so --nli precomputed fails the record."""
    row = {
        "input": f"Tell me about {topic}.",
        "output": f"{topic} was a physicist.",
        "topic": topic,
        "atoms": [{"id": "a0", "text": f"{topic} was a physicist."}],
        "contexts": [{"id": "c0", "text": f"{topic} was a physicist."}],
    }
    if relation is not None:
        row["relations"] = [{"source": "c0", "target": "a0", "relation": relation, "probability": 0.9}]
    return row


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def assess(tmp_path: Path, source: Path, *flags: str) -> int:
    return main(
        [
            "--input-file",
            str(source),
            "--output-dir",
            str(tmp_path / "out"),
            "--version",
            "1",
            "--nli",
            "precomputed",
            "--no-cache",
            "--overwrite",
            *flags,
        ]
    )


def test_the_command_passes_fails_and_names_the_worst_records(tmp_path, capsys):
    """Precisions 1, 1, 0: mean 2/3 = 0.667. --fail-under 0.6 passes (exit 0), 0.7 fails (exit 3)
    naming Bohr's record (line 3, precision 0) first."""
    source = write(
        tmp_path / "in.jsonl",
        [record("Curie", "entailment"), record("Meitner", "entailment"), record("Bohr", "contradiction")],
    )
    assert assess(tmp_path, source, "--fail-under", "0.6") == 0
    assert "gate passed: factuality_score mean 0.6667 ≥ 0.6" in capsys.readouterr().err
    assert assess(tmp_path, source, "--fail-under", "0.7") == GATE_FAILED == 3
    err = capsys.readouterr().err
    lowest = err.split("lowest:")[1].strip().splitlines()
    assert lowest[0].split()[:4] == ["0.0000", "line", "3:", "Bohr"]
    # the gate is run control: the output of the failing run resumes under a passing gate
    summary = json.loads((tmp_path / "out" / "in.fr1.summary.json").read_text())
    assert "gate" not in summary["settings"]


def test_failed_records_fail_the_gate(tmp_path, capsys):
    source = write(tmp_path / "in.jsonl", [record("Curie", "entailment"), record("Bohr", None)])
    assert assess(tmp_path, source, "--fail-under", "0.5") == 1
    err = capsys.readouterr().err
    assert "could not be assessed" in err and "in.jsonl:2" in err


def test_an_unknown_gate_metric_is_refused_before_anything_runs(tmp_path, capsys):
    source = write(tmp_path / "in.jsonl", [record("Curie", "entailment")])
    with pytest.raises(SystemExit) as stop:
        assess(tmp_path, source, "--fail-under", "faithfulness=0.5")
    assert stop.value.code == 2 and "factuality_score" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        assess(tmp_path, source, "--fail-under", "1.5")


def test_ragas_gate_per_metric(tmp_path, capsys):
    """One sample whose only claim the context entails: faithfulness 1. A gate at 0.5 passes;
    a second sample that the context contradicts lowers the mean below 0.9: exit 3."""
    context = "The Eiffel Tower is in Paris, France."
    good = {
        "question": "Where is the Eiffel Tower?",
        "response": "The Eiffel Tower is in Paris.",
        "retrieved_contexts": [context],
    }
    bad = {
        "question": "Where is the Eiffel Tower?",
        "response": "The Eiffel Tower is in Berlin, Germany.",
        "retrieved_contexts": [context],
    }
    source = write(tmp_path / "s.jsonl", [good, bad])

    def ragas(*flags: str) -> int:
        return main(
            [
                "ragas",
                "--input-file",
                str(source),
                "--output",
                str(tmp_path / "r.jsonl"),
                "--metrics",
                "faithfulness",
                "--nli",
                "cross-encoder",
                "--atomizer",
                "sentence",
                "--no-cache",
                "--quiet",
                "--overwrite",
                *flags,
            ]
        )

    assert ragas("--fail-under", "faithfulness=0.4") == 0
    assert ragas("--fail-under", "faithfulness=0.9") == GATE_FAILED
    err = capsys.readouterr().err
    assert "gate FAILED: faithfulness" in err and "line 2" in err.split("lowest:")[1].splitlines()[1]
    with pytest.raises(SystemExit):
        ragas("--fail-under", "0.5")  # a bare X is the factual precision: not a metric of ragas
    assert "is not a metric of this run" in capsys.readouterr().err
