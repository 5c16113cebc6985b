"""Rewriting a sentence of a correction with the language model (the third step of
:mod:`fact_reasoner.correction.corrector`): keep these facts, correct those with this evidence, drop the
rest. The prompt is :mod:`fact_reasoner.llm.correction`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import FactReasonerError, RecordFailed
from ..llm.correction import PROMPT_VERSION, RewriteRequest

if TYPE_CHECKING:  # pragma: no cover
    from ..llm.base import LLMBackend

__all__ = ["LLMSentenceRewriter", "RewriteFailed", "SentenceRewriter"]


class RewriteFailed(FactReasonerError, RuntimeError):
    """The model's replies for a sentence could not be used (after the repair round and the
    retries): the record's correction fails with this reason."""


@runtime_checkable
class SentenceRewriter(Protocol):
    """Writes each requested sentence (``""``: nothing of it is left). Raises
    :class:`~fact_reasoner.errors.RecordFailed` when the model could not be asked, and
    :class:`RewriteFailed` when its replies could not be used."""

    def rewrite(self, requests: Sequence[RewriteRequest]) -> list[str]: ...


@dataclass
class LLMSentenceRewriter:
    """The rewriter on a chat model: one structured call per sentence (batched), the shared
    repair-and-retry policy (:mod:`fact_reasoner.llm.structured`)."""

    llm: LLMBackend
    retries: int = 1

    def __post_init__(self) -> None:
        from ..llm.structured import StructuredCaller

        self._caller = StructuredCaller(self.llm, PROMPT_VERSION, max_tokens=300, retries=self.retries)

    def rewrite(self, requests: Sequence[RewriteRequest]) -> list[str]:
        from ..llm.correction import build_messages, check_sentence, sentence_schema
        from ..llm.structured import StructuredFailure

        if not requests:
            return []
        results = self._caller.ask_many(
            [build_messages(r) for r in requests], [sentence_schema()] * len(requests), [check_sentence] * len(requests)
        )
        transport = [r for r in results if isinstance(r, StructuredFailure) and r.transport]
        if transport:
            raise RecordFailed(
                f"corrector: {len(transport)} of {len(requests)} rewrite call(s) failed: {transport[0].reason}",
                unreachable=all(r.unreachable for r in transport),
            )
        sentences = []
        for request, result in zip(requests, results):
            if isinstance(result, StructuredFailure):
                raise RewriteFailed(f"the rewrite of {request.sentence!r} is unusable: {result.reason}")
            sentences.append(result.value)
        return sentences
