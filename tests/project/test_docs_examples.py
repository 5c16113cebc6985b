"""Every command's documented example runs as the documentation shows it (#44.6).

A page marks the example of a command with ``<!-- example: NAME -->`` before its ``bash`` block:
``correct`` in docs/corrections.md, ``ragas`` in docs/rag-metrics.md, ``index`` in
docs/retrieval.md, ``report`` in docs/experiments.md. Each command of the block is run as a
user would type it, from a fresh folder that has the repository's ``fact_reasoner`` (so the
shipped inputs are where the docs say), and must succeed; then what the docs say it gives is
checked. The example in each command's ``--help`` is the documented one. ``correct`` runs the
embedded language model (slow); the others need no language model. (The main command's quick
start is run by ``core/test_quick_start_install.py``; ``serve``'s by ``server/``.)
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from fact_reasoner.commands import command
from fact_reasoner.settings.config import default_models_dir
from tests.helpers import REPO_ROOT, require_extra

DOCS = REPO_ROOT / "docs"
MARK = re.compile(r"<!-- example: (\w+)[^>]*-->\n```bash\n(.*?)```", re.S)
#: the commands with a documented example, and the page that has it
PAGES = {"correct": "corrections.md", "ragas": "rag-metrics.md", "index": "retrieval.md", "report": "experiments.md"}


def commands(block: str) -> list[list[str]]:
    """The command lines of a ``bash`` block: continuations joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", block)
    return [words for line in joined.splitlines() if (words := shlex.split(line, comments=True))]


def documented() -> dict[str, list[list[str]]]:
    """Each marked example of the docs: its command lines, by command."""
    found: dict[str, list[list[str]]] = {}
    for page in sorted(DOCS.glob("*.md")):
        for name, block in MARK.findall(page.read_text(encoding="utf-8")):
            assert name not in found, f"two examples of {name}"
            assert PAGES.get(name) == page.name, f"the example of {name} is in {page.name}"
            found[name] = commands(block)
    return found


def test_each_command_has_one_documented_example_and_its_help_shows_it():
    examples = documented()
    assert sorted(examples) == sorted(PAGES)
    for name, lines in examples.items():
        assert all(words[0] == "fact-reasoner" for words in lines), name
        joined = re.sub(r"\\\n\s*", " ", command(name).epilog)
        shown = [shlex.split(line) for line in map(str.strip, joined.splitlines()) if line.startswith("fact-reasoner ")]
        assert shown and all(words in lines for words in shown), (name, shown)


def run_example(name: str, folder: Path) -> list[subprocess.CompletedProcess]:
    """Run the documented example of ``name`` in ``folder`` (which gets a link to the package),
    each command as typed; the model-call cache in the folder, the models where they are."""
    (folder / "fact_reasoner").symlink_to(REPO_ROOT / "fact_reasoner")
    env = dict(
        os.environ,
        PYTHONPATH=str(REPO_ROOT),
        FACT_REASONER_CACHE=str(folder / "cache"),
        FACT_REASONER_MODELS=str(default_models_dir()),
        COLUMNS="100",
    )
    done = []
    for words in documented()[name]:
        argv = [sys.executable, "-m", "fact_reasoner", *words[1:]]
        result = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=1800)
        assert "Traceback" not in result.stderr, result.stderr
        assert result.returncode == 0, (shlex.join(words), result.stderr[-3000:])
        done.append(result)
    return done


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_ragas_example_runs_and_does_not_score_the_non_answer(tmp_path):
    require_extra("embeddings")  # the cross-encoder: what the [nli] extra installs
    [done] = run_example("ragas", tmp_path)
    written = rows(tmp_path / "rag.jsonl")
    assert len(written) == 4 and (tmp_path / "rag.csv").exists()
    assert [row.get("not_answerable") for row in written[:3]] == [None, None, None]
    assert written[3]["not_answerable"] == "the response has no words ('...')"
    assert written[3]["metrics"]["faithfulness"]["score"] is None
    # the third sample has no reference: what needs one is not computed, and says so
    assert written[2]["metrics"]["context_precision"]["score"] is None
    assert "no reference" in written[2]["metrics"]["context_precision"]["reason"]
    assert "not answerable: line 4: the response has no words ('...') (not scored)" in done.stderr


def test_the_index_example_builds_a_store_and_its_contexts_name_their_documents(tmp_path):
    require_extra("retrieval")
    require_extra("embeddings")  # the cross-encoder: what the [nli] extra installs
    run_example("index", tmp_path)
    written = rows(tmp_path / "out" / "bios_without_contexts.fr3.jsonl")
    assert len(written) == 2
    sources = {context["source"] for row in written for context in row["contexts"]}
    assert sources and all(source.startswith("corpus.jsonl#") for source in sources), sources
    assert {context["retrieval_source"] for row in written for context in row["contexts"]} == {"bm25"}


def test_the_report_example_writes_the_page_of_both_runs(tmp_path):
    run_example("report", tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert "FR2" in page and "FR3" in page and "Marie Curie" in page and "Eiffel Tower" in page


@pytest.mark.slow
def test_the_correct_example_corrects_both_records(tmp_path):
    """The example of issue #44: it ended `corrected 0, failed 2` when the claims of the
    pronoun sentences were attached to the first sentence. With the embedded model."""
    require_extra("llm")
    require_extra("embeddings")  # the cross-encoder: what the [nli] extra installs
    run_example("correct", tmp_path)
    written = rows(tmp_path / "out" / "bios_with_relations.fr2.corrected.jsonl")
    assert [row["correction"]["status"] for row in written] == ["corrected", "corrected"], [
        row["correction"].get("reason") for row in written
    ]
    texts = [row["correction"]["plain_text"] for row in written]
    assert "Vienna" not in texts[0] and "penicillin" not in texts[0] and "1500" not in texts[1], texts
    assert (tmp_path / "correct.html").exists()
