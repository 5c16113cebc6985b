"""Sentence boundaries, written once: one function per rule, named after what it splits.

Sentence boundaries decide atoms, frames, windows and corrections, and the stages do need
different rules (a model's response, a retrieved passage, an NLI premise, a claim list); each
rule lives here, under its name, with the stages that use it:

- :func:`response_sentences` — a response, for the atomizer (an atom's ``sentence`` index), the
  corrector and VeriScore: pysbd, a line break always ending a sentence;
- :func:`claim_lines` — a response as one claim per sentence or line, for the RAG metrics'
  sentence atomizer: pysbd (a regex where it is not installed), bullets stripped;
- :func:`passage_sentences` — a corpus paragraph, for indexing: a rule that keeps known
  abbreviations and initials ("J. R. R. Tolkien") whole;
- :func:`frame_sentences` — a passage, for the text frames: a break only after a lower-case
  word or a number, the mark dropped with it (:data:`FRAME_BREAK`);
- :func:`premise_sentences` — an NLI premise, for the alignment judge: FActScore's ``<s>`` marks
  when present, else a regex;
- :func:`sentence_spans` — an NLI premise as character spans, for the cross-encoder's windows.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = [
    "FRAME_BREAK",
    "claim_lines",
    "frame_sentences",
    "passage_sentences",
    "premise_sentences",
    "response_sentences",
    "sentence_spans",
]


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def response_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (pysbd), paragraphs first so a blank line always ends a sentence.
    Split once per text (the atomizer, the reviser and the graph's same-subject rule all ask)."""
    return list(_sentences(text))


@lru_cache(maxsize=1024)
def _sentences(text: str) -> tuple[str, ...]:
    sentences: list[str] = []
    for paragraph in text.split("\n"):
        if paragraph.strip():
            sentences.extend(s.strip() for s in _segmenter().segment(paragraph) if s.strip())
    return tuple(sentences)


_CLAIM_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")


def claim_lines(text: str) -> list[str]:
    """Sentences of ``text`` (pysbd if installed, else split after . ! ? before a capital)."""
    text = text.strip()
    if not text:
        return []
    try:
        pieces = _segmenter().segment(text)
    except ImportError:  # pragma: no cover - pysbd is in the heavy extra
        pieces = _CLAIM_END.split(text)
    sentences = []
    for piece in pieces:
        for line in piece.splitlines():  # bullet lists and paragraphs: one claim per line
            line = line.strip().lstrip("-*• ").strip()
            if re.search(r"\w", line):
                sentences.append(line)
    return sentences


# Abbreviations that end in a full stop without ending a sentence (a short, safe list).
_ABBREVIATIONS = {
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "sr",
    "jr",
    "st",
    "vs",
    "etc",
    "e.g",
    "i.e",
    "inc",
    "ltd",
    "co",
    "corp",
    "no",
    "fig",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "gen",
    "col",
    "lt",
    "sgt",
    "rev",
    "mt",
    "u.s",
    "u.k",
}


_PASSAGE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")


def passage_sentences(paragraph: str) -> list[str]:
    """Split a paragraph into sentences with a rule-based splitter (fast, deterministic).

    A break is made after ``.``, ``!`` or ``?`` followed by space and a capital or digit,
    unless the word before is a known abbreviation or a single initial ("J. R. R. Tolkien").
    """
    sentences: list[str] = []
    start = 0
    for match in _PASSAGE_END.finditer(paragraph):
        candidate = paragraph[start : match.start()].rstrip()
        last_word = candidate.rsplit(None, 1)[-1].rstrip(".!?\"'”’)]").lower() if candidate else ""
        if last_word in _ABBREVIATIONS or (len(last_word) == 1 and last_word.isalpha()):
            continue
        sentences.append(paragraph[start : match.end()].strip())
        start = match.end()
    tail = paragraph[start:].strip()
    if tail:
        sentences.append(tail)
    return [s for s in sentences if s]


#: a sentence end (after a lower-case word or a number: not an initial, "Joey D. Vieira")
#: followed by the next sentence's capitalised first word
FRAME_BREAK = re.compile(r"(?<=[a-z\d]{2})[.!?][\"”')]?\s+(?=[\"“(]?[A-Z])")


def frame_sentences(text: str) -> list[str]:
    """The sentences of a passage: split after ., ! or ? that end a lower-case word or a number
    and come before a capitalised word (not after an initial: "Joey D. Vieira"); the mark that
    ends a sentence is dropped with the break.

    >>> frame_sentences("He was born in Ulm in 1879. He died in Princeton. Dr. J. D. Vieira acted.")
    ['He was born in Ulm in 1879', 'He died in Princeton', 'Dr. J. D. Vieira acted.']
    """
    return [part.strip() for part in FRAME_BREAK.split(text.strip()) if part.strip()]


_PREMISE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[])")


_FACTSCORE_SENTENCE = re.compile(r"<s>(.*?)</s>", re.S)


def premise_sentences(text: str) -> list[str]:
    """Sentences of a premise: ``<s>…</s>`` marks when present (FActScore), else a regex split
    after . ! ? before an upper-case letter, digit or quote. Never empty for non-blank text."""
    if "<s>" in text:
        tagged = [part.strip() for part in _FACTSCORE_SENTENCE.findall(text) if part.strip()]
        if tagged:
            return tagged
    pieces = [piece.strip() for piece in _PREMISE_END.split(text) if piece.strip()]
    return pieces or ([text.strip()] if text.strip() else [])


_SPAN_END = re.compile(r"[.!?](?:[\"')\]]*)\s+")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (split after ``.``, ``!`` or ``?`` and
    whitespace; FActScore's ``<s>`` marks are treated as plain text)."""
    spans, start = [], 0
    for match in _SPAN_END.finditer(text):
        spans.append((start, match.end()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return [(a, b) for a, b in spans if text[a:b].strip()]
