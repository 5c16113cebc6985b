"""The Atomizer: a response → atomic claims (atoms), by a chat model with JSON output.

The response is first split into sentences with ``pysbd`` so each model call sees one short
sentence (v2 also sees the sentence before it, to resolve pronouns); small models keep to the task far
better that way, and calls are cached and batched per sentence.

Prompt versions (part of the cache key):

- ``v1``: FActScore-style atoms — one fact per short sentence, wording kept close to the
  source, pronouns may stay (the Reviser resolves them).
- ``v2``: self-contained atoms — pronouns and partial names replaced by the full name from
  the question/earlier text; with v2 the Reviser can be skipped.

Each call asks for ``{"atoms": [string, …]}`` under a JSON schema. A reply that breaks the
format gets one repair round and bounded retries (:mod:`fact_reasoner.llm.structured`).
If a sentence still cannot be atomized, the sentence itself becomes one atom carrying
``atomizer_failure`` (the reason): the claim stays assessable and the failure visible.

Atom ids are ``a0, a1, …`` in order; ``original`` is the atom as atomized (before revision).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .errors import RecordFailed
from .llm.base import LLMBackend
from .llm.structured import InvalidOutput, StructuredCaller, StructuredFailure
from .schema import Atom

if TYPE_CHECKING:
    from .config import PipelineConfig

PROMPT_VERSIONS = ("v1", "v2")
MAX_ATOMS_PER_SENTENCE = 16

_SYSTEM = {
    "v1": (
        "You break a sentence into atomic facts. An atomic fact is a short sentence that states "
        "exactly one piece of information. Cover every fact the sentence states, and nothing it "
        "does not state. Keep the wording close to the sentence. Opinions and questions count as "
        'facts only if they assert something. Reply with JSON: {"atoms": [...]}.'
    ),
    "v2": (
        "You break a sentence into atomic facts. An atomic fact is a short sentence that states "
        "exactly one piece of information and can be understood on its own: replace pronouns "
        "(he, she, it, they, his …) and partial names with the full name of what they refer to, "
        "using the question and the previous text. Cover every fact the sentence states, and "
        'nothing it does not state. Reply with JSON: {"atoms": [...]}.'
    ),
}

# Worked examples written for this project (not taken from any dataset).
_EXAMPLES: tuple[dict[str, Any], ...] = (
    {
        "question": "Tell me a bio of Ada Lovelace.",
        "previous": "",
        "sentence": "Ada Lovelace was an English mathematician, born in London in 1815.",
        "v1": [
            "Ada Lovelace was English.",
            "Ada Lovelace was a mathematician.",
            "Ada Lovelace was born in London.",
            "Ada Lovelace was born in 1815.",
        ],
        "v2": [
            "Ada Lovelace was English.",
            "Ada Lovelace was a mathematician.",
            "Ada Lovelace was born in London.",
            "Ada Lovelace was born in 1815.",
        ],
    },
    {
        "question": "Tell me a bio of Ada Lovelace.",
        "previous": "Ada Lovelace was an English mathematician, born in London in 1815.",
        "sentence": "She worked with Charles Babbage on his Analytical Engine and published the first computer program in 1843.",
        "v1": [
            "She worked with Charles Babbage.",
            "She worked on the Analytical Engine.",
            "The Analytical Engine was designed by Charles Babbage.",
            "She published the first computer program.",
            "She published the first computer program in 1843.",
        ],
        "v2": [
            "Ada Lovelace worked with Charles Babbage.",
            "Ada Lovelace worked on the Analytical Engine.",
            "The Analytical Engine was designed by Charles Babbage.",
            "Ada Lovelace published the first computer program.",
            "Ada Lovelace published the first computer program in 1843.",
        ],
    },
)


def atoms_schema(max_items: int = MAX_ATOMS_PER_SENTENCE) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"atoms": {"type": "array", "items": {"type": "string"}, "maxItems": max_items}},
        "required": ["atoms"],
        "additionalProperties": False,
    }


def _user(question: str | None, previous: str, sentence: str) -> str:
    parts = []
    if question:
        parts.append(f"Question: {question}")
    if previous:
        parts.append(f"Previous text: {previous}")
    parts.append(f"Sentence: {sentence}")
    parts.append("Atomic facts of the sentence as JSON:")
    return "\n".join(parts)


def build_messages(
    version: str, sentence: str, *, previous: str = "", question: str | None = None
) -> list[tuple[str, str]]:
    import json

    if version not in PROMPT_VERSIONS:
        raise ValueError(f"unknown atomizer prompt version {version!r}: use one of {PROMPT_VERSIONS}")
    messages: list[tuple[str, str]] = [("system", _SYSTEM[version])]
    for example in _EXAMPLES:
        previous_text = example["previous"] if version == "v2" else ""
        messages.append(("user", _user(example["question"], previous_text, example["sentence"])))
        messages.append(("assistant", json.dumps({"atoms": example[version]})))
    messages.append(("user", _user(question, previous, sentence)))
    return messages


@lru_cache(maxsize=1)
def _segmenter():
    import pysbd

    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (pysbd), paragraphs first so a blank line always ends a sentence."""
    sentences: list[str] = []
    for paragraph in text.split("\n"):
        if paragraph.strip():
            sentences.extend(s.strip() for s in _segmenter().segment(paragraph) if s.strip())
    return sentences


