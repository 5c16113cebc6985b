"""The corrector's prompt: one sentence of a response rewritten to state only what is supported.

:mod:`fact_reasoner.correction.corrector` decides, without a model, what each sentence must say: the
facts to keep (supported atoms), the facts to correct (unsupported atoms that a context
contradicts, with that context's sentence as the evidence of what is true) and the facts to
drop (unsupported atoms no context corrects). The model only writes the sentence. Citation
markers are added by the corrector afterwards, never by the model.

The reply is ``{"sentence": "..."}``; an empty string means nothing of the sentence is left.
Prompt version ``v1`` (part of the model-call cache key: a changed prompt never replays an
old answer).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .structured import InvalidOutput

PROMPT_VERSION = "corrector/v1"

SYSTEM = (
    "You edit one sentence of a text so that it states only facts that are supported by evidence. "
    "You get the sentence, the facts to keep, the facts to drop, and the facts to correct, each "
    "with the evidence that says what is true. Write one sentence that states every fact to keep, "
    "states each fact to correct the way its evidence says it, and leaves out every fact to drop. "
    "Add nothing else: no fact that is not a fact to keep or the corrected form of a fact to "
    "correct. Keep the wording of the original sentence where you can. If no fact is left, reply "
    'with an empty sentence. Reply with JSON: {"sentence": "..."}.'
)


@dataclass(frozen=True)
class FactToCorrect:
    """An unsupported fact and the evidence (a context's sentence) that says what is true."""

    fact: str
    evidence: str


@dataclass(frozen=True)
class RewriteRequest:
    """What one sentence must become: keep these facts, correct those, drop the rest."""

    sentence: str
    keep: tuple[str, ...] = ()
    correct: tuple[FactToCorrect, ...] = ()
    drop: tuple[str, ...] = ()
    question: str | None = None


# Worked examples written for this project (not taken from any data set).
_EXAMPLES: tuple[tuple[RewriteRequest, str], ...] = (
    (
        RewriteRequest(
            sentence="Ada Lovelace was an English mathematician, born in Paris in 1815.",
            keep=("Ada Lovelace was English.", "Ada Lovelace was a mathematician.", "Ada Lovelace was born in 1815."),
            correct=(
                FactToCorrect(
                    "Ada Lovelace was born in Paris.",
                    "Augusta Ada King, Countess of Lovelace, was born in London on 10 December 1815.",
                ),
            ),
        ),
        "Ada Lovelace was an English mathematician, born in London in 1815.",
    ),
    (
        RewriteRequest(
            sentence="She worked with Charles Babbage and won the Royal Medal in 1840.",
            keep=("She worked with Charles Babbage.",),
            drop=("She won the Royal Medal.", "She won the Royal Medal in 1840."),
        ),
        "She worked with Charles Babbage.",
    ),
    (
        RewriteRequest(
            sentence="Her notes were published in 1850 in a French journal.",
            drop=("Her notes were published in 1850.", "Her notes were published in a French journal."),
        ),
        "",
    ),
)


def _listed(title: str, items: Sequence[str]) -> str:
    if not items:
        return f"{title}: none"
    return f"{title}:\n" + "\n".join(f"- {item}" for item in items)


def user_message(request: RewriteRequest) -> str:
    """The request as the user turn: question, sentence, then the three lists of facts."""
    parts = []
    if request.question:
        parts.append(f"Question: {request.question}")
    parts.append(f"Sentence: {request.sentence}")
    parts.append(_listed("Facts to keep", request.keep))
    parts.append(
        _listed("Facts to correct", [f"{c.fact} (evidence: {c.evidence})" for c in request.correct]),
    )
    parts.append(_listed("Facts to drop", request.drop))
    parts.append("The rewritten sentence as JSON:")
    return "\n".join(parts)


def build_messages(request: RewriteRequest) -> list[tuple[str, str]]:
    """System prompt, the worked examples (correct, drop, drop everything), then the request."""
    messages: list[tuple[str, str]] = [("system", SYSTEM)]
    for example, answer in _EXAMPLES:
        messages.append(("user", user_message(example)))
        messages.append(("assistant", json.dumps({"sentence": answer})))
    messages.append(("user", user_message(request)))
    return messages


def sentence_schema() -> dict[str, Any]:
    """The JSON schema of a reply: ``{"sentence": string}`` and nothing else."""
    return {
        "type": "object",
        "properties": {"sentence": {"type": "string", "maxLength": 600}},
        "required": ["sentence"],
        "additionalProperties": False,
    }


_MARKER = re.compile(r"\s*\[\d+\]")


def check_sentence(payload: Any) -> str:
    """The rewritten sentence of a reply, whitespace normalised and any ``[n]`` marker removed
    (citations are the corrector's to add); ``""`` when nothing is left."""
    if not isinstance(payload, dict) or "sentence" not in payload:
        raise InvalidOutput('expected an object {"sentence": "..."}')
    sentence = payload["sentence"]
    if not isinstance(sentence, str):
        raise InvalidOutput('"sentence" must be a string')
    return " ".join(_MARKER.sub("", sentence).split())


__all__ = [
    "FactToCorrect",
    "PROMPT_VERSION",
    "RewriteRequest",
    "build_messages",
    "check_sentence",
    "sentence_schema",
    "user_message",
]
