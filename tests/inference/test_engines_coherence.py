"""Every engine on graphs with atom–atom factors (``--coherence``) against brute force.

With atom–atom factors the atoms are no longer independent given the contexts, so the
bipartite structure the engines used to find (atoms on one side) is gone. Exact paths must
still match full enumeration to 1e-9; the native engine must say ``exact: false`` when the
cover outgrows ``max_exact_cover`` and its approximation is then checked against exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from fact_reasoner.graph.build import build_graph, plan_graph
from fact_reasoner.graph.coherence_pairs import plan_atom_pairs
from fact_reasoner.graph.factor_graph import FactorGraph
from fact_reasoner.inference import InferenceError, brute_force_marginals, make_engine
from fact_reasoner.inference.native import NativeEngine, vertex_cover
from fact_reasoner.inference.native.ising import ising_model
from fact_reasoner.schema import Relation
from fact_reasoner.settings.graph_options import GraphOptions
from fact_reasoner.synthetic import random_input


def coherence_graph(
    n_atoms: int, n_contexts: int, version, rng: np.random.Generator, *, atom_share: float = 0.5, **kwargs
) -> FactorGraph:
    """A builder-made FR graph plus atom–atom judgements on a random share of the atom pairs
    (contradictions, entailments, neutrals, probabilities anywhere in [0, 1])."""
    data = random_input(n_atoms, n_contexts, version, rng, **kwargs)
    plan = plan_atom_pairs(plan_graph(data.atoms, data.contexts, version), None, -1.0)
    atom_relations = [
        Relation(
            source=a,
            target=b,
            relation=str(rng.choice(["contradiction", "entailment", "neutral"], p=[0.45, 0.35, 0.2])),
            probability=float(rng.choice([rng.uniform(0, 1), 1.0, 0.0], p=[0.8, 0.1, 0.1])),
        )
        for a, b in plan.atom_pairs
        if rng.random() < atom_share
    ]
    tables = "priors" if rng.integers(2) else "paper"
    # placeholder texts and weak relations: every relation a factor (as fact_reasoner.synthetic)
    options = GraphOptions(version=version, factor_tables=tables, contradictions="any", min_relation_probability=0)
    built = build_graph(plan, list(data.relations) + atom_relations, options)
    return built.graph


def _graphs(count: int, seed: int) -> list[FactorGraph]:
    rng = np.random.default_rng(seed)
    graphs = []
    while len(graphs) < count:
        version = int(rng.integers(1, 4))
        n_atoms, n_contexts = int(rng.integers(2, 9)), int(rng.integers(1, 7))
        if n_atoms + n_contexts > 15:
            continue
        graphs.append(
            coherence_graph(n_atoms, n_contexts, version, rng, agreement=float(rng.uniform(0.4, 1.0)), neutral=0.2)
        )
    return graphs


GRAPHS = _graphs(40, seed=26)

EXACT_ENGINES = {
    "native-auto": lambda: NativeEngine(),
    "native-exact": lambda: NativeEngine(method="exact"),
    "pgmpy": lambda: make_engine("pgmpy"),
    "brute-force": lambda: make_engine("brute-force"),
}


def test_the_graphs_have_atom_atom_factors_and_odd_cycles() -> None:
    """The test set really exercises the new structure: atom–atom factors of both kinds, and
    graphs that are no longer bipartite (so the atoms are not one side of a bipartition)."""
    from fact_reasoner.inference.native import two_colouring

    with_atom_edges = 0
    not_bipartite = 0
    for graph in GRAPHS:
        atoms = np.array([name.startswith("a") for name in graph.variables])
        both_atoms = atoms[graph.source] & atoms[graph.target]
        with_atom_edges += bool(both_atoms.any())
        model = ising_model(graph)
        not_bipartite += two_colouring(model.num_variables, model.s, model.t) is None
    assert with_atom_edges >= 35 and not_bipartite >= 10


@pytest.mark.parametrize("engine_name", list(EXACT_ENGINES))
def test_exact_engines_match_brute_force_with_atom_factors(engine_name: str) -> None:
    engine = EXACT_ENGINES[engine_name]()
    worst = 0.0
    for graph in GRAPHS:
        reference = brute_force_marginals(graph)
        result = engine.infer(graph)
        assert result.exact, (engine_name, result.algorithm)
        worst = max(worst, max(abs(result.marginals[v] - reference.marginals[v]) for v in graph.variables))
    assert worst <= 1e-9, f"{engine_name}: max |ΔP| = {worst:.3g}"


def test_native_cover_touches_every_edge_with_atom_factors() -> None:
    """The cover the exact path conditions on touches every edge, atom–atom ones included
    (the greedy cover when odd cycles such as atom–atom–context triangles exist)."""
    for graph in GRAPHS[:20]:
        model = ising_model(graph)
        cover, _ = vertex_cover(model)
        assert cover is not None
        in_cover = np.zeros(model.num_variables, dtype=bool)
        in_cover[cover] = True
        assert np.all(in_cover[model.s] | in_cover[model.t])


@pytest.mark.parametrize(("method", "bound"), [("auto", 0.08), ("sampler", 0.02)])
def test_native_says_approximate_beyond_the_cover_limit(method: str, bound: float) -> None:
    """With max_exact_cover = 1 the exact path is refused: the result must say exact = False
    (unless a component is a tree, where BP is exact). Measured max |ΔP| against brute force on
    these 12 graphs (seed 5): ``auto`` (loopy BP here, frustration 0.08–0.29 < 0.3) 0.062;
    the tempered sampler 0.014. Atom–atom factors make loopy BP noticeably worse than on FR
    graphs without them; ``--engine-option method=sampler`` is the better approximation."""
    rng = np.random.default_rng(5)
    engine = NativeEngine(max_exact_cover=1, method=method)
    flagged = 0
    worst = 0.0
    for _ in range(12):
        graph = coherence_graph(8, 5, 2, rng, agreement=0.9, atom_share=0.3)
        reference = brute_force_marginals(graph)
        result = engine.infer(graph)
        trees_only = all(c["algorithm"] == "belief-propagation-tree" for c in result.details["components"])
        if not trees_only:
            assert result.exact is False
            flagged += 1
        worst = max(worst, max(abs(result.marginals[v] - reference.marginals[v]) for v in graph.variables))
    assert flagged >= 10
    assert worst <= bound, worst


def test_native_exact_refuses_a_cover_above_its_limit() -> None:
    rng = np.random.default_rng(5)
    with pytest.raises(InferenceError, match="vertex cover"):
        NativeEngine(method="exact", max_exact_cover=1).infer(coherence_graph(8, 5, 2, rng, atom_share=0.5))


def test_loopy_bp_is_exact_on_a_tree_with_an_atom_atom_edge() -> None:
    """a0 — a1 (contradiction) and c0 — a0 (entailment): a path, so BP is exact and says so."""
    graph = FactorGraph.from_factors(
        {"a0": 0.5, "a1": 0.5, "c0": 0.9},
        [("c0", "a0", np.array([[0.8, 0.8], [0.2, 0.8]])), ("a0", "a1", np.array([[1, 1], [1, 0.1]]))],
    )
    result = NativeEngine(method="lbp").infer(graph)
    reference = brute_force_marginals(graph)
    assert result.exact
    for v in graph.variables:
        assert result.marginals[v] == pytest.approx(reference.marginals[v], abs=1e-9)


def test_merlin_bridge_reads_the_atom_factors_through_uai(tmp_path) -> None:
    """The UAI file carries atom–atom factors like any other; the reference solver (merlin's
    command line, exact answers) returns brute force's marginals through the bridge."""
    from merlin_bridge.engine import MerlinEngine
    from merlin_bridge.reference_solver import write_wrapper

    merlin = write_wrapper(tmp_path)
    for graph in GRAPHS[:3]:
        result = MerlinEngine(str(merlin)).infer(graph)
        reference = brute_force_marginals(graph)
        for v in graph.variables:
            assert result.marginals[v] == pytest.approx(reference.marginals[v], abs=1e-5)
