"""The documentation site cannot drift from the code: its command-line reference holds every flag
of every command with its key in a ``--config`` file, the MkDocs hook puts that page into the
site, every API page names a module that exists, and every page the navigation lists is there.
(``scripts/run_tests.sh`` builds the whole site with ``mkdocs build --strict``.)"""

from __future__ import annotations

import argparse
import importlib
import re

import pytest

from fact_reasoner.commands import COMMANDS, command
from fact_reasoner.settings.cli_options import config_flags
from scripts.cli_reference import PAGE, cli_reference
from tests.helpers import REPO_ROOT, require_extra

DOCS = REPO_ROOT / "docs"


@pytest.fixture(scope="module")
def reference() -> str:
    return cli_reference()


def _section(reference: str, name: str) -> str:
    """The part of the reference about one command (up to the next command or the settings)."""
    match = re.search(rf"^## `fact-reasoner {name}` .*?(?=^## )", reference, re.S | re.M)
    assert match, f"the reference has no section for `{name}`"
    return match.group(0)


@pytest.mark.parametrize("name", COMMANDS.available())
def test_every_flag_of_every_command_is_in_the_reference(reference, name):
    parser = command(name).build_parser()
    own = _section(reference, name)
    settings_dests = getattr(parser, "settings_dests", set())
    flags = {flag.dest: flag for flag in config_flags()}
    for action in parser._actions:
        if action.help == argparse.SUPPRESS:
            continue
        for spelling in action.option_strings or [action.metavar or action.dest]:
            assert f"`{spelling}" in reference, f"{name}: {spelling} is not in the reference"
        if action.dest in settings_dests:
            flag = flags[action.dest]
            assert f"`[{flag.group}] {flag.field}`" in reference, f"{name}: no file key for {action.option_strings}"
            assert f"(#settings-{flag.group})" in own, f"{name} does not link to the settings it takes"
        elif action.option_strings:
            assert action.option_strings[0] in own, f"{name}: its own option {action.option_strings[0]} is elsewhere"


def test_every_setting_with_a_flag_is_listed_once_with_its_key(reference):
    for flag in config_flags():
        if flag.visible:
            assert reference.count(f"| `[{flag.group}] {flag.field}` |") == 1, f"{flag.group}.{flag.field}"


def test_the_reference_does_not_name_a_flag_the_parsers_lack(reference):
    known = {"--help-all"}
    for name in COMMANDS.available():
        for action in command(name).build_parser()._actions:
            known.update(action.option_strings)
    named = set(re.findall(r"`(--?[A-Za-z][\w-]*)", reference.split("## Settings")[1]))
    assert named <= known, f"the settings section names flags no command has: {sorted(named - known)}"


def test_the_hook_adds_the_generated_page_to_the_site():
    require_extra("docs")
    from mkdocs.config import load_config
    from mkdocs.structure.files import Files

    config = load_config(str(REPO_ROOT / "mkdocs.yml"))  # loads docs/hooks.py as mkdocs.yml says
    files = config.plugins.on_files(Files([]), config=config)  # what `mkdocs build` runs
    page = files.get_file_from_path(PAGE)
    assert page is not None and page.content_string == cli_reference()
    assert not (DOCS / PAGE).exists(), "the reference is generated: a file of that name would shadow it"


def _nav_pages(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return [page for item in nav for page in _nav_pages(item)]


def test_every_page_of_the_navigation_exists_and_every_page_is_in_it():
    yaml = pytest.importorskip("yaml")
    pages = _nav_pages(yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"])
    assert PAGE in pages
    for page in pages:
        assert page == PAGE or (DOCS / page).is_file(), f"mkdocs.yml lists {page}, which is missing"
    written = {str(path.relative_to(DOCS)) for path in DOCS.rglob("*.md")}
    assert written <= set(pages), f"pages not in the navigation: {sorted(written - set(pages))}"


@pytest.mark.parametrize("page", sorted(p.name for p in (DOCS / "api").glob("*.md")))
def test_every_api_page_documents_modules_that_exist(page):
    modules = re.findall(r"^::: ([\w.]+)", (DOCS / "api" / page).read_text(encoding="utf-8"), re.M)
    assert modules or page == "index.md", f"{page} documents nothing"
    for name in modules:
        importlib.import_module(name)


def test_the_docs_extra_builds_the_site_alone():
    """``pip install -e ".[docs]"`` then ``mkdocs build --strict`` failed outside the test
    environment: mkdocstrings formats the separate signatures (mkdocs.yml) with Black or Ruff, and
    warns without either; the docs extra had neither."""
    import tomllib

    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {re.split(r"[<>=!~\[ ;]", requirement)[0].lower() for requirement in extras["docs"]}
    assert "separate_signature: true" in (REPO_ROOT / "mkdocs.yml").read_text()
    assert names & {"ruff", "black"}, extras["docs"]


def test_contributing_links_resolve_where_the_site_includes_it():
    """CONTRIBUTING.md is read at the repository root and included in docs/contributing.md: a
    relative link must reach its file from both (``[docs](docs/integrations.md)`` did not, and
    broke a strict build)."""
    text = (REPO_ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert '--8<-- "CONTRIBUTING.md"' in (DOCS / "contributing.md").read_text(encoding="utf-8")
    for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in link:
            continue
        assert (REPO_ROOT / link).exists() and (DOCS / link).exists(), link
