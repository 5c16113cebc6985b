"""The on-disk store shared by the ``chroma``, ``bm25`` and ``hybrid`` services, and index building.

Layout of ``--store DIR`` (one directory, many collections)::

    DIR/chroma/                          chromadb PersistentClient (all collections, embeddings)
    DIR/fact_reasoner/<collection>/
        chunks.jsonl                     every chunk: id, text, title, topic, metadata (source of truth for BM25)
        bm25/                            the bm25s index over chunks.jsonl, in the same order
        manifest.json                    counts, chunking parameters, embedding model, fingerprint

The fingerprint is a hash of the sorted chunk ids; it is part of every retriever's identity,
so the retrieval cache never answers from an index that has changed since.

Indexing is idempotent: chunk ids are content hashes; chunks already present are neither
embedded nor stored again. Embeddings are added to chromadb first, then chunks.jsonl, the BM25
index and the manifest are rewritten, so an interrupted run is completed by running it again.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..installer import forbid_hub_downloads
from ..io import RecordError
from .base import RetrievalError
from .corpus import Chunk, chunk_document, read_documents

EMBEDDING_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]$")


def check_collection_name(name: str) -> str:
    """Collection names follow chromadb's rule (3–512 of ``[A-Za-z0-9._-]``, alphanumeric ends)."""
    if not _COLLECTION_NAME.match(name or ""):
        raise RetrievalError(
            f"invalid collection name {name!r}: use 3-512 characters from [A-Za-z0-9._-], "
            "starting and ending with a letter or digit"
        )
    return name


