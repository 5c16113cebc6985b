"""Reading corpus files into documents and cutting documents into overlapping chunks.

Accepted inputs (chosen by file extension):

- ``.jsonl`` — one JSON object per line with ``text`` (or ``contents``) and optional ``title``,
  ``topic``, ``id``, ``link``/``url``; blank lines are skipped;
- ``.json`` — ``{topic: [{title, text}, …]}`` (FActScore/IBM topic passages) or a list of
  objects as in JSONL;
- anything else (``.txt``, ``.md``, …) — plain UTF-8 text, one document per file, titled by the
  file name; paragraphs are separated by blank lines.

A line or item that cannot be read (invalid JSON, no ``text``, not UTF-8) is reported as
``file:line: problem`` and the others are read, the policy of every input file of the program.

Sentence markers ``<s>…</s>`` (FActScore's passages) are honoured as sentence boundaries and
removed from the indexed text.

Chunks are made of whole sentences, packed up to ``chunk_size`` characters; consecutive chunks
of a document share trailing sentences of up to ``chunk_overlap`` characters, and a chunk never
spans a paragraph break unless the paragraph is shorter than the room left. A chunk's id is a
hash of its topic, title and text, so indexing the same document again yields the same ids and
adds nothing.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..io import RecordError, read_json_values
from ..text.sentences import passage_sentences


class CorpusError(InputError):
    """A corpus file cannot be read; the message names the file and, where known, the line."""


@dataclass(frozen=True)
class Document:
    text: str
    title: str | None = None
    topic: str | None = None
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def doc_hash(self) -> str:
        return document_hash(self.text)


@dataclass(frozen=True)
class Chunk:
    id: str
    text: str
    title: str | None
    topic: str | None
    doc_hash: str
    chunk_index: int
    source: str
    extra: dict[str, Any] = field(default_factory=dict)

    def metadata(self) -> dict[str, Any]:
        """Flat metadata for the store (chromadb allows str/int/float/bool values only)."""
        meta: dict[str, Any] = {
            "doc_hash": self.doc_hash,
            "chunk_index": self.chunk_index,
            "source": self.source,
        }
        if self.title is not None:
            meta["title"] = self.title
        if self.topic is not None:
            meta["topic"] = self.topic
        for key, value in self.extra.items():
            if isinstance(value, (str, int, float, bool)) and key not in meta:
                meta[key] = value
        return meta


_SENTENCE_MARK = re.compile(r"</?s>")


def clean_text(text: str) -> str:
    """Drop ``<s>``/``</s>`` markers and squeeze whitespace (newlines kept for paragraphs)."""
    text = _SENTENCE_MARK.sub(" ", text)
    text = re.sub(r"[ \t\r\f\v]+", " ", text)
    return re.sub(r" ?\n ?", "\n", text).strip()


def document_hash(text: str) -> str:
    """A stable hash of a document's text after :func:`clean_text` (so ``<s>`` marks don't matter)."""
    normalised = " ".join(clean_text(text).split())
    return hashlib.sha256(normalised.encode("utf-8")).hexdigest()[:24]


def chunk_id(topic: str | None, title: str | None, text: str) -> str:
    key = f"{topic or ''}\x00{title or ''}\x00{' '.join(text.split())}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


# ---------------------------------------------------------------- reading files


def _document_from_object(obj: Any, source: str, topic: str | None = None) -> Document:
    """The document of one JSON object; ``ValueError`` says what is wrong with it."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object with a 'text' field, got {type(obj).__name__}")
    text = obj.get("text", obj.get("contents"))
    if not isinstance(text, str):
        raise ValueError(f"missing or non-string 'text' field (keys: {sorted(obj)})")
    title = obj.get("title")
    if title is not None and not isinstance(title, str):
        raise ValueError("'title' must be a string")
    obj_topic = obj.get("topic", topic)
    if obj_topic is not None and not isinstance(obj_topic, str):
        raise ValueError("'topic' must be a string")
    extra = {k: v for k, v in obj.items() if k in ("id", "link", "url") and isinstance(v, (str, int))}
    if "id" in extra:
        extra["document_id"] = str(extra.pop("id"))
    return Document(text=text, title=title, topic=obj_topic, source=source, extra=extra)


def _is_topic_map(data: Any) -> bool:
    """``{topic: [{title, text}, …]}`` (FActScore's and IBM's topic passages), not a document:
    an object without a text whose values include a list."""
    return (
        isinstance(data, dict)
        and "text" not in data
        and "contents" not in data
        and any(isinstance(value, list) for value in data.values())
    )


