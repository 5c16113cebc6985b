"""A persistent retrieval cache, so that rerunning a dataset does not retrieve again.

Two tables in one SQLite file (safe across processes, survives interruption):

- ``retrieval``: ranked results. Key = sha256 of (retriever identity, query, k, topic, and the
  record's topic for services that use it). A retriever's identity contains the fingerprint of
  its index, so adding documents to a collection makes old entries unreachable instead of wrong.
- ``responses``: what the web services were answered (search results, a page's extracted text),
  keyed by endpoint and request, so a rerun with another ``--top-k`` or on other records sends
  no request for what was already asked. API keys are never part of a key or a value.

A result that contains a passage from a page that failed for a passing reason (a timeout, a
5xx) is not stored, so that a rerun tries that page again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..hashing import SPACED_SEPARATORS, json_sha256
from ..sqlite_store import SQLiteStore
from .base import RetrievedContext, Retriever


class RetrievalCache:
    """A SQLite file of retrieval results, keyed by the retriever's identity, the query, k and the topic."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        # fast commits: a web record stores dozens of responses, and a lost entry is asked again
        self._store = SQLiteStore(
            self.path,
            [
                "CREATE TABLE IF NOT EXISTS retrieval (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
            ],
            fast_commits=True,
        )

    @staticmethod
    def key(identity: str, query: str, k: int, topic: str | None, about: str | None = None) -> str:
        parts: list[Any] = [identity, query, k, topic]
        if about is not None:
            parts.append({"about": about})
        # sorting keys changes nothing here (one single-key dict); the spaced separators are
        # those the keys were first written with
        return json_sha256(parts, separators=SPACED_SEPARATORS)

    @staticmethod
    def response_key(*parts: Any) -> str:
        """The key of a web response: the endpoint and the request (never a secret)."""
        return json_sha256(list(parts), separators=SPACED_SEPARATORS)

    def get_response(self, key: str) -> Any:
        """A stored response (JSON), or None."""
        row = self._store.fetch_one("SELECT value FROM responses WHERE key = ?", (key,))
        return None if row is None else json.loads(row[0])

    def put_response(self, key: str, value: Any) -> None:
        text = json.dumps(value, ensure_ascii=False)
        self._store.write("INSERT OR REPLACE INTO responses (key, value) VALUES (?, ?)", (key, text))

    def get(self, key: str) -> list[RetrievedContext] | None:
        row = self._store.fetch_one("SELECT value FROM retrieval WHERE key = ?", (key,))
        if row is None:
            return None
        return [RetrievedContext.model_validate(item) for item in json.loads(row[0])]

    def put(self, key: str, results: list[RetrievedContext]) -> None:
        value = json.dumps([r.model_dump() for r in results], ensure_ascii=False)
        self._store.write("INSERT OR REPLACE INTO retrieval (key, value) VALUES (?, ?)", (key, value))

    def put_many(self, items: Sequence[tuple[str, list[RetrievedContext]]]) -> None:
        """Several results in one transaction."""
        rows = [(key, json.dumps([r.model_dump() for r in results], ensure_ascii=False)) for key, results in items]
        self._store.write_many("INSERT OR REPLACE INTO retrieval (key, value) VALUES (?, ?)", rows)

    def __len__(self) -> int:
        return self._store.count("retrieval")

    def close(self) -> None:
        self._store.close()


def cacheable(results: Sequence[RetrievedContext]) -> bool:
    """False when a passage stands in for a page that failed for a passing reason."""
    return not any(r.metadata.get("transient") for r in results)


def uses_about(retriever: object) -> bool:
    """Whether a retriever ranks by the record's topic (``about``) even without a topic filter."""
    return bool(getattr(retriever, "uses_about", False))


class CachedRetriever:
    """Wraps any retriever; answers repeated (query, k, topic) from the cache.

    ``hits`` and ``misses`` count this process's look-ups (the pipeline can report them), and
    :meth:`stats` adds the wrapped retriever's own counters.
    """

    def __init__(self, inner: Retriever, cache: RetrievalCache) -> None:
        self.inner = inner
        self.cache = cache
        self.hits = 0
        self.misses = 0

    @property
    def identity(self) -> str:
        return self.inner.identity

    def retrieve(self, query: str, k: int, *, topic: str | None = None) -> list[RetrievedContext]:
        key = self.cache.key(self.inner.identity, query, k, topic)
        cached = self.cache.get(key)
        if cached is not None:
            self.hits += 1
            return cached
        self.misses += 1
        results = self.inner.retrieve(query, k, topic=topic)
        if cacheable(results):
            self.cache.put(key, results)
        return results

    @property
    def uses_about(self) -> bool:
        return uses_about(self.inner)

    def retrieve_many(
        self, queries: Sequence[str], k: int, *, topic: str | None = None, about: str | None = None
    ) -> list[list[RetrievedContext]]:
        """Several queries: cached ones from the cache, the others in one call of the wrapped
        retriever's ``retrieve_many`` (when it has one), each distinct query once."""
        about = about if self.uses_about else None
        keys = [self.cache.key(self.inner.identity, q, k, topic, about) for q in queries]
        found: dict[str, list[RetrievedContext]] = {}
        missing: list[str] = []
        for query, key in zip(queries, keys):
            if key in found or query in missing:
                continue
            cached = self.cache.get(key)
            if cached is None:
                missing.append(query)
            else:
                found[key] = cached
        self.hits += len(queries) - len(missing)
        self.misses += len(missing)
        if missing:
            answers = retrieve_many(self.inner, missing, k, topic=topic, about=about)
            new = []
            for query, results in zip(missing, answers):
                key = self.cache.key(self.inner.identity, query, k, topic, about)
                found[key] = results
                if cacheable(results):
                    new.append((key, results))
            self.cache.put_many(new)
        return [found[key] for key in keys]

    def stats(self) -> dict[str, int]:
        """Counters the pipeline reports (``retrieval_cache_hits`` …), with the wrapped
        retriever's own (searches, pages fetched, fallbacks …)."""
        inner = getattr(self.inner, "stats", None)
        counters = dict(inner()) if callable(inner) else {}
        return counters | {"cache_hits": self.hits, "cache_misses": self.misses}


def retrieve_many(
    retriever: Retriever, queries: Sequence[str], k: int, *, topic: str | None = None, about: str | None = None
) -> list[list[RetrievedContext]]:
    """Results for several queries, through the retriever's ``retrieve_many`` when it has one (the
    web services run the requests concurrently there), else one ``retrieve`` per query.
    ``about`` (the record's topic) reaches only retrievers that declare ``uses_about``."""
    batch = getattr(retriever, "retrieve_many", None)
    if callable(batch):
        if uses_about(retriever):
            return batch(queries, k, topic=topic, about=about)
        return batch(queries, k, topic=topic)
    return [retriever.retrieve(query, k, topic=topic) for query in queries]
