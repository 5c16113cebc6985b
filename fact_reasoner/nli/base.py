"""The NLI stage: (premise, hypothesis) pairs in, three-way judgements out.

Every backend (an LLM judge, a cross-encoder, the record's precomputed relations) implements
:class:`NLIBackend`. A judgement that could not be made is returned with ``failed=True`` and a
``reason``; the graph treats it as neutral, so a failure never becomes a confident factor.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..schema import RelationType

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
    #: a failure because the model could not be asked (server down, calls failed after retries),
    #: as opposed to an answer that could not be read; ``unreachable``: no connection at all
    transport: bool = False
    unreachable: bool = False
    #: a panel's verdict (:class:`~fact_reasoner.nli.panel.PanelNLI`): each judge's own, by the
    #: judge's name in the panel, in the panel's order; None for a single judge
    judges: "Mapping[str, NLIJudgement] | None" = None
    #: how the panel combined them: ``factors`` (each judge's relation its own factor in the
    #: graph) or ``roles``; None for a single judge
    panel: str | None = None
    #: with ``roles``: what the rule read of each judge, by name: ``entailment`` (its P(E | not C)),
    #: ``contradiction`` (its P(C)) or ``both``; None otherwise
    roles: "Mapping[str, str] | None" = None

    @classmethod
    def from_probabilities(cls, probabilities: dict[str, float]) -> "NLIJudgement":
        """The arg-max label of normalised three-way probabilities."""
        total = sum(probabilities.get(label.value, 0.0) for label in LABELS)
        if not total > 0:
            return cls.failure("all label probabilities are zero")
        normalised = {label.value: probabilities.get(label.value, 0.0) / total for label in LABELS}
        best = max(LABELS, key=lambda label: normalised[label.value])
        return cls(best, normalised[best.value], normalised)

    @classmethod
    def failure(cls, reason: str, *, transport: bool = False, unreachable: bool = False) -> "NLIJudgement":
        """A judgement that could not be made: neutral, no factor, ``failed=True``."""
        return cls(
            RelationType.NEUTRAL, 0.0, {}, failed=True, reason=reason, transport=transport, unreachable=unreachable
        )

    @classmethod
    def call_failed(cls, what: str, error: Exception) -> "NLIJudgement":
        """The model could not be asked (an :class:`~fact_reasoner.llm.base.LLMError`)."""
        return cls.failure(f"{what}: {error}", transport=True, unreachable=bool(getattr(error, "unreachable", False)))

    @classmethod
    def unjudged(cls) -> "NLIJudgement":
        """No verdict exists for the pair (e.g. absent from precomputed relations): no factor."""
        return cls(RelationType.NEUTRAL, 0.0, {}, failed=True, reason=UNJUDGED)

    @property
    def is_unjudged(self) -> bool:
        return self.failed and self.reason == UNJUDGED


def two_way(support: float) -> dict[str, float]:
    """The probabilities of a two-way checker, which says supported or not and nothing about
    contradiction: ``P(entailment) = s``, ``P(neutral) = 1 − s``, ``P(contradiction) = 0``
    (``s`` clipped into [0, 1]). No contradiction is invented that it did not say."""
    s = min(max(float(support), 0.0), 1.0)
    return {"entailment": s, "neutral": 1.0 - s, "contradiction": 0.0}


@runtime_checkable
class NLIBackend(Protocol):
    """Judges (premise, hypothesis) pairs in batches: one judgement per pair, in input order; a
    pair with an empty side is a failed judgement and a pair that is not two strings a
    ``TypeError`` (:func:`check_pairs`). ``tests/nli/test_contract.py`` holds every backend to it."""

    name: str

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]: ...


def backend_identity(backend: Any) -> str:
    """What names a backend's verdicts in a cache: its ``identity`` (kind, weights' fingerprint,
    options that change a verdict), else ``name:model_id``."""
    identity = getattr(backend, "identity", None)
    if identity:
        return str(identity)
    name = getattr(backend, "name", type(backend).__name__)
    model = getattr(backend, "model_id", None)
    return f"{name}:{model}" if model else str(name)


def batch_invariant(backend: Any) -> bool:
    """Whether a judge's verdict on a pair is the same whatever pairs it is judged with: it
    says so (``batch_invariant = True``), or it runs one item at a time (``items_per_run == 1``,
    the shipped cross-encoder), or, saying neither, it wraps only such judges
    (:func:`inner_judges`: the pair cache, a cascade). ``serve`` merges concurrent requests only for such a judge."""
    declared = getattr(backend, "batch_invariant", None), getattr(backend, "items_per_run", None)
    if declared != (None, None):  # a judge (or wrapper) that says how it runs is taken at its word
        return bool(declared[0]) or declared[1] == 1
    inner = inner_judges(backend)
    return bool(inner) and all(batch_invariant(each) for each in inner)


def describe_judge(backend: Any) -> str:
    """What a person calls a judge — the model and its version where the backend says
    (``description``: "cross-encoder nli-minilm-l6 version 4"), else its name — apart from its
    cache identity, which also fingerprints the weights and options."""
    return str(getattr(backend, "description", None) or getattr(backend, "name", type(backend).__name__))


def inner_judges(backend: Any) -> list[Any]:
    """The judges a wrapper asks: the pair cache's ``backend``, the cascade's ``fast`` and
    ``second``, a panel's ``members``, one judge of a panel's ``panel`` ([] for a judge itself)."""
    inner = [getattr(backend, name, None) for name in ("backend", "fast", "second", "panel")]
    inner += [judge for _, judge in getattr(backend, "members", None) or ()]
    return [each for each in inner if callable(getattr(each, "judge", None))]


def reads_whole(backend: Any, hypothesis: str) -> bool:
    """Whether ``backend`` reads all of ``hypothesis`` in one judgement. A backend that cuts a
    long hypothesis says so with ``reads_hypothesis(text) -> bool`` (the cross-encoder reads at
    most half its window: :meth:`~fact_reasoner.nli.cross_encoder.CrossEncoderNLI.reads_hypothesis`);
    wrappers are looked through (:func:`inner_judges`: every judge they ask must read it); a
    backend that says nothing reads it whole."""
    inner = inner_judges(backend)
    if inner:
        return all(reads_whole(each, hypothesis) for each in inner)
    probe = getattr(backend, "reads_hypothesis", None)
    return True if probe is None else bool(probe(hypothesis))


def says_contradictions(backend: Any) -> bool:
    """Whether ``backend`` can say *contradicted*: not a two-way checker (``two_way = True``: it
    says supported or not, :func:`two_way`), looking through wrappers (:func:`inner_judges`: one
    of the judges they ask can)."""
    inner = inner_judges(backend)
    if inner:
        return any(says_contradictions(each) for each in inner)
    return not getattr(backend, "two_way", False)


def check_pairs(pairs: Sequence[tuple[str, str]]) -> tuple[list[NLIJudgement | None], list[int]]:
    """What every backend checks before asking its model: each pair is two strings (else
    ``TypeError``); a pair with an empty side gets a failed judgement and is not sent.

    Returns the judgements so far (None where the model must judge) and the indices to judge.
    """
    results: list[NLIJudgement | None] = [None] * len(pairs)
    todo: list[int] = []
    for i, pair in enumerate(pairs):
        if len(pair) != 2 or not all(isinstance(text, str) for text in pair):
            raise TypeError(f"pair {i} is not two strings: {pair!r}")
        if not pair[0].strip() or not pair[1].strip():
            results[i] = NLIJudgement.failure("empty premise or hypothesis")
        else:
            todo.append(i)
    return results, todo


def judge_scored(
    pairs: Sequence[tuple[str, str]],
    score: Callable[[list[tuple[str, str]]], list[dict[str, float]]],
) -> list[NLIJudgement]:
    """The judging loop of a backend that gives three-way probabilities for batches of pairs.

    Checks the pairs (two strings each; an empty side is a failed judgement, not a model
    call), sends the rest to ``score`` in one call and returns the arg-max judgements in input
    order. Caching is not done here: the factory puts :class:`~.cache.CachedNLI` in front.
    """
    results, todo = check_pairs(pairs)
    if todo:
        for i, probabilities in zip(todo, score([(pairs[i][0], pairs[i][1]) for i in todo])):
            results[i] = NLIJudgement.from_probabilities(probabilities)
    return results  # type: ignore[return-value]
