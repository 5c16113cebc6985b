"""The ``precomputed`` NLI backend: the relations a record already carries.

Pairs are looked up by their texts, not ids, so a relation given for a context that
deduplication merged still applies to the kept copy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..schema import Relation
from .base import NLIJudgement


class PrecomputedNLI:
    """Answers from a fixed set of relations; unknown pairs come back unjudged (no factor)."""

    name = "precomputed"
    #: its relations are data the record supplies, not a judge's output: the graph uses them as
    #: given (:func:`fact_reasoner.graph.build.build_graph`, ``supplied``)
    supplies_relations = True

    def __init__(self, relations: Iterable[Relation], texts: Mapping[str, str]):
        self._by_text: dict[tuple[str, str], NLIJudgement] = {}
        for rel in relations:
            try:
                key = (texts[rel.source], texts[rel.target])
            except KeyError as missing:
                raise ValueError(f"relation {rel.source}->{rel.target} names unknown id {missing}") from None
            judgement = (
                NLIJudgement.failure(rel.reason or "failed upstream")
                if rel.failed
                else NLIJudgement(rel.relation, rel.probability, dict(rel.probabilities or {}))
            )
            self._by_text.setdefault(key, judgement)

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        missing = NLIJudgement.unjudged()
        return [self._by_text.get(pair, missing) for pair in pairs]
