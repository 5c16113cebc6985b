"""CONTRIBUTING's worked examples run as written, each registered in one place: a new command gets
the parser, help, config file, resume and summary every command has; a new NLI backend its
`--nli` name and its own setting (flag, config, output settings); a new metric its name in
`make_metric` and `fact-reasoner ragas --metrics`."""

from __future__ import annotations

import json
import re
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from pydantic import ValidationError

from fact_reasoner.cli import main
from fact_reasoner.commands import COMMANDS
from fact_reasoner.metrics.base import make_metric
from fact_reasoner.metrics.catalog import METRICS
from fact_reasoner.nli.factory import NLI_BACKENDS
from fact_reasoner.settings.config import PipelineConfig
from tests.helpers import REPO_ROOT

EXAMPLE = REPO_ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"


def _run_example(name: str) -> str:
    """Execute CONTRIBUTING's worked example ``name`` as a module of its own; return the module's name."""
    text = (REPO_ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    code = re.search(rf"<!-- worked example: {name} -->\n```python\n(.*?)```", text, re.S)
    assert code, f"CONTRIBUTING.md lost its worked example {name!r}"
    module = types.ModuleType(f"contributing_{name}")  # dataclasses look their module up
    sys.modules[module.__name__] = module
    exec(compile(code.group(1), "CONTRIBUTING.md", "exec"), module.__dict__)
    return module.__name__


@contextmanager
def _worked_example(name: str, registry: Any, registered: str) -> Iterator[None]:
    """CONTRIBUTING's example ``name`` run; afterwards what it ``registered`` is forgotten."""
    module = _run_example(name)
    try:
        yield
    finally:
        registry.unregister(registered)
        del sys.modules[module]


@pytest.fixture
def count_command():
    with _worked_example("count", COMMANDS, "count"):
        yield


@pytest.fixture
def word_overlap_nli():
    with _worked_example("nli", NLI_BACKENDS, "word-overlap"):
        yield


@pytest.fixture
def word_recall_metric():
    with _worked_example("metric", METRICS, "reference_word_recall"):
        yield


def test_the_worked_example_of_a_command_runs(count_command, tmp_path, capsys):
    out = tmp_path / "counts.jsonl"
    assert main(["count", "--input-file", str(EXAMPLE), "--output", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    expected = [len(json.loads(line)["atoms"]) for line in EXAMPLE.read_text().splitlines()]
    assert [row["atoms"] for row in rows] == expected and [row["source_line"] for row in rows] == [1, 2]
    assert "counted: 2 record(s)" in capsys.readouterr().err
    assert main(["count", "--input-file", str(EXAMPLE), "--output", str(out)]) == 0  # resumes
    assert "resuming: 2 record(s) already in" in capsys.readouterr().err
    assert len(out.read_text().splitlines()) == 2
    # what every command has: the short help, the config file, the list of commands
    with pytest.raises(SystemExit):
        main(["count", "--help"])
    assert "usage: fact-reasoner count --input-file FILE" in capsys.readouterr().out
    config = tmp_path / "count.toml"
    config.write_text(f'[count]\ninput_file = "{EXAMPLE}"\noutput = "{out}"\n')
    assert main(["count", "--config", str(config), "--quiet"]) == 0
    assert main(["count", "--config", str(config), "--print-config"]) == 0
    assert f'[count]\ninput_file = "{EXAMPLE}"' in capsys.readouterr().out
    assert "count" in COMMANDS.available()


def test_the_worked_example_of_an_nli_backend_runs(word_overlap_nli, tmp_path, capsys):
    config = PipelineConfig(nli="word-overlap", overlap_threshold=0.6)
    assert config.settings()["models"]["overlap_threshold"] == 0.6
    assert "overlap_threshold" not in PipelineConfig(nli="llm").settings()["models"]  # only when it runs
    with pytest.raises(ValidationError, match="overlap_threshold"):
        PipelineConfig(nli="word-overlap", overlap_threshold=2)

    scores = {}
    for threshold in ("0.01", "1"):
        out = tmp_path / f"overlap_{threshold}.jsonl"
        argv = ["assess", "--input-file", str(EXAMPLE), "--output-file", str(out), "--nli", "word-overlap"]
        assert main(argv + ["--overlap-threshold", threshold, "--no-cache", "--quiet"]) == 0
        rows = [json.loads(line) for line in out.read_text().splitlines()]
        assert len(rows) == 2 and all(row["settings"]["models"]["nli"] == "word-overlap" for row in rows)
        assert rows[0]["settings"]["models"]["overlap_threshold"] == float(threshold)
        scores[threshold] = sum(row["factuality_score"] for row in rows)
    # the toy judge decided: almost every pair is entailed at 0.01, hardly any at 1
    assert scores["0.01"] > scores["1"]
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["assess", "--help-all"])
    assert "--overlap-threshold" in capsys.readouterr().out


def test_the_worked_example_of_a_metric_runs(word_recall_metric, tmp_path):
    sample = {"question": "Where was Marie Curie born?", "response": "She was born in Warsaw", "reference": "Warsaw"}
    assert make_metric("reference_word_recall").score(sample).score == 1.0
    assert make_metric("reference-word-recall").score(sample | {"reference": "in Paris"}).score == 0.5
    source = tmp_path / "samples.jsonl"
    source.write_text(json.dumps(sample) + "\n", encoding="utf-8")
    out = tmp_path / "scores.jsonl"
    argv = ["ragas", "--input-file", str(source), "--output", str(out), "--metrics", "reference_word_recall"]
    assert main(argv + ["--no-cache", "--quiet"]) == 0
    [row] = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["metrics"]["reference_word_recall"]["score"] == 1.0
