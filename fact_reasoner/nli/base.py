"""The NLI stage: (premise, hypothesis) pairs in, three-way judgements out.

Every backend (an LLM judge, a cross-encoder, the record's precomputed relations) implements
:class:`NLIBackend`. A judgement that could not be made is returned with ``failed=True`` and a
``reason``; the graph treats it as neutral, so a failure never becomes a confident factor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..schema import RelationType

if TYPE_CHECKING:  # pragma: no cover
    from ..cache import ModelCache

UNJUDGED = "no judgement available for this pair"
LABELS = (RelationType.ENTAILMENT, RelationType.NEUTRAL, RelationType.CONTRADICTION)


@dataclass(frozen=True)
class NLIJudgement:
    """The verdict on one pair: the predicted label and its probability.

    ``probabilities`` maps each of entailment / neutral / contradiction to its probability when
    the backend can give all three.
    """

    label: RelationType
    probability: float
    probabilities: dict[str, float] = field(default_factory=dict)
    failed: bool = False
    reason: str | None = None

    @classmethod
    def from_probabilities(cls, probabilities: dict[str, float]) -> "NLIJudgement":
        """The arg-max label of normalised three-way probabilities."""
        total = sum(probabilities.get(l.value, 0.0) for l in LABELS)
        if not total > 0:
            return cls.failure("all label probabilities are zero")
        normalised = {l.value: probabilities.get(l.value, 0.0) / total for l in LABELS}
        best = max(LABELS, key=lambda l: normalised[l.value])
        return cls(best, normalised[best.value], normalised)

    @classmethod
    def failure(cls, reason: str) -> "NLIJudgement":
        return cls(RelationType.NEUTRAL, 0.0, {}, failed=True, reason=reason)

    @classmethod
    def unjudged(cls) -> "NLIJudgement":
        """No verdict exists for the pair (e.g. absent from precomputed relations): no factor."""
        return cls(RelationType.NEUTRAL, 0.0, {}, failed=True, reason=UNJUDGED)

    @property
    def is_unjudged(self) -> bool:
        return self.failed and self.reason == UNJUDGED


@runtime_checkable
class NLIBackend(Protocol):
    """Judges (premise, hypothesis) pairs in batches."""

    name: str

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]: ...


def judge_with_cache(
    pairs: Sequence[tuple[str, str]],
    score: Callable[[list[tuple[str, str]]], list[tuple[dict[str, float], dict[str, Any]]]],
    *,
    cache: "ModelCache | None",
    backend: str,
    model: str,
    version: str,
    request: Callable[[str, str], dict[str, Any]],
) -> tuple[list[NLIJudgement], int]:
    """The judging loop of a backend that gives three-way probabilities for batches of pairs.

    Checks the pairs (two strings each; an empty side is a failed judgement), answers what the
    cache holds, sends the rest to ``score`` in one call — it returns, per pair, the
    probabilities and any extra fields worth storing — and caches those under
    ``cache_key(backend, model, version, request(premise, hypothesis))``.
    Returns the judgements in input order and the number of pairs that were scored.
    """
    from ..cache import cache_key

    results: list[NLIJudgement | None] = [None] * len(pairs)
    todo: list[int] = []
    keys: dict[int, str] = {}
    for i, pair in enumerate(pairs):
        if len(pair) != 2 or not all(isinstance(text, str) for text in pair):
            raise TypeError(f"pair {i} is not two strings: {pair!r}")
        premise, hypothesis = pair
        if not premise.strip() or not hypothesis.strip():
            results[i] = NLIJudgement.failure("empty premise or hypothesis")
            continue
        if cache is not None:
            keys[i] = cache_key(backend, model, version, request(premise, hypothesis))
            hit = cache.get(keys[i])
            if hit is not None:
                results[i] = NLIJudgement.from_probabilities(hit["probabilities"])
                continue
        todo.append(i)
    if todo:
        for i, (probabilities, extra) in zip(todo, score([tuple(pairs[i]) for i in todo])):
            results[i] = NLIJudgement.from_probabilities(probabilities)
            if cache is not None:
                cache.put(
                    keys[i], {"probabilities": probabilities, **extra}, backend=backend, model=model,
                    prompt_version=version, request=request(*pairs[i]),
                )
    return results, len(todo)  # type: ignore[return-value]
