"""The report tells runs apart: two runs of one FR version are labelled by their judge and the
settings that differ, never merged; a file it cannot show is named with the command that can."""

from __future__ import annotations

import json
from pathlib import Path

from fact_reasoner.cli import main
from fact_reasoner.report.rows import group_rows, judge_of
from tests.helpers import REPO_ROOT

EXAMPLE = REPO_ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"


def _row(key: str, nli: str, **graph: object) -> dict:
    return {
        "record_key": key,
        "version": 2,
        "atoms": [],
        "settings": {"graph": {"version": 2, "use_priors": False, **graph}, "models": {"nli": nli}},
    }


def test_runs_of_one_version_are_labelled_by_judge_and_the_settings_that_differ():
    groups = group_rows(
        [
            ("a/bios.fr2", _row("k1", "cross-encoder")),
            ("b/bios.fr2", _row("k1", "align")),
            ("c/bios.fr2", _row("k1", "align", use_priors=True)),
            (
                "bios.fr3",
                {**_row("k1", "auto"), "version": 3, "settings": {"models": {"nli": "auto", "nli_auto": "llm"}}},
            ),
        ]
    )
    assert list(groups) == [
        "FR2 [judge=align, graph.use_priors=false]",
        "FR2 [judge=align, graph.use_priors=true]",
        "FR2 [judge=cross-encoder, graph.use_priors=false]",
        "FR3",
    ]
    assert judge_of(groups["FR3"][0]) == "llm"  # `auto` named by what it stood for
    same = group_rows([("x/bios.fr2", _row("k1", "align")), ("y/bios.fr2", _row("k1", "align"))])
    assert list(same) == ["FR2 [x/bios.fr2]", "FR2 [y/bios.fr2]"]  # same settings: the files tell them apart


def test_the_report_of_two_runs_with_one_file_name_keeps_them_apart(tmp_path: Path):
    for folder, extra in (("plain", []), ("paper", ["--paper-tables"])):
        argv = ["--input-file", str(EXAMPLE), "--output-dir", str(tmp_path / folder), "--version", "2"]
        assert main([*argv, "--nli", "precomputed", "--no-cache", "--quiet", *extra]) == 0
    files = [str(tmp_path / folder / "bios_with_relations.fr2.jsonl") for folder in ("plain", "paper")]
    assert main(["report", *files, "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "FR2 [graph.factor_tables=priors] (judge: precomputed)" in page
    assert "FR2 [graph.factor_tables=paper] (judge: precomputed)" in page
    assert "2 responses" in page  # each response once, with a column per run


def test_the_report_says_which_command_shows_ragas_results(tmp_path: Path, capsys):
    results = tmp_path / "s.ragas.jsonl"
    results.write_text(json.dumps({"sample_key": "k#1", "source_line": 1, "metrics": {}, "settings": {}}) + "\n")
    assert main(["report", str(results), "-o", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {results}:1: a result of `fact-reasoner ragas`")
    assert "rerun the same ragas command with --csv FILE" in err and len(err.splitlines()) == 1
