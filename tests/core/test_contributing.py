"""CONTRIBUTING's worked example of a new command runs as written: registered in one place, it
gets the parser, help, config file, resume and summary every command has."""

from __future__ import annotations

import json
import re
import sys
import types

import pytest

from fact_reasoner.cli import main
from fact_reasoner.commands import COMMANDS
from tests.helpers import REPO_ROOT

EXAMPLE = REPO_ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl"


@pytest.fixture
def count_command():
    text = (REPO_ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    code = re.search(r"<!-- worked example: count -->\n```python\n(.*?)```", text, re.S)
    assert code, "CONTRIBUTING.md lost its worked example"
    module = types.ModuleType("contributing_example")  # dataclasses look their module up
    sys.modules[module.__name__] = module
    exec(compile(code.group(1), "CONTRIBUTING.md", "exec"), module.__dict__)
    yield
    COMMANDS.unregister("count")
    del sys.modules[module.__name__]


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
