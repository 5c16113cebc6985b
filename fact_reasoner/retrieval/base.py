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
   from a :class:`~fact_reasoner.settings.config.PipelineConfig`; then ``--service-type mysearch``
   (:data:`RETRIEVERS` is the registry, a :class:`~fact_reasoner.settings.registry.Registry`);
2. an entry point in the group ``fact_reasoner.retrievers`` named ``mysearch`` that points to
   such a factory (for an installed plug-in package);
3. ``--service-type mypackage.mymodule:factory`` (a ``module:callable`` path).

Every retriever, built-in or not, is made the same way: ``factory(config)``. Results are
cached like those of the built-in services; a retriever that also keeps the responses it
receives (the web services) has a ``keep_responses(cache)`` method, which
:func:`~fact_reasoner.retrieval.make_retriever` calls with the retrieval cache.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from ..errors import FactReasonerError
from ..schema import Context
from ..settings.registry import Registry, UnknownName

if TYPE_CHECKING:
    from ..settings.config import PipelineConfig


class RetrievalError(FactReasonerError, RuntimeError):
    """A retriever cannot answer (no index, missing dependency, bad configuration)."""


class UnknownService(UnknownName, RetrievalError):
    """A ``--service-type`` that names no retriever (the registry's error, listing the choices),
    or a ``module:callable`` path that cannot be imported; a :class:`RetrievalError` too."""


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

        Where the evidence came from is kept as extra fields: ``source`` (the document: a
        corpus file of ``fact-reasoner index`` with the document's id, ``notes.jsonl#doc-7``, or
        a page's address), ``store_id``, ``retrieval_score`` and ``retrieval_source`` (the
        service that found it: chroma, bm25, hybrid …).
        """
        link = self.metadata.get("link") or self.metadata.get("url")
        snippet = self.metadata.get("snippet")
        return Context(
            id=context_id,
            text=self.text,
            title=self.title,
            snippet=snippet if isinstance(snippet, str) else None,
            link=link if isinstance(link, str) else None,
            source=self.document_source(),
            store_id=self.id,
            retrieval_score=self.score,
            retrieval_source=self.source,
        )

    def document_source(self) -> str | None:
        """The document the passage comes from: its corpus file (``source`` in a store chunk's
        metadata) with the document's id when it has one (``bios.jsonl#curie``), else its
        address (a web page), else None."""
        file = self.metadata.get("source")
        document = self.metadata.get("document_id")
        if isinstance(file, str) and file:
            return f"{file}#{document}" if isinstance(document, (str, int)) and str(document) else file
        link = self.metadata.get("link") or self.metadata.get("url")
        return link if isinstance(link, str) and link else None


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

#: every retriever (``--service-type`` takes any of these names, or a ``module:callable`` path),
#: each made by ``factory(config)``; the built-in ones are registered in :mod:`fact_reasoner.retrieval`
RETRIEVERS: Registry[Retriever] = Registry(
    "retrievers", noun="service type", entry_point_group=ENTRY_POINT_GROUP, paths=True, error=UnknownService
)


def builtin_services() -> tuple[str, ...]:
    """The service types this project ships (their names cannot be registered again)."""
    return tuple(name for name in RETRIEVERS.available() if RETRIEVERS.entry(name).builtin)


def register_retriever(name: str, factory: RetrieverFactory, **metadata: Any) -> None:
    """Make ``--service-type name`` build a retriever with ``factory(config)``.

    ``metadata`` is passed on to :meth:`~fact_reasoner.settings.registry.Registry.register`
    (``description``, ``extras`` …)."""
    if name in builtin_services():
        raise ValueError(f"{name!r} is a built-in service type; pick another name")
    RETRIEVERS.register(name, factory, **metadata)


def available_retrievers() -> list[str]:
    """The ``--service-type`` names: the built-in services, then the others (registered in code
    or by installed packages)."""
    builtin = builtin_services()
    return list(builtin) + sorted(set(RETRIEVERS.available()) - set(builtin))
