"""Progress bars stay visible, one line per redraw, when stderr is a log file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from fact_reasoner import progress
from tests.helpers import REPO_ROOT, require_extra

ROOT = REPO_ROOT
EXAMPLE = ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"


def test_log_file_gets_whole_lines_and_the_final_count(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "LOG_INTERVAL_SECONDS", 0.0)
    log = io.StringIO()
    with progress.progress_bar(3, desc="fr2", unit="bio", file=log) as bar:
        for _ in range(3):
            bar.update(1)
    text = log.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    assert len(lines) >= 2 and all(line.startswith("fr2:") for line in lines)
    assert "3/3" in lines[-1]


def test_quiet_writes_nothing() -> None:
    log = io.StringIO()
    with progress.progress_bar(2, quiet=True, file=log) as bar:
        bar.update(2)
    assert log.getvalue() == ""


def test_runner_reports_progress_into_a_log(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from experiments import run_biographies as runner

    data = tmp_path / "bios.jsonl"
    data.write_text(json.dumps(json.loads(EXAMPLE.read_text().splitlines()[0])) + "\n")
    argv = [str(data), "--out-dir", str(tmp_path / "out"), "--nli", "precomputed", "--assessors", "fr1", "fr2"]
    assert runner.main(argv) == 0
    err = capsys.readouterr().err
    for assessor in ("fr1", "fr2"):
        assert any(line.startswith(f"{assessor}: 100%") and "1/1" in line for line in err.splitlines()), err


def _long_record(path: Path) -> Path:
    """One answer whose atoms the scripted model makes (two sentences, one atom to revise), with
    its passage."""
    record = {
        "input": "Tell me a bio of Anna Ruud.",
        "topic": "Anna Ruud",
        "output": "Anna Ruud was a Norwegian mountaineer. She climbed the Skarfjell in 1880.",
        "contexts": [{"id": "c0", "title": "Anna Ruud", "text": "Anna Ruud climbed the Skarfjell in 1880."}],
    }
    path.write_text(json.dumps(record) + "\n")
    return path


def _scripted_model(body: dict) -> str:
    asked = body["messages"][-1]["content"]
    if asked.startswith("Sentence: "):
        return json.dumps({"atoms": [asked.removeprefix("Sentence: ").split("\n")[0]]})
    return json.dumps({"atoms": ["Anna Ruud climbed the Skarfjell in 1880."]})


@pytest.mark.parametrize(("records", "shown"), [(1, True), (progress.STAGE_PROGRESS_MAX_RECORDS + 1, False)])
def test_a_run_of_few_records_shows_each_stage_within_a_record(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, records: int, shown: bool
) -> None:
    """A 12-sentence record once showed one bar at 0/1 while the model worked through it: a run
    of a few records now also shows sentences atomized, atoms revised and pairs judged; a run of
    many shows the batch bar alone."""
    require_extra("llm")
    from fact_reasoner.cli import main
    from fact_reasoner.llm.testing import ScriptedServer
    from fact_reasoner.nli.cross_encoder import shipped_model_path

    if not (shipped_model_path() / "model.onnx").is_file():
        pytest.skip("the shipped NLI model is not in this checkout")
    monkeypatch.setattr(progress, "STAGE_BAR_DELAY_SECONDS", 0.0)  # every stage's bar, however quick

    one = _long_record(tmp_path / "one.jsonl").read_text()
    data = tmp_path / "answers.jsonl"
    data.write_text("".join(one.replace("1880", str(1880 + i)) for i in range(records)))
    with ScriptedServer([_scripted_model]) as server:
        argv = [
            "--input-file",
            str(data),
            "--output-dir",
            str(tmp_path / "out"),
            "--version",
            "2",
            "--nli",
            "cross-encoder",
        ]
        argv += ["--backend", "openai", "--model", "m", "--base-url", server.base_url, "--no-cache"]
        # the atom to revise is a "She" the topic rule (#59) would resolve without the model
        argv += ["--no-topic-pronouns"]
        assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    stages = {"atomize": "2/2", "revise": "1/1", "judge": "2/2"}  # per record
    for stage, count in stages.items():
        lines = [line for line in err if line.startswith(f"{stage}:")]
        if shown:
            assert lines and count in lines[-1] and "100%" in lines[-1], (stage, err)
        else:
            assert not lines, (stage, err)


def test_a_stage_bar_waits_for_its_delay() -> None:
    """A stage that ends before the delay draws nothing (a run from the cache stays one line);
    with no delay it draws its final count."""
    for delay, drawn in ((3600.0, False), (0.0, True)):
        log = io.StringIO()
        with progress.progress_bar(4, desc="judge", unit="pair", file=log, delay=delay) as bar:
            bar.update(4)
        assert ("4/4" in log.getvalue()) is drawn, (delay, log.getvalue())


def test_outside_a_run_of_few_records_a_stage_reports_into_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "STAGE_BAR_DELAY_SECONDS", 0.0)
    assert not progress.stage_progress_active()
    with progress.stage_progress("atomize", 5, unit="sentence") as advance:
        advance(5)  # no bar, no error
    log = io.StringIO()
    with progress.stages_shown(file=log):
        assert progress.stage_progress_active()
        with progress.stage_progress("atomize", 5, unit="sentence") as advance:
            for _ in range(5):
                advance(1)
    assert not progress.stage_progress_active()
    assert log.getvalue().splitlines()[-1].startswith("atomize: 100%") and "5/5" in log.getvalue()


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal: the bar is drawn in place ("\\r" + bar, no newline)."""

    def isatty(self) -> bool:
        return True


def test_a_library_message_during_a_bar_gets_a_line_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """`[fact_reasoner] loading local model …` was written on the progress bar's line, after its
    `0/1 [00:00<?, ?record/s]` (issue #60 item 6): the library's messages went straight to stderr
    while the run's own went above the bar. Both go above it now."""
    import logging
    import sys

    from fact_reasoner.commands import configure_logging

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    root = logging.getLogger("fact_reasoner")
    handlers, level = root.handlers[:], root.level
    try:
        configure_logging(quiet=False)
        with progress.progress_bar(1, desc=None, unit="record") as bar:
            logging.getLogger("fact_reasoner.llm.local").info("loading local model m.gguf …")
            bar.update(1)
    finally:
        root.handlers[:], root.level = handlers, level
    pieces = terminal.getvalue().replace("\r", "\n").split("\n")
    assert "[fact_reasoner] loading local model m.gguf …" in pieces, terminal.getvalue()
