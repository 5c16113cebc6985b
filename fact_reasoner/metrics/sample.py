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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import InputError
from ..io import RecordError, describe_validation_error, numbered_keys, read_rows

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
            elif not isinstance(contexts, list):
                raise ValueError(
                    f"retrieved_contexts must be a list of strings or {{text}} objects, not {type(contexts).__name__}"
                )
            data["retrieved_contexts"] = [text for text in (_context_text(c) for c in contexts) if text.strip()]
        if data.get("sample_id") is not None:
            data["sample_id"] = str(data["sample_id"])
        return data

    def require(self, *fields: str) -> str | None:
        """The reason this sample cannot be scored without ``fields``, or ``None``."""
        missing = [f for f in fields if not getattr(self, f)]
        return f"sample has no {', '.join(missing)}" if missing else None


KNOWN_FIELDS = frozenset(name for names in ALIASES.values() for name in names) | {"sample_id"}


def _spellings(field: str) -> str:
    return "/".join(ALIASES[field])


@dataclass(frozen=True)
class NumberedSample:
    """A valid sample, where it came from (file, line) and its resume key."""

    path: str
    line: int
    key: str
    sample: RagSample


def sample_from_row(data: Any, *, needs_response: bool = True) -> RagSample | str:
    """The sample of one input row, or why the row is not one (one line, no pydantic dump).

    A row needs at least one known field; with ``needs_response`` an empty, NaN or missing
    response is refused: no metric judging the answer can score it."""
    if not isinstance(data, dict):
        return f"expected a JSON object, got {type(data).__name__}"
    if not KNOWN_FIELDS & set(data):
        found = ", ".join(sorted(str(key) for key in data)) or "nothing"
        return (
            f"none of the known fields ({_spellings('question')}, {_spellings('response')}, "
            f"{_spellings('reference')}, {_spellings('retrieved_contexts')}); found: {found}"
        )
    try:
        sample = RagSample.model_validate(data)
    except ValidationError as error:
        return describe_validation_error(error)
    except (TypeError, ValueError) as error:
        return f"{type(error).__name__}: {error}"
    if needs_response and not sample.response:
        given = next((name for name in ALIASES["response"] if name in data), None)
        what = f"`{given}` is empty (or NaN / None)" if given else f"no response ({_spellings('response')})"
        return f"{what}: a sample without a response cannot be scored"
    return sample


def read_samples(path: str | Path, *, needs_response: bool = True) -> Iterator[NumberedSample | RecordError]:
    """Each sample of a ``.jsonl``, ``.json`` or ``.csv`` file (:func:`fact_reasoner.io.read_rows`:
    the same reader as the assessment's records), or an error naming ``file:line``.

    A CSV whose header lacks every known column, or the response column when
    ``needs_response``, raises :class:`~fact_reasoner.errors.InputError` naming the columns.
    """
    key = numbered_keys()
    for position, row in enumerate(read_rows(path)):
        if isinstance(row, RecordError):
            yield row
            continue
        if position == 0 and Path(path).suffix.lower() == ".csv":
            _check_csv_header(row.path, list(row.data), needs_response)
        sample = sample_from_row(row.data, needs_response=needs_response)
        if isinstance(sample, str):
            yield row.error(sample)
        else:
            yield NumberedSample(row.path, row.line, key(row.data), sample)


def _check_csv_header(path: str, columns: list[str], needs_response: bool) -> None:
    names = ", ".join(columns)
    if not KNOWN_FIELDS & set(columns):
        raise InputError(f"the CSV header has none of the known columns; columns: {names}", path=path, line=1)
    if needs_response and not set(ALIASES["response"]) & set(columns):
        raise InputError(
            f"the CSV header has no response column ({_spellings('response')}); columns: {names}", path=path, line=1
        )


__all__ = ["ALIASES", "KNOWN_FIELDS", "NumberedSample", "RagSample", "read_samples", "sample_from_row"]
