"""The Reviser: make each atom self-contained (decontextualise it) against the response.

Pronouns ("he", "its"), vague references ("the company", "the film") and partial names
("Vieira") are replaced by the full name the response uses, so that NLI against a passage
judges the right entity. The meaning must not change otherwise.

Atoms go to the model in chunks (``chunk_size`` per call, the response text first so the
server's prompt cache reuses it across chunks). The reply is ``{"atoms": [...]}`` with exactly
as many strings as were sent, in order; the schema bounds the length (``maxItems``; a
``minItems`` made grammar sampling 12x slower), the check asks for exactly as many. A chunk
whose reply cannot be used is split in halves and asked again, then one atom at a time (a
wrong number of facts at once, without a repair round: :class:`~fact_reasoner.llm.structured.AskFewer`;
a reply that breaks the format after the repair round and retries), counted ``splits``: only
an atom that fails alone keeps its text and is marked with ``reviser_failure`` (the reason),
counted ``failures`` — never dropped. Why: the 1.5B model answered a chunk of 8 with 4 facts
at the attempt, the repair and the retry, and all 8 atoms of the chunk were left unresolved
("He moved to the United States in 1933."): 17 of the 19 unresolved atoms of three long
biographies (issue 59).

Every revised atom keeps ``original`` (the text before revision, or the atomizer's original
when it already had one), ``id`` and any other field.

Prompt versions (part of the cache key):

- ``v2``: only the atoms that need it go to the model — those with a pronoun,
  those that name nothing, those whose name is part of a longer one in the response
  (:func:`fact_reasoner.atoms.grounding.needs_revision`); the others are kept as they are, and
  counted (``skipped``). Its worked example is about a person and a bridge that do not exist
  and shows "it" and "the bridge" resolved as well as "she". Why: the model rewrote every atom,
  so each costs its full length again in generated tokens (the slowest part on a CPU, several
  times slower per token than reading the prompt: ``docs/measurements.md``), and the common
  case — an atom that already says "Marie Curie was born in Warsaw." — needs no call at all;
  v1's example was about a real person (Grace Hopper, 1943), which a small model can repeat
  into an answer about her. A
  rewrite that does more than resolve a reference — adds a word the response does not have, or
  drops one that is not a pronoun or determiner
  (:func:`fact_reasoner.atoms.grounding.unfaithful_revision`) — is not used: the atom keeps its text
  and carries ``reviser_rejected`` (the rewrite and why), counted as ``rejected``. Measured
  why: v1 turned "Ada Lovelace is often called the first computer programmer because of her
  notes on Babbage's Analytical Engine." into "Ada Lovelace's notes on Babbage's Analytical
  Engine influenced the development of computers." An atom that still has an unresolved
  pronoun after its chunk (the model often returns a chunk unchanged) is asked about once
  more, alone (counted ``second_pass``).
- ``v1``: every atom is sent; the worked example is about Grace Hopper.
- ``v3`` (the default): as v2, and each fact is shown with the response sentence it was made
  from, the record's topic ("Topic: Lise Meitner") before the text, and the prompt names the
  references of a long answer besides pronouns: "there", "together", "both", "did so", a
  description ("the discovery", "the flight"); its worked example resolves each of these. Why:
  on a 12-sentence biography the antecedent of "There she met Otto Hahn." is sentences back, and
  v2 returned such facts unchanged or dropped "there"; the rule that accepts a rewrite now
  lets it drop those words (:func:`~fact_reasoner.atoms.grounding.unfaithful_revision`), and
  a rewrite that resolves "she" but drops the rest of the opening ("In 1926 she became …" →
  "Lise Meitner became …") gives its name to the atom as it was ("In 1926 Lise Meitner became
  …"; :func:`~fact_reasoner.atoms.grounding.resolve_in_place`, counted ``merged``), for v2 too.
  A reference points back: a rewrite that brings in a name first met after the atom's
  sentence (in neither the topic nor the response up to that sentence) is not used, for v2 and
  v3 when the atom's sentence is known ("She moved to Paris in 1891." → "Pierre Curie moved …",
  Pierre Curie first named in the next sentence; :func:`~fact_reasoner.atoms.grounding.names_from_later`).
  ``revise(…, topic=…)`` gives the topic; without one the line is left out.
Before any of it (v2 and later, ``topic_pronouns``, ``--no-topic-pronouns`` to turn it off):
where the response refers to its topic with one gender's pronouns
(:func:`~fact_reasoner.atoms.grounding.topic_reference`), a rule writes the topic's name for
"he"/"she"/"his"/"her"/"him", without the model
(:func:`~fact_reasoner.atoms.grounding.resolve_by_topic`, counted ``by_topic``; a part of the
topic's name stays as written: in full it scored worse end to end), and only the
atoms still flagged (:func:`~fact_reasoner.atoms.grounding.unresolved_reference`: "They had four
sons.", "There he met …") go to the model; an atom that opens with a description or names
nothing ("The film grossed $5 million.") is then left as it is. Why (eight development
biographies, issue 59): "He …" → "<topic> …" was the reviser's most common rewrite (the rule made
156 of them), and of the 58 atoms left that :func:`~fact_reasoner.atoms.grounding.needs_revision`
still sent, the model changed 4, for 15 calls and 7,279 tokens — half of what atomizing and
revising then read and wrote.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import RecordFailed
from ..llm.base import ChatRequest, LLMBackend
from ..llm.structured import AskFewer, InvalidOutput, StructuredCaller, StructuredFailure, StructuredResult
from ..progress import stage_progress
from ..schema import Atom
from ..text.sentences import response_sentences
from .grounding import (
    TopicReference,
    names_from_later,
    needs_revision,
    resolve_by_topic,
    resolve_in_place,
    topic_reference,
    unfaithful_revision,
    unresolved_reference,
)

if TYPE_CHECKING:
    from ..settings.config import PipelineConfig

PROMPT_VERSIONS = ("v1", "v2", "v3")
DEFAULT_PROMPT_VERSION = "v3"

_SYSTEM = (
    "You rewrite facts extracted from a text so that each one can be understood on its own. "
    "Replace pronouns (he, she, it, they, his, her, its, their …), vague references (the "
    "company, the film, the city …) and partial names with the full name the text uses. Change "
    "nothing else: do not add, drop or correct information. A fact that is already "
    'self-contained is returned unchanged. Reply with JSON {"atoms": [...]} containing exactly '
    "one rewritten fact per input fact, in the same order."
)

# v2 sends only facts that need a rewrite, so it does not say "a self-contained fact is returned
# unchanged": with that sentence the model returned "He played T'Challa …" as it was.
_SYSTEM_V2 = (
    "You rewrite facts extracted from a text so that each one can be understood on its own. Each "
    "fact below has a pronoun (he, she, it, they, his, her, its, their …), a vague reference (the "
    "company, the film, the city …) or a partial name: replace it with the full name the text "
    "uses for what it refers to. Change nothing else: do not add, drop or correct information. "
    'Reply with JSON {"atoms": [...]} containing exactly one rewritten fact per input fact, in '
    "the same order."
)

# v1's worked example, written for this project (kept as it was: v1 reproduces earlier runs).
_EXAMPLE_TEXT = (
    "Grace Hopper was an American computer scientist. She joined the US Navy Reserve in 1943. "
    "Her team developed FLOW-MATIC, and the language influenced COBOL."
)
_EXAMPLE_IN = [
    "She joined the US Navy Reserve.",
    "Her team developed FLOW-MATIC.",
    "The language influenced COBOL.",
    "Grace Hopper was American.",
]
_EXAMPLE_OUT = [
    "Grace Hopper joined the US Navy Reserve.",
    "Grace Hopper's team developed FLOW-MATIC.",
    "FLOW-MATIC influenced COBOL.",
    "Grace Hopper was American.",
]


# v2's worked example: a person, a bridge and a town that do not exist (written for this
# project), with "she", "it", "the bridge" and a partial name to resolve.
_EXAMPLE_TEXT_V2 = (
    "Ilse Marrow was a Danish engineer. She designed the Varnell Bridge, and it opened in 1931. "
    "The bridge crosses the Oskel at Tovik, where Marrow taught until her death."
)
_EXAMPLE_IN_V2 = [
    "She designed the Varnell Bridge.",
    "It opened in 1931.",
    "The bridge crosses the Oskel.",
    "Marrow taught at Tovik until her death.",
]
_EXAMPLE_OUT_V2 = [
    "Ilse Marrow designed the Varnell Bridge.",
    "The Varnell Bridge opened in 1931.",
    "The Varnell Bridge crosses the Oskel.",
    "Ilse Marrow taught at Tovik until her death.",
]
_SYSTEM_V3 = (
    "You rewrite facts extracted from a text so that each one can be understood on its own. Each "
    "fact below points to something it does not name: a pronoun (he, she, it, they, his, her, its, "
    "their …), a word such as there, together, both or 'did so', a description (the company, the "
    "discovery, the flight …) or a partial name. Replace it with the full name the text uses for "
    "what it refers to: look in the sentence the fact comes from and in the sentences before it; "
    "he or she is usually the person of the topic. Change nothing else: do not add, drop or correct "
    'information. Reply with JSON {"atoms": [...]} containing exactly one rewritten fact per input '
    "fact, in the same order."
)
# v3's worked example: the same made-up engineer in a longer text, with the references of a long
# answer ("there", "together", "both", a description, a possessive, a partial name) to resolve.
_EXAMPLE_TOPIC_V3 = "Ilse Marrow"
_EXAMPLE_TEXT_V3 = (
    "Ilse Marrow was a Danish engineer. In 1924 she moved to Tovik. There she met the architect Jon Hale. "
    "Together they designed the Varnell Bridge and the Oskel Bridge. Both bridges opened in 1931. "
    "The Oskel Bridge collapsed in 1950, and the collapse was blamed on its steel. Marrow taught at Tovik "
    "until her death."
)
_EXAMPLE_IN_V3 = [
    "She moved to Tovik in 1924.",
    "There she met the architect Jon Hale.",
    "Together they designed the Varnell Bridge.",
    "Both bridges opened in 1931.",
    "The collapse was blamed on its steel.",
    "Marrow taught at Tovik until her death.",
]
_EXAMPLE_SENTENCES_V3 = [1, 2, 3, 4, 5, 6]
_EXAMPLE_OUT_V3 = [
    "Ilse Marrow moved to Tovik in 1924.",
    "In Tovik Ilse Marrow met the architect Jon Hale.",
    "Ilse Marrow and Jon Hale designed the Varnell Bridge.",
    "The Varnell Bridge and the Oskel Bridge opened in 1931.",
    "The collapse of the Oskel Bridge was blamed on the steel of the Oskel Bridge.",
    "Ilse Marrow taught at Tovik until her death.",
]
_PROMPTS = {
    "v1": (_SYSTEM, _EXAMPLE_TEXT, _EXAMPLE_IN, _EXAMPLE_OUT),
    "v2": (_SYSTEM_V2, _EXAMPLE_TEXT_V2, _EXAMPLE_IN_V2, _EXAMPLE_OUT_V2),
    "v3": (_SYSTEM_V3, _EXAMPLE_TEXT_V3, _EXAMPLE_IN_V3, _EXAMPLE_OUT_V3),
}


def _user(text: str, atoms: list[str], sources: list[str] | None = None, topic: str | None = None) -> str:
    """The user turn: the text, then the numbered facts (v3: each with the sentence it comes from,
    and the topic first)."""
    lines = []
    for i, atom in enumerate(atoms):
        lines.append(f"{i + 1}. {atom}")
        if sources is not None and sources[i]:
            lines.append(f"   (from: {sources[i]})")
    numbered = "\n".join(lines)
    head = f"Topic: {topic}\n" if topic else ""
    return f"{head}Text: {text}\n\nFacts ({len(atoms)}):\n{numbered}\n\nRewritten facts as JSON:"


def build_messages(
    response: str,
    atoms: list[str],
    version: str = DEFAULT_PROMPT_VERSION,
    *,
    sources: list[str] | None = None,
    topic: str | None = None,
) -> list[tuple[str, str]]:
    """The conversation for one chunk of facts; v3 shows each fact's sentence (``sources``, ""
    where unknown) and the record's ``topic``."""
    if version not in PROMPT_VERSIONS:
        raise ValueError(f"unknown reviser prompt version {version!r}: use one of {PROMPT_VERSIONS}")
    system, example_text, example_in, example_out = _PROMPTS[version]
    if version != "v3":
        return [
            ("system", system),
            ("user", _user(example_text, example_in)),
            ("assistant", json.dumps({"atoms": example_out})),
            ("user", _user(response, atoms)),
        ]
    example_sentences = response_sentences(_EXAMPLE_TEXT_V3)
    example_sources = [example_sentences[i] for i in _EXAMPLE_SENTENCES_V3]
    return [
        ("system", system),
        ("user", _user(example_text, example_in, example_sources, _EXAMPLE_TOPIC_V3)),
        ("assistant", json.dumps({"atoms": example_out})),
        ("user", _user(response, atoms, sources or [""] * len(atoms), topic)),
    ]


