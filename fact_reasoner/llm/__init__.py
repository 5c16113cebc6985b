"""Chat language models: the protocol (:class:`LLMBackend`) and its two backends.

``make_llm(config)`` builds the backend named by ``config.backend``:

- ``local`` (default): llama.cpp in-process via xllamacpp; ``config.model`` is a name from
  :data:`~fact_reasoner.llm.models.LOCAL_MODELS` or a ``.gguf`` path; ``config.threads``.
- ``openai``: an OpenAI-compatible endpoint; ``config.base_url`` / ``config.model`` (or the
  environment, see :mod:`fact_reasoner.llm.openai`), the API key from the environment only.

Both share one persistent call cache, ``<config.cache_dir>/model_calls.sqlite``, unless
``config.use_cache`` is false (then an in-memory cache still counts calls within the run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..cache import ModelCache
from .base import ChatBackend, ChatRequest, ChatResponse, Choice, LLMBackend, LLMError, TokenLogprob, stats_delta

if TYPE_CHECKING:
    from ..config import PipelineConfig

__all__ = [
    "ChatBackend",
    "ChatRequest",
    "ChatResponse",
    "Choice",
    "LLMBackend",
    "LLMError",
    "TokenLogprob",
    "make_cache",
    "make_llm",
    "stats_delta",
]


def make_cache(config: "PipelineConfig") -> ModelCache:
    """The persistent cache in ``config.cache_dir``, or an in-memory one when caching is off."""
    return ModelCache.in_dir(config.cache_dir) if config.use_cache else ModelCache(None)


def make_llm(config: "PipelineConfig", *, cache: ModelCache | None = None) -> LLMBackend:
    """The chat backend for ``config.backend`` (nothing is loaded until the first call)."""
    cache = cache if cache is not None else make_cache(config)
    if config.backend == "local":
        from .local import LocalLLM

        return LocalLLM(config.model, cache_dir=config.cache_dir, cache=cache, threads=config.threads)
    if config.backend == "openai":
        from .openai import OpenAICompatibleLLM

        return OpenAICompatibleLLM(config.model, base_url=config.base_url, cache=cache)
    raise ValueError(f"unknown LLM backend {config.backend!r}: use 'local' or 'openai'")
