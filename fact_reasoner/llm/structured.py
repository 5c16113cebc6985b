"""Asking a chat model for JSON that passes a check, with one repair round and bounded retries.

Policy (shared by the Atomizer and the Reviser):

1. ask at the configured temperature (0 by default), with the JSON schema as a constraint;
2. if the reply does not parse or fails the stage's check, send it back once with the error
   ("repair round") and ask again;
3. if that fails too, make up to ``retries`` fresh attempts at ``retry_temperature`` with new
   seeds (at temperature 0 a retry would only repeat the same answer);
4. if everything failed, return a :class:`StructuredFailure` with the reasons — the caller
   records it; nothing is silently dropped.

A check that raises :class:`AskFewer` (a reply of the wrong size for its request: the reviser's
"expected exactly 8 facts, got 4") ends the attempts at once, without the repair round and the
retries: the caller asks about fewer items instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..errors import FactReasonerError
from .base import ChatRequest, LLMBackend, LLMError

T = TypeVar("T")


class InvalidOutput(FactReasonerError, ValueError):
    """The reply parsed as JSON but does not satisfy the stage's check."""


class AskFewer(InvalidOutput):
    """The reply is well formed but has the wrong number of items for a request about several
    (the reviser's "expected exactly 8 facts, got 4"). No repair round and no retry follow: the
    1.5B model gave 4 facts for 8 at the attempt, the repair and the retry alike (issue 59), and a
    repair costs as much generation as asking about each half. The caller asks about fewer items
    instead (:class:`~fact_reasoner.atoms.reviser.Reviser` splits the chunk)."""


@dataclass
class StructuredFailure:
    """Every attempt failed; ``transport`` when no attempt got a reply at all (the model could
    not be asked — the caller fails the record), else the replies were unusable."""

    reasons: list[str] = field(default_factory=list)
    transport: bool = False
    unreachable: bool = False

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


@dataclass
class StructuredResult(Generic[T]):
    value: T
    attempts: int
    repaired: bool


def parse_json_reply(text: str) -> Any:
    """JSON from a reply, tolerating a ```json fence or prose around one object."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`")
        stripped = stripped[4:] if stripped.lower().startswith("json") else stripped
    try:
        return json.loads(stripped)
    except ValueError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if start != -1 and end > start:
            return json.loads(stripped[start : end + 1])
        raise


@dataclass
class StructuredCaller:
    llm: LLMBackend
    prompt_version: str
    max_tokens: int = 512
    temperature: float = 0.0
    retries: int = 1
    retry_temperature: float = 0.5

    def ask_many(
        self,
        conversations: Sequence[list[tuple[str, str]]],
        schemas: Sequence[dict[str, Any]],
        checks: Sequence[Callable[[Any], T]],
        *,
        on_done: Callable[[int], None] | None = None,
    ) -> list[StructuredResult[T] | StructuredFailure]:
        """First attempts go out together (batched); repairs and retries only for the failures.
        ``on_done(i)``: conversation ``i`` got its first reply (a stage's progress)."""
        requests = [
            ChatRequest.of(
                m, self.prompt_version, max_tokens=self.max_tokens, temperature=self.temperature, json_schema=s
            )
            for m, s in zip(conversations, schemas)
        ]
        first = self.llm.chat_many(requests, on_done=on_done) if on_done is not None else self.llm.chat_many(requests)
        results: list[StructuredResult[T] | StructuredFailure] = []
        for messages, schema, check, reply in zip(conversations, schemas, checks, first):
            results.append(self._finish(messages, schema, check, reply))
        return results

    def _try(self, reply: Any, check: Callable[[Any], T]) -> tuple[T | None, str | None, str, bool]:
        """(value, problem, reply text, whether to stop asking: :class:`AskFewer`)."""
        if isinstance(reply, LLMError):
            return None, f"model call failed: {reply}", "", False
        text = reply.text
        if reply.choices[0].finish_reason == "length":
            return None, "reply cut off at the token limit", text, False
        try:
            return check(parse_json_reply(text)), None, text, False
        except AskFewer as error:
            return None, f"{type(error).__name__}: {error}", text, True
        except (ValueError, InvalidOutput, TypeError, KeyError) as error:
            return None, f"{type(error).__name__}: {error}", text, False

    def _finish(self, messages, schema, check, reply) -> StructuredResult[T] | StructuredFailure:
        if isinstance(reply, LLMError):
            # The backend has already retried the call: asking again here would only wait
            # through its retries once more. The model could not be asked at all.
            return StructuredFailure([f"model call failed: {reply}"], transport=True, unreachable=reply.unreachable)
        value, problem, text, stop = self._try(reply, check)
        if problem is None:
            return StructuredResult(value, 1, False)  # type: ignore[arg-type]
        failure = StructuredFailure([f"attempt 1: {problem}"])
        if stop:
            return failure
        attempts = 1
        if text:  # a reply to repair (not a transport failure)
            repair = [
                *messages,
                ("assistant", text),
                ("user", f"That reply is not valid ({problem}). Reply again with only the corrected JSON."),
            ]
            attempts += 1
            reply = self.llm.chat_many(
                [
                    ChatRequest.of(
                        repair,
                        self.prompt_version,
                        max_tokens=self.max_tokens,
                        temperature=self.temperature,
                        json_schema=schema,
                    )
                ]
            )[0]
            value, problem, text, _ = self._try(reply, check)
            if problem is None:
                return StructuredResult(value, attempts, True)  # type: ignore[arg-type]
            failure.reasons.append(f"repair: {problem}")
        for k in range(self.retries):
            attempts += 1
            reply = self.llm.chat_many(
                [
                    ChatRequest.of(
                        messages,
                        self.prompt_version,
                        max_tokens=self.max_tokens,
                        temperature=self.retry_temperature,
                        seed=1000 + k,
                        json_schema=schema,
                    )
                ]
            )[0]
            value, problem, text, _ = self._try(reply, check)
            if problem is None:
                return StructuredResult(value, attempts, False)  # type: ignore[arg-type]
            failure.reasons.append(f"retry {k + 1}: {problem}")
        return failure