def revised_schema(n: int) -> dict[str, Any]:
    """At most ``n`` facts; the check asks for exactly ``n``. (A ``minItems`` equal to
    ``maxItems`` made llama.cpp's grammar sampling many times slower per token for the same
    output: ``docs/measurements.md``.)"""
    return {
        "type": "object",
        "properties": {"atoms": {"type": "array", "items": {"type": "string"}, "maxItems": n}},
        "required": ["atoms"],
        "additionalProperties": False,
    }


def make_check(n: int):
    """The check of a reply about ``n`` facts: exactly ``n`` non-empty strings. A wrong count
    about several facts raises :class:`~fact_reasoner.llm.structured.AskFewer` (the chunk is
    split, no repair round); about one fact it is repaired and retried like any other failure."""

    def check(payload: Any) -> list[str]:
        if not isinstance(payload, dict) or not isinstance(payload.get("atoms"), list):
            raise InvalidOutput('expected an object {"atoms": [...]}')
        atoms = payload["atoms"]
        if len(atoms) != n:
            raise (AskFewer if n > 1 else InvalidOutput)(f"expected exactly {n} facts, got {len(atoms)}")
        if not all(isinstance(a, str) and a.strip() for a in atoms):
            raise InvalidOutput("every fact must be a non-empty string")
        return [" ".join(a.split()) for a in atoms]

    return check


