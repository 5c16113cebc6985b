"""Progress bars stay visible, one line per redraw, when stderr is a log file."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from fact_reasoner import progress
from tests.helpers import REPO_ROOT

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
