"""The biography runner: every assessor over a file, resumable, NLI pair cache, tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments import run_biographies as runner
from tests.helpers import REPO_ROOT

ROOT = REPO_ROOT
EXAMPLE = ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"


def test_runner_all_assessors_resume_and_tables(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    source = json.loads(EXAMPLE.read_text().splitlines()[0])
    source["cat"] = ["rare", "Europe"]
    data = tmp_path / "bios.jsonl"
    data.write_text(json.dumps(source) + "\n")
    out = tmp_path / "out"
    prefix = tmp_path / "tables" / "bios"
    argv = [str(data), "--out-dir", str(out), "--nli", "precomputed", "--tables", str(prefix), "--quiet"]
    assert runner.main(argv + ["--report", str(tmp_path / "r.html")]) == 0
    assert "Marie Curie was born in Vienna." in (tmp_path / "r.html").read_text()
    files = {p.name for p in out.glob("*.jsonl")}
    assert files == {f"bios.precomputed.{a}.jsonl" for a in runner.DEFAULT_ASSESSORS}
    rows = {a: json.loads((out / f"bios.precomputed.{a}.jsonl").read_text()) for a in runner.DEFAULT_ASSESSORS}
    assert rows["fr2"]["assessor"] == "FR2" and rows["factscore"]["assessor"] == "FactScore"
    assert rows["fr3"]["cat"] == ["rare", "Europe"]
    # every assessor scores the same atoms
    ids = {a: [x["id"] for x in row["atoms"]] for a, row in rows.items()}
    assert len({tuple(v) for v in ids.values()}) == 1
    report = json.loads((out / "bios.precomputed.run.json").read_text())
    assert report["assessors"]["fr3"]["done_now"] == 1 and report["assessors"]["fr1"]["nli_pairs_requested"] > 0
    markdown = (prefix.parent / "bios.md").read_text()
    for name in ("FactScore", "NLI-vote", "FR1", "FR2", "FR3", "granite-8b"):
        assert name in markdown
    assert (prefix.parent / "bios.csv").read_text().count("\n") == 1 + 5 * 2  # header + (all + 1 tier) × 5
    # a rerun skips everything already written
    assert runner.main(argv) == 0
    again = json.loads((out / "bios.precomputed.run.json").read_text())
    assert all(s["done_now"] == 0 and s["skipped_already_done"] == 1 for s in again["assessors"].values())
    # ... and its summary keeps the first invocation's work: totals are over both sessions
    assert len(again["sessions"]) == 2 and all(s["finished"] for s in again["sessions"])
    assert again["totals"]["fr3"]["done_now"] == 1
    assert again["totals"]["fr1"]["nli_pairs_requested"] == report["assessors"]["fr1"]["nli_pairs_requested"]
    assert all(
        len((out / f"bios.precomputed.{a}.jsonl").read_text().splitlines()) == 1 for a in runner.DEFAULT_ASSESSORS
    )
    # other settings into the same files are refused
    assert runner.main(argv + ["--paper-tables"]) == 2


def test_run_totals_sum_every_session_and_read_older_summaries(tmp_path: Path) -> None:
    killed = {
        "finished": False,
        "interrupted": False,  # SIGKILL: the summary written after its last record
        "assessors": {"fr2": {"done_now": 13, "failed": 0, "seconds": 3000.5, "nli_backend_calls": 3400}},
    }
    resumed = {
        "finished": True,
        "interrupted": False,
        "assessors": {
            "fr2": {"done_now": 1, "failed": 0, "seconds": 370.25, "nli_backend_calls": 254},
            "fr3": {"done_now": 14, "failed": 1, "seconds": 10.0},
        },
    }
    totals = runner.run_totals([killed, resumed])
    assert totals["fr2"]["done_now"] == 14 and totals["fr2"]["seconds"] == 3370.75
    assert totals["fr2"]["nli_backend_calls"] == 3654 and totals["fr3"]["failed"] == 1
    # a summary from before sessions were recorded becomes one earlier session; --overwrite forgets it
    old = tmp_path / "x.run.json"
    old.write_text(json.dumps({"assessors": killed["assessors"], "interrupted": True}))
    [session] = runner._earlier_sessions(old, overwrite=False)
    assert session["assessors"] == killed["assessors"] and session["interrupted"] and not session["finished"]
    assert runner._earlier_sessions(old, overwrite=True) == []
    old.write_text("{not json")
    assert runner._earlier_sessions(old, overwrite=False) == []


def test_run_summary_is_on_disk_after_every_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = EXAMPLE.read_text().splitlines()[:2]
    data = tmp_path / "bios.jsonl"
    data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    summary = out / "bios.precomputed.run.json"
    seen: list[int] = []
    real_assess = runner._assess

    def assess_and_look(*args, **kwargs):
        # what a SIGKILL at this moment would leave behind
        if summary.exists():
            seen.append(json.loads(summary.read_text())["assessors"].get("fr1", {}).get("done_now", 0))
        return real_assess(*args, **kwargs)

    monkeypatch.setattr(runner, "_assess", assess_and_look)
    argv = [str(data), "--out-dir", str(out), "--nli", "precomputed", "--assessors", "fr1", "--quiet"]
    assert runner.main(argv) == 0
    assert seen == [1]  # before the second record, the first is already accounted for
    assert not list(out.glob("*.partial"))


def test_the_baseline_pipelines_run_beside_fr_on_the_same_gold_atoms(tmp_path: Path) -> None:
    """FActScore-pipeline and VeriScore judged by the records' own relations (the NLI judge): the
    Eiffel record's a0–a3 are entailed and a4 contradicted → 4 / 5 for both; VeriScore's claims
    are the gold atoms; run.json counts their LLM calls (none with this judge)."""
    out = tmp_path / "out"
    prefix = tmp_path / "tables" / "bios"
    argv = [str(EXAMPLE), "--out-dir", str(out), "--nli", "precomputed", "--tables", str(prefix), "--quiet"]
    argv += ["--assessors", "fr1", "factscore-pipeline", "veriscore", "--pipeline-judge", "nli"]
    assert runner.main(argv) == 0
    for assessor, name in (
        ("factscore-pipeline", "FActScore-pipeline (nli)"),
        ("veriscore", "VeriScore (nli, given atoms)"),
    ):
        rows = [
            json.loads(x) for x in (out / f"bios_with_relations.precomputed.{assessor}.jsonl").read_text().splitlines()
        ]
        assert [r["assessor"] for r in rows] == [name, name]
        assert rows[1]["factuality_score"] == 0.8
        assert rows[1]["settings"]["pipeline"]["judge"] == "nli"
    report = json.loads((out / "bios_with_relations.precomputed.run.json").read_text())
    assert report["assessors"]["veriscore"]["llm_calls"] == 0
    assert report["assessors"]["veriscore"]["llm_calls_per_record"] == 0.0
    table = (prefix.parent / "bios.md").read_text()
    assert "| VeriScore (nli, given atoms) | 2 | 0.0 |" in table
