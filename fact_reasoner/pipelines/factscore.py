"""FActScore (Min et al. 2023): each atom checked against the passages retrieved for it.

For each atom, its passages (the atom's own contexts in the record, else the ``--top-k`` best
for the atom's text from the record's contexts or the configured retriever) go into one prompt
that ends in ``Input: <atom> True or False?``; the atom is supported iff the reply says True
(the first of the words *true* / *false* in the reply decides). Factual precision = supported /
atoms. (FActScore's length penalty γ and respond ratio are computed at score level from these
rows.) ``--pipeline-judge nli`` replaces the prompt by the NLI judge
(:func:`~fact_reasoner.pipelines.base.nli_support`).
"""

from __future__ import annotations

import re

from ..llm.base import ChatRequest
from ..schema import Atom, Context, InputRecord
from .base import AtomJudgement, BaselinePipeline, EvidenceSource, ask, format_passages, nli_support

__all__ = ["PROMPT_VERSION", "FactScorePipeline", "build_messages", "parse_true_false"]

PROMPT_VERSION = "factscore-judge/v1"

_TRUE_FALSE = re.compile(r"\b(true|false)\b", re.IGNORECASE)


def build_messages(atom: Atom, passages: list[Context], topic: str | None) -> list[tuple[str, str]]:
    """The FActScore question: the passages as knowledge, then ``<atom> True or False?``."""
    about = f" about {topic}" if topic else ""
    user = (
        f"Answer the question{about} using only the passages below.\n\n"
        f"{format_passages(passages)}\n\n"
        f"Input: {atom.text} True or False?\nOutput:"
    )
    return [("user", user)]


def parse_true_false(reply: str) -> bool | None:
    """True / False from the first of those words in the reply; None when neither appears."""
    found = _TRUE_FALSE.search(reply)
    return None if found is None else found.group(1).lower() == "true"


class FactScorePipeline(BaselinePipeline):
    """``--pipeline factscore`` (see the module docstring)."""

    name = "factscore"

    def judge_atom(self, atom: Atom, record: InputRecord, evidence: EvidenceSource) -> AtomJudgement:
        passages = evidence.listed(atom)
        if passages is None:
            passages = evidence.search(atom.text, self.config.retrieval.top_k, f"c_{atom.id}")
        if not passages:
            return AtomJudgement(atom, False, 0.0, raw="no passages: not supported without asking")
        if self.judge == "nli":
            return nli_support(self.nli_for(record), atom, passages)
        request = ChatRequest.of(build_messages(atom, passages, record.topic), PROMPT_VERSION, max_tokens=8)
        asked = ask(self.stages.llm(), request, parse_true_false)
        evidence_ids = tuple(p.id for p in passages)
        if asked.value is None:
            return AtomJudgement(
                atom, None, None, evidence_ids, asked.raw, asked.calls, failure="the reply says neither True nor False"
            )
        return AtomJudgement(atom, asked.value, 1.0 if asked.value else 0.0, evidence_ids, asked.raw, asked.calls)
