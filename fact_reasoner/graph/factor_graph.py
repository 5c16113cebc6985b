"""The data of the graph stage: the factor graph, the plan of what to judge, and a built graph
with the relation behind each factor.

The :class:`FactorGraph` holds variable names, unary priors and pairwise tables as arrays; it
knows nothing about atoms, contexts or engines (engines see only variable names). A
:class:`GraphPlan` lists the atoms, the contexts and the NLI pairs a version needs judged
(:func:`fact_reasoner.graph.build.plan_graph`); a :class:`BuiltGraph` is what
:func:`fact_reasoner.graph.build.build_graph` made of the judged relations. Every name is also
importable from :mod:`fact_reasoner.graph.build`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..schema import Atom, Context, RelationType
from ..screening.relations import UnusedRelation
from ..settings.graph_options import Version

__all__ = ["RELATION_CODES", "RELATION_NAMES", "BuiltGraph", "FactorGraph", "FactorSource", "GraphPlan"]

#: Codes used in :attr:`FactorGraph.relations`.
RELATION_CODES = {
    RelationType.ENTAILMENT: 0,
    RelationType.CONTRADICTION: 1,
    RelationType.EQUIVALENCE: 2,
}
RELATION_NAMES = {code: rel for rel, code in RELATION_CODES.items()}


@dataclass(frozen=True, eq=False)
class FactorGraph:
    """A pairwise Markov network over binary variables (value 1 = true).

    P(x) ∝ Π_v prior_v(x_v) · Π_e table_e(x_source(e), x_target(e)), with
    prior_v = [1 − prior[v], prior[v]].
    """

    variables: tuple[str, ...]
    prior: np.ndarray  # (V,) unary P(x_v = 1)
    source: np.ndarray  # (E,) variable index of X
    target: np.ndarray  # (E,) variable index of Y
    tables: np.ndarray  # (E, 2, 2) potentials table[e, x, y]
    relations: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int8))
    probabilities: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        v, e = len(self.variables), len(self.source)
        if self.prior.shape != (v,):
            raise ValueError(f"prior has shape {self.prior.shape}, expected ({v},)")
        if self.target.shape != (e,) or self.tables.shape != (e, 2, 2):
            raise ValueError("source, target and tables disagree on the number of factors")
        if e and (np.any(self.source == self.target)):
            raise ValueError("a pairwise factor joins a variable to itself")
        if len(set(self.variables)) != v:
            raise ValueError("variable names are not unique")

    @classmethod
    def from_factors(
        cls,
        priors: Mapping[str, float],
        factors: Iterable[tuple[str, str, np.ndarray]],
    ) -> "FactorGraph":
        """Build a graph from ``{name: prior}`` and ``(source, target, 2×2 table)`` triples."""
        variables = tuple(priors)
        index = {name: i for i, name in enumerate(variables)}
        factors = list(factors)
        return cls(
            variables=variables,
            prior=np.array([priors[v] for v in variables], dtype=float),
            source=np.array([index[s] for s, _, _ in factors], dtype=np.int64),
            target=np.array([index[t] for _, t, _ in factors], dtype=np.int64),
            tables=np.array([np.asarray(t, dtype=float) for _, _, t in factors]).reshape(-1, 2, 2),
        )

    @property
    def num_variables(self) -> int:
        return len(self.variables)

    @property
    def num_factors(self) -> int:
        return len(self.source)

    def index(self, name: str) -> int:
        return self.variables.index(name)

    def components(self) -> list[np.ndarray]:
        """Connected components, each an array of variable indices."""
        from scipy.sparse import coo_matrix
        from scipy.sparse.csgraph import connected_components

        v = self.num_variables
        adjacency = coo_matrix((np.ones(self.num_factors), (self.source, self.target)), shape=(v, v))
        count, labels = connected_components(adjacency, directed=False)
        order = np.argsort(labels, kind="stable")
        splits = np.cumsum(np.bincount(labels, minlength=count))[:-1]
        return np.split(order, splits)

    def subgraph(self, members: np.ndarray) -> "FactorGraph":
        """The graph induced by the variable indices ``members`` (factors inside it only)."""
        members = np.asarray(members)
        remap = -np.ones(self.num_variables, dtype=np.int64)
        remap[members] = np.arange(len(members))
        keep = (remap[self.source] >= 0) & (remap[self.target] >= 0)
        return FactorGraph(
            variables=tuple(self.variables[i] for i in members),
            prior=self.prior[members],
            source=remap[self.source[keep]],
            target=remap[self.target[keep]],
            tables=self.tables[keep],
            relations=self.relations[keep] if len(self.relations) else self.relations,
            probabilities=self.probabilities[keep] if len(self.probabilities) else self.probabilities,
        )

    def to_pgmpy(self):
        """The same model as a pgmpy ``DiscreteMarkovNetwork`` (pgmpy ≥ 1.0's MarkovNetwork) of ``DiscreteFactor``s."""
        from pgmpy.factors.discrete import DiscreteFactor
        from pgmpy.models import DiscreteMarkovNetwork

        network = DiscreteMarkovNetwork()
        network.add_nodes_from(self.variables)
        factors = []
        for i, name in enumerate(self.variables):
            factors.append(DiscreteFactor([name], [2], [1.0 - self.prior[i], self.prior[i]]))
        for s, t, table in zip(self.source, self.target, self.tables):
            a, b = self.variables[s], self.variables[t]
            network.add_edge(a, b)
            factors.append(DiscreteFactor([a, b], [2, 2], table.ravel()))
        network.add_factors(*factors)
        return network


# --------------------------------------------------------------------------------------------
# Planning: deduplication and the NLI pairs each version needs


@dataclass(frozen=True)
class GraphPlan:
    """Deduplicated atoms and contexts, and the NLI pairs (premise id, hypothesis id) to judge."""

    version: Version
    atoms: tuple[Atom, ...]
    contexts: tuple[Context, ...]
    pairs: tuple[tuple[str, str], ...]
    atom_duplicates: dict[str, str]  # dropped atom id -> kept atom id
    context_duplicates: dict[str, str]  # dropped context id -> kept context id
    #: with coherence: the (atom, atom) pairs to judge, both directions (coherence_pairs.plan_atom_pairs)
    atom_pairs: tuple[tuple[str, str], ...] = ()
    #: with coherence: ordered atom pairs left unjudged by the gates (comparability and similarity)
    atom_pairs_pruned: int = 0
    #: with coherence: of those, the ones the comparability gate left out
    atom_pairs_incomparable: int = 0
    #: the record's topic and the response's sentences (as the atomizer split it; an atom's
    #: ``sentence`` indexes them): where ``entailments same-subject`` looks for the subject of an
    #: atom that opens without a name (:func:`fact_reasoner.atoms.frames.atom_subject`)
    topic: str | None = None
    sentences: tuple[str, ...] = ()

    @property
    def texts(self) -> dict[str, str]:
        """Text of every atom and context id, duplicates included (they map to the kept text)."""
        out = {a.id: a.text for a in self.atoms} | {c.id: c.text for c in self.contexts}
        for dropped, kept in (self.atom_duplicates | self.context_duplicates).items():
            out[dropped] = out[kept]
        return out


class FactorSource(NamedTuple):
    """The relation behind one factor of the graph (after deduplication and reconciliation)."""

    source: str
    target: str
    relation: RelationType
    probability: float
    #: the panel judge whose relation this factor is (``--nli a,b`` without roles); else None
    judge: str | None = None


@dataclass(frozen=True)
class BuiltGraph:
    """A factor graph together with what produced each factor, for explanations."""

    graph: FactorGraph
    plan: GraphPlan
    atom_variables: tuple[str, ...]
    context_variables: tuple[str, ...]
    missing_pairs: int  # pairs of the plan with no relation at all (treated as neutral)
    failed_pairs: int  # pairs whose judgement failed (treated as neutral)
    factor_probabilities: np.ndarray  # NLI probability behind each factor, before clamping
    #: a panel that gives each judge its own factor: the judge behind each factor (None for the
    #: others, e.g. FR3's context pairs); empty when no relation named a judge
    factor_judges: tuple[str | None, ...] = ()
    #: relations the version does not use, by reason (unknown_id, self_loop, atom_premise,
    #: not_in_version, duplicate, contradictory_duplicate); only given relations can have them
    ignored_relations: dict[str, int] = field(default_factory=dict)
    #: with coherence: how many of the graph's factors (the last ones) join two atoms
    atom_factors: int = 0
    #: with coherence: ordered atom pairs of the plan with no judgement at all
    atom_pairs_missing: int = 0
    #: atom–context entailments and contradictions of the judge that are not factors, with why
    unused_relations: tuple[UnusedRelation, ...] = ()
    #: what the relation screen counted (:mod:`fact_reasoner.screening`): ``relations_below_floor``,
    #: the word rules' ``contradictions_same_attribute`` / ``_other_attribute`` and
    #: ``entailments_same_subject`` / ``_other_subject`` (with where the subject was found), the
    #: sentence screen's ``screen_entailments_kept`` / ``_set_aside_<check>`` / ``_turned_<check>``
    #: and ``screen_contradictions_…``; a rule that was off counts nothing
    screen_counters: dict[str, int] = field(default_factory=dict)
    #: per factor relation ``(context, atom, judge)``: the deciding sentence and, for an
    #: entailment the screen turned into a contradiction, the judge's label and why
    relation_notes: dict[tuple[str, str, str | None], Any] = field(default_factory=dict)

    def rule_counters(self) -> dict[str, int]:
        """What the relation screen did (``screen_counters``)."""
        return dict(self.screen_counters)

    @property
    def factor_relations(self) -> tuple[FactorSource, ...]:
        """The relation behind each factor, aligned with the graph's factors."""
        names = self.graph.variables
        judges = self.factor_judges + (None,) * (len(self.factor_probabilities) - len(self.factor_judges))
        return tuple(
            FactorSource(names[s], names[t], RELATION_NAMES[int(code)], float(p), judge)
            for s, t, code, p, judge in zip(
                self.graph.source, self.graph.target, self.graph.relations, self.factor_probabilities, judges
            )
        )
