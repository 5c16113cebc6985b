"""Building the FactReasoner factor graph (FR1, FR2, FR3) from atoms, contexts and relations.

Two steps keep NLI out of the builder:

1. :func:`plan_graph` deduplicates atoms and contexts and lists the (premise, hypothesis)
   pairs the chosen version needs judged:
   FR1 ≈ n·k (each atom against its own contexts), FR2 = n·m, FR3 = n·m + m(m−1).
2. :func:`build_graph` turns judged relations into an engine-neutral :class:`FactorGraph`.

The :class:`FactorGraph` holds variable names, unary priors and pairwise tables as arrays; it
knows nothing about atoms, contexts or engines (engines see only variable names).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from .factors import DEFAULT_CLAMP, clamp_probability, relation_tables
from .fields import option
from .frames import same_attribute
from .schema import Atom, Context, Relation, RelationType

Version = Literal[1, 2, 3]
#: which atom–context contradictions become factors (GraphOptions.contradictions)
ContradictionRule = Literal["same-attribute", "any"]
#: which family of factor tables (GraphOptions.factor_tables; factors.py)
FactorTables = Literal["priors", "paper"]

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


class GraphOptions(BaseModel):
    """How the factor graph is built from the judged relations.

    ``context_prior`` defaults to 0.9 (IBM's code; the paper's text says 0.99).
    ``factor_tables`` picks the family of tables (``factors.py``): ``paper`` (the paper's
    Table 1) or ``priors``, in which the rows for a false premise carry the target's prior (π =
    ``atom_prior`` for atoms, ``context_prior`` for contexts). ``use_priors`` (a boolean, the
    name IBM's tool and earlier versions used) is accepted as input and read as
    ``factor_tables``.

    ``min_relation_probability`` (default 0.5; 0 makes every entailment and contradiction a
    factor, as in the paper) drops relations whose predicted label has probability p ≤ the
    threshold, as if neutral. Why: with three labels the arg-max can have p < 0.5, and then
    both table families favour the *false* atom for an "entailment" (paper: (p, p, 1−p, p);
    priors: the true-source row (1−p, p)) — a weak "entailment" would count as evidence
    against the claim, a weak "contradiction" for it. 0.5 removes exactly those: a label the
    judge gives no more than even odds.

    ``contradictions`` (``same-attribute`` or ``any``) says which atom–context contradictions
    become factors: ``any`` (the paper) every one; ``same-attribute`` only those where some
    sentence of the context speaks about the atom's attribute with a value or a negation that
    can disagree (:func:`fact_reasoner.frames.same_attribute`); the others count as neutral
    and are counted (``BuiltGraph.contradictions_other_attribute``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    title: ClassVar[str] = "factor graph"

    version: Version = option(3, "FR1 (per-atom contexts), FR2 (all contexts) or FR3 (FR2 + context-context)")
    factor_tables: FactorTables = option(
        "priors",
        "the factor tables: `priors` (a false source leaves its target at the target's prior, so each "
        "relation is P(target | source): no evidence from a context that the graph believes false) or "
        "`paper` (the paper's Table 1: an implication from a false source is satisfied whatever the "
        "target; reproduces the paper)",
        switches={"--use-priors": "priors", "--use_priors": "priors", "--paper-tables": "paper"},
    )
    context_prior: Annotated[float, Field(gt=0.0, lt=1.0)] = option(
        0.9,
        "prior P(context is true) (IBM's code uses 0.9; the paper's text says 0.99)",
    )
    atom_prior: Annotated[float, Field(gt=0.0, lt=1.0)] = option(0.5, "prior P(atom is true)")
    clamp: Annotated[float, Field(gt=0.0, lt=0.5)] = option(
        DEFAULT_CLAMP,
        "probabilities are clamped into [clamp, 1 - clamp] so no table has a zero",
        cli=False,
    )
    min_relation_probability: Annotated[float, Field(ge=0.0, lt=1.0)] = option(
        0.5,
        "drop entailments/contradictions whose NLI probability is at most this, as if neutral (0.5: a label the "
        "judge gives no more than even odds, which the tables would read as evidence the other way; 0 keeps "
        "all, as the paper)",
    )
    contradictions: ContradictionRule = option(
        "same-attribute",
        "which atom-context contradictions become factors: `same-attribute` (only where a sentence of the "
        "context speaks about the atom's attribute with a conflicting value of the same kind, or negates it; "
        "e.g. 'born in Ulm in 1879' against 'born in 1880', not 'died in 1955 in Princeton' against 'born in "
        "1879'; the others count as neutral: counters.contradictions_other_attribute) or `any` (every one, as "
        "the paper)",
    )
    # Coherence (atom–atom factors, fact_reasoner/coherence.py). Declared only_when themselves
    # on: with coherence off they are left out of the output's settings and the resume
    # fingerprint, so outputs written before the option existed still resume.
    coherence: bool = option(
        False,
        "also judge atoms of the response against each other (NLI both ways) and add atom-atom factors, "
        "so two atoms that contradict each other cannot both be confidently true; adds the output "
        "fields `coherence` and `contradicting_pairs`",
        only_when=("coherence", True),
    )
    coherence_min_similarity: Annotated[float, Field(ge=-1.0, le=1.0)] = option(
        0.3,
        "with --coherence: judge only atom pairs whose sentence-embedding cosine is at least this "
        "(-1 judges every pair; pruned pairs are counted in counters.coherence_pairs_dissimilar)",
        only_when=("coherence", True),
    )
    coherence_pairs: Literal["comparable", "similar"] = option(
        "comparable",
        "with --coherence: which atom pairs are judged: `comparable` (only pairs that talk about the same "
        "attribute with different values, or one negating the other, e.g. 'born in 1949' / 'born in 1942'; "
        "then the similarity gate) or `similar` (the similarity gate alone); pairs left out are counted in "
        "counters.coherence_pairs_incomparable",
        only_when=("coherence", True),
    )

    @model_validator(mode="before")
    @classmethod
    def _use_priors(cls, data: Any) -> Any:
        """``use_priors: true/false`` (IBM's name, and this tool's before ``factor_tables``)."""
        if isinstance(data, dict) and "use_priors" in data:
            data = dict(data)
            tables = "priors" if data.pop("use_priors") else "paper"
            if data.setdefault("factor_tables", tables) != tables:
                raise ValueError(f"use_priors and factor_tables {data['factor_tables']!r} disagree")
        return data


def upgrade_graph_settings(graph: dict[str, Any]) -> dict[str, Any]:
    """The ``graph`` settings of an output row written before ``factor_tables`` and
    ``contradictions`` existed, in today's spelling: ``use_priors`` true/false is
    ``factor_tables`` priors/paper, and every contradiction was a factor (``contradictions
    any``). Today's rows are returned as they are."""
    if "use_priors" not in graph or "factor_tables" in graph:
        return graph
    upgraded = {key: value for key, value in graph.items() if key != "use_priors"}
    upgraded["factor_tables"] = "priors" if graph["use_priors"] else "paper"
    upgraded.setdefault("contradictions", "any")
    return upgraded


@dataclass(frozen=True)
class GraphPlan:
    """Deduplicated atoms and contexts, and the NLI pairs (premise id, hypothesis id) to judge."""

    version: Version
    atoms: tuple[Atom, ...]
    contexts: tuple[Context, ...]
    pairs: tuple[tuple[str, str], ...]
    atom_duplicates: dict[str, str]  # dropped atom id -> kept atom id
    context_duplicates: dict[str, str]  # dropped context id -> kept context id
    #: with coherence: the (atom, atom) pairs to judge, both directions (coherence.plan_atom_pairs)
    atom_pairs: tuple[tuple[str, str], ...] = ()
    #: with coherence: ordered atom pairs left unjudged by the gates (comparability and similarity)
    atom_pairs_pruned: int = 0
    #: with coherence: of those, the ones the comparability gate left out
    atom_pairs_incomparable: int = 0

    @property
    def texts(self) -> dict[str, str]:
        """Text of every atom and context id, duplicates included (they map to the kept text)."""
        out = {a.id: a.text for a in self.atoms} | {c.id: c.text for c in self.contexts}
        for dropped, kept in (self.atom_duplicates | self.context_duplicates).items():
            out[dropped] = out[kept]
        return out


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


def plan_graph(atoms: Sequence[Atom], contexts: Sequence[Context], version: Version) -> GraphPlan:
    """Deduplicate and list the NLI pairs for FR1, FR2 or FR3.

    FR1 relates each atom to the contexts listed in its ``contexts`` (all contexts when the
    atom lists none) and keeps duplicate contexts. FR2 deduplicates contexts by exact text and
    relates every atom to every context. FR3 adds both directions of every context pair.
    Atoms are deduplicated by exact text in every version.
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
    )


# --------------------------------------------------------------------------------------------
# Building: relations -> factors


class FactorSource(NamedTuple):
    """The relation behind one factor of the graph (after deduplication and reconciliation)."""

    source: str
    target: str
    relation: RelationType
    probability: float


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
    #: relations the version does not use, by reason (unknown_id, self_loop, atom_premise,
    #: not_in_version, duplicate, contradictory_duplicate); only given relations can have them
    ignored_relations: dict[str, int] = field(default_factory=dict)
    #: with coherence: how many of the graph's factors (the last ones) join two atoms
    atom_factors: int = 0
    #: with coherence: ordered atom pairs of the plan with no judgement at all
    atom_pairs_missing: int = 0
    #: with ``contradictions same-attribute``: atom–context contradictions kept as factors, and
    #: those turned neutral because the context speaks about another attribute (``None``: rule off)
    contradictions_same_attribute: int | None = None
    contradictions_other_attribute: int | None = None

    def contradiction_counters(self) -> dict[str, int]:
        """``contradictions_same_attribute`` (atom–context contradictions kept as factors) and
        ``contradictions_other_attribute`` (made neutral: the context speaks about another
        attribute) with ``contradictions same-attribute``; nothing with ``any``."""
        if self.contradictions_same_attribute is None or self.contradictions_other_attribute is None:
            return {}
        return {
            "contradictions_same_attribute": self.contradictions_same_attribute,
            "contradictions_other_attribute": self.contradictions_other_attribute,
        }

    @property
    def factor_relations(self) -> tuple[FactorSource, ...]:
        """The relation behind each factor, aligned with the graph's factors."""
        names = self.graph.variables
        return tuple(
            FactorSource(names[s], names[t], RELATION_NAMES[int(code)], float(p))
            for s, t, code, p in zip(
                self.graph.source, self.graph.target, self.graph.relations, self.factor_probabilities
            )
        )


_NEUTRAL_CODE = 3
_CODES = {**RELATION_CODES, RelationType.NEUTRAL: _NEUTRAL_CODE}


def build_graph(plan: GraphPlan, relations: Iterable[Relation], options: GraphOptions | None = None) -> BuiltGraph:
    """Turn judged relations into the factor graph of ``plan.version``.

    Only entailment, contradiction and equivalence become factors; neutral and failed
    relations (and, with ``options.min_relation_probability``, weak ones) are dropped, so an
    atom with no factor keeps its prior (0.5). Relations on ids
    that deduplication dropped are mapped onto the kept id; when a pair is judged twice the
    first judgement counts. Context pairs (FR3) are reconciled as
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
    if plan.atom_pairs:
        relations = list(relations)  # read twice: here and for the atom-atom factors
    if options.version != plan.version:
        raise ValueError(f"plan is FR{plan.version} but options ask for FR{options.version}")
    atom_ids = tuple(a.id for a in plan.atoms)
    context_ids = tuple(c.id for c in plan.contexts)
    variables = atom_ids + context_ids
    n_atoms, v = len(atom_ids), len(variables)
    given = _RelationArrays.of(plan, relations)
    src, tgt, code, prob, failed = given.src, given.tgt, given.code, given.prob, given.failed
    keep = given.planned & given.first
    ignored = given.ignored()
    src, tgt, code, prob, failed = src[keep], tgt[keep], code[keep], prob[keep], failed[keep]
    missing = len(plan.pairs) - int(keep.sum())
    n_failed = int(failed.sum())
    if options.min_relation_probability > 0:
        code = np.where(prob <= options.min_relation_probability, _NEUTRAL_CODE, code).astype(np.int8)

    on_atom = tgt < n_atoms
    kept_contradictions = other_attribute = None
    if options.contradictions == "same-attribute":
        code, kept_contradictions, other_attribute = _same_attribute_contradictions(
            plan, src, tgt, code, on_atom & ~failed
        )
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
        ignored_relations=ignored,
        contradictions_same_attribute=kept_contradictions,
        contradictions_other_attribute=other_attribute,
    )
    if plan.atom_pairs:
        from .coherence import add_atom_factors  # coherence builds on this module

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

    @classmethod
    def of(cls, plan: GraphPlan, relations: Iterable[Relation]) -> "_RelationArrays":
        variables = tuple(a.id for a in plan.atoms) + tuple(c.id for c in plan.contexts)
        n_atoms, v = len(plan.atoms), len(variables)
        index = {name: i for i, name in enumerate(variables)}
        for dropped, kept in (plan.atom_duplicates | plan.context_duplicates).items():
            index.setdefault(dropped, index.get(kept, -1))
        # One pass in Python to turn relations into arrays; everything after is numpy.
        rows = [
            (index.get(r.source, -1), index.get(r.target, -1), _CODES[r.relation], r.probability, r.failed)
            for r in relations
        ]
        table = np.array(rows, dtype=float).reshape(-1, 5)
        src, tgt = table[:, 0].astype(np.int64), table[:, 1].astype(np.int64)
        code, prob, failed = table[:, 2].astype(np.int8), table[:, 3], table[:, 4].astype(bool)
        planned = _planned_mask(plan, index, src, tgt, n_atoms)
        first = np.zeros(len(rows), dtype=bool)
        _, first_index, inverse = np.unique(
            np.where(planned, src * v + tgt, -1 - np.arange(len(rows))), return_index=True, return_inverse=True
        )
        first[first_index] = True
        return cls(src, tgt, code, prob, failed, planned, first, first_index[inverse], n_atoms)

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


def _same_attribute_contradictions(
    plan: GraphPlan, src: np.ndarray, tgt: np.ndarray, code: np.ndarray, usable: np.ndarray
) -> tuple[np.ndarray, int, int]:
    """``contradictions same-attribute``: the relation codes with every usable atom–context
    contradiction whose context does not speak about the atom's attribute
    (:func:`fact_reasoner.frames.same_attribute`) made neutral, and how many were kept and made
    neutral."""
    n_atoms = len(plan.atoms)
    contradiction = usable & (code == RELATION_CODES[RelationType.CONTRADICTION])
    rows = np.flatnonzero(contradiction)
    other = [
        i
        for i in rows.tolist()
        if same_attribute(plan.atoms[int(tgt[i])].text, plan.contexts[int(src[i]) - n_atoms].text) == "other attribute"
    ]
    if other:
        code = code.copy()
        code[other] = _NEUTRAL_CODE
    return code, len(rows) - len(other), len(other)


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
