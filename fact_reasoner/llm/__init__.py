"""Chat language models: the protocol (:class:`LLMBackend`) and its two backends.

``make_llm(config)`` builds the backend named by ``config.models.backend``, one of
:data:`LLM_BACKENDS` (a :class:`~fact_reasoner.settings.registry.Registry`; installed packages add theirs
through the ``fact_reasoner.llm_backends`` entry-point group; a factory is called as
``factory(config, cache)``):

- ``local`` (default): llama.cpp in-process via xllamacpp; ``config.models.model`` is a name from
  :data:`~fact_reasoner.llm.models.LOCAL_MODELS` or a ``.gguf`` path; ``config.models.threads``.
- ``openai``: an OpenAI-compatible endpoint; ``config.models.base_url`` / ``config.models.model`` (or the
  environment, see :mod:`fact_reasoner.llm.openai`), the API key from the environment only.

Both share one persistent call cache, ``<config.cache.cache_dir>/model_calls.sqlite``, unless
``config.cache.use_cache`` is false (then an in-memory cache still counts calls within the run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..cache import ModelCache
from ..settings.fields import CountOrZero, Seconds, option
from ..settings.registry import Extra, Option, Registry
from .base import ChatBackend, ChatRequest, ChatResponse, Choice, LLMBackend, LLMError, TokenLogprob, stats_delta

if TYPE_CHECKING:
    from ..settings.config import PipelineConfig

__all__ = [
    "ChatBackend",
    "ChatRequest",
    "ChatResponse",
    "Choice",
    "LLMBackend",
    "LLMError",
    "LLM_BACKENDS",
    "TokenLogprob",
    "language_model_extras",
    "make_cache",
    "make_llm",
    "stats_delta",
]


#: every chat-model backend (``--backend`` takes any of these names)
LLM_BACKENDS: Registry[LLMBackend] = Registry(
    "llm_backends", noun="LLM backend", entry_point_group="fact_reasoner.llm_backends"
)


def _make_local(config: "PipelineConfig", cache: ModelCache) -> LLMBackend:
    from .local import LocalLLM

    models = config.models
    return LocalLLM(models.model, cache_dir=config.cache.cache_dir, cache=cache, threads=models.threads)


def _make_openai(config: "PipelineConfig", cache: ModelCache) -> LLMBackend:
    from .openai import OpenAICompatibleLLM

    models = config.models
    return OpenAICompatibleLLM(
        models.model,
        base_url=models.base_url,
        cache=cache,
        timeout=models.llm_timeout,
        max_retries=models.llm_retries,
    )


def language_model_extras(config: "PipelineConfig") -> list[tuple[str, Extra]]:
    """What the configured language model needs installed, as ``(what needs it, extra)`` pairs
    for :func:`~fact_reasoner.settings.registry.require_extras`."""
    backend = config.models.backend
    return [(f"the {backend} language model (--backend {backend})", e) for e in LLM_BACKENDS.entry(backend).extras]


LLM_BACKENDS.register(
    "local",
    _make_local,
    description="the embedded GGUF model through llama.cpp, no server",
    extras=(Extra("xllamacpp", "llm"),),
    builtin=True,
)
#: the ``openai`` backend's settings (the ``models`` group; listed after ``--model``)
OPENAI_OPTIONS = (
    Option(
        "base_url", str | None, option(None, "OpenAI-compatible base URL (or FACT_REASONER_BASE_URL)"), after="model"
    ),
    Option(
        "llm_timeout",
        Seconds,
        option(120.0, "openai backend: seconds to wait for one reply", affects_results=False),
        after="model",
    ),
    Option(
        "llm_retries",
        CountOrZero,
        option(
            5,
            "openai backend: retries of a failed call (connection errors, 429, 5xx), with backoff",
            affects_results=False,
        ),
        after="model",
    ),
)

LLM_BACKENDS.register(
    "openai",
    _make_openai,
    description="any OpenAI-compatible server",
    extras=(Extra("httpx", "llm"),),
    options=OPENAI_OPTIONS,
    builtin=True,
)


def make_cache(config: "PipelineConfig") -> ModelCache:
    """The persistent cache in ``config.cache.cache_dir``, or an in-memory one when caching is off."""
    return ModelCache.in_dir(config.cache.cache_dir) if config.cache.use_cache else ModelCache(None)


def make_llm(config: "PipelineConfig", *, cache: ModelCache | None = None) -> LLMBackend:
    """The chat backend for ``config.models.backend`` (nothing is loaded until the first call)."""
    cache = cache if cache is not None else make_cache(config)
    return LLM_BACKENDS.make(config.models.backend, config, cache)
