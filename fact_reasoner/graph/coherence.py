"""Coherence: relations between the atoms of one response, as factors and as a score.

FR1–FR3 relate atoms only to contexts, so a response that contradicts itself ("born in
1949" … "aged 30 in 1985") is never noticed. With ``GraphOptions.coherence`` the pairs of
atoms are judged by NLI in both directions and become factors between atom variables, and the
response gets a coherence score and the list of its contradicting pairs.

The parts live in one module each:

- which pairs: :mod:`fact_reasoner.graph.coherence_pairs` (:func:`plan_atom_pairs`);
- the tables: :mod:`fact_reasoner.graph.factors` (:func:`atom_contradiction_table`,
  :func:`atom_entailment_table`);
- the factors in the graph: :mod:`fact_reasoner.graph.coherence_graph` (:func:`add_atom_factors`,
  which :func:`fact_reasoner.graph.build.build_graph` calls when the plan has atom pairs);
- the score and the report: this module (:func:`coherence_score`, :func:`contradicting_pairs`,
  :func:`coherence_counters`, :func:`check_coherence_judged`).

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
    (:func:`fact_reasoner.atoms.frames.comparability`; the rule, why it exists and its known misses
    are in :mod:`fact_reasoner.atoms.frames`, which the atom–context contradiction rule shares).

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

from collections.abc import Iterable, Mapping

from ..errors import RecordFailed
from ..schema import ContradictingPair, RelationType
from .factor_graph import RELATION_CODES, BuiltGraph

__all__ = [
    "check_coherence_judged",
    "coherence_counters",
    "coherence_score",
    "contradicting_pairs",
]

_CONTRADICTION = RELATION_CODES[RelationType.CONTRADICTION]


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