@runtime_checkable
class ReviserBackend(Protocol):
    """Rewrites atoms so that each stands on its own (pronouns and partial names resolved)."""

    def revise(self, atoms: list[Atom], response: str, *, topic: str | None = None) -> list[Atom]: ...


@dataclass
class Reviser:
    """The LLM reviser: atoms revised in chunks against the whole response."""

    llm: LLMBackend
    prompt_version: str = DEFAULT_PROMPT_VERSION
    chunk_size: int = 8
    retries: int = 1
    #: v2 and later: the topic's name written for its pronouns by rule, without the model
    #: (:func:`~fact_reasoner.atoms.grounding.resolve_by_topic`; ``--no-topic-pronouns``)
    topic_pronouns: bool = True

    def __post_init__(self) -> None:
        if self.prompt_version not in PROMPT_VERSIONS:
            raise ValueError(f"unknown reviser prompt version {self.prompt_version!r}: use one of {PROMPT_VERSIONS}")
        self._caller = StructuredCaller(
            self.llm, f"reviser/{self.prompt_version}", max_tokens=60 * self.chunk_size, retries=self.retries
        )
        self._counters = {
            "atoms": 0,
            "failures": 0,
            "changed": 0,
            "skipped": 0,
            "rejected": 0,
            "merged": 0,
            "second_pass": 0,
            "splits": 0,
            "by_topic": 0,
        }

    def revise(self, atoms: list[Atom], response: str, *, topic: str | None = None) -> list[Atom]:
        """The atoms made self-contained against ``response`` (and, v3, the record's ``topic``)."""
        if self.prompt_version == "v1":
            return self._revise(atoms, response)
        reference = topic_reference(response_sentences(response), topic) if self.topic_pronouns else None
        if reference is not None:
            # the rule resolved the topic's pronouns; the model sees only what is still flagged
            atoms = self._by_topic(atoms, response, reference)
            selected = [i for i, atom in enumerate(atoms) if unresolved_reference(atom.text)]
        else:
            # v2: only the atoms that need it go to the model; the others keep their text
            selected = [i for i, atom in enumerate(atoms) if needs_revision(atom.text, response)]
        self._counters["skipped"] += len(atoms) - len(selected)
        revised = list(atoms)
        for i, atom in zip(selected, self._revise([atoms[i] for i in selected], response, topic=topic)):
            revised[i] = atom
        # the model often returns a whole chunk unchanged; asked about one fact at a time it
        # resolves most of those (a second pass only for atoms that still open with a pronoun)
        again = [
            i
            for i in selected
            if unresolved_reference(revised[i].text)
            and not getattr(revised[i], "reviser_failure", None)
            and not getattr(revised[i], "reviser_rejected", None)
        ]
        self._counters["second_pass"] += len(again)
        alone = self._revise([revised[i] for i in again], response, 1, "revise again", topic=topic)
        for i, atom in zip(again, alone):
            revised[i] = atom
        return revised

    def _by_topic(self, atoms: list[Atom], response: str, reference: TopicReference) -> list[Atom]:
        """The atoms with the topic's name written for its pronouns
        (:func:`~fact_reasoner.atoms.grounding.resolve_by_topic`), where the atom's sentence
        comes at or after the first that names the topic; counted ``by_topic``."""
        said = response_sentences(response)
        out = []
        for atom in atoms:
            if (
                atom.sentence is not None
                and reference.first_sentence <= atom.sentence < len(said)
                and needs_revision(atom.text, response)
            ):
                text = resolve_by_topic(atom.text, reference)
                if text != atom.text:
                    self._counters["by_topic"] += 1
                    atom = atom.model_copy(update={"text": text, "original": atom.original or atom.text})
            out.append(atom)
        return out

    def _revise(
        self,
        atoms: list[Atom],
        response: str,
        chunk_size: int | None = None,
        stage: str = "revise",
        *,
        topic: str | None = None,
    ) -> list[Atom]:
        """The atoms revised in chunks of ``chunk_size``; a chunk whose reply cannot be used is
        split in halves and asked again, down to one atom: only an atom that fails alone keeps
        its text and carries ``reviser_failure`` (counted ``splits`` and ``failures``)."""
        size = chunk_size or self.chunk_size
        said = response_sentences(response)

        def seen_by(atom: Atom) -> str | None:
            """What a reader has seen at the atom's sentence (None: its sentence is not known)."""
            if atom.sentence is None or atom.sentence >= len(said):
                return None
            return " ".join([topic or "", *said[: atom.sentence + 1]])

        def unfaithful(atom: Atom, text: str) -> str | None:
            why = unfaithful_revision(atom.text, text, response)
            preceding = seen_by(atom)
            later = names_from_later(atom.text, text, preceding) if why is None and preceding is not None else []
            return why or (
                f"brings in {', '.join(map(repr, later))}, first named after the atom's sentence" if later else None
            )

        revised = list(atoms)
        pending = [list(range(i, min(i + size, len(atoms)))) for i in range(0, len(atoms), size)]
        with stage_progress(stage, len(atoms), unit="atom") as advance:
            # the first round's replies move the bar; a split chunk's atoms were counted then
            progress: Callable[[int], None] | None = advance
            while pending:
                results = self._ask(pending, atoms, response, topic, progress)
                progress = None
                split: list[list[int]] = []
                for chunk, result in zip(pending, results):
                    if isinstance(result, StructuredFailure) and len(chunk) > 1:
                        # halves, then one atom at a time: one fact the model cannot rewrite
                        # no longer costs the whole chunk its revision
                        self._counters["splits"] += 1
                        half = (len(chunk) + 1) // 2
                        split += [chunk[:half], chunk[half:]]
                        continue
                    for i, atom in zip(chunk, self._apply([atoms[i] for i in chunk], result, unfaithful)):
                        revised[i] = atom
                pending = split
        self._counters["atoms"] += len(atoms)
        return revised

    def _ask(
        self,
        chunks: list[list[int]],
        atoms: list[Atom],
        response: str,
        topic: str | None,
        advance: Callable[[int], None] | None,
    ) -> list[StructuredResult[list[str]] | StructuredFailure]:
        """One structured call per chunk (atom indices; ``advance`` moves the stage's bar as
        replies come); a call that reached no model fails the record."""
        said = response_sentences(response)
        sentences = said if self.prompt_version == "v3" else []

        def source(atom: Atom) -> str:
            return sentences[atom.sentence] if atom.sentence is not None and atom.sentence < len(sentences) else ""

        texts = [[atoms[i].text for i in chunk] for chunk in chunks]
        results = self._caller.ask_many(
            [
                build_messages(
                    response,
                    t,
                    self.prompt_version,
                    sources=[source(atoms[i]) for i in chunk],
                    topic=topic,
                )
                for t, chunk in zip(texts, chunks)
            ],
            [revised_schema(len(t)) for t in texts],
            [make_check(len(t)) for t in texts],
            on_done=(lambda i: advance(len(texts[i]))) if advance is not None else None,
        )
        transport = [r for r in results if isinstance(r, StructuredFailure) and r.transport]
        if transport:
            raise RecordFailed(
                f"reviser: {len(transport)} of {len(chunks)} call(s) failed: {transport[0].reason}",
                unreachable=all(r.unreachable for r in transport),
            )
        return results

    def _apply(
        self, chunk: list[Atom], result: StructuredResult[list[str]] | StructuredFailure, unfaithful: Any
    ) -> list[Atom]:
        """One chunk's atoms with the model's rewrites applied, or marked with its failure."""
        if isinstance(result, StructuredFailure):
            self._counters["failures"] += len(chunk)
            return [
                a.model_copy(update={"original": a.original or a.text, "reviser_failure": result.reason}) for a in chunk
            ]
        revised: list[Atom] = []
        for atom, text in zip(chunk, result.value):
            update = {"text": text, "original": atom.original or atom.text}
            rejected = unfaithful(atom, text) if self.prompt_version != "v1" and text != atom.text else None
            merged = resolve_in_place(atom.text, text) if rejected else None
            if merged is not None and unfaithful(atom, merged) is None:
                # the name it found, put in place of the pronoun in the atom as it was
                self._counters["merged"] += 1
                update["text"] = merged
            elif rejected:
                # v2: a rewrite that changes more than a reference is not used (module docstring)
                self._counters["rejected"] += 1
                update = {"original": atom.original or atom.text, "reviser_rejected": f"{text!r}: {rejected}"}
            else:
                self._counters["changed"] += int(text != atom.text)
            revised.append(atom.model_copy(update=update))
        return revised

    def prefill_prompt(self) -> None:
        """Have the model read this stage's instructions and worked example now (a server at
        start): the first response's text and facts are then all it reads; a backend without a
        prompt cache does nothing (:meth:`~fact_reasoner.llm.base.ChatBackend.prefill`)."""
        prefill = getattr(self.llm, "prefill", None)
        if prefill is not None:
            messages = build_messages("Ready.", ["Ready."], self.prompt_version)
            prefill(ChatRequest.of(messages, f"reviser/{self.prompt_version}", max_tokens=1))

    def stats(self) -> dict[str, float]:
        """This stage's counters (atoms sent to the model, failures: atoms that failed alone,
        splits: chunks split in halves after a reply that could not be used, by_topic: atoms
        whose topic pronouns a rule resolved without the model, changed, skipped:
        atoms v2 kept without asking, rejected: rewrites v2 did not use, merged: rejected
        rewrites whose name was put in place of the atom's pronoun instead, second_pass: atoms
        v2 asked about again, alone); model calls and cache hits are in ``self.llm.stats()``."""
        return dict(self._counters)


def make_reviser(config: "PipelineConfig", llm: LLMBackend | None = None) -> Reviser:
    """The LLM reviser of ``config.models`` (``llm`` default: ``make_llm(config)``)."""
    if llm is None:
        from ..llm import make_llm

        llm = make_llm(config)
    models = config.models
    return Reviser(llm, prompt_version=models.reviser_prompt_version, topic_pronouns=models.topic_pronouns)
