"""Alignment features of a (premise, hypothesis) pair, for the ``align`` NLI classifier.

A claim is entailed by a passage when the passage *says* it: some sentence of the passage
means the same thing (embedding similarity) and the claim's content words, names and numbers
all appear there (lexical coverage). It is contradicted when the best-aligned sentence talks
about the same thing but with another number, year or polarity. These features measure exactly
that, so a small classifier over them needs little training data — unlike a cross-encoder,
which must learn alignment itself from far more pairs than we have offline.

Everything here is a pure function of the two texts and the sentence vectors; the vectors come
from any sentence embedder (the default is all-MiniLM-L6-v2, L2-normalised).

Scalar features (``SCALAR_FEATURES``, in order):

- ``cos_best``: max over premise sentences s of cos(h, s); ``cos_second``: the runner-up;
  ``cos_pair_best``: max over adjacent sentence pairs of cos(h, normalise(s_i + s_{i+1})),
  for claims that span two sentences; ``cos_premise``: cos(h, normalise(Σ s)).
- ``cover_premise``: |C(h) ∩ C(p)| / |C(h)| over content stems C (stop words removed);
  ``cover_best``: the same against the best two-sentence window (chosen by coverage);
  ``cover_aligned``: against the sentence with the highest cosine.
- ``cover_names``: share of the hypothesis's capitalised words (not sentence-initial) found
  in the premise (1 when it has none); ``has_names``.
- ``cover_numbers``: share of the hypothesis's numbers found in the premise (1 when none);
  ``has_numbers``; ``number_conflict``: 1 when a hypothesis number is missing from the premise
  while the best window states another number of the same kind (year vs year, other vs
  other) *and* covers at least half of the hypothesis's other content words — the signature
  of a changed date or count, not of a passage about another event; ``month_conflict``: the
  same for month names; ``missing_words``: log1p of the number of hypothesis content stems absent from the
  premise (one swapped word is not the same as a claim about something else).
- ``negated_hypothesis_only`` / ``negated_premise_only``: whether only the hypothesis, or only
  the best window, contains a negation word (kept apart: passages say "no" and "not" about
  many things, while a negated claim against a positive statement is a contradiction).
- ``log_hyp_words``, ``log_premise_words``, ``log_sentences``: sizes (log1p).

Vector features (``vector_features``): h ⊙ s* and |h − s*| for the best-aligned sentence s*,
the classic sentence-pair encoding of InferSent-style NLI classifiers.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

SCALAR_FEATURES = (
    "cos_best",
    "cos_second",
    "cos_pair_best",
    "cos_premise",
    "cover_premise",
    "cover_best",
    "cover_aligned",
    "cover_names",
    "has_names",
    "cover_numbers",
    "has_numbers",
    "number_conflict",
    "month_conflict",
    "missing_words",
    "negated_hypothesis_only",
    "negated_premise_only",
    "log_hyp_words",
    "log_premise_words",
    "log_sentences",
)

_STOP_WORDS = frozenset(
    """a an the of in on at to for from by with and or but nor so as is was are were be been being
    am that this these those it its he she him his her hers they their them theirs we our us you
    your i me my who whom whose which what when where why how also has have had having do does
    did done will would shall should can could may might must than then there here into onto
    about over under after before during while since until upon such very more most some any
    all each both other another one only just well many much own same too s t""".split()
)
_NEGATIONS = frozenset("not no never none nobody nothing neither nor cannot without n't".split())
_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?|\d+(?:[.,]\d+)*")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_YEAR = re.compile(r"^(1[0-9]\d\d|20\d\d)$")
_MONTHS = frozenset("january february march april may june july august september october november december".split())


def stem(word: str) -> str:
    """A deliberately crude suffix stripper: 'awarded'/'awards'/'awarding' → 'award'."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 3 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def words(text: str) -> list[str]:
    return _WORD.findall(text)


def content_stems(text: str) -> set[str]:
    """Lower-cased, stemmed words of ``text`` without stop words and negations."""
    return {
        stem(w.lower().replace(",", ""))
        for w in words(text)
        if w.lower() not in _STOP_WORDS and w.lower() not in _NEGATIONS
    }


def names(text: str) -> set[str]:
    """Capitalised words that are not the first word of the text (a cheap proper-noun proxy)."""
    tokens = words(text)
    return {t.lower() for t in tokens[1:] if t[0].isupper() and t.lower() not in _STOP_WORDS}


def numbers(text: str) -> set[str]:
    """The numbers written in the text, thousands separators removed."""
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


def negation_count(text: str) -> int:
    """How many negation words (not, never, no, n't, …) the text holds."""
    lowered = text.lower().replace("n't", " n't")
    return sum(1 for w in re.findall(r"[a-z']+", lowered) if w in _NEGATIONS)


