"""Random FR1/FR2/FR3 inputs for inference tests and the benchmark.

Graphs are made the way the product makes them: atoms, contexts and NLI ``Relation``s go
through :func:`fact_reasoner.graph.build.plan_graph` and :func:`fact_reasoner.graph.build.build_graph`, so
deduplication, FR3 two-way reconciliation (equivalence included), clamping and both table
families are exercised. Every relation is a factor (``contradictions any``,
``min_relation_probability 0``): the texts are placeholders ("atom 3") that the same-attribute
rule would read as other attributes, and the graphs are for the engines, weak relations too.

Relation labels come from a hidden truth assignment: a relation agrees with it (entailment
between two true statements, contradiction when exactly the target is false, …) with
probability ``agreement``. ``agreement`` near 1 gives graphs whose relations agree with each
other; 0.5 gives random labels, i.e. many contradictory (frustrated) cycles. ``camps`` makes
the hard case for loopy BP: two balanced camps of contexts, one entailing every atom and the
other contradicting them, contradicting each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fact_reasoner.graph.build import build_graph, plan_graph
from fact_reasoner.graph.factor_graph import FactorGraph
from fact_reasoner.schema import Atom, Context, Relation
from fact_reasoner.settings.graph_options import GraphOptions, Version


@dataclass(frozen=True)
class RandomInput:
    atoms: list[Atom]
    contexts: list[Context]
    relations: list[Relation]
    version: Version


def random_input(
    n_atoms: int,
    n_contexts: int,
    version: Version,
    rng: np.random.Generator,
    *,
    agreement: float = 0.85,
    neutral: float = 0.0,
    p_low: float = 0.5,
    p_high: float = 1.0,
    extreme: float = 0.0,
    contexts_per_atom: int = 3,
    camps: bool = False,
) -> RandomInput:
    """Atoms, contexts and relations for FR``version``.

    ``neutral``: chance a relation is neutral (dropped by the builder); ``extreme``: chance a
    probability is exactly 0 or 1 (clamped by the builder); ``p`` is otherwise uniform in
    ``[p_low, p_high)``. FR1 atoms list ``contexts_per_atom`` random contexts each.
    """
    atoms = []
    for i in range(n_atoms):
        ctx = None
        if version == 1:
            chosen = rng.choice(n_contexts, size=min(contexts_per_atom, n_contexts), replace=False)
            ctx = [f"c{j}" for j in chosen]
        atoms.append(Atom(id=f"a{i}", text=f"atom {i}", contexts=ctx))
    contexts = [Context(id=f"c{j}", text=f"context {j}") for j in range(n_contexts)]
    if camps:
        camp = np.arange(n_contexts) % 2 == 0  # camp A supports the atoms, camp B denies them
        truth = {f"c{j}": bool(camp[j]) for j in range(n_contexts)}
        truth |= {f"a{i}": True for i in range(n_atoms)}
    else:
        truth = {f"a{i}": bool(rng.random() < 0.6) for i in range(n_atoms)}
        truth |= {f"c{j}": bool(rng.random() < 0.8) for j in range(n_contexts)}
    plan = plan_graph(atoms, contexts, version)

    def probability() -> float:
        if extreme and rng.random() < extreme:
            return float(rng.integers(0, 2))
        return float(rng.uniform(p_low, p_high))

    relations = []
    for premise, hypothesis in plan.pairs:
        if neutral and rng.random() < neutral:
            relations.append(Relation(source=premise, target=hypothesis, relation="neutral", probability=0.9))
            continue
        if camps:
            # camp A: true premise; camp B: premise that is "true" in its own world where the
            # atoms are false, so it contradicts atoms and camp-A contexts and entails camp B.
            same_side = truth[premise] == (truth[hypothesis] if hypothesis.startswith("c") else True)
            label = "entailment" if same_side else "contradiction"
            if rng.random() > agreement:
                label = "contradiction" if label == "entailment" else "entailment"
        else:
            consistent = "entailment" if truth[hypothesis] else "contradiction"
            if rng.random() < agreement:
                label = consistent
            else:
                label = "contradiction" if consistent == "entailment" else "entailment"
        relations.append(Relation(source=premise, target=hypothesis, relation=label, probability=probability()))
    return RandomInput(atoms, contexts, relations, version)


def build(data: RandomInput, *, use_priors: bool = False, context_prior: float = 0.9) -> FactorGraph:
    """The factor graph of ``data`` through the product's graph builder (``use_priors``: the
    ``priors`` tables, else the paper's; every relation a factor)."""
    plan = plan_graph(data.atoms, data.contexts, data.version)
    options = GraphOptions(
        version=data.version,
        factor_tables="priors" if use_priors else "paper",
        context_prior=context_prior,
        contradictions="any",
        min_relation_probability=0.0,
    )
    return build_graph(plan, data.relations, options).graph


def random_graph(
    n_atoms: int,
    n_contexts: int,
    version: Version,
    rng: np.random.Generator,
    *,
    use_priors: bool = False,
    context_prior: float = 0.9,
    **kwargs,
) -> FactorGraph:
    """:func:`random_input` followed by :func:`build`."""
    return build(
        random_input(n_atoms, n_contexts, version, rng, **kwargs),
        use_priors=use_priors,
        context_prior=context_prior,
    )


def paper_example_1() -> FactorGraph:
    """Paper Example 1: c1 entails a1 (0.8), c2 contradicts a1 (0.9), context prior 0.99, the
    paper's tables (``factor_tables paper``, ``contradictions any``).

    P(a1 = true) = 0.3179 (the paper prints 0.32).
    """
    atoms = [Atom(id="a1", text="the atom")]
    contexts = [Context(id="c1", text="first"), Context(id="c2", text="second")]
    relations = [
        Relation(source="c1", target="a1", relation="entailment", probability=0.8),
        Relation(source="c2", target="a1", relation="contradiction", probability=0.9),
    ]
    plan = plan_graph(atoms, contexts, 2)
    options = GraphOptions(
        version=2, context_prior=0.99, factor_tables="paper", contradictions="any", min_relation_probability=0.0
    )
    return build_graph(plan, relations, options).graph
