"""The atom–atom factors of coherence (``--coherence``): which judged relations between atoms
become factors, and how they join a built factor graph (last, after the atom–context ones).
The tables are :func:`fact_reasoner.graph.factors.atom_contradiction_table` and
:func:`~fact_reasoner.graph.factors.atom_entailment_table`; why they read a relation as they do, and
why a contradiction judged in either direction counts once: :mod:`fact_reasoner.graph.coherence`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from ..schema import Relation, RelationType
from ..settings.graph_options import GraphOptions
from .factor_graph import RELATION_CODES, BuiltGraph, FactorGraph
from .factors import atom_contradiction_table, atom_entailment_table, clamp_probability

__all__ = ["add_atom_factors", "atom_pair_relations"]

_CONTRADICTION = RELATION_CODES[RelationType.CONTRADICTION]


def atom_pair_relations(
    atom_pairs: Iterable[tuple[str, str]],
    relations: Iterable[Relation],
    min_relation_probability: float = 0.0,
) -> list[tuple[str, str, RelationType, float]]:
    """The atom–atom factors, as (source, target, relation, p) before clamping.

    Per unordered pair: one contradiction (either direction labelled contradiction, p the
    larger) listed from the atom that comes first in ``atom_pairs``; one entailment per
    direction labelled entailment. Only relations on ``atom_pairs`` count; the first one
    given for an ordered pair counts; failed ones and those with p ≤
    ``min_relation_probability`` are neutral.
    """
    wanted = list(dict.fromkeys(atom_pairs))
    wanted_set = set(wanted)
    judged: dict[tuple[str, str], Relation] = {}
    for rel in relations:
        key = (rel.source, rel.target)
        if key in wanted_set and key not in judged:
            judged[key] = rel

    def usable(rel: Relation | None, label: RelationType) -> float | None:
        if rel is None or rel.failed or rel.relation != label or rel.probability <= min_relation_probability:
            return None
        return float(rel.probability)

    out: list[tuple[str, str, RelationType, float]] = []
    seen: set[frozenset[str]] = set()
    for a, b in wanted:
        pair = frozenset((a, b))
        if pair in seen:
            continue
        seen.add(pair)
        forward, backward = judged.get((a, b)), judged.get((b, a))
        both_ways = (usable(forward, RelationType.CONTRADICTION), usable(backward, RelationType.CONTRADICTION))
        contradiction = [p for p in both_ways if p is not None]
        if contradiction:
            out.append((a, b, RelationType.CONTRADICTION, max(contradiction)))
        for source, target, directed in ((a, b, forward), (b, a, backward)):
            p = usable(directed, RelationType.ENTAILMENT)
            if p is not None:
                out.append((source, target, RelationType.ENTAILMENT, p))
    return out


def add_atom_factors(built: BuiltGraph, relations: Iterable[Relation], options: GraphOptions) -> BuiltGraph:
    """``built`` with the atom–atom factors of ``built.plan.atom_pairs`` appended (last)."""
    relations = list(relations)
    factors = atom_pair_relations(built.plan.atom_pairs, relations, options.min_relation_probability)
    graph = built.graph
    judged = {(r.source, r.target) for r in relations}
    missing = sum(pair not in judged for pair in built.plan.atom_pairs)
    if not factors:
        return dataclasses.replace(built, ignored_relations=_not_ignored(built, relations), atom_pairs_missing=missing)
    index = {name: i for i, name in enumerate(graph.variables)}
    raw = np.array([p for *_, p in factors], dtype=float)
    probs = np.asarray(clamp_probability(raw, options.clamp), dtype=float).reshape(-1)
    codes = np.array([RELATION_CODES[rel] for _, _, rel, _ in factors], dtype=np.int8)
    tables = np.array(
        [
            atom_contradiction_table(p) if code == _CONTRADICTION else atom_entailment_table(p)
            for p, code in zip(probs.tolist(), codes.tolist())
        ]
    ).reshape(-1, 2, 2)
    extended = FactorGraph(
        variables=graph.variables,
        prior=graph.prior,
        source=np.concatenate([graph.source, [index[s] for s, *_ in factors]]).astype(np.int64),
        target=np.concatenate([graph.target, [index[t] for _, t, *_ in factors]]).astype(np.int64),
        tables=np.concatenate([graph.tables, tables]),
        relations=np.concatenate([graph.relations, codes]).astype(np.int8),
        probabilities=np.concatenate([graph.probabilities, probs]),
    )
    return dataclasses.replace(
        built,
        graph=extended,
        factor_probabilities=np.concatenate([built.factor_probabilities, raw]),
        ignored_relations=_not_ignored(built, relations),
        atom_factors=len(factors),
        atom_pairs_missing=missing,
    )


def _not_ignored(built: BuiltGraph, relations: list[Relation]) -> dict[str, int]:
    """The builder counted atom–atom relations as ``atom_premise`` (ignored); with coherence
    those on the plan's atom pairs are used, so they are taken out of that count."""
    wanted = set(built.plan.atom_pairs)
    used = sum((r.source, r.target) in wanted for r in relations)
    ignored = dict(built.ignored_relations)
    left = ignored.get("atom_premise", 0) - used
    if left > 0:
        ignored["atom_premise"] = left
    else:
        ignored.pop("atom_premise", None)
    return ignored
