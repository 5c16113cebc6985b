"""docs/integrations.md's installs are run as written by ``scripts/check_documented_installs.py``
(``scripts/run_tests.sh``, after the integrations' tests): here, what it reads from the page and
which scenarios it runs; the runs themselves need fresh environments and the package index."""

from __future__ import annotations

import tomllib

from scripts.check_documented_installs import PAGE, examples, install_commands, scenarios
from tests.helpers import REPO_ROOT


def test_the_checker_runs_the_pages_own_commands_alone_and_in_either_order():
    page = PAGE.read_text(encoding="utf-8")
    commands = install_commands(page)
    assert commands == {"ragas": 'pip install -e ".[ragas]"', "deepeval": 'pip install -e ".[deepeval]"'}
    assert scenarios(sorted(commands)) == {
        "deepeval": ("deepeval",),
        "ragas": ("ragas",),
        "deepeval-then-ragas": ("deepeval", "ragas"),
        "ragas-then-deepeval": ("ragas", "deepeval"),
    }
    assert sorted(examples(page)) == ["deepeval", "ragas"]  # each library's example is run where it is installed


def test_the_bound_that_keeps_both_installs_working_is_on_the_ragas_extra():
    """datasets from 5.1 imports huggingface_hub.utils.httpx (huggingface_hub >= 1.31, so click
    >= 8.4, which DeepEval refuses): without the bound in the extra itself, ``.[deepeval]`` after
    ``.[ragas]`` broke ``import ragas`` (the pins of constraints-integrations.txt hid it)."""
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "datasets<5.1" in extras["ragas"]
