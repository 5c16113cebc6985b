"""``fact-reasoner --pipeline …``: rows, settings, resume; the ``pipelines`` registry kind."""

from __future__ import annotations

import json
import subprocess
import sys

from fact_reasoner.cli import main
from fact_reasoner.settings.config import PipelineConfig
from fact_reasoner.settings.registry import available
from tests.helpers import REPO_ROOT
from tests.pipelines.scripted import BIOS


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_python_m_fact_reasoner_runs_a_baseline_pipeline_and_names_it_in_every_row(tmp_path):
    """Both bundled biographies with FActScore's rule judged by their own relations (no model)."""
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "fact_reasoner", "--pipeline", "factscore", "--pipeline-judge", "nli",
         "--input-file", str(BIOS), "--output-dir", str(out), "--quiet", "--no-cache"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    written = rows(out / "bios_with_relations.factscore.jsonl")
    assert len(written) == 2
    assert all(row["settings"]["pipeline"] == {"name": "factscore", "judge": "nli"} for row in written)
    assert all(row["pipeline"] == "factscore" and row["engine"]["algorithm"] == "factscore-nli" for row in written)
    eiffel = written[1]
    # a0–a3 entailed (0.95, 0.9, 0.96, 0.92), a4 contradicted: 4 / 5
    assert eiffel["factuality_score"] == 0.8
    assert [a["judgement"] for a in eiffel["atoms"]] == ["supported"] * 4 + ["unsupported"]


def test_resuming_with_another_pipeline_is_refused(tmp_path, capsys):
    output = tmp_path / "results.jsonl"
    common = [
        "--input-file",
        str(BIOS),
        "--output-file",
        str(output),
        "--quiet",
        "--no-cache",
        "--pipeline-judge",
        "nli",
    ]
    assert main(["--pipeline", "factscore", *common]) == 0
    capsys.readouterr()
    assert main(["--pipeline", "veriscore", *common]) == 2
    message = capsys.readouterr().err
    assert "holds results made with other settings" in message
    assert 'pipeline.name: "factscore" in the file, "veriscore" now' in message
    assert len(rows(output)) == 2  # nothing written by the refused run


def test_rows_whose_settings_differ_from_todays_are_refused_not_resumed(tmp_path, capsys):
    """Rows whose settings have no ``pipeline`` group (an unreleased spelling) are other settings:
    the run refuses to mix them in and leaves the file as it was."""
    output = tmp_path / "fr.jsonl"
    argv = ["--input-file", str(BIOS), "--output-file", str(output), "--no-cache", "--version", "1"]
    assert main([*argv, "--quiet"]) == 0
    first = rows(output)
    assert first[0]["settings"]["pipeline"] == {"name": "factreasoner"}
    old = [dict(row, settings={k: v for k, v in row["settings"].items() if k != "pipeline"}) for row in first]
    output.write_text("".join(json.dumps(row) + "\n" for row in old))
    capsys.readouterr()
    assert main(argv) != 0
    assert "other settings" in capsys.readouterr().err
    assert rows(output) == old


def test_the_pipelines_kind_lists_the_four_and_only_the_chosen_pipelines_options_count():
    assert available()["pipelines"] == ["factreasoner", "factscore", "veriscore", "factverify"]
    assert PipelineConfig().settings()["pipeline"] == {"name": "factreasoner"}
    assert PipelineConfig(pipeline="factscore", factverify_steps=5).settings()["pipeline"] == {
        "name": "factscore",
        "judge": "llm",
    }
    assert PipelineConfig(pipeline="factverify", factverify_steps=5).settings()["pipeline"]["factverify_steps"] == 5


def test_help_lists_the_pipelines_and_their_options(capsys):
    try:
        main(["--help-all"])
    except SystemExit:
        pass
    text = " ".join(capsys.readouterr().out.split())
    for expected in ("--pipeline {factreasoner,factscore,veriscore,factverify}", "--pipeline-judge {llm,nli}",
                     "--factverify-steps", "--veriscore-claims {given,extract}"):  # fmt: skip
        assert expected in text
