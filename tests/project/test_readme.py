"""The README is short and true: its Python example prints what the README says it prints, its
links lead to files that exist, and it stays a front page (the manual is the site in ``docs/``)."""

from __future__ import annotations

import re

import pytest

from tests.helpers import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def test_the_python_example_prints_what_the_readme_shows():
    """Run as a user runs it (a fresh interpreter, Python's own logging): what it prints on stdout
    and on stderr is what the README shows; it once printed a warning the README did not have
    (issue #60 item 6)."""
    import subprocess
    import sys

    code = re.search(r"## In Python\n.*?```python\n(.*?)```", README, re.S)
    shown = re.search(r"```python\n.*?```\n\nprints[^\n]*\n\n```text\n(.*?)```", README, re.S)
    warned = re.search(r"```python\n.*?```\n\nprints.*?```\n\nand on stderr.*?\n\n```text\n(.*?)```", README, re.S)
    assert code and shown, "the README lost its Python example or the output it shows"
    # the example opens a bundled file by its relative path
    done = subprocess.run(
        [sys.executable, "-c", code.group(1)], cwd=REPO_ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown.group(1)
    assert done.stderr == (warned.group(1) if warned else "")


def test_the_readme_links_to_files_that_exist():
    links = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README)
    local = [link for link in links if "://" not in link]
    assert "docs/getting-started.md" in local
    missing = [link for link in local if not (REPO_ROOT / link).exists()]
    assert not missing, f"README links to missing files: {missing}"


def test_the_readme_stays_a_front_page():
    assert len(README.splitlines()) <= 200
    # the two set-up commands, as the issue tracker and CI know them
    assert "bash scripts/run_tests.sh\n" in README
    assert '.venv/bin/pip install -q -e ".[llm,nli]" && .venv/bin/python -m fact_reasoner --version 3' in README


@pytest.mark.slow
def test_the_quick_start_prints_what_the_readme_shows(tmp_path):
    """The README's first command with the embedded model: the claims it prints (stdout) and the
    summary's judge, graph and counts (stderr) are those the README shows."""
    import subprocess
    import sys

    shown = re.search(r"It ends by showing each claim.*?```text\n(.*?)```", README, re.S)
    assert shown, "the README lost the quick start's output"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fact_reasoner",
            "--version",
            "3",
            "--input-file",
            "fact_reasoner/examples/short_answer.jsonl",
            "--output-dir",
            str(tmp_path / "out"),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
    )
    lines = shown.group(1).splitlines()
    claims = lines[: lines.index(next(line for line in lines if line.startswith("results:")))]
    assert done.stdout.splitlines() == claims
    for line in lines[len(claims) + 1 :]:
        if line.strip().split()[0] not in ("seconds",):
            assert line in done.stderr.splitlines(), line
