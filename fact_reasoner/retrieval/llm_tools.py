"""Optional LLM helpers around retrieval: a query builder and a context summariser.

Both take any chat model that answers a list of ``{"role", "content"}`` messages with text.
:class:`ChatModel` is the minimal call they need; :func:`ask` adapts the shapes a backend may
use (a ``chat``/``complete`` method returning a string, an OpenAI-style response dict, or an
object with ``.text``/``.content``), so the language-model layer can evolve without breaking them.

Failures never lose evidence: a summariser answer that cannot be parsed keeps the context
unchanged (``failed=True`` with the reason) instead of dropping it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

Message = dict[str, str]


@runtime_checkable
class ChatModel(Protocol):
    """The one call these helpers make: messages in, the assistant's text out."""

    def chat(self, messages: list[Message], **options: Any) -> Any: ...


def _text_of(response: Any) -> str:
    if isinstance(response, str):
        return response
    if isinstance(response, dict):
        choices = response.get("choices")
        if choices:
            first = choices[0]
            message = first.get("message") or {}
            return message.get("content") or first.get("text") or ""
        for key in ("content", "text"):
            if isinstance(response.get(key), str):
                return response[key]
    for attribute in ("content", "text"):
        value = getattr(response, attribute, None)
        if isinstance(value, str):
            return value
    raise TypeError(f"cannot read text from a model response of type {type(response).__name__}")


def ask(llm: Any, messages: list[Message], **options: Any) -> str:
    """Send ``messages`` to ``llm`` and return the reply text, whatever the backend's method name."""
    for method in ("chat_text", "chat", "complete", "chat_completion", "generate"):
        call = getattr(llm, method, None)
        if callable(call):
            return _text_of(call(messages, **options))
    if callable(llm):
        return _text_of(llm(messages, **options))
    raise TypeError(f"{type(llm).__name__} has no chat method (chat, complete, chat_completion, generate)")


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
        question_line = f"\n(The claim answers: {question.strip()})" if question and question.strip() else ""
        prompt = QUERY_PROMPT_V1.format(claim=claim.strip(), question_line=question_line)
        reply = ask(self.llm, [{"role": "user", "content": prompt}], max_tokens=self.max_tokens, temperature=0.0)
        return parse_query(reply, claim)


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
        prompt = SUMMARY_PROMPT_V1.format(
            claim=claim.strip(),
            title=f" (from {title})" if title else "",
            passage=passage[: self.max_passage_chars],
        )
        try:
            reply = ask(
                self.llm,
                [{"role": "user", "content": prompt}],
                max_tokens=self.max_tokens,
                temperature=0.0,
                json_schema=SUMMARY_SCHEMA,
            )
        except TypeError:
            # A backend without structured output: ask again with plain options.
            reply = ask(self.llm, [{"role": "user", "content": prompt}], max_tokens=self.max_tokens, temperature=0.0)
        return parse_summary(reply, passage)
