"""docs/integrations.md's two examples run as the page shows them, in a fresh folder, and print
what the page says they print.

A page marks an example with ``<!-- integration example: NAME [file=FILE] … -->`` before its
``python`` block and its output with ``<!-- output: NAME -->`` before a ``text`` block. An
example without ``file=`` is run as a script and must print exactly the output; one with
``file=`` is a pytest file, written to FILE and run with pytest, whose output must hold every
line shown."""

from __future__ import annotations

import os
import subprocess
import sys

from scripts.check_documented_installs import PAGE
from scripts.check_documented_installs import examples as page_examples
from tests.helpers import REPO_ROOT


def examples() -> dict[str, tuple[str | None, str, str]]:
    """NAME → (file or None, code, the output the page shows)."""
    return page_examples(PAGE.read_text(encoding="utf-8"))


def run(argv: list[str], folder) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), HOME=str(folder / "home"), COLUMNS="200")
    env.update(RAGAS_DO_NOT_TRACK="true", DEEPEVAL_TELEMETRY_OPT_OUT="1")  # as the page says, for the plugin
    return subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def test_the_page_has_both_examples_with_their_output():
    assert sorted(examples()) == ["deepeval", "ragas"]


def test_the_ragas_example_prints_what_the_page_shows(tmp_path):
    _, code, shown = examples()["ragas"]
    done = run([sys.executable, "-c", code], tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == shown


def test_the_deepeval_example_passes_the_grounded_answer_and_fails_the_other(tmp_path):
    file, code, shown = examples()["deepeval"]
    assert file == "test_rag.py"
    (tmp_path / file).write_text(code, encoding="utf-8")
    done = run([sys.executable, "-m", "pytest", file, "-q", "-p", "no:cacheprovider"], tmp_path)
    assert done.returncode == 1, done.stdout[-3000:]  # one test failed, as the page says
    for line in shown.splitlines():
        assert line in done.stdout, line
