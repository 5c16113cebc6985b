"""Lexical retrieval with BM25 (``bm25s``) over the chunks of a collection.

Tokens: lower-cased runs of letters/digits (Unicode-aware), English stop words removed, no
stemming (so the index is reproducible without a stemmer package). bm25s's defaults are kept
(Lucene variant, k1 = 1.5, b = 0.75).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .base import RetrievalError, RetrievedContext

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

# A small English stop-word list: only words that carry no topic.
STOPWORDS = frozenset(
    """a an and are as at be been but by for from had has have he her his i in into is it its
    of on or she that the their them they this to was were which who will with""".split()
)


def tokenize(text: str) -> list[str]:
    return [token for token in _TOKEN.findall(text.lower()) if token not in STOPWORDS]


def _bm25s():
    try:
        import bm25s
    except ImportError as error:
        raise RetrievalError("the bm25 service needs bm25s: pip install bm25s") from error
    return bm25s


def _index_text(record: dict[str, Any]) -> str:
    # The title is indexed with the text: chunks often do not repeat the article's name.
    title = record.get("title") or ""
    return f"{title} {record['text']}" if title else record["text"]


def build_bm25(records: Sequence[dict[str, Any]], directory: Path) -> None:
    """Index ``records`` (chunk dicts, in chunks.jsonl order) into ``directory``."""
    bm25s = _bm25s()
    retriever = bm25s.BM25()
    retriever.index([tokenize(_index_text(r)) for r in records], show_progress=False)
    directory.mkdir(parents=True, exist_ok=True)
    retriever.save(str(directory), show_progress=False)
    (directory / "count.json").write_text(json.dumps({"chunks": len(records)}))


class BM25Index:
    """A loaded BM25 index with its chunks, ranking by ``bm25s`` scores."""

    def __init__(self, records: list[dict[str, Any]], retriever: Any) -> None:
        self.records = records
        self.retriever = retriever
        self.topics = np.array([r.get("topic") or "" for r in records], dtype=object)

    @classmethod
    def from_records(cls, records: list[dict[str, Any]]) -> "BM25Index":
        bm25s = _bm25s()
        retriever = bm25s.BM25()
        retriever.index([tokenize(_index_text(r)) for r in records], show_progress=False)
        return cls(records, retriever)

    @classmethod
    def load(cls, records: list[dict[str, Any]], directory: Path) -> "BM25Index":
        bm25s = _bm25s()
        count_file = directory / "count.json"
        if not count_file.exists() or json.loads(count_file.read_text())["chunks"] != len(records):
            # The index is behind chunks.jsonl (an interrupted run): rebuild it in memory.
            return cls.from_records(records)
        return cls(records, bm25s.BM25.load(str(directory), show_progress=False, verbosity=0))

    def search(self, query: str, k: int, topic: str | None = None, source: str = "bm25") -> list[RetrievedContext]:
        """Top ``k`` chunks by BM25 score; chunks with score 0 (no query term) are not returned."""
        if not self.records or k <= 0:
            return []
        tokens = tokenize(query)
        if not tokens:
            return []
        scores = np.asarray(self.retriever.get_scores(tokens), dtype=float)
        if topic is not None:
            scores = np.where(self.topics == topic, scores, -np.inf)
        candidates = np.flatnonzero(scores > 0)
        if candidates.size == 0:
            return []
        # Stable order: score descending, then corpus position (deterministic ties).
        order = candidates[np.lexsort((candidates, -scores[candidates]))][:k]
        results = []
        for index in order:
            record = self.records[int(index)]
            results.append(
                RetrievedContext(
                    id=record["id"],
                    text=record["text"],
                    title=record.get("title"),
                    score=float(scores[index]),
                    source=source,
                    metadata=record.get("metadata", {}),
                )
            )
        return results
