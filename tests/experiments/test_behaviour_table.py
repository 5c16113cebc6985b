"""``experiments.nli_training.behaviour_table``: the suite's JSON results of several judges in
one Markdown table, a ✗ wherever a threshold is missed."""

from __future__ import annotations

import json

import pytest

from experiments import behaviour
from experiments.nli_training.behaviour_table import table
from tests.experiments.test_behaviour import needs_shipped


@needs_shipped
def test_table_reads_what_the_command_writes(tmp_path):
    out = tmp_path / "suite.json"
    args = ["--nli", "cross-encoder", "--no-passages", "--per-capability", "3", "--json", str(out)]
    behaviour.main([*args, "--quiet", "--no-cache"])
    report = json.loads(out.read_text())
    # `parts` is the suite through the graph (where the thresholds apply), `judge_alone` the judge
    for view, key, what in (("graph", "parts", "through the graph"), ("judge", "judge_alone", "judge alone")):
        heldout = report[key]["heldout"]
        printed = table({"a": report, "b": report}, "heldout", view)
        lines = printed.splitlines()
        assert lines[0] == f"| capability (heldout part, {what}) | threshold | a | b |"
        rows = {line.split(" (n=")[0].lstrip("| "): line for line in lines[2:]}
        for name, scored in heldout["capabilities"].items():
            cell = f"{scored['accuracy']:.3f}" + ("" if scored["passed"] else " ✗")
            assert rows[name].endswith(f"| {cell} | {cell} |")
        verdict = "pass" if heldout["passed"] else "fail"
        assert lines[-1] == f"| **all thresholds** | | {verdict} | {verdict} |"


def test_a_missed_threshold_is_marked():
    capability = {"n": 10, "threshold": 0.9, "accuracy": 0.5, "passed": False}
    part = {
        "capabilities": {"role_swap": capability},
        "spurious_contradiction": 0.2,
        "spurious_contradiction_limit": 0.05,
        "neutral_items": 5,
        "passed": False,
    }
    printed = table({"x": {"parts": {"train": part}}}, "train")
    assert printed.startswith("| capability (train part, through the graph) |")
    assert "| role_swap (n=10) | ≥ 0.90 | 0.500 ✗ |" in printed
    assert "| spurious contradictions (n=5 neutral) | ≤ 0.05 | 0.200 ✗ |" in printed
    with pytest.raises(KeyError):
        table({"x": {"parts": {"train": part}}}, "heldout")