def _read_json_documents(path: Path) -> Iterator[Document | RecordError]:
    """The documents of a ``.jsonl`` file (one object per line) or a ``.json`` file (a list of
    objects, or ``{topic: [objects]}``), each bad line or item a :class:`RecordError`."""
    for row in read_json_values(path):
        if isinstance(row, RecordError):
            yield row
            continue
        items: list[tuple[str, Any, str | None]] = [("", row.data, None)]
        if _is_topic_map(row.data):
            items = []  # {topic: [{title, text}, …]}: FActScore/IBM topic passages
            for topic, passages in row.data.items():
                if not isinstance(passages, list):
                    yield row.error(
                        f"topic {topic!r}: expected a list of {{title, text}} objects, got {type(passages).__name__}"
                    )
                    continue
                items += [(f"topic {topic!r} item {index}: ", obj, topic) for index, obj in enumerate(passages)]
        for where, obj, topic in items:
            try:
                yield _document_from_object(obj, path.name, topic)
            except ValueError as problem:
                yield row.error(f"{where}{problem}")


def _read_text(path: Path) -> Iterator[Document | RecordError]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        line = path.read_bytes().count(b"\n", 0, error.start) + 1
        yield RecordError(str(path), line, f"not UTF-8 text ({error.reason} at byte {error.start})")
        return
    if text.strip():
        yield Document(text=text, title=path.stem, topic=None, source=path.name)


def read_documents(paths: Iterable[str | Path]) -> Iterator[Document | RecordError]:
    """Documents of every corpus file, in order. A line or item that cannot be read is a
    :class:`~fact_reasoner.io.RecordError` (``file:line: problem``) in its place and reading goes
    on, as with the records of every other command; a file that does not exist raises
    :class:`CorpusError`."""
    for name in paths:
        path = Path(name)
        if not path.is_file():
            raise CorpusError(f"{path}: no such file")
        if path.suffix.lower() in (".jsonl", ".json"):
            yield from _read_json_documents(path)
        else:
            yield from _read_text(path)


# ---------------------------------------------------------------- chunking


def _units(text: str) -> list[tuple[str, bool]]:
    """(sentence, starts_paragraph) pairs; ``<s>`` markers, when present, define sentences."""
    units: list[tuple[str, bool]] = []
    if "<s>" in text:
        paragraphs = [[clean_text(s) for s in re.split(r"</s>\s*<s>|</?s>", text) if clean_text(s)]]
    else:
        paragraphs = [passage_sentences(p) for p in re.split(r"\n\s*\n", clean_text(text)) if p.strip()]
    for sentences in paragraphs:
        for index, sentence in enumerate(sentences):
            units.append((" ".join(sentence.split()), index == 0))
    return units


def _split_long(sentence: str, size: int) -> list[str]:
    """A sentence longer than ``size`` characters, cut at word boundaries."""
    pieces, current = [], ""
    for word in sentence.split():
        if current and len(current) + 1 + len(word) > size:
            pieces.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        pieces.append(current)
    return pieces


def chunk_document(document: Document, chunk_size: int = 1000, chunk_overlap: int = 200) -> list[Chunk]:
    """Cut a document into chunks of whole sentences (see the module docstring)."""
    if chunk_size <= 0:
        raise ValueError("chunk_size must be positive")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValueError("chunk_overlap must be in [0, chunk_size)")
    sentences: list[tuple[str, bool]] = []
    for sentence, starts_paragraph in _units(document.text):
        pieces = _split_long(sentence, chunk_size) if len(sentence) > chunk_size else [sentence]
        sentences.extend((piece, starts_paragraph and i == 0) for i, piece in enumerate(pieces))

    groups: list[list[str]] = []
    current: list[str] = []
    length = 0
    new_since_break = 0  # sentences in `current` not carried over as overlap
    for sentence, starts_paragraph in sentences:
        added = len(sentence) + (1 if current else 0)
        # Break when full; at a paragraph start also when the chunk is over half full, so
        # chunks tend to follow paragraphs.
        full = length + added > chunk_size
        paragraph_break = starts_paragraph and new_since_break and length > chunk_size // 2
        if current and new_since_break and (full or paragraph_break):
            groups.append(current)
            overlap: list[str] = []
            kept = 0
            for previous in reversed(current):
                if kept + len(previous) + 1 > chunk_overlap or len(overlap) + 1 >= len(current):
                    break
                overlap.insert(0, previous)
                kept += len(previous) + 1
            # Overlap is dropped if it would not leave room for the new sentence.
            if kept + len(sentence) + 1 > chunk_size:
                overlap, kept = [], 0
            current, length, new_since_break = overlap, max(kept - 1, 0), 0
            added = len(sentence) + (1 if current else 0)
        current.append(sentence)
        length += added
        new_since_break += 1
    if current and new_since_break:
        groups.append(current)

    doc_hash = document.doc_hash
    chunks = []
    for index, group in enumerate(groups):
        text = " ".join(group)
        chunks.append(
            Chunk(
                id=chunk_id(document.topic, document.title, text),
                text=text,
                title=document.title,
                topic=document.topic,
                doc_hash=doc_hash,
                chunk_index=index,
                source=document.source,
                extra=dict(document.extra),
            )
        )
    return chunks
