"""The RAG evaluation sample: a question, a response, a reference and retrieved contexts.

Seed documents and other tools spell the same fields differently; :class:`RagSample` accepts
all of these spellings (first non-empty wins, in this order):

==================== ==================================================================
field                aliases
==================== ==================================================================
``question``         ``query``, ``input``, ``user_input``
``response``         ``actual_output``, ``answer``, ``output``
``reference``        ``expected_output``, ``ground_truth``, ``ground_truths``
``retrieved_contexts`` ``retrieved_content``, ``contexts``, ``retrieval_context``, ``context``
==================== ==================================================================

Contexts may be strings, ``{"text": ...}`` dicts (``content``/``page_content``/``snippet``
work too), or a JSON/Python-literal string holding such a list (as CSV exports store them).
A list-valued reference (``ground_truths``) is joined with spaces.
"""

from __future__ import annotations

import ast
import json
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

ALIASES: dict[str, tuple[str, ...]] = {
    "question": ("question", "query", "input", "user_input"),
    "response": ("response", "actual_output", "answer", "output"),
    "reference": ("reference", "expected_output", "ground_truth", "ground_truths"),
    "retrieved_contexts": (
        "retrieved_contexts",
        "retrieved_content",
        "contexts",
        "retrieval_context",
        "context",
    ),
}
_TEXT_KEYS = ("text", "content", "page_content", "snippet")


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):  # empty CSV cell read by pandas
        return True
    if isinstance(value, str) and not value.strip():
        return True
    return False


def _parse_list_string(text: str) -> Any:
    """``'["a", "b"]'`` (JSON or Python literal) → list; anything else is returned unchanged."""
    stripped = text.strip()
    if not (stripped.startswith("[") and stripped.endswith("]")):
        return text
    for loader in (json.loads, ast.literal_eval):
        try:
            value = loader(stripped)
        except (ValueError, SyntaxError, TypeError):
            continue
        if isinstance(value, list):
            return value
    return text


def _context_text(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        for key in _TEXT_KEYS:
            if isinstance(item.get(key), str):
                return item[key]
        raise ValueError(f"context has none of the text keys {_TEXT_KEYS}: {sorted(item)}")
    raise ValueError(f"a context must be a string or a dict with 'text', not {type(item).__name__}")


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        parsed = _parse_list_string(value)
        if isinstance(parsed, list):
            value = parsed
    if isinstance(value, list):
        return " ".join(str(v).strip() for v in value if not _is_missing(v))
    return str(value)


class RagSample(BaseModel):
    """One RAG interaction to evaluate. Every field is optional; metrics say what they need."""

    model_config = ConfigDict(extra="allow")

    question: str | None = None
    response: str | None = None
    reference: str | None = None
    retrieved_contexts: list[str] | None = Field(default=None)
    sample_id: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _resolve_aliases(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for field, names in ALIASES.items():
            value = None
            for name in names:
                if name in data and not _is_missing(data[name]):
                    value = data[name]
                    break
            for name in names[1:]:
                data.pop(name, None)  # keep only the canonical spelling
            data[field] = value
        for field in ("question", "response", "reference"):
            if data[field] is not None:
                data[field] = _as_text(data[field])
        contexts = data["retrieved_contexts"]
        if contexts is not None:
            if isinstance(contexts, str):
                contexts = _parse_list_string(contexts)
                if isinstance(contexts, str):
                    contexts = [contexts]
            elif isinstance(contexts, dict):
                contexts = [contexts]
            data["retrieved_contexts"] = [text for text in (_context_text(c) for c in contexts) if text.strip()]
        if data.get("sample_id") is not None:
            data["sample_id"] = str(data["sample_id"])
        return data

    def require(self, *fields: str) -> str | None:
        """The reason this sample cannot be scored without ``fields``, or ``None``."""
        missing = [f for f in fields if not getattr(self, f)]
        return f"sample has no {', '.join(missing)}" if missing else None


__all__ = ["ALIASES", "RagSample"]
