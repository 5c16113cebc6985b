"""Building the FactReasoner factor graph (FR1, FR2, FR3) from atoms, contexts and relations.

Two steps keep NLI out of the builder:

1. :func:`plan_graph` deduplicates atoms and contexts and lists the (premise, hypothesis)
   pairs the chosen version needs judged:
   FR1 ≈ n·k (each atom against its own contexts), FR2 = n·m, FR3 = n·m + m(m−1).
2. :func:`build_graph` turns judged relations into an engine-neutral :class:`FactorGraph`
   (with coherence, the atom–atom factors are added by :mod:`fact_reasoner.graph.coherence_graph`).

The data it works on (:class:`~fact_reasoner.graph.factor_graph.FactorGraph`,
:class:`~fact_reasoner.graph.factor_graph.GraphPlan`,
:class:`~fact_reasoner.graph.factor_graph.BuiltGraph`) is declared in
:mod:`fact_reasoner.graph.factor_graph`, the settings
(:class:`~fact_reasoner.settings.graph_options.GraphOptions`) in
:mod:`fact_reasoner.settings.graph_options`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..errors import RecordFailed
from ..schema import Atom, Context, Relation, RelationType
from ..settings.graph_options import GraphOptions, Version
from .coherence_graph import add_atom_factors
from .factor_graph import RELATION_CODES, BuiltGraph, FactorGraph, FactorSource, GraphPlan
from .factors import clamp_probability, relation_tables

if TYPE_CHECKING:  # pragma: no cover
    from ..screening import Screening

__all__ = [
    "Deduplicated",
    "build_graph",
    "deduplicate_by_text",
    "ignored_relations",
    "plan_graph",
    "reconcile_context_pair",
]


# --------------------------------------------------------------------------------------------
# Planning: deduplication and the NLI pairs each version needs


class Deduplicated(NamedTuple):
    """Items kept (the first of each exact text) and ``{dropped id: kept id}``."""

    kept: list
    duplicates: dict[str, str]


def deduplicate_by_text(items: Sequence[Atom] | Sequence[Context]) -> Deduplicated:
    """Keep the first item of each exact text; return the kept items and ``{dropped: kept}``."""
    first_by_text: dict[str, str] = {}
    kept, dropped = [], {}
    for item in items:
        if item.text in first_by_text:
            dropped[item.id] = first_by_text[item.text]
        else:
            first_by_text[item.text] = item.id
            kept.append(item)
    return Deduplicated(kept, dropped)


def plan_graph(
    atoms: Sequence[Atom],
    contexts: Sequence[Context],
    version: Version,
    *,
    topic: str | None = None,
    sentences: Sequence[str] = (),
) -> GraphPlan:
    """Deduplicate and list the NLI pairs for FR1, FR2 or FR3.

    FR1 relates each atom to the contexts listed in its ``contexts`` (all contexts when the
    atom lists none) and keeps duplicate contexts. FR2 deduplicates contexts by exact text and
    relates every atom to every context. FR3 adds both directions of every context pair.
    Atoms are deduplicated by exact text in every version. ``topic`` and ``sentences`` (the
    record's topic, the response's sentences) are kept for ``entailments same-subject``.
    """
    kept_atoms, atom_duplicates = deduplicate_by_text(atoms)
    pairs: list[tuple[str, str]] = []
    if version == 1:
        by_id = {c.id: c for c in contexts}
        used: dict[str, Context] = {}
        for atom in kept_atoms:
            for cid in atom.contexts if atom.contexts is not None else list(by_id):
                if cid not in by_id:
                    raise ValueError(f"atom {atom.id!r} lists unknown context {cid!r}")
                used.setdefault(cid, by_id[cid])
                pairs.append((cid, atom.id))
        kept_contexts, context_duplicates = list(used.values()), dict[str, str]()
    else:
        kept_contexts, context_duplicates = deduplicate_by_text(contexts)
        pairs = [(c.id, a.id) for a in kept_atoms for c in kept_contexts]
        if version == 3:
            pairs += [(ci.id, cj.id) for ci in kept_contexts for cj in kept_contexts if ci.id != cj.id]
    return GraphPlan(
        version=version,
        atoms=tuple(kept_atoms),
        contexts=tuple(kept_contexts),
        pairs=tuple(dict.fromkeys(pairs)),
        atom_duplicates=atom_duplicates,
        context_duplicates=context_duplicates,
        topic=topic,
        sentences=tuple(sentences),
    )


# --------------------------------------------------------------------------------------------
# Building: relations -> factors


def reconcile_context_pair(forward: Relation | None, backward: Relation | None) -> FactorSource | None:
    """FR3's two-way reconciliation of the NLI results for one unordered context pair.

    The direction with the higher probability wins, whatever its label; ties keep
    ``forward``. Entailment both ways becomes equivalence (with the winning probability).
    A neutral or failed winner drops the pair (``None``).
    """
    candidates = [r for r in (forward, backward) if r is not None and not r.failed]
    if not candidates:
        return None
    winner = max(candidates, key=lambda r: r.probability)  # max keeps the first on ties
    if winner.relation == RelationType.NEUTRAL:
        return None
    relation = winner.relation
    if len(candidates) == 2 and all(r.relation == RelationType.ENTAILMENT for r in candidates):
        relation = RelationType.EQUIVALENCE
    return FactorSource(winner.source, winner.target, relation, winner.probability)


_NEUTRAL_CODE = 3
_CODES = {**RELATION_CODES, RelationType.NEUTRAL: _NEUTRAL_CODE}


def build_graph(
    plan: GraphPlan,
    relations: Iterable[Relation],
    options: GraphOptions | None = None,
    *,
    supplied: bool = False,
    screening: "Screening | None" = None,
) -> BuiltGraph:
    """Turn relations into the factor graph of ``plan.version``.

    Only entailment, contradiction and equivalence become factors; neutral and failed
    relations are dropped, so an atom with no factor keeps its prior (0.5). The relations are
    read as given: the rules for the judge's noise (the relation floor, which entailments and
    contradictions count) are a stage of their own before this one
    (:func:`fact_reasoner.screening.screen_relations`), whose ``screening`` — its relations, and
    what it set aside, noted and counted, which the built graph carries for the output — is
    passed here in place of ``relations``. ``supplied`` says the relations came with the record
    (data, not the judge's output) and were not screened: one with p ≤ 0.5 is then an input error
    (:class:`~fact_reasoner.errors.RecordFailed`). Relations on ids
    that deduplication dropped are mapped onto the kept id; when a pair is judged twice the
    first judgement counts — per judge, where a panel gives each judge's relation its own factor
    (``Relation.judge``). Context pairs (FR3) are reconciled as
    :func:`reconcile_context_pair` describes, vectorised over all pairs.

    >>> from fact_reasoner import Atom, Context, Relation, build_graph, plan_graph
    >>> atoms = [Atom(id="a0", text="Marie Curie was a physicist."), Atom(id="a1", text="She was born in Paris.")]
    >>> plan = plan_graph(atoms, [Context(id="c0", text="Marie Curie was a Polish physicist.")], version=1)
    >>> plan.pairs
    (('c0', 'a0'), ('c0', 'a1'))
    >>> built = build_graph(
    ...     plan,
    ...     [
    ...         Relation(source="c0", target="a0", relation="entailment", probability=0.9),
    ...         Relation(source="c0", target="a1", relation="neutral", probability=0.7),
    ...     ],
    ... )
    >>> built.graph.variables, built.graph.num_factors  # the neutral relation is no factor
    (('a0', 'a1', 'c0'), 1)
    >>> built.factor_relations[0].relation.value, built.missing_pairs, built.failed_pairs
    ('entailment', 0, 0)
    """
    options = options or GraphOptions(version=plan.version)
    if screening is not None:
        relations = screening.relations
    if plan.atom_pairs:
        relations = list(relations)  # read twice: here and for the atom-atom factors
    if options.version != plan.version:
        raise ValueError(f"plan is FR{plan.version} but options ask for FR{options.version}")
    atom_ids = tuple(a.id for a in plan.atoms)
    context_ids = tuple(c.id for c in plan.contexts)
    variables = atom_ids + context_ids
    n_atoms, v = len(atom_ids), len(variables)
    given = _RelationArrays.of(plan, relations)
    src, tgt, code, prob, failed, judge = given.src, given.tgt, given.code, given.prob, given.failed, given.judge
    keep = given.planned & given.first
    ignored = given.ignored()
    src, tgt, code, prob, failed, judge = src[keep], tgt[keep], code[keep], prob[keep], failed[keep], judge[keep]
    judges = given.judge_names
    # a pair with a relation of each of a panel's judges is one pair judged, not several
    missing = len(plan.pairs) - len(np.unique(src * len(variables) + tgt))
    n_failed = int(failed.sum())
    on_atom = tgt < n_atoms
    if supplied and not options.filter_supplied_relations:
        _check_supplied(variables, src, tgt, code, prob, failed)
    atom_factor = on_atom & ~failed & (code != _NEUTRAL_CODE)
    f_src, f_tgt, f_code, f_prob = _reconcile_context_pairs(
        src[~on_atom], tgt[~on_atom], code[~on_atom], prob[~on_atom], failed[~on_atom], v
    )
    source = np.concatenate([src[atom_factor], f_src])
    target = np.concatenate([tgt[atom_factor], f_tgt])
    codes = np.concatenate([code[atom_factor], f_code]).astype(np.int8)
    raw = np.concatenate([prob[atom_factor], f_prob])
    probs = np.asarray(clamp_probability(raw, options.clamp), dtype=float).reshape(-1)
    context_priors = np.clip(
        np.array([options.context_prior * _relevance(c) for c in plan.contexts], dtype=float),
        options.clamp,
        1 - options.clamp,
    )
    prior = np.concatenate([np.full(n_atoms, options.atom_prior), context_priors])
    target_priors = prior[target] if options.factor_tables == "priors" else None
    graph = FactorGraph(
        variables=variables,
        prior=prior,
        source=source,
        target=target,
        tables=relation_tables(codes, probs, target_priors),
        relations=codes,
        probabilities=probs,
    )
    built = BuiltGraph(
        graph=graph,
        plan=plan,
        atom_variables=atom_ids,
        context_variables=context_ids,
        missing_pairs=missing,
        failed_pairs=n_failed,
        factor_probabilities=raw,
        factor_judges=tuple(judges[int(j)] for j in judge[atom_factor]) + (None,) * len(f_src)
        if len(judges) > 1
        else (),
        ignored_relations=ignored,
        unused_relations=screening.unused if screening is not None else (),
        screen_counters=dict(screening.counters) if screening is not None else {},
        relation_notes=dict(screening.notes) if screening is not None else {},
    )
    if plan.atom_pairs:
        built = add_atom_factors(built, relations, options)
    return built


@dataclass(frozen=True)
class _RelationArrays:
    """Given relations as arrays over the plan's variables (dropped duplicate ids mapped onto
    the kept ones), with which of them the plan uses: ``planned`` (a pair of the version) and
    ``first`` (the first relation given for its pair)."""

    src: np.ndarray
    tgt: np.ndarray
    code: np.ndarray
    prob: np.ndarray
    failed: np.ndarray
    planned: np.ndarray
    first: np.ndarray
    first_of_pair: np.ndarray
    n_atoms: int
    #: the index in ``judge_names`` of the judge whose relation each is (a panel's ``factors``)
    judge: np.ndarray
    #: the judges named (None first: a relation of no particular judge)
    judge_names: tuple[str | None, ...]

    @classmethod
    def of(cls, plan: GraphPlan, relations: Iterable[Relation]) -> "_RelationArrays":
        variables = tuple(a.id for a in plan.atoms) + tuple(c.id for c in plan.contexts)
        n_atoms, v = len(plan.atoms), len(variables)
        index = {name: i for i, name in enumerate(variables)}
        for dropped, kept in (plan.atom_duplicates | plan.context_duplicates).items():
            index.setdefault(dropped, index.get(kept, -1))
        # One pass in Python to turn relations into arrays; everything after is numpy. A panel
        # that gives each judge its own factor names the judge: one relation per pair and judge.
        judge_index: dict[str | None, int] = {None: 0}
        rows = [
            (
                index.get(r.source, -1),
                index.get(r.target, -1),
                _CODES[r.relation],
                r.probability,
                r.failed,
                judge_index.setdefault(getattr(r, "judge", None), len(judge_index)),
            )
            for r in relations
        ]
        table = np.array(rows, dtype=float).reshape(-1, 6)
        src, tgt = table[:, 0].astype(np.int64), table[:, 1].astype(np.int64)
        code, prob, failed = table[:, 2].astype(np.int8), table[:, 3], table[:, 4].astype(bool)
        judge = table[:, 5].astype(np.int64)
        planned = _planned_mask(plan, index, src, tgt, n_atoms)
        first = np.zeros(len(rows), dtype=bool)
        key = (src * v + tgt) * len(judge_index) + judge
        _, first_index, inverse = np.unique(
            np.where(planned, key, -1 - np.arange(len(rows))), return_index=True, return_inverse=True
        )
        first[first_index] = True
        return cls(
            src, tgt, code, prob, failed, planned, first, first_index[inverse], n_atoms, judge, tuple(judge_index)
        )

    def ignored(self) -> dict[str, int]:
        """How many relations the graph leaves out, by reason (non-zero reasons only)."""
        unknown = (self.src < 0) | (self.tgt < 0)
        self_loop = ~unknown & (self.src == self.tgt)
        atom_premise = ~unknown & ~self_loop & (self.src < self.n_atoms)
        duplicate = self.planned & ~self.first
        contradictory = duplicate & (self.code != self.code[self.first_of_pair])
        counts = {
            "unknown_id": int(unknown.sum()),
            "self_loop": int(self_loop.sum()),
            "atom_premise": int(atom_premise.sum()),
            "not_in_version": int((~self.planned & ~unknown & ~self_loop & ~atom_premise).sum()),
            "duplicate": int((duplicate & ~contradictory).sum()),
            "contradictory_duplicate": int(contradictory.sum()),
        }
        return {reason: n for reason, n in counts.items() if n}


def ignored_relations(plan: GraphPlan, relations: Iterable[Relation]) -> dict[str, int]:
    """Given relations that the plan's version leaves out, counted by reason: ``unknown_id``,
    ``self_loop``, ``atom_premise`` (an atom as premise: atoms are never related to each other),
    ``not_in_version`` (context–context in FR1/FR2; in FR1 a context the atom did not retrieve),
    ``duplicate`` and ``contradictory_duplicate`` (the pair was given before, with the same or
    another label: the first one counts)."""
    return _RelationArrays.of(plan, relations).ignored()


_LABEL_OF_CODE = {code: relation for relation, code in _CODES.items()}


def _check_supplied(variables, src, tgt, code, prob, failed) -> None:
    """Relations a record supplies are used as given, so a label with p ≤ 0.5 cannot be: both
    table families read an entailment or contradiction at p ≤ 0.5 as evidence the other way.
    Raise :class:`~fact_reasoner.errors.RecordFailed` naming the first such relation."""
    weak = np.flatnonzero((code != _NEUTRAL_CODE) & ~failed & (prob <= 0.5))
    if len(weak):
        i = int(weak[0])
        label = _LABEL_OF_CODE[int(code[i])].value
        raise RecordFailed(
            f"the record's relation {variables[int(src[i])]}->{variables[int(tgt[i])]} is {label} with probability "
            f"{float(prob[i]):g} ({len(weak)} such relation(s)): a supplied label needs a probability above 0.5, since "
            "the factor tables read p <= 0.5 as evidence the other way; give the pair as neutral or leave it out, or "
            "pass --filter-supplied-relations to drop such relations as neutral"
        )


def _relevance(context: Context) -> float:
    """A context summariser's confidence that the context is relevant (1 when absent).

    It scales the context's prior: P(context true) = context_prior × relevance.
    """
    value = (context.model_extra or {}).get("relevance")
    if value is None:
        return 1.0
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"context {context.id!r} has relevance {value}, outside [0, 1]")
    return value


def _planned_mask(plan: GraphPlan, index: dict[str, int], src, tgt, n_atoms: int) -> np.ndarray:
    """Which relations are pairs of the plan (premise a context; FR1: the atom's own contexts)."""
    known = (src >= 0) & (tgt >= 0) & (src >= n_atoms) & (src != tgt)
    if plan.version == 1:
        v = len(index)
        codes = {index[p] * v + index[h] for p, h in plan.pairs}
        known &= np.isin(src * v + tgt, np.fromiter(codes, dtype=np.int64, count=len(codes)))
    elif plan.version == 2:
        known &= tgt < n_atoms
    return known


def _reconcile_context_pairs(src, tgt, code, prob, failed, v):
    """Vectorised :func:`reconcile_context_pair` over every context pair at once.

    "Forward" is the direction from the context listed first (lower index), which is the
    direction the plan lists first, so ties keep it as the scalar version does.
    """
    forward = src < tgt
    lo, hi = np.minimum(src, tgt), np.maximum(src, tgt)
    key = lo * v + hi
    pairs, inverse = np.unique(key, return_inverse=True)
    k = len(pairs)
    present = np.zeros((2, k), dtype=bool)
    usable = np.zeros((2, k), dtype=bool)
    p = np.full((2, k), -np.inf)
    c = np.full((2, k), _NEUTRAL_CODE, dtype=np.int8)
    side = np.where(forward, 0, 1)
    present[side, inverse] = True
    usable[side, inverse] = ~failed
    p[side, inverse] = np.where(failed, -np.inf, prob)
    c[side, inverse] = code
    backward_wins = usable[1] & (~usable[0] | (p[1] > p[0]))
    any_usable = usable[0] | usable[1]
    win_code = np.where(backward_wins, c[1], c[0])
    win_prob = np.where(backward_wins, p[1], p[0])
    entail = RELATION_CODES[RelationType.ENTAILMENT]
    both_entail = usable[0] & usable[1] & (c[0] == entail) & (c[1] == entail)
    win_code = np.where(both_entail, RELATION_CODES[RelationType.EQUIVALENCE], win_code)
    keep = any_usable & (win_code != _NEUTRAL_CODE)
    lo_k, hi_k = pairs // v, pairs % v
    win_src = np.where(backward_wins, hi_k, lo_k)
    win_tgt = np.where(backward_wins, lo_k, hi_k)
    return win_src[keep], win_tgt[keep], win_code[keep], win_prob[keep]
