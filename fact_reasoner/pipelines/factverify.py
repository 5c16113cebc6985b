"""FactVerify, as SAFE (Wei et al. 2024) defines it: several search steps per atom, then a rating.

For each atom, ``--factverify-steps`` times: the LLM is shown the atom and the knowledge found
so far and writes the next search query (in a markdown code block); the
``--factverify-results`` best passages for that query (the record's contexts ranked by BM25, or
the configured retriever/search) are appended to the knowledge. Then the LLM rates the atom
against all that knowledge: ``[Supported]`` or ``[Not Supported]``. ``--pipeline-judge nli``
keeps the LLM-written queries and replaces the rating by the NLI judge over the knowledge.

A query that stays unreadable after a retry fails the atom (the knowledge would be missing a
step); a step whose query finds nothing adds nothing and the steps go on.
"""

from __future__ import annotations

import re

from ..llm.base import ChatRequest
from ..schema import Atom, Context, InputRecord
from .base import AtomJudgement, BaselinePipeline, EvidenceSource, ask, format_passages, nli_support

__all__ = [
    "QUERY_PROMPT_VERSION",
    "RATE_PROMPT_VERSION",
    "FactVerifyPipeline",
    "build_query_messages",
    "build_rating_messages",
    "parse_query",
    "parse_rating",
]

QUERY_PROMPT_VERSION = "factverify-query/v1"
RATE_PROMPT_VERSION = "factverify-rate/v1"

_CODE_BLOCK = re.compile(r"```(?:[a-zA-Z]*\n)?(.*?)```", re.DOTALL)
_QUERY_LINE = re.compile(r"^\s*query\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_BRACKETED = re.compile(r"\[\s*(not supported|supported)\s*\]", re.IGNORECASE)
_PLAIN = re.compile(r"\b(not supported|unsupported|supported)\b", re.IGNORECASE)


def _knowledge(passages: list[Context]) -> str:
    return format_passages(passages) if passages else "N/A"


def build_query_messages(atom: Atom, knowledge: list[Context]) -> list[tuple[str, str]]:
    """The next-query prompt: the statement, the knowledge so far, a query in a code block."""
    user = (
        "You check whether a STATEMENT is factually accurate by searching for evidence.\n"
        "Below is the STATEMENT and the KNOWLEDGE found by earlier searches (N/A if none). Write the "
        "next search query: one that would find evidence supporting or refuting the STATEMENT and "
        "that looks for something the KNOWLEDGE does not already cover. Put the query alone in a "
        "markdown code block, e.g.\n```\nyear the Eiffel Tower was completed\n```\n\n"
        f"KNOWLEDGE:\n{_knowledge(knowledge)}\n\n"
        f"STATEMENT: {atom.text}\n\nQuery:"
    )
    return [("user", user)]


def parse_query(reply: str) -> str | None:
    """The query in the reply's first code block; else a ``Query: …`` line; else a one-line
    reply; None when none of these (or an empty query)."""
    block = _CODE_BLOCK.search(reply)
    if block is not None:
        query = block.group(1).strip()
    elif (line := _QUERY_LINE.search(reply)) is not None:
        query = line.group(1)
    else:
        lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
        query = lines[0] if len(lines) == 1 else ""
    query = query.strip().strip("\"'`").strip()
    return query or None


def build_rating_messages(atom: Atom, knowledge: list[Context]) -> list[tuple[str, str]]:
    """The rating prompt: the knowledge, the statement, ``[Supported]`` or ``[Not Supported]``."""
    user = (
        "Decide whether the STATEMENT is supported by the KNOWLEDGE. It is supported only if the "
        "KNOWLEDGE confirms it; if the KNOWLEDGE contradicts it or says nothing about it, it is not "
        "supported.\n\n"
        f"KNOWLEDGE:\n{_knowledge(knowledge)}\n\n"
        f"STATEMENT: {atom.text}\n\n"
        "Reason briefly, then give your final answer in square brackets: [Supported] or [Not Supported]."
    )
    return [("user", user)]


def parse_rating(reply: str) -> bool | None:
    """The last bracketed answer (``[Supported]`` / ``[Not Supported]``); without brackets the
    last of the words supported / not supported / unsupported; None when none appears."""
    bracketed = _BRACKETED.findall(reply)
    found = bracketed or _PLAIN.findall(reply)
    if not found:
        return None
    return found[-1].lower() == "supported"


class FactVerifyPipeline(BaselinePipeline):
    """``--pipeline factverify`` (see the module docstring)."""

    name = "factverify"

    def uses_llm(self, record: InputRecord) -> bool:
        return True  # the queries are the LLM's, whichever judge rates

    def judge_atom(self, atom: Atom, record: InputRecord, evidence: EvidenceSource) -> AtomJudgement:
        options = self.config.pipeline
        steps: int = options.factverify_steps
        per_step: int = options.factverify_results
        llm = self.stages.llm()
        knowledge: list[Context] = []
        queries: list[str] = []
        calls = 0
        for step in range(steps):
            asked = ask(
                llm,
                ChatRequest.of(build_query_messages(atom, knowledge), QUERY_PROMPT_VERSION, max_tokens=64),
                parse_query,
            )
            calls += asked.calls
            if asked.value is None:
                return AtomJudgement(
                    atom, None, None, tuple(p.id for p in knowledge), asked.raw, calls, queries=tuple(queries),
                    failure=f"the search query of step {step + 1} could not be read",
                )  # fmt: skip
            queries.append(asked.value)
            known = {p.id for p in knowledge}
            knowledge += [
                p for p in evidence.search(asked.value, per_step, f"c_{atom.id}_s{step}") if p.id not in known
            ]
        evidence_ids = tuple(p.id for p in knowledge)
        if not knowledge:
            return AtomJudgement(
                atom, False, 0.0, (), "no passages found: not supported without rating", calls, queries=tuple(queries)
            )
        if self.judge == "nli":
            judged = nli_support(self.nli_for(record), atom, knowledge, queries)
            return AtomJudgement(
                atom, judged.supported, judged.probability, judged.evidence, judged.raw, calls, judged.nli_pairs,
                tuple(queries), judged.failure,
            )  # fmt: skip
        rated = ask(
            llm,
            ChatRequest.of(build_rating_messages(atom, knowledge), RATE_PROMPT_VERSION, max_tokens=256),
            parse_rating,
        )
        calls += rated.calls
        if rated.value is None:
            return AtomJudgement(
                atom, None, None, evidence_ids, rated.raw, calls, queries=tuple(queries),
                failure="the rating says neither [Supported] nor [Not Supported]",
            )  # fmt: skip
        return AtomJudgement(
            atom, rated.value, 1.0 if rated.value else 0.0, evidence_ids, rated.raw, calls, queries=tuple(queries)
        )
