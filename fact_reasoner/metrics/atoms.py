"""Atoms for the metrics: computed once per text and shared by every metric of an evaluation.

:class:`AtomStore` asks its atomizer for the atoms of a text the first time it is needed and
keeps them (keyed by the text) for every later metric and sample; with a
:class:`~fact_reasoner.cache.ModelCache` it also keeps them across runs.

:class:`SentenceAtomizer` is a real, model-free atomizer: one atom per sentence (pysbd when
installed, else a punctuation rule). It is the fallback when no language model is available
and the natural choice for short, single-fact sentences such as references.
"""

from __future__ import annotations

import threading
from typing import Any, Protocol

from ..cache import ModelCache, cache_key
from ..schema import Atom
from ..text.sentences import claim_lines


class Atomizer(Protocol):
    def atomize(self, text: str, question: str | None = None) -> list[Atom]: ...


SHORT_ANSWER_WORDS = 4


class SentenceAtomizer:
    """One atom per sentence of the text; deterministic and model-free.

    A bare short answer ("Yes", "1.5 million", at most ``SHORT_ANSWER_WORDS`` words) states
    nothing on its own, so with a question it becomes one atom "<question> <answer>" that an
    NLI model can check against a context.
    """

    name = "sentence"
    prompt_version = "sentence/v2"

    def atomize(self, text: str, question: str | None = None) -> list[Atom]:
        short = short_answer_claim(text, question)
        if short is not None:
            return [Atom(id="a0", text=short)]
        return [Atom(id=f"a{i}", text=s) for i, s in enumerate(claim_lines(text))]


def short_answer_claim(text: str, question: str | None) -> str | None:
    """The claim a bare short answer makes with its question, ``"<question> <answer>"`` (an
    answer of at most :data:`SHORT_ANSWER_WORDS` words, with a question), else None: "1889"
    alone states nothing an NLI model can check. The sentence atomizer's rule, and the holistic
    faithfulness's (:class:`~fact_reasoner.metrics.faithfulness.Faithfulness`)."""
    if question and question.strip() and 0 < len(text.split()) <= SHORT_ANSWER_WORDS:
        return f"{question.strip()} {text.strip()}"
    return None


def atomizer_name(atomizer: Any) -> str:
    """``name:prompt_version`` of an atomizer, as recorded with the results."""
    name = getattr(atomizer, "name", None) or type(atomizer).__name__
    version = getattr(atomizer, "prompt_version", None)
    return f"{name}:{version}" if version else str(name)


class AtomStore:
    """Atom texts per text, computed once (per store, and per cache file when one is given).

    The key is the text and the question (atomizers use the question to make atoms
    self-contained), so the same answer to two questions is atomized twice.
    """

    def __init__(self, atomizer: Atomizer, cache: ModelCache | None = None):
        self.atomizer = atomizer
        self.cache = cache
        self._atoms: dict[tuple[str, str], list[str]] = {}
        self._lock = threading.Lock()
        self.computed = 0
        self.reused = 0

    def claims(self, text: str | None, question: str | None = None) -> list[str]:
        """The atom texts of ``text`` (empty for an empty text)."""
        if text is None or not text.strip():
            return []
        memo_key = (text, question or "")
        request = {"text": text, "question": question or ""}
        with self._lock:
            if memo_key in self._atoms:
                self.reused += 1
                return list(self._atoms[memo_key])
        key = cache_key("atoms", atomizer_name(self.atomizer), "metrics-atoms/v2", request)
        claims: list[str] | None = None
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                claims = list(hit["atoms"])
        if claims is None:
            atoms = self.atomizer.atomize(text, question=question)
            claims = [a.text.strip() for a in atoms if a.text and a.text.strip()]
            self.computed += 1
            if self.cache is not None:
                self.cache.put(
                    key,
                    {"atoms": claims},
                    backend="atoms",
                    model=atomizer_name(self.atomizer),
                    prompt_version="metrics-atoms/v2",
                    request=request,
                )
        with self._lock:
            self._atoms.setdefault(memo_key, claims)
        return list(claims)


__all__ = ["AtomStore", "Atomizer", "SentenceAtomizer", "atomizer_name", "short_answer_claim"]