def coverage(needles: set[str], haystack: set[str]) -> float:
    """|needles ∩ haystack| / |needles|; 1 when there is nothing to find."""
    return len(needles & haystack) / len(needles) if needles else 1.0


def _number_conflict(
    hyp_numbers: set[str], premise_numbers: set[str], window_numbers: set[str], aligned: bool
) -> float:
    missing = hyp_numbers - premise_numbers
    if not missing or not aligned:
        return 0.0
    missing_years = any(_YEAR.match(n) for n in missing)
    missing_other = any(not _YEAR.match(n) for n in missing)
    window_years = any(_YEAR.match(n) for n in window_numbers)
    window_other = any(not _YEAR.match(n) for n in window_numbers)
    return float((missing_years and window_years) or (missing_other and window_other))


def _month_conflict(hypothesis: str, premise_words: set[str], window_text: str, aligned: bool) -> float:
    hyp_months = {w.lower() for w in words(hypothesis)} & _MONTHS
    window_months = {w.lower() for w in words(window_text)} & _MONTHS
    return float(aligned and bool(hyp_months - premise_words) and bool(window_months - hyp_months))


def scalar_features(
    hypothesis: str,
    sentences: Sequence[str],
    hypothesis_vector: np.ndarray,
    sentence_vectors: np.ndarray,
) -> tuple[np.ndarray, int]:
    """The ``SCALAR_FEATURES`` vector and the index of the best-aligned sentence.

    ``sentence_vectors`` is (len(sentences), d), rows L2-normalised like ``hypothesis_vector``.
    """
    cosines = sentence_vectors @ hypothesis_vector
    order = np.argsort(-cosines)
    best = int(order[0])
    cos_best = float(cosines[best])
    cos_second = float(cosines[order[1]]) if len(order) > 1 else cos_best
    if len(sentences) > 1:
        pairs = sentence_vectors[:-1] + sentence_vectors[1:]
        pairs /= np.maximum(np.linalg.norm(pairs, axis=1, keepdims=True), 1e-12)
        cos_pair_best = max(float((pairs @ hypothesis_vector).max()), cos_best)
    else:
        cos_pair_best = cos_best
    mean = sentence_vectors.sum(axis=0)
    cos_premise = float(mean @ hypothesis_vector / max(float(np.linalg.norm(mean)), 1e-12))

    hyp_stems = content_stems(hypothesis)
    sentence_stems = [content_stems(s) for s in sentences]
    premise_stems = set().union(*sentence_stems)
    window_scores = [
        coverage(hyp_stems, sentence_stems[i] | (sentence_stems[i + 1] if i + 1 < len(sentences) else set()))
        for i in range(len(sentences))
    ]
    window = int(np.argmax(window_scores))
    window_text = " ".join(sentences[window : window + 2])
    premise_text = " ".join(sentences)

    hyp_names = names(hypothesis)
    premise_words = {w.lower() for w in words(premise_text)}
    hyp_numbers = numbers(hypothesis)
    premise_numbers = numbers(premise_text)
    n_premise_words = len(premise_text.split())
    # "Aligned": the window states most of what the claim says apart from its numbers/months,
    # so a different number or month there is about the same fact.
    slot_free = {w for w in hyp_stems if not w[0].isdigit() and w not in _MONTHS}
    window_stems = content_stems(window_text)
    aligned = coverage(slot_free, window_stems) >= 0.5
    hyp_negated = negation_count(hypothesis) > 0
    window_negated = negation_count(window_text) > 0
    values = [
        cos_best,
        cos_second,
        cos_pair_best,
        cos_premise,
        coverage(hyp_stems, premise_stems),
        window_scores[window],
        coverage(hyp_stems, sentence_stems[best]),
        coverage(hyp_names, premise_words),
        float(bool(hyp_names)),
        coverage(hyp_numbers, premise_numbers),
        float(bool(hyp_numbers)),
        _number_conflict(hyp_numbers, premise_numbers, numbers(window_text), aligned),
        _month_conflict(hypothesis, premise_words, window_text, aligned),
        math.log1p(len(hyp_stems - premise_stems)),
        float(hyp_negated and not window_negated),
        float(window_negated and not hyp_negated),
        math.log1p(len(hypothesis.split())),
        math.log1p(n_premise_words),
        math.log1p(len(sentences)),
    ]
    return np.asarray(values, dtype=np.float32), best


def vector_features(hypothesis_vector: np.ndarray, aligned_vector: np.ndarray) -> np.ndarray:
    """[h ⊙ s*, |h − s*|] for the hypothesis vector h and the best-aligned sentence vector s*."""
    return np.concatenate([hypothesis_vector * aligned_vector, np.abs(hypothesis_vector - aligned_vector)])


__all__ = [
    "SCALAR_FEATURES",
    "content_stems",
    "coverage",
    "names",
    "negation_count",
    "numbers",
    "scalar_features",
    "stem",
    "vector_features",
]
