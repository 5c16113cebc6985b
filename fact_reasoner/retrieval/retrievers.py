"""The built-in retrievers: supplied, chroma (dense), bm25 (lexical) and hybrid (fused)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..schema import Context
from .base import RetrievalError, RetrievedContext, Retriever
from .bm25 import BM25Index
from .store import EMBEDDING_MODEL_NAME, StoreLayout, chroma_collection, embed, fingerprint, read_chunks


def _store_state(layout: StoreLayout) -> str:
    manifest = layout.read_manifest()
    return manifest["fingerprint"] if manifest else "no-manifest"


class SuppliedRetriever:
    """The record's own contexts, ranked for a query by BM25 over those contexts only.

    With ``--service-type supplied`` the pipeline uses a record's contexts (and the atoms'
    context lists) as they are; this retriever is for records that supply contexts but no
    per-atom lists (FR1 needs them): ``SuppliedRetriever(record.contexts).retrieve(atom, k)``.
    Constructed without contexts it refuses, clearly, to invent any.
    """

    def __init__(self, contexts: Sequence[Context] | None = None) -> None:
        self.contexts = list(contexts or [])
        records = [
            {
                "id": c.id,
                "text": c.text,
                "title": c.title,
                "topic": None,
                "metadata": {"link": c.link} if c.link else {},
            }
            for c in self.contexts
        ]
        self._index = BM25Index.from_records(records) if records else None

    @property
    def identity(self) -> str:
        return "supplied:" + fingerprint(f"{c.id}\x00{c.text}" for c in self.contexts)

    def retrieve(self, query: str, k: int, *, topic: str | None = None) -> list[RetrievedContext]:
        if self._index is None:
            raise RetrievalError(
                "service type 'supplied' uses the contexts given in the input record, and this record "
                "has none; choose --service-type chroma, bm25 or hybrid with --store and --collection"
            )
        return self._index.search(query, k, None, source="supplied")


class ChromaRetriever:
    """Dense retrieval: cosine similarity of MiniLM embeddings in a persistent chromadb collection.

    ``score`` = 1 − cosine distance = cosine similarity. A ``topic`` restricts the search to
    chunks whose metadata ``topic`` equals it (chromadb ``where`` filter); ``where`` adds any
    other metadata filter, e.g. ``{"title": "Lanny Flaherty"}``.
    """

    def __init__(self, store: str | Path, collection: str, where: dict | None = None) -> None:
        self.layout = StoreLayout.of(store, collection)
        self.collection = chroma_collection(self.layout, create=False)
        manifest = self.layout.read_manifest() or {}
        model = manifest.get("embedding_model", EMBEDDING_MODEL_NAME)
        self.embedding_model = None if model == EMBEDDING_MODEL_NAME else model
        self.where = dict(where or {})
        self._state = manifest.get("fingerprint") or f"count-{self.collection.count()}"

    @property
    def identity(self) -> str:
        return f"chroma:{self.layout.store}:{self.layout.collection}:{self._state}:{sorted(self.where.items())}"

    def _filter(self, topic: str | None) -> dict | None:
        clauses = [{key: value} for key, value in self.where.items()]
        if topic is not None:
            clauses.append({"topic": topic})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def retrieve(self, query: str, k: int, *, topic: str | None = None) -> list[RetrievedContext]:
        return self.retrieve_many([query], k, topic=topic)[0]

    def retrieve_many(
        self, queries: Sequence[str], k: int, *, topic: str | None = None
    ) -> list[list[RetrievedContext]]:
        """Several queries with one embedding batch (faster than one call per query)."""
        if k <= 0 or not queries:
            return [[] for _ in queries]
        vectors = embed(list(queries), self.embedding_model)
        answer = self.collection.query(
            query_embeddings=vectors,
            # no more than the collection holds: hnswlib refuses a k above its element count
            n_results=max(1, min(k, self.collection.count())),
            where=self._filter(topic),
            include=["documents", "metadatas", "distances"],
        )
        results = []
        for ids, documents, metadatas, distances in zip(
            answer["ids"], answer["documents"], answer["metadatas"], answer["distances"]
        ):
            results.append(
                [
                    RetrievedContext(
                        id=chunk_id,
                        text=document or "",
                        title=(metadata or {}).get("title"),
                        score=1.0 - float(distance),
                        source="chroma",
                        metadata=dict(metadata or {}),
                    )
                    for chunk_id, document, metadata, distance in zip(ids, documents, metadatas, distances)
                ]
            )
        return results


class BM25Retriever:
    """Lexical retrieval over the chunks of a collection (see :mod:`.bm25`)."""

    def __init__(self, store: str | Path, collection: str) -> None:
        self.layout = StoreLayout.of(store, collection)
        records = read_chunks(self.layout)
        if not records:
            raise RetrievalError(
                f"no chunks for collection {collection!r} in {self.layout.store}; build them with "
                f"`fact-reasoner index --corpus FILES --store {self.layout.store} --collection {collection}`"
            )
        self.index = BM25Index.load(records, self.layout.bm25_dir)
        self._state = _store_state(self.layout)

    @property
    def identity(self) -> str:
        return f"bm25:{self.layout.store}:{self.layout.collection}:{self._state}"

    def retrieve(self, query: str, k: int, *, topic: str | None = None) -> list[RetrievedContext]:
        return self.index.search(query, k, topic)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[RetrievedContext]], k: int, rrf_k: float = 60.0
) -> list[RetrievedContext]:
    """Fuse rankings by reciprocal rank: score(d) = Σ_r 1 / (rrf_k + rank_r(d)), ranks from 1.

    Why RRF: BM25 scores are unbounded and corpus-dependent while cosine similarities live in
    [−1, 1], so adding raw scores needs a per-corpus calibration; ranks need none. RRF with
    rrf_k = 60 (Cormack, Clarke & Büttcher, SIGIR 2009) has no parameter to tune per corpus and
    rewards documents that both retrievers rank well. Ties: the order of first appearance.
    """
    fused: dict[str, float] = {}
    first: dict[str, RetrievedContext] = {}
    sources: dict[str, list[str]] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            fused[item.id] = fused.get(item.id, 0.0) + 1.0 / (rrf_k + rank)
            first.setdefault(item.id, item)
            sources.setdefault(item.id, []).append(f"{item.source}#{rank}")
    order = sorted(fused, key=lambda chunk_id: -fused[chunk_id])  # sorted() is stable
    return [
        first[chunk_id].model_copy(
            update={
                "score": fused[chunk_id],
                "source": "hybrid",
                "metadata": {**first[chunk_id].metadata, "fused_from": ",".join(sources[chunk_id])},
            }
        )
        for chunk_id in order[:k]
    ]


class HybridRetriever:
    """Dense and lexical rankings fused by :func:`reciprocal_rank_fusion`.

    Each side contributes its top ``max(candidates, k)``; a passage missing from one side's
    list simply gets no term from it.
    """

    def __init__(self, dense: Retriever, lexical: Retriever, rrf_k: float = 60.0, candidates: int = 20) -> None:
        self.dense = dense
        self.lexical = lexical
        self.rrf_k = rrf_k
        self.candidates = candidates

    @property
    def identity(self) -> str:
        return f"hybrid(rrf_k={self.rrf_k},n={self.candidates}):{self.dense.identity}|{self.lexical.identity}"

    def retrieve(self, query: str, k: int, *, topic: str | None = None) -> list[RetrievedContext]:
        depth = max(self.candidates, k)
        rankings = [
            self.dense.retrieve(query, depth, topic=topic),
            self.lexical.retrieve(query, depth, topic=topic),
        ]
        return reciprocal_rank_fusion(rankings, k, self.rrf_k)