def check_atoms(payload: Any) -> list[str]:
    """The atoms of a reply: a list of non-empty strings, duplicates removed, order kept."""
    if not isinstance(payload, dict) or "atoms" not in payload:
        raise InvalidOutput('expected an object {"atoms": [...]}')
    atoms = payload["atoms"]
    if not isinstance(atoms, list) or not all(isinstance(a, str) for a in atoms):
        raise InvalidOutput('"atoms" must be a list of strings')
    cleaned = [" ".join(a.split()) for a in atoms]
    if any(not a for a in cleaned):
        raise InvalidOutput("an atom is empty")
    return list(dict.fromkeys(cleaned))


@runtime_checkable
class AtomizerBackend(Protocol):
    """Splits a response into atoms (the LLM :class:`Atomizer`, the metrics' sentence splitter…)."""

    def atomize(self, response: str, *, question: str | None = None) -> list[Atom]: ...


@dataclass
class Atomizer:
    """The LLM atomizer: one structured call per sentence (see the module docstring)."""

    llm: LLMBackend
    prompt_version: str = "v1"
    retries: int = 1

    def __post_init__(self) -> None:
        if self.prompt_version not in PROMPT_VERSIONS:
            raise ValueError(f"unknown atomizer prompt version {self.prompt_version!r}: use one of {PROMPT_VERSIONS}")
        self._caller = StructuredCaller(
            self.llm, f"atomizer/{self.prompt_version}", max_tokens=400, retries=self.retries
        )
        self._counters = {"sentences": 0, "failures": 0, "repairs": 0, "atoms": 0}

    def atomize(self, response: str, *, question: str | None = None) -> list[Atom]:
        sentences = split_sentences(response)
        # v1 keeps pronouns, so it needs no earlier text; showing the 1.5B model the previous
        # sentence made it re-extract that sentence's facts too (measured on a dev biography).
        with_previous = self.prompt_version == "v2"
        conversations = [
            build_messages(
                self.prompt_version, s, previous=sentences[i - 1] if i and with_previous else "", question=question
            )
            for i, s in enumerate(sentences)
        ]
        results = self._caller.ask_many(
            conversations, [atoms_schema()] * len(sentences), [check_atoms] * len(sentences)
        )
        atoms: list[Atom] = []
        self._counters["sentences"] += len(sentences)
        transport = [r for r in results if isinstance(r, StructuredFailure) and r.transport]
        if transport:
            # The model could not be asked: atoms made without it would be a guess, not the
            # atomizer's output. The record fails (and is retried on the next run).
            raise RecordFailed(
                f"atomizer: {len(transport)} of {len(sentences)} call(s) failed: {transport[0].reason}",
                unreachable=all(r.unreachable for r in transport),
            )
        for sentence, result in zip(sentences, results):
            if isinstance(result, StructuredFailure):
                self._counters["failures"] += 1
                atoms.append(
                    Atom(id=f"a{len(atoms)}", text=sentence, original=sentence, atomizer_failure=result.reason)
                )
                continue
            self._counters["repairs"] += int(result.repaired)
            for text in result.value:
                atoms.append(Atom(id=f"a{len(atoms)}", text=text, original=text))
        self._counters["atoms"] += len(atoms)
        return atoms

    def stats(self) -> dict[str, float]:
        """This stage's counters (sentences, atoms, failures, repairs); model calls and cache
        hits are in ``self.llm.stats()``."""
        return dict(self._counters)


def make_atomizer(config: "PipelineConfig", llm: LLMBackend | None = None) -> Atomizer:
    """The LLM atomizer of ``config.models`` (``llm`` default: ``make_llm(config)``)."""
    if llm is None:
        from .llm import make_llm

        llm = make_llm(config)
    return Atomizer(llm, prompt_version=config.models.atomizer_prompt_version)