@dataclass(frozen=True)
class StoreLayout:
    store: Path
    collection: str

    @classmethod
    def of(cls, store: str | Path, collection: str) -> "StoreLayout":
        return cls(Path(store).expanduser().resolve(), check_collection_name(collection))

    @property
    def chroma_dir(self) -> Path:
        # A store that is itself a chromadb directory (built by another tool) is used as is.
        if (self.store / "chroma.sqlite3").exists() and not (self.store / "chroma").exists():
            return self.store
        return self.store / "chroma"

    @property
    def collection_dir(self) -> Path:
        return self.store / "fact_reasoner" / self.collection

    @property
    def chunks_path(self) -> Path:
        return self.collection_dir / "chunks.jsonl"

    @property
    def bm25_dir(self) -> Path:
        return self.collection_dir / "bm25"

    @property
    def manifest_path(self) -> Path:
        return self.collection_dir / "manifest.json"

    def read_manifest(self) -> dict[str, Any] | None:
        if not self.manifest_path.exists():
            return None
        return json.loads(self.manifest_path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- embeddings


def embed(texts: Sequence[str], model_path: str | None = None, threads: int | None = None) -> list[list[float]]:
    """Unit-length embeddings (so cosine distance in chromadb is 1 − dot product), from the
    process-wide embedder of :mod:`fact_reasoner.embeddings` (loaded once)."""
    from ..embeddings import shared_embedder

    return shared_embedder(model_path, threads=threads).encode(list(texts)).tolist()


# ---------------------------------------------------------------- chromadb


def open_chroma(layout: StoreLayout, create: bool):
    forbid_hub_downloads()
    try:
        import chromadb
        from chromadb.config import Settings
    except ImportError as error:
        raise RetrievalError("the chroma service needs chromadb: pip install chromadb") from error
    if not create and not layout.chroma_dir.exists():
        raise RetrievalError(
            f"no chroma store at {layout.chroma_dir}; build one with "
            f"`fact-reasoner index --corpus FILES --store {layout.store} --collection {layout.collection}`"
        )
    return chromadb.PersistentClient(path=str(layout.chroma_dir), settings=Settings(anonymized_telemetry=False))


def chroma_collection(layout: StoreLayout, create: bool = False):
    client = open_chroma(layout, create)
    if create:
        # embedding_function=None: we always pass our own embeddings; chromadb's default would
        # try to download a model.
        return client.get_or_create_collection(
            layout.collection,
            metadata={"hnsw:space": "cosine", "embedding_model": EMBEDDING_MODEL_NAME},
            embedding_function=None,
        )
    try:
        return client.get_collection(layout.collection, embedding_function=None)
    except Exception as error:  # chromadb raises NotFoundError (or ValueError in older versions)
        raise RetrievalError(f"collection {layout.collection!r} not found in {layout.chroma_dir}: {error}") from error


# ---------------------------------------------------------------- chunks + BM25


def read_chunks(layout: StoreLayout) -> list[dict[str, Any]]:
    if not layout.chunks_path.exists():
        return []
    with layout.chunks_path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def chunk_record(chunk: Chunk) -> dict[str, Any]:
    return {
        "id": chunk.id,
        "text": chunk.text,
        "title": chunk.title,
        "topic": chunk.topic,
        "metadata": chunk.metadata(),
    }


def fingerprint(ids: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for chunk_id in sorted(ids):
        digest.update(chunk_id.encode())
        digest.update(b"\n")
    return digest.hexdigest()[:16]


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)


@dataclass
class IndexReport:
    store: str
    collection: str
    documents_read: int
    chunks_made: int
    chunks_added: int
    chunks_total: int
    embedded: int
    seconds_chunking: float
    seconds_embedding: float
    seconds_bm25: float
    seconds_total: float
    dense: bool
    #: lines or items of the corpus that could not be read (each reported as file:line)
    unreadable: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def remove_collection(layout: StoreLayout) -> None:
    """Delete a collection: its chroma vectors (when a chroma store exists) and its chunks,
    BM25 index and manifest."""
    import shutil

    if layout.chroma_dir.exists():
        client = open_chroma(layout, create=False)
        if layout.collection in {getattr(c, "name", c) for c in client.list_collections()}:
            client.delete_collection(layout.collection)
    if layout.collection_dir.exists():
        shutil.rmtree(layout.collection_dir)


def build_index(
    corpus: Sequence[str | Path],
    store: str | Path,
    collection: str,
    *,
    chunk_size: int = 1000,
    chunk_overlap: int = 200,
    batch_size: int = 64,
    dense: bool = True,
    embedding_model: str | None = None,
    threads: int | None = None,
    progress: bool = True,
    rebuild: bool = False,
    on_unreadable: Callable[[RecordError], None] | None = None,
) -> IndexReport:
    """Read, chunk, embed and store a corpus; add only chunks not already in the collection.

    Checked before the store is touched: ``store`` must be a directory (or not exist yet), the
    corpus must hold at least one chunk, and a collection built with another chunk size or
    overlap is refused (its chunks would sit beside the new ones) unless ``rebuild``, which
    replaces the collection. A line or item of the corpus that cannot be read is passed to
    ``on_unreadable`` (``file:line: problem``) and counted in the report's ``unreadable``; the
    others are indexed.
    """
    from ..progress import progress_bar
    from .bm25 import build_bm25

    started = time.perf_counter()
    layout = StoreLayout.of(store, collection)
    blocking = next((p for p in (layout.store, *layout.store.parents) if p.exists()), None)
    if blocking is not None and not blocking.is_dir():
        raise RetrievalError(f"--store {store}: {blocking} is a file, not a directory")

    documents = 0
    unreadable = 0
    new_chunks: dict[str, Chunk] = {}
    made = 0
    for document in read_documents(corpus):
        if isinstance(document, RecordError):
            unreadable += 1
            if on_unreadable is not None:
                on_unreadable(document)
            continue
        documents += 1
        for chunk in chunk_document(document, chunk_size, chunk_overlap):
            made += 1
            new_chunks.setdefault(chunk.id, chunk)
    if not new_chunks:
        names = ", ".join(str(path) for path in corpus)
        why = f", {unreadable} unreadable line(s)" if unreadable else ""
        raise RetrievalError(
            f"the corpus ({names}) holds no text: {documents} document(s){why}, no chunk to index; the store is "
            "unchanged"
        )
    previous = layout.read_manifest() if layout.collection_dir.is_dir() else None
    if previous is not None and not rebuild:
        before = (previous.get("chunk_size"), previous.get("chunk_overlap"))
        if before != (chunk_size, chunk_overlap):
            raise RetrievalError(
                f"collection {collection!r} in {layout.store} was built with --chunk-size {before[0]} "
                f"--chunk-overlap {before[1]}; adding chunks of --chunk-size {chunk_size} --chunk-overlap "
                f"{chunk_overlap} would mix two chunkings: use the same ones, or --rebuild to replace it"
            )
    if rebuild:
        remove_collection(layout)
    layout.collection_dir.mkdir(parents=True, exist_ok=True)
    existing = read_chunks(layout)
    known = {record["id"] for record in existing}
    to_store = [chunk for chunk_id, chunk in new_chunks.items() if chunk_id not in known]
    seconds_chunking = time.perf_counter() - started

    embedded = 0
    embed_started = time.perf_counter()
    if dense:
        collection_handle = chroma_collection(layout, create=True)
        # Chunks listed in chunks.jsonl but absent from chroma (an interrupted run, or a store
        # first built with --no-dense) are embedded too.
        candidates = list(new_chunks.values()) + [
            Chunk(
                id=r["id"],
                text=r["text"],
                title=r.get("title"),
                topic=r.get("topic"),
                doc_hash=r["metadata"].get("doc_hash", ""),
                chunk_index=r["metadata"].get("chunk_index", 0),
                source=r["metadata"].get("source", ""),
            )
            for r in existing
            if r["id"] not in new_chunks
        ]
        present: set[str] = set()
        for start in range(0, len(candidates), 1000):
            batch_ids = [c.id for c in candidates[start : start + 1000]]
            present.update(collection_handle.get(ids=batch_ids, include=[])["ids"])
        missing = [c for c in candidates if c.id not in present]
        if missing:
            existing_by_id = {r["id"]: r for r in existing}
            bar = progress_bar(len(missing), desc=f"embedding {collection}", unit="chunk", quiet=not progress)
            for start in range(0, len(missing), batch_size):
                batch = missing[start : start + batch_size]
                vectors = embed([c.text for c in batch], embedding_model, threads)
                metadatas = [
                    existing_by_id[c.id]["metadata"] if c.id in existing_by_id else c.metadata() for c in batch
                ]
                collection_handle.add(
                    ids=[c.id for c in batch],
                    embeddings=vectors,
                    documents=[c.text for c in batch],
                    metadatas=metadatas,
                )
                embedded += len(batch)
                bar.update(len(batch))
            bar.close()
    seconds_embedding = time.perf_counter() - embed_started

    bm25_started = time.perf_counter()
    all_records = existing + [chunk_record(c) for c in to_store]
    if to_store or not layout.bm25_dir.exists():
        with layout.chunks_path.open("a", encoding="utf-8") as handle:
            for chunk in to_store:
                handle.write(json.dumps(chunk_record(chunk), ensure_ascii=False) + "\n")
        build_bm25(all_records, layout.bm25_dir)
    seconds_bm25 = time.perf_counter() - bm25_started

    manifest = {
        "collection": collection,
        "chunks": len(all_records),
        "fingerprint": fingerprint(r["id"] for r in all_records),
        "dense": dense or bool((layout.read_manifest() or {}).get("dense")),
        "embedding_model": EMBEDDING_MODEL_NAME if embedding_model is None else embedding_model,
        "chunk_size": chunk_size,
        "chunk_overlap": chunk_overlap,
        "updated": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    _write_atomically(layout.manifest_path, json.dumps(manifest, indent=2))
    return IndexReport(
        store=str(layout.store),
        collection=collection,
        documents_read=documents,
        chunks_made=made,
        chunks_added=len(to_store),
        chunks_total=len(all_records),
        embedded=embedded,
        seconds_chunking=seconds_chunking,
        seconds_embedding=seconds_embedding,
        seconds_bm25=seconds_bm25,
        seconds_total=time.perf_counter() - started,
        dense=dense,
        unreadable=unreadable,
    )
