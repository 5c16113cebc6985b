"""Judging needs no torch: the NLI cross-encoder, the align classifier and the sentence
embedder run in a process where torch, transformers and sentence-transformers cannot be
imported at all (an import hook refuses them), and give the same numbers as here."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import REPO_ROOT, require_extra

ROOT = REPO_ROOT

BLOCK_TORCH = textwrap.dedent(
    """
    import importlib.abc, sys
    class NoTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "transformers", "sentence_transformers"):
                raise ImportError(f"{name} is blocked: judging must not need it")
    sys.meta_path.insert(0, NoTorch())
    """
)


def _run_without_torch(code: str, tmp_path: Path) -> dict:
    script = tmp_path / "no_torch.py"
    script.write_text(BLOCK_TORCH + textwrap.dedent(code))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={
            "PYTHONPATH": str(ROOT),
            "FACT_REASONER_CACHE": str(tmp_path / "cache"),
            "PATH": "/usr/bin:/bin",
            "HF_HUB_OFFLINE": "1",
        },
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_embedder_and_align_run_without_torch(tmp_path):
    require_extra("embeddings")
    pairs = [
        ["Marie Curie won the Nobel Prize in Physics in 1903.", "Curie won a Nobel Prize."],
        ["Paris is the capital of France.", "Berlin is in Spain."],
    ]
    result = _run_without_torch(
        f"""
        import json
        from fact_reasoner.embeddings import SentenceEmbedder
        from fact_reasoner.nli.align import AlignNLI
        embedder = SentenceEmbedder()
        assert embedder.backend == "onnx"
        vectors = embedder.encode(["a cat", "a dog"])
        judged = AlignNLI(embedder=embedder).judge({pairs!r})
        print(json.dumps({{"vectors": vectors.tolist(), "probabilities": [j.probabilities for j in judged]}}))
        """,
        tmp_path,
    )
    from fact_reasoner.embeddings import SentenceEmbedder
    from fact_reasoner.nli.align import AlignNLI

    here = SentenceEmbedder(backend="onnx")
    import numpy as np

    assert np.allclose(np.array(result["vectors"]), here.encode(["a cat", "a dog"]), atol=1e-5)
    for theirs, ours in zip(result["probabilities"], AlignNLI(embedder=here).judge([tuple(p) for p in pairs])):
        assert theirs == pytest.approx(ours.probabilities, abs=1e-5)


def test_cross_encoder_runs_without_torch(tmp_path):
    require_extra("embeddings", "training")
    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI
    from tests.nli.test_cross_encoder import _build_tiny_model

    folder = _build_tiny_model(tmp_path / "tiny")  # built with torch here
    pairs = [["the cat sat on the mat .", "a cat sat ."], ["he was born in paris .", "he was born in london ."]]
    result = _run_without_torch(
        f"""
        import json
        from fact_reasoner.nli.cross_encoder import CrossEncoderNLI
        backend = CrossEncoderNLI({str(folder)!r})
        assert backend.runtime == "onnx"
        print(json.dumps([j.probabilities for j in backend.judge({pairs!r})]))
        """,
        tmp_path,
    )
    reference = CrossEncoderNLI(folder, runtime="torch").judge([tuple(p) for p in pairs])
    for theirs, ours in zip(result, reference):
        assert theirs == pytest.approx(ours.probabilities, abs=1e-4)
