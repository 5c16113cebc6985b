"""The version is written once (fact_reasoner/version.py) and the package ships its type marker."""

import importlib.metadata
import tomllib

import pytest

import fact_reasoner
from fact_reasoner.retrieval.http import user_agent
from fact_reasoner.version import __version__
from tests.helpers import REPO_ROOT

ROOT = REPO_ROOT
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_pyproject_reads_the_version_from_the_package():
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "fact_reasoner.version.__version__"}
    assert fact_reasoner.__version__ == __version__


def test_the_installed_metadata_agrees():
    try:
        installed = importlib.metadata.version("fact-reasoner-offline")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the package is not installed (run from a checkout)")
    assert installed == __version__


def test_the_user_agent_names_the_version(monkeypatch):
    monkeypatch.delenv("FACT_REASONER_USER_AGENT", raising=False)
    assert user_agent().startswith(f"fact-reasoner-offline/{__version__} ")


def test_the_type_marker_ships():
    assert (ROOT / "fact_reasoner" / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["fact_reasoner"]
