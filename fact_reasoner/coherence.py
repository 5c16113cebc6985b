"""Coherence: relations between the atoms of one response, as factors and as a score.

FR1–FR3 relate atoms only to contexts, so a response that contradicts itself ("born in
1949" … "aged 30 in 1985") is never noticed. With ``GraphOptions.coherence`` the pairs of
atoms are judged by NLI in both directions and become factors between atom variables, and the
response gets a coherence score and the list of its contradicting pairs.

Which pairs
    Every unordered pair of (deduplicated) atoms that passes the gates is judged both ways
    (:func:`plan_atom_pairs`); the others are counted as pruned
    (``counters.coherence_pairs_pruned``, ordered pairs, split by reason into
    ``coherence_pairs_incomparable`` and ``coherence_pairs_dissimilar``). Judging all n(n−1)
    ordered pairs of a 40-atom biography costs 1,560 NLI calls.

    *Similarity gate* (``coherence_min_similarity``): the pair's sentence-embedding cosine is
    at least the threshold. Two sentences about unrelated things are rarely judged a
    contradiction.

    *Comparability gate* (``coherence_pairs comparable``, applied first, needs no model): the
    two atoms must say something about the same attribute and disagree on its value
    (:func:`fact_reasoner.frames.comparability`; the rule, why it exists and its known misses
    are in :mod:`fact_reasoner.frames`, which the atom–context contradiction rule shares).

The factor tables (:func:`atom_contradiction_table`, :func:`atom_entailment_table`)
    Atom–context tables (``factors.py``, DESIGN.md §4) are the paper's Table 1, e.g.
    contradiction ``[[p, p], [p, 1−p]]``. Between two atoms that table is unsound for a weak
    relation: it is ``p · [[1, 1], [1, (1−p)/p]]``, so for p < 0.5 it *rewards* both atoms
    being true. Here a relation judged with probability p is read as a mixture: with
    probability p the relation holds (the state it forbids is impossible), with probability
    1 − p there is no constraint (every state weighs 1). The forbidden state then weighs
    p·0 + (1−p)·1 = 1 − p and the others p + (1 − p) = 1:

    ========================  =====  =====  =====  =====
    relation (X, Y atoms)     00     01     10     11
    ========================  =====  =====  =====  =====
    X contradicts Y           1      1      1      1 − p
    X entails Y (X ⇒ Y)       1      1      1 − p  1
    ========================  =====  =====  =====  =====

    A contradiction multiplies the odds of "both true" by 1 − p against every other state,
    whatever else the graph says: two atoms judged contradictory with p = 0.99 cannot both
    be confidently true. The tables never favour a state, so a weak judgement can only do
    little, never the opposite of what it says. They are the same with either
    ``factor_tables`` (atoms carry their prior as a unary factor already).

Both directions
    Contradiction is symmetric: the pair gets one contradiction factor when either direction
    is judged a contradiction, with p the larger of the two (NLI models often see a
    contradiction one way only). Each direction judged an entailment adds its own directed
    entailment factor. Neutral and failed judgements, and (with ``min_relation_probability``)
    weak ones, add nothing.

The coherence score (:func:`coherence_score`)
    ``coherence = 1 − max_r p_r`` over the response's contradiction factors r (1 when there
    is none). Why this one: the event "the response contains no contradiction" is contained
    in "pair r is not a contradiction" for every r, so P(no contradiction) ≤ 1 − p_r for each
    r, and 1 − max p_r is the tightest such bound that needs no assumption about how the
    pair judgements depend on each other; with a single candidate pair it is exactly
    P(no contradiction). The product Π(1 − p_r) would be the probability only if the
    judgements were independent — they are not (the same atom appears in many pairs) — and
    it falls towards 0 with the number of pairs judged, so long responses would look
    incoherent from NLI noise alone. The score is read from the NLI judgements, not from
    the posterior: a response that says both "1949" and "1950" is incoherent whether or not
    either is true. The posteriors of both atoms are reported beside each pair.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import numpy as np

from .errors import RecordFailed
from .factors import clamp_probability
from .frames import (  # the text frames live there; re-exported here, where they were first
    COMPARABLE,
    MAX_ATOM_FRAME,
    MIN_FRAME_OVERLAP,
    AtomFrame,
    atom_frame,
    comparability,
    comparable_pair_mask,
    frame_overlap,
    light_stem,
)
from .graph import RELATION_CODES, BuiltGraph, FactorGraph, GraphOptions, GraphPlan
from .schema import ContradictingPair, Relation, RelationType

if TYPE_CHECKING:  # pragma: no cover
    from .embeddings import Embedder

logger = logging.getLogger(__name__)

__all__ = [
    "COMPARABLE",
    "MAX_ATOM_FRAME",
    "MIN_FRAME_OVERLAP",
    "AtomFrame",
    "CoherencePairs",
    "add_atom_factors",
    "atom_frame",
    "atom_contradiction_table",
    "atom_entailment_table",
    "atom_pair_relations",
    "check_coherence_judged",
    "coherence_counters",
    "coherence_score",
    "comparability",
    "comparable_pair_mask",
    "contradicting_pairs",
    "frame_overlap",
    "light_stem",
    "plan_atom_pairs",
    "select_atom_pairs",
]

_CONTRADICTION = RELATION_CODES[RelationType.CONTRADICTION]
_ENTAILMENT = RELATION_CODES[RelationType.ENTAILMENT]


# -- which pairs ---------------------------------------------------------------------------------

#: which atom pairs coherence judges: ``similar`` (the similarity gate only) or ``comparable``
#: (the comparability gate of :mod:`fact_reasoner.frames`, then the similarity gate)
CoherencePairs = Literal["comparable", "similar"]


def select_atom_pairs(
    atom_ids: Sequence[str],
    embeddings: np.ndarray | None,
    min_similarity: float,
    candidates: np.ndarray | None = None,
) -> tuple[tuple[tuple[str, str], ...], int]:
    """The ordered atom pairs to judge (both directions of each unordered pair i < j whose
    cosine cos(e_i, e_j) = e_i·e_j / (|e_i| |e_j|) ≥ ``min_similarity``) and how many ordered
    pairs the similarity gate pruned.

    ``candidates`` (one boolean per unordered pair, ``numpy.triu_indices`` order, e.g.
    :func:`comparable_pair_mask`) restricts the pairs first; those it excludes are not counted
    here. ``embeddings`` (one row per atom) may be ``None`` when ``min_similarity`` ≤ −1, where
    no pair can be pruned, or when no candidate is left.
    """
    n = len(atom_ids)
    if n < 2:
        return (), 0
    upper_i, upper_j = np.triu_indices(n, k=1)
    allowed = np.ones(len(upper_i), dtype=bool) if candidates is None else np.asarray(candidates, dtype=bool)
    if len(allowed) != len(upper_i):
        raise ValueError(f"select_atom_pairs needs one candidate flag per unordered pair ({len(upper_i)})")
    if min_similarity <= -1.0 or not allowed.any():
        keep = allowed
    else:
        if embeddings is None or len(embeddings) != n:
            raise ValueError(f"select_atom_pairs needs one embedding per atom ({n})")
        vectors = np.asarray(embeddings, dtype=float)
        norms = np.linalg.norm(vectors, axis=1)
        norms[norms == 0] = 1.0  # a zero vector has cosine 0 with everything
        unit = vectors / norms[:, None]
        cosine = (unit @ unit.T)[upper_i, upper_j]
        keep = allowed & (cosine >= min_similarity)
    pairs: list[tuple[str, str]] = []
    for i, j in zip(upper_i[keep].tolist(), upper_j[keep].tolist()):
        pairs += [(atom_ids[i], atom_ids[j]), (atom_ids[j], atom_ids[i])]
    return tuple(pairs), 2 * int((allowed & ~keep).sum())


def plan_atom_pairs(
    plan: GraphPlan,
    embedder: "Embedder | None",
    min_similarity: float,
    pairs: CoherencePairs = "similar",
) -> GraphPlan:
    """``plan`` with the atom pairs that coherence judges: with ``pairs="comparable"`` the
    comparability gate first (:func:`comparable_pair_mask`), then the similarity gate
    (:func:`select_atom_pairs`). ``atom_pairs_pruned`` counts both, ``atom_pairs_incomparable``
    the first.

    The embedder is used only when the similarity gate can prune (``min_similarity`` > −1) and
    some pair is left for it."""
    if pairs not in ("comparable", "similar"):
        raise ValueError(f"unknown coherence pair rule {pairs!r} (comparable or similar)")
    ids = [a.id for a in plan.atoms]
    candidates = comparable_pair_mask([a.text for a in plan.atoms]) if pairs == "comparable" and len(ids) > 1 else None
    incomparable = 0 if candidates is None else 2 * int((~candidates).sum())
    embeddings = None
    if min_similarity > -1.0 and len(ids) > 1 and (candidates is None or candidates.any()):
        if embedder is None:
            raise ValueError("the coherence similarity gate needs a sentence embedder (or min_similarity -1)")
        embeddings = embedder.encode([a.text for a in plan.atoms])
    selected, dissimilar = select_atom_pairs(ids, embeddings, min_similarity, candidates)
    return dataclasses.replace(
        plan, atom_pairs=selected, atom_pairs_pruned=incomparable + dissimilar, atom_pairs_incomparable=incomparable
    )


# -- the factors --------------------------------------------------------------------------------


def atom_contradiction_table(p: float) -> np.ndarray:
    """X and Y contradict each other with probability p: ``[[1, 1], [1, 1 − p]]`` (module docstring)."""
    return np.array([[1.0, 1.0], [1.0, 1.0 - p]])


def atom_entailment_table(p: float) -> np.ndarray:
    """X ⇒ Y with probability p: ``[[1, 1], [1 − p, 1]]`` (module docstring)."""
    return np.array([[1.0, 1.0], [1.0 - p, 1.0]])


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


# -- the score and the report -------------------------------------------------------------------


def coherence_score(contradiction_probabilities: Iterable[float]) -> float:
    """coherence = 1 − max_r p_r over the contradiction probabilities p_r (1 with none).

    An upper bound on P(no pair contradicts) that needs no independence assumption, exact
    for one pair (module docstring).

    >>> coherence_score([]), coherence_score([0.2, 0.9])
    (1.0, 0.09999999999999998)
    """
    values = [float(p) for p in contradiction_probabilities]
    if any(not 0.0 <= p <= 1.0 for p in values):
        raise ValueError(f"a contradiction probability lies outside [0, 1]: {values}")
    return 1.0 - max(values, default=0.0)


def contradicting_pairs(built: BuiltGraph, marginals: Mapping[str, float]) -> list[ContradictingPair]:
    """The atom pairs joined by a contradiction factor, most probable contradiction first, with
    their texts, P(contradiction) (before clamping) and the posterior of each atom."""
    graph = built.graph
    first = graph.num_factors - built.atom_factors
    texts = {a.id: a.text for a in built.plan.atoms}
    out = []
    for e in range(first, graph.num_factors):
        if int(graph.relations[e]) != _CONTRADICTION:
            continue
        a, b = graph.variables[int(graph.source[e])], graph.variables[int(graph.target[e])]
        out.append(
            ContradictingPair(
                atoms=(a, b),
                texts=(texts[a], texts[b]),
                probability=float(built.factor_probabilities[e]),
                posteriors=(float(marginals[a]), float(marginals[b])),
            )
        )
    return sorted(out, key=lambda pair: -pair.probability)


def coherence_counters(built: BuiltGraph) -> dict[str, int]:
    """``coherence_pairs`` (ordered atom pairs planned for judging), ``coherence_pairs_pruned``
    (left out by the gates, ordered pairs) and by reason ``coherence_pairs_incomparable`` (the
    comparability gate) and ``coherence_pairs_dissimilar`` (the similarity gate),
    ``coherence_pairs_missing`` (planned but with no judgement, e.g. precomputed relations that
    lack them) and ``coherence_factors`` (atom–atom factors in the graph)."""
    plan = built.plan
    return {
        "coherence_pairs": len(plan.atom_pairs),
        "coherence_pairs_pruned": plan.atom_pairs_pruned,
        "coherence_pairs_incomparable": plan.atom_pairs_incomparable,
        "coherence_pairs_dissimilar": plan.atom_pairs_pruned - plan.atom_pairs_incomparable,
        "coherence_pairs_missing": built.atom_pairs_missing,
        "coherence_factors": built.atom_factors,
    }


def check_coherence_judged(built: BuiltGraph) -> None:
    """Raise :class:`~fact_reasoner.errors.RecordFailed` when atom pairs were planned and none
    was judged (precomputed relations without atom–atom ones): a coherence of 1 would then
    be a number nothing computed."""
    planned = len(built.plan.atom_pairs)
    if planned and built.atom_pairs_missing == planned:
        raise RecordFailed(
            f"--coherence: none of the {planned} atom pair(s) was judged (the record's relations have no "
            "atom-atom judgements); use a model NLI backend (e.g. --nli cross-encoder) or supply them"
        )
