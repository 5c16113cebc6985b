"""MkDocs hook: the command-line reference page, generated at every build (``mkdocs.yml`` →
``hooks``), so that it cannot drift from the code: ``scripts/cli_reference.py`` writes it from the
commands' parsers and the settings model."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File

# mkdocs puts only docs/ on the path while it loads this file: the repository's `scripts` package
# is imported now, from the repository root
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
try:
    from scripts.cli_reference import PAGE, cli_reference
finally:
    sys.path.pop(0)


def on_files(files: Any, config: Any) -> Any:
    """Add the generated ``reference/cli.md`` to the site's files."""
    files.append(File.generated(config, PAGE, content=cli_reference()))
    return files
