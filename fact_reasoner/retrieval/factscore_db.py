"""FActScore's knowledge source as a corpus: its Wikipedia SQLite file (``enwiki-20230401.db``).

The file has one table, ``documents(title PRIMARY KEY, text)``: one row per article, whose
``text`` holds the article's passages joined by ``####SPECIAL####SEPARATOR####``. FActScore made
those passages by packing the article's paragraphs (each wrapped in ``<s>…</s>``) greedily into
pieces of at most 256 RoBERTa tokens, cutting a paragraph that does not fit at the limit and
carrying its rest into the next passage. Its retrieval then looks up the article whose title is
the record's topic and ranks only that article's passages (BM25 over ``topic + " " + atom``).

``fact-reasoner index --corpus enwiki.db --store DIR --collection enwiki`` reads the file
row by row (never the whole of it in memory; a progress bar counts articles) into
``DIR/fact_reasoner/enwiki/passages.sqlite``, one row per passage with its article's title as
its topic and an index on topics. Passages already split in the file are kept as they are
(``<s>`` marks removed); an article stored without separators is split by
:func:`split_passages`, which follows FActScore's packing with words instead of RoBERTa tokens
(a 256-token passage has at most 256 words, so passages are never longer than FActScore's).

``--service-type bm25 --store DIR --collection enwiki --topic-filter`` then ranks, for each atom,
the passages of the record's topic's article only, as FActScore does: BM25 (:mod:`.bm25`) over
that article, built when the topic is first asked for and kept for the next atoms. No global
index is built, so the full dump (6.6 M articles) needs no more memory than one article; a
record without a topic cannot be served and fails, a topic with no article gives no passages and
is counted (``retrieval_missing_topics``).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..errors import RecordFailed
from .base import RetrievalError, RetrievedContext
from .corpus import chunk_id, clean_text
from .store import StoreLayout

SPECIAL_SEPARATOR = "####SPECIAL####SEPARATOR####"
MAX_PASSAGE_WORDS = 256
KIND = "topic-passages"
_SQLITE_MAGIC = b"SQLite format 3\x00"


def is_factscore_db(path: str | Path) -> bool:
    """Whether ``path`` is an SQLite file with a ``documents(title, text)`` table."""
    path = Path(path)
    try:
        with path.open("rb") as handle:
            if handle.read(16) != _SQLITE_MAGIC:
                return False
    except OSError:
        return False
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as connection:
        columns = {row[1] for row in connection.execute("PRAGMA table_info(documents)")}
    return {"title", "text"} <= columns


def split_passages(paragraphs: Sequence[str], max_words: int = MAX_PASSAGE_WORDS) -> list[str]:
    """Pack paragraphs into passages of at most ``max_words`` words, as FActScore packs tokens.

    Paragraphs are added in order to the current passage while they fit; one that does not fit
    fills the current passage up to the limit and its remaining words start the next passage(s).
    So every passage but the last of an article has exactly ``max_words`` words, and a passage
    may begin in the middle of a paragraph — as FActScore's passages do.
    """
    if max_words < 1:
        raise ValueError("max_words must be positive")
    passages: list[list[str]] = [[]]
    for paragraph in paragraphs:
        words = paragraph.split()
        room = max_words - len(passages[-1])
        passages[-1].extend(words[:room])
        rest = words[room:]
        while rest:
            passages.append(rest[:max_words])
            rest = rest[max_words:]
    return [" ".join(words) for words in passages if words]


def article_passages(text: str) -> list[str]:
    """An article's passages: FActScore's own when the text holds its separator, else
    :func:`split_passages` over its paragraphs (``<s>…</s>`` units, or lines)."""
    if SPECIAL_SEPARATOR in text:
        return [p for p in (clean_text(part) for part in text.split(SPECIAL_SEPARATOR)) if p]
    if "<s>" in text:
        units = [clean_text(u) for u in text.replace("</s>", "<s>").split("<s>")]
    else:
        units = text.splitlines()
    return split_passages([" ".join(u.split()) for u in units if u.strip()])


def iter_articles(path: str | Path) -> Iterator[tuple[str, str]]:
    """``(title, text)`` of every article, streamed from the file (read-only)."""
    connection = sqlite3.connect(f"file:{Path(path)}?mode=ro", uri=True)
    try:
        for title, text in connection.execute("SELECT title, text FROM documents"):
            if isinstance(title, str) and isinstance(text, str):
                yield title, text
    finally:
        connection.close()


def passages_path(layout: StoreLayout) -> Path:
    return layout.collection_dir / "passages.sqlite"


def is_topic_collection(layout: StoreLayout) -> bool:
    manifest = layout.read_manifest() or {}
    return manifest.get("kind") == KIND and passages_path(layout).exists()


def build_topic_store(
    database: str | Path, store: str | Path, collection: str, *, progress: bool = True
) -> dict[str, Any]:
    """Read FActScore's database into the collection's ``passages.sqlite`` (module docstring).

    The table is written to a temporary file and moved into place at the end, so an interrupted
    run leaves the previous collection intact; rerunning rebuilds it from the file.
    """
    from ..progress import progress_bar

    started = time.perf_counter()
    database = Path(database)
    if not is_factscore_db(database):
        raise RetrievalError(f"{database}: not an SQLite file with a documents(title, text) table")
    layout = StoreLayout.of(store, collection)
    layout.collection_dir.mkdir(parents=True, exist_ok=True)
    target = passages_path(layout)
    temporary = target.with_suffix(".sqlite.tmp")
    temporary.unlink(missing_ok=True)
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as source:
        total = source.execute("SELECT COUNT(*) FROM documents").fetchone()[0]
    digest = hashlib.sha256()
    articles = passages = 0
    out = sqlite3.connect(str(temporary))
    try:
        out.execute("PRAGMA journal_mode = OFF")
        out.execute("PRAGMA synchronous = OFF")
        out.execute(
            "CREATE TABLE passages (id TEXT NOT NULL, topic TEXT NOT NULL, position INTEGER NOT NULL, text TEXT NOT NULL)"
        )
        batch: list[tuple[str, str, int, str]] = []
        with progress_bar(total, desc=f"reading {database.name}", unit="article", quiet=not progress) as bar:
            for title, text in iter_articles(database):
                articles += 1
                for position, passage in enumerate(article_passages(text)):
                    passage_id = chunk_id(title, title, passage)
                    batch.append((passage_id, title, position, passage))
                    digest.update(passage_id.encode() + b"\n")
                if len(batch) >= 10_000:
                    out.executemany("INSERT INTO passages VALUES (?, ?, ?, ?)", batch)
                    passages += len(batch)
                    batch.clear()
                bar.update(1)
        out.executemany("INSERT INTO passages VALUES (?, ?, ?, ?)", batch)
        passages += len(batch)
        out.execute("CREATE INDEX passages_topic ON passages (topic, position)")
        out.commit()
    finally:
        out.close()
    temporary.replace(target)
    manifest = {
        "collection": collection,
        "kind": KIND,
        "source": str(database.resolve()),
        "articles": articles,
        "chunks": passages,
        "fingerprint": digest.hexdigest()[:16],
        "max_passage_words": MAX_PASSAGE_WORDS,
        "updated": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    layout.manifest_path.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return {
        "store": str(layout.store),
        "collection": collection,
        "kind": KIND,
        "articles_read": articles,
        "passages": passages,
        "seconds_total": time.perf_counter() - started,
    }


class TopicBM25Retriever:
    """BM25 over the passages of the record's topic's article only (FActScore's retrieval).

    ``retrieve(query, k, topic=…)`` returns the ``k`` best passages of that article: those
    sharing a term with the query by BM25 score, then the others in article order (FActScore
    returns ``k`` passages whatever their score). Per-article indexes are kept for the last
    ``keep`` topics asked.
    """

    def __init__(self, store: str | Path, collection: str, keep: int = 64) -> None:
        self.layout = StoreLayout.of(store, collection)
        if not is_topic_collection(self.layout):
            raise RetrievalError(
                f"collection {collection!r} in {self.layout.store} was not built from a FActScore database"
            )
        manifest = self.layout.read_manifest() or {}
        self._state = manifest.get("fingerprint", "unknown")
        self._connection = sqlite3.connect(
            f"file:{passages_path(self.layout)}?mode=ro", uri=True, check_same_thread=False
        )
        self._indexes: OrderedDict[str, Any] = OrderedDict()
        self._keep = keep
        self._lock = threading.Lock()
        self.counts: Counter[str] = Counter()

    @property
    def identity(self) -> str:
        return f"bm25-topic:{self.layout.store}:{self.layout.collection}:{self._state}"

    def _index(self, topic: str) -> Any:
        from .bm25 import BM25Index

        with self._lock:
            if topic in self._indexes:
                self._indexes.move_to_end(topic)
                return self._indexes[topic]
            rows = self._connection.execute(
                "SELECT id, position, text FROM passages WHERE topic = ? ORDER BY position", (topic,)
            ).fetchall()
        records = [
            {
                "id": pid,
                "text": text,
                "title": topic,
                "topic": topic,
                "metadata": {"topic": topic, "position": position},
            }
            for pid, position, text in rows
        ]
        index = BM25Index.from_records(records) if records else None
        with self._lock:
            self._indexes[topic] = index
            while len(self._indexes) > self._keep:
                self._indexes.popitem(last=False)
        return index

    def retrieve(self, query: str, k: int, *, topic: str | None = None) -> list[RetrievedContext]:
        if topic is None:
            raise RecordFailed(
                f"retrieval: collection {self.layout.collection!r} holds Wikipedia passages per article "
                "(FActScore's database) and this record has no topic to look up"
            )
        index = self._index(topic)
        if index is None:
            with self._lock:
                self.counts["missing_topics"] += 1
            return []
        hits = index.search(query, k)
        seen = {hit.id for hit in hits}
        for record in index.records:
            if len(hits) >= k:
                break
            if record["id"] not in seen:
                hits.append(
                    RetrievedContext(
                        id=record["id"],
                        text=record["text"],
                        title=topic,
                        score=0.0,
                        source="bm25",
                        metadata=record["metadata"],
                    )
                )
        return hits

    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counts)
