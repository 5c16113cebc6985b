"""VeriScore (Song et al. 2024): only verifiable claims are checked.

1. **Claims.** The response is split into sentences; for each sentence the LLM is shown the
   sentence with the text around it and lists the *verifiable* claims the sentence makes —
   statements about the world that evidence could confirm or refute — leaving out opinions,
   advice, hedges, questions and statements about the speaker. One call per sentence; a reply
   that lists nothing and does not say so is unreadable (asked again, then the record fails).
   ``--veriscore-claims given`` (the default) uses the record's atoms instead when it carries
   some, so that a prepared file with gold labels is compared atom by atom; ``extract``
   always extracts.
2. **Evidence.** Per claim: its own contexts in the record, else the ``--top-k`` best passages
   for the claim's text (the record's contexts, or the configured retriever/search).
3. **Verification.** Supported or unsupported: the LLM reads the claim and the passages and
   answers ``Supported`` or ``Unsupported`` (or the NLI judge, ``--pipeline-judge nli``).

Score: precision = supported / verifiable claims; a response without verifiable claims has
no precision (NaN, as for FactReasoner's records without atoms).
"""

from __future__ import annotations

import re

from ..llm.base import ChatRequest
from ..schema import Atom, Context, InputRecord
from ..stages import timed
from .base import AtomJudgement, BaselinePipeline, EvidenceSource, ask, format_passages, nli_support

__all__ = [
    "EXTRACT_PROMPT_VERSION",
    "NO_CLAIMS",
    "VERIFY_PROMPT_VERSION",
    "VeriScorePipeline",
    "build_extraction_messages",
    "build_verification_messages",
    "parse_claims",
    "parse_supported",
]

EXTRACT_PROMPT_VERSION = "veriscore-extract/v1"
VERIFY_PROMPT_VERSION = "veriscore-verify/v1"
#: what the extractor answers for a sentence without verifiable claims
NO_CLAIMS = "No verifiable claim."
#: sentences shown on each side of the focused one
CONTEXT_SENTENCES = 2

_EXTRACT_INSTRUCTIONS = (
    "You extract verifiable claims from one sentence of a response.\n"
    "A verifiable claim states something about the world that evidence (an encyclopedia, the news, "
    "a reference work) could confirm or refute. Leave out opinions, advice, feelings, hedged "
    "speculation, questions, and statements about the writer or the conversation.\n"
    "Write each claim as a short stand-alone sentence: replace pronouns by the names they stand for, "
    "using the surrounding text. Only extract claims made by the SENTENCE, not by the surrounding text.\n"
    f"Answer with one claim per line, each starting with '- '. If the sentence makes no verifiable "
    f"claim, answer exactly: {NO_CLAIMS}"
)

_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.+?)\s*$")
_SUPPORTED = re.compile(r"\b(unsupported|not supported|supported)\b", re.IGNORECASE)


def build_extraction_messages(sentences: list[str], index: int, question: str | None) -> list[tuple[str, str]]:
    """The extraction prompt for ``sentences[index]``, with up to :data:`CONTEXT_SENTENCES` on each side."""
    before = " ".join(sentences[max(0, index - CONTEXT_SENTENCES) : index])
    after = " ".join(sentences[index + 1 : index + 1 + CONTEXT_SENTENCES])
    asked = f"QUESTION: {question}\n" if question else ""
    user = f"{asked}TEXT BEFORE: {before}\nSENTENCE: {sentences[index]}\nTEXT AFTER: {after}\n\nVerifiable claims:"
    return [("system", _EXTRACT_INSTRUCTIONS), ("user", user)]


def parse_claims(reply: str) -> list[str] | None:
    """The claims listed in a reply (``- claim`` or ``1. claim`` lines); ``[]`` when it says
    :data:`NO_CLAIMS`; None when it does neither (unreadable)."""
    claims = [m.group(1) for line in reply.splitlines() if (m := _LIST_ITEM.match(line))]
    if claims:
        return claims
    if "no verifiable claim" in reply.lower():
        return []
    return None


def build_verification_messages(claim: Atom, passages: list[Context]) -> list[tuple[str, str]]:
    """The verification prompt: evidence passages, the claim, Supported or Unsupported."""
    user = (
        "Decide whether the CLAIM is supported by the EVIDENCE. It is supported only if the evidence "
        "confirms everything the claim states; otherwise (contradicted, or not enough information) it "
        "is unsupported.\n\n"
        f"EVIDENCE:\n{format_passages(passages)}\n\n"
        f"CLAIM: {claim.text}\n\n"
        "Answer with one word, Supported or Unsupported.\nAnswer:"
    )
    return [("user", user)]


def parse_supported(reply: str) -> bool | None:
    """Supported (True) or unsupported / not supported (False), from the first of those words;
    None when none appears."""
    found = _SUPPORTED.search(reply)
    return None if found is None else found.group(1).lower() == "supported"


class VeriScorePipeline(BaselinePipeline):
    """``--pipeline veriscore`` (see the module docstring)."""

    name = "veriscore"

    def extracts(self, record: InputRecord) -> bool:
        """Whether the record's claims are extracted here (not the record's atoms)."""
        return self.config.pipeline.veriscore_claims == "extract" or record.atoms is None

    def uses_llm(self, record: InputRecord) -> bool:
        return self.judge == "llm" or self.extracts(record)

    def claims(self, record: InputRecord, timings: dict[str, float]) -> list[Atom]:
        if not self.extracts(record):
            return super().claims(record, timings)
        from ..errors import RecordFailed
        from ..text.sentences import response_sentences

        sentences = response_sentences(record.output)
        texts: list[str] = []
        with timed(timings, "extract"):
            for index in range(len(sentences)):
                request = ChatRequest.of(
                    build_extraction_messages(sentences, index, record.input or None),
                    EXTRACT_PROMPT_VERSION,
                    max_tokens=256,
                )
                asked = ask(self.stages.llm(), request, parse_claims)
                self.counts.add("claim_llm_calls", asked.calls)
                if asked.value is None:
                    raise RecordFailed(
                        f"veriscore: the claims of sentence {index + 1} could not be read from the reply {asked.raw[:200]!r}"
                    )
                texts += [t for t in asked.value if t not in texts]
        return [Atom(id=f"v{i}", text=text, original=text) for i, text in enumerate(texts)]

    def row_fields(self, record: InputRecord) -> dict[str, str]:
        return {"claims_source": "extracted" if self.extracts(record) else "given"}

    def judge_atom(self, atom: Atom, record: InputRecord, evidence: EvidenceSource) -> AtomJudgement:
        passages = evidence.listed(atom)
        if passages is None:
            passages = evidence.search(atom.text, self.config.retrieval.top_k, f"c_{atom.id}")
        if not passages:
            return AtomJudgement(atom, False, 0.0, raw="no evidence: unsupported without asking")
        if self.judge == "nli":
            return nli_support(self.nli_for(record), atom, passages)
        request = ChatRequest.of(build_verification_messages(atom, passages), VERIFY_PROMPT_VERSION, max_tokens=8)
        asked = ask(self.stages.llm(), request, parse_supported)
        evidence_ids = tuple(p.id for p in passages)
        if asked.value is None:
            return AtomJudgement(
                atom,
                None,
                None,
                evidence_ids,
                asked.raw,
                asked.calls,
                failure="the reply says neither Supported nor Unsupported",
            )
        return AtomJudgement(atom, asked.value, 1.0 if asked.value else 0.0, evidence_ids, asked.raw, asked.calls)
