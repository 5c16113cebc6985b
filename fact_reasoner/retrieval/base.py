"""The retriever protocol, the result type, and the registry that makes retrievers by name.

A retriever turns a query text into a ranked list of :class:`RetrievedContext` (best first).
Built-in services: ``supplied`` (the record's own contexts), ``chroma`` (dense, a persistent
chromadb collection), ``bm25`` (lexical), ``hybrid`` (both, fused by reciprocal rank),
``google`` (web search) and ``wikipedia`` (alias ``langchain``).

A retriever may also offer ``retrieve_many(queries, k, *, topic=None)``: the pipeline then asks
for all queries of a record at once (the web services send their requests concurrently, the
dense retriever embeds them in one batch). One that sets ``uses_about = True`` also gets the
record's topic as ``about=`` even without a topic filter (``wikipedia`` ranks its page first).

Extension point for your own retriever (a search API, an Elasticsearch index, …)
--------------------------------------------------------------------------------
Write a class with a ``retrieve(query, k, *, topic=None) -> list[RetrievedContext]`` method and
an ``identity`` string (used as the cache key: change it when the underlying index changes),
then make it reachable in one of three ways:

1. ``register_retriever("mysearch", factory)`` in your code, where ``factory(config)`` builds it
   from a :class:`~fact_reasoner.config.PipelineConfig`; then ``--service-type mysearch``
   (:data:`RETRIEVERS` is the registry, a :class:`~fact_reasoner.registry.Registry`);
2. an entry point in the group ``fact_reasoner.retrievers`` named ``mysearch`` that points to
   such a factory (for an installed plug-in package);
3. ``--service-type mypackage.mymodule:factory`` (a ``module:callable`` path).

Results are cached like those of the built-in services.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from ..errors import FactReasonerError
from ..registry import Registry
from ..schema import Context

if TYPE_CHECKING:
    from ..config import PipelineConfig


class RetrievalError(FactReasonerError, RuntimeError):
    """A retriever cannot answer (no index, missing dependency, bad configuration)."""


class RetrievedContext(BaseModel):
    """One ranked passage returned by a retriever.

    ``id`` is the passage's id in its store (a content hash for indexed chunks); the pipeline
    gives it an IBM-style id (``c_<atom>_<j>``) when it becomes a :class:`Context`.
    ``score`` is the retriever's own score (cosine similarity, BM25 score, fused RRF score):
    comparable within one ranking only.
    """

    id: str
    text: str
    title: str | None = None
    score: float = 0.0
    source: str = Field(default="", description="which service produced it (chroma, bm25, …)")
    metadata: dict[str, Any] = Field(default_factory=dict)

    def to_context(self, context_id: str) -> Context:
        """The passage as a pipeline :class:`Context` with the given id.

        The store id, score and service are kept as extra fields (``store_id``,
        ``retrieval_score``, ``retrieval_source``) so the output shows where evidence came from.
        """
        link = self.metadata.get("link") or self.metadata.get("url")
        snippet = self.metadata.get("snippet")
        return Context(
            id=context_id,
            text=self.text,
            title=self.title,
            snippet=snippet if isinstance(snippet, str) else None,
            link=link if isinstance(link, str) else None,
            store_id=self.id,
            retrieval_score=self.score,
            retrieval_source=self.source,
        )


@runtime_checkable
class Retriever(Protocol):
    """Anything that ranks passages for a query."""

    @property
    def identity(self) -> str:
        """A string that changes whenever the answers could change (service, store, index state)."""
        ...

    def retrieve(self, query: str, k: int, *, topic: str | None = None) -> list[RetrievedContext]:
        """The ``k`` best passages for ``query``, best first; only passages of ``topic`` if given."""
        ...


RetrieverFactory = Callable[["PipelineConfig"], Retriever]

ENTRY_POINT_GROUP = "fact_reasoner.retrievers"

#: every retriever (``--service-type`` takes any of these names, or a ``module:callable`` path).
#: The built-in ones (registered in :mod:`fact_reasoner.retrieval`) are called as
#: ``factory(config, cache)`` and share the web response cache; others as ``factory(config)``.
RETRIEVERS: Registry[Retriever] = Registry("retrievers", noun="service type", entry_point_group=ENTRY_POINT_GROUP)


def builtin_services() -> tuple[str, ...]:
    """The service types this project ships (their names cannot be registered again)."""
    return tuple(name for name in RETRIEVERS.available() if RETRIEVERS.entry(name).builtin)


def register_retriever(name: str, factory: RetrieverFactory, **metadata: Any) -> None:
    """Make ``--service-type name`` build a retriever with ``factory(config)``.

    ``metadata`` is passed on to :meth:`~fact_reasoner.registry.Registry.register`
    (``description``, ``extras`` …)."""
    if name in builtin_services():
        raise ValueError(f"{name!r} is a built-in service type; pick another name")
    RETRIEVERS.register(name, factory, **metadata)


def available_retrievers() -> list[str]:
    """The ``--service-type`` names: the built-in services, then the others (registered in code
    or by installed packages)."""
    builtin = builtin_services()
    return list(builtin) + sorted(set(RETRIEVERS.available()) - set(builtin))


def _dotted_factory(spec: str) -> RetrieverFactory:
    import importlib

    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise RetrievalError(f"service type {spec!r}: cannot import {module_name!r}: {error}") from error
    try:
        return getattr(module, attribute)
    except AttributeError as error:
        raise RetrievalError(f"service type {spec!r}: {module_name!r} has no {attribute!r}") from error


def resolve_factory(service_type: str) -> RetrieverFactory:
    """The factory for a non-built-in service type (registry, entry point, or ``module:callable``)."""
    if service_type in RETRIEVERS:
        return RETRIEVERS.factory(service_type)
    if ":" in service_type:
        return _dotted_factory(service_type)
    raise RetrievalError(
        f"unknown service type {service_type!r}; known: {', '.join(available_retrievers())} "
        f"(or register your own, see fact_reasoner.retrieval.base)"
    )
