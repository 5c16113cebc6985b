"""One JSON answer from the chat model (schema-constrained where the backend supports it)."""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import FactReasonerError

SYSTEM = "You are a careful evaluator of question-answering systems. Reply with JSON only."


class JudgeError(FactReasonerError, RuntimeError):
    """The model's reply could not be read as the JSON the metric needs."""


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (code fences and surrounding prose tolerated)."""
    text = re.sub(r"^```(?:json)?|```$", "", text.strip(), flags=re.MULTILINE).strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        match = re.search(r"\{.*\}", text, flags=re.DOTALL)
        if not match:
            raise JudgeError(f"no JSON object in the reply: {text[:200]!r}") from None
        try:
            value = json.loads(match.group(0))
        except json.JSONDecodeError as error:
            raise JudgeError(f"unreadable JSON in the reply ({error}): {text[:200]!r}") from None
    if not isinstance(value, dict):
        raise JudgeError(f"expected a JSON object, got {type(value).__name__}")
    return value


def ask_json(
    llm: Any,
    prompt: str,
    schema: dict[str, Any],
    prompt_version: str,
    *,
    max_tokens: int = 256,
    system: str = SYSTEM,
) -> dict[str, Any]:
    """Ask ``llm`` (an :class:`~fact_reasoner.llm.base.LLMBackend`) and parse its JSON reply.

    Temperature 0 and a fixed seed: the call is deterministic and cached by the LLM layer.
    Missing required keys raise :class:`JudgeError`.
    """
    from ..llm.base import ChatRequest

    request = ChatRequest.of(
        [("system", system), ("user", prompt)], prompt_version, max_tokens=max_tokens, json_schema=schema
    )
    answer = parse_json_object(llm.chat(request).text)
    missing = [k for k in schema.get("required", []) if k not in answer]
    if missing:
        raise JudgeError(f"the reply lacks {missing}: {json.dumps(answer)[:200]}")
    return answer


__all__ = ["JudgeError", "ask_json", "parse_json_object"]
