"""A persistent retrieval cache, so that rerunning a dataset does not retrieve again.

Key = sha256 of (retriever identity, query, k, topic). A retriever's identity contains the
fingerprint of its index, so adding documents to a collection makes old entries unreachable
instead of wrong. Stored in one SQLite file (safe across processes, survives interruption).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path

from .base import RetrievedContext, Retriever


class RetrievalCache:
    """A SQLite file of retrieval results, keyed by the retriever's identity, the query, k and the topic."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False)
        self._connection.execute("CREATE TABLE IF NOT EXISTS retrieval (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        self._connection.commit()

    @staticmethod
    def key(identity: str, query: str, k: int, topic: str | None) -> str:
        payload = json.dumps([identity, query, k, topic], ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def get(self, key: str) -> list[RetrievedContext] | None:
        with self._lock:
            row = self._connection.execute("SELECT value FROM retrieval WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return [RetrievedContext.model_validate(item) for item in json.loads(row[0])]

    def put(self, key: str, results: list[RetrievedContext]) -> None:
        value = json.dumps([r.model_dump() for r in results], ensure_ascii=False)
        with self._lock:
            self._connection.execute("INSERT OR REPLACE INTO retrieval (key, value) VALUES (?, ?)", (key, value))
            self._connection.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._connection.execute("SELECT COUNT(*) FROM retrieval").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._connection.close()


class CachedRetriever:
    """Wraps any retriever; answers repeated (query, k, topic) from the cache.

    ``hits`` and ``misses`` count this process's look-ups (the pipeline can report them).
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
        self.cache.put(key, results)
        return results

    def stats(self) -> dict[str, int]:
        """Counters the pipeline reports (``retrieval_cache_hits`` …)."""
        return {"cache_hits": self.hits, "cache_misses": self.misses}
