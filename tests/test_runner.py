"""The dataset run called from Python (fact_reasoner.runner) and how the command line turns each
kind of error into one line and an exit status."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest

from fact_reasoner import cli
from fact_reasoner.errors import InputError, RecordFailed, SettingsError, SettingsMismatch, SetupError
from fact_reasoner.reasoner import FactReasoner
from fact_reasoner.runner import AssessDataset, RunReport, run_dataset
from fact_reasoner.settings.config import PipelineConfig
from tests.helpers import REPO_ROOT

ROOT = REPO_ROOT
EXAMPLE = ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"
#: No model anywhere: the example records carry atoms, contexts and NLI relations.
OFFLINE = PipelineConfig().with_options(nli="precomputed", use_cache=False)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def mixed_input(tmp_path: Path) -> Path:
    """Line 1 and 3: the two example records; line 2: not JSON; line 4: a record without atoms,
    which fails on its own (the openai backend is named without a model to atomize it; it
    carries its — empty — relations, as ``--nli precomputed`` requires, so atomizing is what
    fails)."""
    good = EXAMPLE.read_text().splitlines()
    lacking_atoms = json.dumps(
        {
            "input": "Who was Marie Curie?",
            "output": "A physicist.",
            "contexts": [{"id": "c0", "text": "Marie Curie was a physicist."}],
            "relations": [],
        }
    )
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([good[0], '{"input": "x"', good[1], lacking_atoms]) + "\n")
    return path


def counted(report: RunReport) -> int:
    return report.done + report.skipped + report.failed + report.not_run


def test_a_run_reports_what_happened_to_every_line(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="fact_reasoner.runner")
    monkeypatch.delenv("FACT_REASONER_MODEL", raising=False)
    source = mixed_input(tmp_path)
    assessor = FactReasoner(OFFLINE.with_options(backend="openai"))
    report = run_dataset(
        AssessDataset(assessor=assessor, input_file=source, output_dir=tmp_path / "out", progress=False)
    )

    assert report.output_file == tmp_path / "out" / "mixed.fr3.jsonl"
    assert (report.records, report.done, report.skipped, report.failed, report.not_run) == (4, 2, 0, 2, 0)
    assert counted(report) == report.records and report.completed and report.kept == 2
    unreadable, failed = report.failures
    assert (unreadable.line, failed.line) == (2, 4)
    assert unreadable.message.startswith("invalid JSON") and "needs a model" in failed.message
    assert [row["source_line"] for row in read_jsonl(report.output_file)] == [1, 3]
    assert [e["line"] for e in read_jsonl(report.errors_file)] == [2, 4]
    assert report.summary is not None and report.summary["num_records"] == 2
    assert report.summary["failed_records"] == 2
    assert json.loads(report.summary_file.read_text())["num_records"] == 2
    # the messages of the run are logged (the command line prints them), not printed
    logged = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "fact_reasoner.runner"]
    assert logged == [
        ("ERROR", f"error: {unreadable}"),
        ("ERROR", f"error: {failed}"),
        # the example's first record gives one pair twice: the run's end names it (#51)
        (
            "WARNING",
            "warning: 1 record has relations FR3 does not use (counted in counters.ignored_relations_*): "
            "line 1 (Marie Curie): 1 duplicate",
        ),
    ]

    again = run_dataset(
        AssessDataset(assessor=assessor, input_file=source, output_dir=tmp_path / "out", progress=False)
    )
    assert (again.done, again.skipped, again.failed) == (0, 2, 2)  # the failures are tried again
    assert len(read_jsonl(again.output_file)) == 2


def test_an_interrupted_run_resumes_where_it_stopped(tmp_path, monkeypatch, caplog):
    assessor = FactReasoner(OFFLINE)
    real_assess = FactReasoner.assess
    calls = []

    def interrupted_at_the_second_record(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # what Ctrl-C (or SIGTERM, through the runner) raises
        return real_assess(self, *args, **kwargs)

    monkeypatch.setattr(FactReasoner, "assess", interrupted_at_the_second_record)
    first = run_dataset(AssessDataset(assessor=assessor, input_file=EXAMPLE, output_dir=tmp_path, progress=False))
    assert first.interrupted and not first.completed
    assert (first.done, first.failed, first.not_run, first.kept) == (1, 0, 1, 1)
    assert first.summary is not None and first.summary["interrupted"] is True

    monkeypatch.setattr(FactReasoner, "assess", real_assess)
    with caplog.at_level(logging.INFO, logger="fact_reasoner.runner"):
        second = run_dataset(AssessDataset(assessor=assessor, input_file=EXAMPLE, output_dir=tmp_path, progress=False))
    assert f"resuming: 1 record(s) already in {second.output_file}" in caplog.messages
    assert second.completed and (second.done, second.skipped, second.kept) == (1, 1, 2)
    rows = read_jsonl(second.output_file)
    assert [r["source_line"] for r in rows] == [1, 2] and len({r["record_key"] for r in rows}) == 2
    assert second.summary is not None and second.summary["num_records"] == 2


def test_a_stage_lost_during_the_run_stops_it_with_a_report(tmp_path, monkeypatch):
    def lost(self, *args, **kwargs):
        raise SetupError("the model went away")

    monkeypatch.setattr(FactReasoner, "assess", lost)
    report = run_dataset(
        AssessDataset(assessor=FactReasoner(OFFLINE), input_file=EXAMPLE, output_dir=tmp_path, progress=False)
    )
    assert report.stopped_by == "the model went away" and not report.completed
    assert (report.done, report.failed, report.not_run) == (0, 0, 2)
    assert report.summary is None and not report.summary_file.exists()


def test_problems_found_before_any_record_raise(tmp_path):
    assessor = FactReasoner(OFFLINE)
    with pytest.raises(InputError, match="input file not found"):
        run_dataset(
            AssessDataset(assessor=assessor, input_file=tmp_path / "absent.jsonl", output_dir=tmp_path, progress=False)
        )
    with pytest.raises(SettingsError, match="unknown option no_such_option"):
        run_dataset(
            AssessDataset(
                assessor=FactReasoner(OFFLINE.with_options(engine_options={"no_such_option": 1})),
                input_file=EXAMPLE,
                output_dir=tmp_path,
                progress=False,
            )
        )
    assert not (tmp_path / "bios_with_relations.fr3.jsonl").exists()  # refused before any output
    run_dataset(AssessDataset(assessor=assessor, input_file=EXAMPLE, output_dir=tmp_path, progress=False))
    with pytest.raises(SettingsMismatch, match=r'graph.factor_tables: "priors" in the file, "paper" now'):
        run_dataset(
            AssessDataset(
                assessor=FactReasoner(OFFLINE.with_options(factor_tables="paper")),
                input_file=EXAMPLE,
                output_dir=tmp_path,
                progress=False,
            )
        )


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


OFFLINE_FLAGS = ["--nli", "precomputed", "--no-cache", "--quiet"]


def test_main_prints_each_error_kind_as_one_line_with_its_exit_status(tmp_path, capsys, monkeypatch):
    # InputError: the input cannot be read at all
    assert cli.main(["--input-file", str(tmp_path / "absent.jsonl"), *OFFLINE_FLAGS]) == 2
    assert _one_line(capsys) == f"error: input file not found: {tmp_path / 'absent.jsonl'}"

    # SettingsError: an engine option the engine does not accept
    argv = ["--input-file", str(EXAMPLE), "--output-dir", str(tmp_path / "a"), *OFFLINE_FLAGS]
    assert cli.main([*argv, "--engine-option", "no_such_option=1"]) == 2
    assert _one_line(capsys).startswith("error: engine 'native': unknown option no_such_option")

    # SettingsMismatch: resuming into a file made with other settings
    assert cli.main(argv) == 0
    capsys.readouterr()
    assert cli.main([*argv, "--paper-tables"]) == 2
    assert "holds results made with other settings" in _one_line(capsys)

    # OutputError with file:line: the output was damaged in the middle
    output = tmp_path / "a" / "bios_with_relations.fr3.jsonl"
    lines = output.read_text().splitlines()
    output.write_text("\n".join(["{broken", *lines]) + "\n")
    assert cli.main(argv) == 2
    assert _one_line(capsys).startswith(f"error: {output}:1: not valid JSON and not the last line")

    # InputError with file:line: a --contexts passage that cannot be read
    contexts = tmp_path / "ctx.jsonl"
    contexts.write_text('{"text": "fine"}\n{"title": "no text"}\n')
    single = ["--query", "q", "--response", "r", "--contexts", str(contexts), *OFFLINE_FLAGS]
    assert cli.main(single) == 2
    assert _one_line(capsys) == f"error: {contexts}:2: text: Field required"

    # RecordFailed: the one record of a single-response run could not be assessed: exit 1
    def failed(self, *args, **kwargs):
        raise RecordFailed("NLI: 3 of 3 pair(s) could not be judged")

    monkeypatch.setattr(FactReasoner, "assess", failed)
    contexts.write_text('{"text": "fine"}\n')
    assert cli.main(single) == 1
    assert _one_line(capsys) == "error: NLI: 3 of 3 pair(s) could not be judged"

    # SetupError: a command whose optional parts are not installed
    monkeypatch.setattr(cli.COMMANDS.entry("index"), "factory", "fact_reasoner.no_such_module:Index")
    assert cli.main(["index", "--help"]) == 2
    assert _one_line(capsys).startswith("error: `index` needs optional parts that are not installed")


def test_a_real_process_exits_with_one_line(tmp_path):
    absent = tmp_path / "absent.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "fact_reasoner", "--input-file", str(absent), *OFFLINE_FLAGS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"error: input file not found: {absent}\n"


def test_the_record_service_gives_the_row_the_dataset_run_writes(tmp_path):
    """What ``serve`` will do with each request: the same job, item by item, stages loaded once."""
    from fact_reasoner.io import NumberedRecord, read_records
    from fact_reasoner.runner import AssessDataset, RecordService

    assessor = FactReasoner(OFFLINE)
    report = run_dataset(AssessDataset(assessor=assessor, input_file=EXAMPLE, output_dir=tmp_path, progress=False))
    records = [r for r in read_records(EXAMPLE) if isinstance(r, NumberedRecord)]
    job = AssessDataset(assessor=assessor, input_file=EXAMPLE, output_file=report.output_file)
    service = RecordService(job, records)
    served = [service.row(record) for record in records]
    written = read_jsonl(report.output_file)
    for row in served + written:
        row.pop("timings")
        row["engine"].pop("seconds")
    assert served == written and service.state is assessor  # the stages built once, here


def test_a_run_that_writes_nothing_leaves_no_empty_output_but_keeps_one_it_found(tmp_path, capsys):
    """Every record failed: the run once left an empty ``.fr3.jsonl`` while it said "no record
    written to" it. The output it created is removed and the summary says so; an output that
    was there before (a resumed run's) is kept as it was, even an empty one."""
    source = tmp_path / "no_relations.jsonl"
    source.write_text(json.dumps({"input": "q", "output": "An answer.", "contexts": ["A passage."]}) + "\n")
    out = tmp_path / "out"
    argv = ["--input-file", str(source), "--output-dir", str(out), "--nli", "precomputed", "--no-cache"]
    assert cli.main(argv) == 1
    output = out / "no_relations.fr3.jsonl"
    assert not output.exists()
    assert f"results: no record written, so {output} was not created" in capsys.readouterr().err.splitlines()

    output.write_text("")  # an output a user (or an earlier run) left there
    assert cli.main(argv) == 1
    assert output.exists() and output.read_text() == ""
    assert f"results: no record written to {output}" in capsys.readouterr().err.splitlines()
