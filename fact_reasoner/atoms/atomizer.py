"""The Atomizer: a response → atomic claims (atoms), by a chat model with JSON output.

The response is first split into sentences with ``pysbd`` so each model call sees one short
sentence (v2 also sees the sentence before it, to resolve pronouns); small models keep to the task far
better that way, and calls are cached and batched per sentence.

Prompt versions (part of the cache key):

- ``v3`` (the default): as v1, but the worked examples are about a person and a bridge that do
  not exist, the question is not shown, and the instructions forbid any name, number or date
  the sentence does not contain. Why: v1's examples were about Ada Lovelace ("born in London
  in 1815", Babbage), and for a real answer about Ada Lovelace the 1.5B model added exactly
  those facts, though the answer never stated them; it also added years it knows ("developed
  the theory of relativity in 1905"). An example about something that does not exist cannot
  leak into a real answer, and without the question ("Tell me a bio of …") the model is not
  invited to recall the topic. The pipeline still checks every atom against the response
  (:mod:`fact_reasoner.atoms.grounding`).
- ``v1``: FActScore-style atoms — one fact per short sentence, wording kept close to the
  source, pronouns may stay (the Reviser resolves them).
- ``v2``: self-contained atoms — pronouns and partial names replaced by the full name from
  the question/earlier text; with v2 the Reviser can be skipped.

A small model splits "She shared the prize with Pierre Curie and Henri Becquerel." into "She
shared the prize", "with Pierre Curie" and "and Henri Becquerel."; such pieces are made whole
claims after the claim before them (:func:`~fact_reasoner.atoms.grounding.complete_pieces`,
every version, counted ``completed``), and what is still a piece after revision is set aside,
not judged (:func:`~fact_reasoner.atoms.grounding.sentence_piece`).

Each call asks for ``{"atoms": [string, …]}`` under a JSON schema. A reply that breaks the
format gets one repair round and bounded retries (:mod:`fact_reasoner.llm.structured`).
If a sentence still cannot be atomized, the sentence itself becomes one atom carrying
``atomizer_failure`` (the reason): the claim stays assessable and the failure visible.

Atom ids are ``a0, a1, …`` in order; ``original`` is the atom as atomized (before revision);
``sentence`` the index of the sentence it was made from (:func:`~fact_reasoner.text.sentences.response_sentences` of the
response), so that ``fact-reasoner correct`` attaches each claim to its own sentence, also one
that opens with a pronoun ("She was born in Vienna."), whatever the reviser makes of its text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import RecordFailed
from ..llm.base import ChatRequest, LLMBackend
from ..llm.structured import InvalidOutput, StructuredCaller, StructuredFailure
from ..progress import stage_progress
from ..schema import Atom
from ..text.sentences import response_sentences
from .grounding import complete_pieces

if TYPE_CHECKING:
    from ..settings.config import PipelineConfig

PROMPT_VERSIONS = ("v1", "v2", "v3")
DEFAULT_PROMPT_VERSION = "v3"
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
    "v3": (
        "You break a sentence into atomic facts: short, complete sentences, each with a subject "
        "and a verb, each stating one piece of information the sentence gives. Cover every fact "
        "the sentence states; split lists into one fact per item. Add nothing: no fact you know "
        "from elsewhere, and no name, number or date that is not in the sentence. Keep the words "
        "of the sentence and leave its pronouns as they are. "
        'Reply with JSON: {"atoms": [...]}.'
    ),
}

# Worked examples written for this project (not taken from any dataset). v1 and v2 use these;
# they are kept as they were so that those versions reproduce earlier runs.
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


# v3's worked examples: about a person and a bridge that do not exist (written for this
# project), so nothing the model knows about a real topic matches them. The second shows a
# sentence that names a reason ("because of …") and a list: the atoms say what it says, one
# complete sentence per item, the pronoun kept, and add nothing.
_EXAMPLES_V3: tuple[tuple[str, list[str]], ...] = (
    (
        "Ilse Marrow was a Danish engineer who designed the Varnell Bridge, which opened in 1931.",
        [
            "Ilse Marrow was Danish.",
            "Ilse Marrow was an engineer.",
            "Ilse Marrow designed the Varnell Bridge.",
            "The Varnell Bridge opened in 1931.",
        ],
    ),
    (
        "She is often called the mother of the steel arch because of her notes on bridges in Tovik and Marle.",
        [
            "She is often called the mother of the steel arch.",
            "She wrote notes on bridges in Tovik.",
            "She wrote notes on bridges in Marle.",
        ],
    ),
)


def max_atoms(sentence: str, version: str) -> int:
    """The most atoms the schema lets one sentence have.

    v1 and v2: :data:`MAX_ATOMS_PER_SENTENCE` (16). v3: ⌈0.75 · w⌉ + 1 for a sentence of w
    words, at least 2 and at most 16. The FActScore annotators gave at most 0.71 atoms per word
    (12 atoms for a 17-word sentence; 386 ChatGPT dev sentences), so the bound never cuts a
    sentence they would split further; it stops a model that repeats one atom until the array
    is full (v1 wrote 16 atoms, 246 tokens, for a 14-word sentence about Einstein, eleven of
    them the same Nobel Prize) from doing so on a short sentence.

    >>> max_atoms("She discovered penicillin.", "v3"), max_atoms("She discovered penicillin.", "v1")
    (4, 16)
    """
    if version != "v3":
        return MAX_ATOMS_PER_SENTENCE
    return max(2, min(MAX_ATOMS_PER_SENTENCE, math.ceil(0.75 * len(sentence.split())) + 1))


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
    if version == "v3":
        # no question and no previous text: the sentence alone (module docstring)
        for example_sentence, example_atoms in _EXAMPLES_V3:
            messages.append(("user", _user(None, "", example_sentence)))
            messages.append(("assistant", json.dumps({"atoms": example_atoms})))
        messages.append(("user", _user(None, "", sentence)))
        return messages
    for example in _EXAMPLES:
        previous_text = example["previous"] if version == "v2" else ""
        messages.append(("user", _user(example["question"], previous_text, example["sentence"])))
        messages.append(("assistant", json.dumps({"atoms": example[version]})))
    messages.append(("user", _user(question, previous, sentence)))
    return messages


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
    prompt_version: str = DEFAULT_PROMPT_VERSION
    retries: int = 1

    def __post_init__(self) -> None:
        if self.prompt_version not in PROMPT_VERSIONS:
            raise ValueError(f"unknown atomizer prompt version {self.prompt_version!r}: use one of {PROMPT_VERSIONS}")
        self._caller = StructuredCaller(
            self.llm, f"atomizer/{self.prompt_version}", max_tokens=400, retries=self.retries
        )
        self._counters = {"sentences": 0, "failures": 0, "repairs": 0, "atoms": 0, "completed": 0}

    def atomize(self, response: str, *, question: str | None = None) -> list[Atom]:
        sentences = response_sentences(response)
        # v1 keeps pronouns, so it needs no earlier text; showing the 1.5B model the previous
        # sentence made it re-extract that sentence's facts too (measured on a dev biography).
        with_previous = self.prompt_version == "v2"
        conversations = [
            build_messages(
                self.prompt_version, s, previous=sentences[i - 1] if i and with_previous else "", question=question
            )
            for i, s in enumerate(sentences)
        ]
        with stage_progress("atomize", len(sentences), unit="sentence") as advance:
            results = self._caller.ask_many(
                conversations,
                [atoms_schema(max_atoms(s, self.prompt_version)) for s in sentences],
                [check_atoms] * len(sentences),
                on_done=lambda _: advance(1),
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
        for index, (sentence, result) in enumerate(zip(sentences, results)):
            if isinstance(result, StructuredFailure):
                self._counters["failures"] += 1
                atoms.append(
                    Atom(
                        id=f"a{len(atoms)}",
                        text=sentence,
                        original=sentence,
                        sentence=index,
                        atomizer_failure=result.reason,
                    )
                )
                continue
            self._counters["repairs"] += int(result.repaired)
            texts = complete_pieces(result.value)
            self._counters["completed"] += sum(a != b for a, b in zip(texts, result.value))
            for text in dict.fromkeys(texts):
                atoms.append(Atom(id=f"a{len(atoms)}", text=text, original=text, sentence=index))
        self._counters["atoms"] += len(atoms)
        return atoms

    def prefill_prompt(self) -> None:
        """Have the model read this stage's instructions and worked examples now (a server at
        start), so that the first response's sentences are all it reads then; a backend without
        a prompt cache does nothing (:meth:`~fact_reasoner.llm.base.ChatBackend.prefill`)."""
        prefill = getattr(self.llm, "prefill", None)
        if prefill is not None:
            messages = build_messages(self.prompt_version, "Ready.")
            prefill(ChatRequest.of(messages, f"atomizer/{self.prompt_version}", max_tokens=1))

    def stats(self) -> dict[str, float]:
        """This stage's counters (sentences, atoms, failures, repairs, completed: pieces such as
        "with Pierre Curie" made whole claims); model calls and cache hits are in
        ``self.llm.stats()``."""
        return dict(self._counters)


def make_atomizer(config: "PipelineConfig", llm: LLMBackend | None = None) -> Atomizer:
    """The LLM atomizer of ``config.models`` (``llm`` default: ``make_llm(config)``)."""
    if llm is None:
        from ..llm import make_llm

        llm = make_llm(config)
    return Atomizer(llm, prompt_version=config.models.atomizer_prompt_version)
