"""Optional LLM helpers around retrieval: a query builder and a context summariser.

Both talk to a :class:`fact_reasoner.llm.LLMBackend` (``chat(ChatRequest) -> ChatResponse``,
``chat_many`` for batches; answers cached by the backend under this module's prompt versions
``query/v1`` and ``summary/v1``). A plain function ``messages -> str`` works too, for users who
wire their own model without the LLM layer.

Failures never lose evidence: a summariser answer that cannot be parsed, or a call that failed,
keeps the context unchanged (``failed=True`` with the reason) instead of dropping it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Message = dict[str, str]
PlainChat = Callable[[list[Message]], str]


def _is_backend(llm: Any) -> bool:
    return callable(getattr(llm, "chat", None)) and hasattr(llm, "chat_many")


def ask_many(
    llm: Any,
    conversations: Sequence[list[Message]],
    *,
    prompt_version: str,
    max_tokens: int,
    json_schema: dict[str, Any] | None = None,
) -> list[str | Exception]:
    """Reply texts (or the error of a failed call) for several conversations, in order.

    With an ``LLMBackend`` the calls go through ``chat_many`` (concurrent where the backend
    allows, cached); a plain callable is called once per conversation.
    """
    if _is_backend(llm):
        from ..llm.base import ChatRequest

        requests = [
            ChatRequest.of(messages, prompt_version, max_tokens=max_tokens, temperature=0.0, json_schema=json_schema)
            for messages in conversations
        ]
        return [reply if isinstance(reply, Exception) else reply.text for reply in llm.chat_many(requests)]
    if callable(llm):
        replies: list[str | Exception] = []
        for messages in conversations:
            try:
                replies.append(str(llm(messages)))
            except Exception as error:  # a user's model failing on one call must not stop the run
                replies.append(error)
        return replies
    raise TypeError(f"{type(llm).__name__} is neither an LLMBackend nor a callable messages -> str")


# ---------------------------------------------------------------- query builder

QUERY_PROMPT_V1 = """Rewrite the claim as a short search query for an encyclopedia search engine.
Keep names, dates, places and numbers; drop filler words. Answer with the query only, on one line.

Claim: Lanny Flaherty was born on December 18, 1949 in Pensacola, Florida.
Query: Lanny Flaherty born December 18 1949 Pensacola Florida

Claim: {claim}{question_line}
Query:"""


def parse_query(reply: str, fallback: str) -> str:
    """The first non-empty line of the reply, without a ``Query:`` prefix or quotes."""
    for line in reply.splitlines():
        line = re.sub(r"^\s*(search\s+)?query\s*:\s*", "", line, flags=re.IGNORECASE).strip().strip("\"'`").strip()
        if line:
            return line
    return fallback


class QueryBuilder:
    """Rewrites an atom into a search query with an LLM (falls back to the atom's text)."""

    prompt_version = "query/v1"

    def __init__(self, llm: Any, max_tokens: int = 48) -> None:
        self.llm = llm
        self.max_tokens = max_tokens

    def build(self, claim: str, question: str | None = None) -> str:
        return self.build_many([claim], question)[0]

    def build_many(self, claims: Sequence[str], question: str | None = None) -> list[str]:
        """One query per claim; a failed call falls back to the claim itself."""
        question_line = f"\n(The claim answers: {question.strip()})" if question and question.strip() else ""
        conversations = [
            [{"role": "user", "content": QUERY_PROMPT_V1.format(claim=claim.strip(), question_line=question_line)}]
            for claim in claims
        ]
        replies = ask_many(self.llm, conversations, prompt_version=self.prompt_version, max_tokens=self.max_tokens)
        return [
            claim if isinstance(reply, Exception) else parse_query(reply, claim)
            for claim, reply in zip(claims, replies)
        ]


# ---------------------------------------------------------------- context summariser

SUMMARY_PROMPT_V1 = """You check evidence for a claim. Read the passage and answer in JSON:
{{"relevant": true or false, "summary": "...", "confidence": number between 0 and 1}}
- relevant: does the passage say anything that supports or contradicts the claim?
- summary: if relevant, the passage's information about the claim in one or two sentences,
  using only facts stated in the passage (keep names and numbers); otherwise "".
- confidence: how sure you are of the relevance judgement.

Claim: {claim}
Passage{title}: {passage}
JSON:"""

SUMMARY_SCHEMA = {
    "type": "object",
    "properties": {
        "relevant": {"type": "boolean"},
        "summary": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["relevant", "summary", "confidence"],
}


@dataclass(frozen=True)
class ContextSummary:
    relevant: bool
    summary: str
    confidence: float | None = None
    failed: bool = False
    reason: str | None = None


def parse_summary(reply: str, passage: str) -> ContextSummary:
    """Parse the summariser's JSON; on any problem keep the passage as it is (``failed=True``).

    An empty summary for a relevant passage is replaced by the passage itself; the confidence
    is clamped to [0, 1].
    """
    match = re.search(r"\{.*\}", reply, flags=re.DOTALL)
    if match is None:
        return ContextSummary(True, passage, None, True, "no JSON object in the reply")
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError as error:
        return ContextSummary(True, passage, None, True, f"invalid JSON: {error.msg}")
    relevant = data.get("relevant")
    if isinstance(relevant, str):
        relevant = {"true": True, "yes": True, "false": False, "no": False}.get(relevant.strip().lower())
    if not isinstance(relevant, bool):
        return ContextSummary(True, passage, None, True, "missing or non-boolean 'relevant'")
    confidence = data.get("confidence")
    if isinstance(confidence, (int, float)) and not isinstance(confidence, bool):
        confidence = min(max(float(confidence), 0.0), 1.0)
    else:
        confidence = None
    summary = data.get("summary") if isinstance(data.get("summary"), str) else ""
    if relevant and not summary.strip():
        summary = passage
    return ContextSummary(relevant, summary.strip() if relevant else "", confidence)


class ContextSummariser:
    """Summarises a passage with respect to a claim, or says it is irrelevant (LLM)."""

    prompt_version = "summary/v1"

    def __init__(self, llm: Any, max_tokens: int = 160, max_passage_chars: int = 4000) -> None:
        self.llm = llm
        self.max_tokens = max_tokens
        self.max_passage_chars = max_passage_chars

    def summarise(self, claim: str, passage: str, *, title: str | None = None) -> ContextSummary:
        return self.summarise_many([(claim, passage, title)])[0]

    def summarise_many(self, items: Sequence[tuple[str, str, str | None]]) -> list[ContextSummary]:
        """Summaries for ``(claim, passage, title)`` triples; a failed call keeps the passage."""
        conversations = [
            [
                {
                    "role": "user",
                    "content": SUMMARY_PROMPT_V1.format(
                        claim=claim.strip(),
                        title=f" (from {title})" if title else "",
                        passage=passage[: self.max_passage_chars],
                    ),
                }
            ]
            for claim, passage, title in items
        ]
        replies = ask_many(
            self.llm,
            conversations,
            prompt_version=self.prompt_version,
            max_tokens=self.max_tokens,
            json_schema=SUMMARY_SCHEMA,
        )
        return [
            ContextSummary(True, passage, None, True, f"model call failed: {reply}")
            if isinstance(reply, Exception)
            else parse_summary(reply, passage)
            for (claim, passage, title), reply in zip(items, replies)
        ]
