"""Inference engines against brute-force enumeration (the inference part of the design).

Exact paths must match full enumeration to 1e-9 on many random FR1/FR2/FR3 graphs built by the
product's graph builder (both table families, equivalence factors, probabilities near and at
0 and 1). Approximate paths are checked where their claims hold: loopy BP is exact on a
forest, and the default's approximation stays within 0.05 of exact on a dense contradictory
graph where plain loopy BP is far off.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from fact_reasoner.graph.factor_graph import FactorGraph
from fact_reasoner.inference import InferenceError, brute_force_marginals, make_engine
from fact_reasoner.inference.native import (
    IsingModel,
    NativeEngine,
    bethe_log_partition,
    chromatic_tempered_gibbs,
    collapsed_tempered_gibbs,
    exact_by_cover,
    frustration,
    frustration_gauge,
    ising_model,
    loopy_bp,
    vertex_cover,
)
from fact_reasoner.io import dumps_line
from fact_reasoner.synthetic import paper_example_1, random_graph


def _max_error(result, reference) -> float:
    return max(abs(result.marginals[v] - reference.marginals[v]) for v in reference.marginals)


def _small_graphs(count: int, seed: int) -> list[FactorGraph]:
    """Random builder-made graphs of at most 16 variables, all shapes and table families."""
    rng = np.random.default_rng(seed)
    graphs = []
    while len(graphs) < count:
        version = int(rng.integers(1, 4))
        n_atoms, n_contexts = int(rng.integers(1, 8)), int(rng.integers(1, 8))
        if n_atoms + n_contexts > 16:
            continue
        near_edges = rng.random() < 0.3
        graphs.append(
            random_graph(
                n_atoms,
                n_contexts,
                version,
                rng,
                use_priors=bool(rng.integers(2)),
                context_prior=float(rng.choice([0.9, 0.99, 0.6])),
                agreement=float(rng.uniform(0.4, 1.0)),
                neutral=float(rng.uniform(0.0, 0.5)),
                extreme=0.1,
                # probabilities close to 0 and 1, or anywhere
                p_low=0.97 if near_edges else 0.01,
                p_high=1.0,
            )
        )
    return graphs


SMALL_GRAPHS = _small_graphs(70, seed=20240531)

EXACT_ENGINES = {
    "native-auto": lambda: NativeEngine(),
    "native-exact": lambda: NativeEngine(method="exact"),
    "native-exact-tiny-chunks": lambda: NativeEngine(method="exact", chunk_elements=8),
    "pgmpy": lambda: make_engine("pgmpy"),
    "brute-force": lambda: make_engine("brute-force"),
}


def test_random_graphs_cover_all_shapes() -> None:
    """The random set really contains equivalence factors, both families and clamped extremes."""
    codes = np.concatenate([g.relations for g in SMALL_GRAPHS])
    assert {0, 1, 2} <= set(codes.tolist())
    probabilities = np.concatenate([g.probabilities for g in SMALL_GRAPHS])
    assert probabilities.min() == pytest.approx(1e-6) and probabilities.max() == pytest.approx(1 - 1e-6)
    assert any(np.any(g.tables[:, 0, 0] != g.tables[:, 0, 1]) for g in SMALL_GRAPHS if g.num_factors)


@pytest.mark.parametrize("engine_name", list(EXACT_ENGINES))
def test_exact_engines_match_brute_force(engine_name: str) -> None:
    engine = EXACT_ENGINES[engine_name]()
    worst = 0.0
    for graph in SMALL_GRAPHS:
        reference = brute_force_marginals(graph)
        result = engine.infer(graph)
        assert result.exact, (engine_name, result.algorithm)
        assert set(result.marginals) == set(graph.variables)
        worst = max(worst, _max_error(result, reference))
        if result.log_partition is not None:
            assert result.log_partition == pytest.approx(reference.log_partition, abs=1e-9)
    assert worst <= 1e-9, f"{engine_name}: max |ΔP| = {worst:.3g}"


def test_exact_cover_enumeration_with_many_chunks() -> None:
    """Chunk boundaries, both exponential paths and both cover kinds give the same result."""
    rng = np.random.default_rng(7)
    for version in (2, 3):
        graph = random_graph(9, 6, version, rng, agreement=0.6, use_priors=version == 3)
        reference = brute_force_marginals(graph)
        model = ising_model(graph)
        cover, _ = vertex_cover(model)
        for chunk in (4, 64, 1 << 18):
            for factorise in (True, False):
                p, log_z = exact_by_cover(model, cover, chunk, factorise)
                assert np.abs(p - np.array([reference.marginals[v] for v in graph.variables])).max() <= 1e-9
                assert log_z == pytest.approx(reference.log_partition, abs=1e-9)


def test_bipartite_cover_is_minimum() -> None:
    """König's cover has the size of the smallest cover found by trying every subset."""
    rng = np.random.default_rng(3)
    for _ in range(15):
        graph = random_graph(int(rng.integers(2, 6)), int(rng.integers(2, 6)), 2, rng, neutral=0.5)
        model = ising_model(graph)
        cover, how = vertex_cover(model)
        if len(model.s) == 0:
            continue
        assert how.startswith("minimum")
        v = model.num_variables
        smallest = next(
            size
            for size in range(v + 1)
            for subset in itertools.combinations(range(v), size)
            if all(a in subset or b in subset for a, b in zip(model.s, model.t))
        )
        assert len(cover) == smallest
        in_cover = np.isin(np.arange(v), cover)
        assert np.all(in_cover[model.s] | in_cover[model.t])


def test_fr3_cover_uses_contexts_not_atoms() -> None:
    """In FR3 the atoms are an independent set, so the cover never needs more than the contexts."""
    rng = np.random.default_rng(11)
    graph = random_graph(12, 5, 3, rng)
    model = ising_model(graph)
    cover, _ = vertex_cover(model)
    assert len(cover) <= 5
    for seed in range(30):
        rng = np.random.default_rng(seed)
        n_atoms, n_contexts = int(rng.integers(3, 15)), int(rng.integers(2, 7))
        graph = random_graph(n_atoms, n_contexts, 3, rng)
        model = ising_model(graph)
        assert graph.variables[:n_atoms] == tuple(f"a{i}" for i in range(n_atoms))  # atoms first
        is_atom = np.arange(model.num_variables) < n_atoms
        assert not np.any(is_atom[model.s] & is_atom[model.t])  # no edge joins two atoms
        cover, _ = vertex_cover(model)
        in_cover = np.isin(np.arange(model.num_variables), cover)
        assert np.all(in_cover[model.s] | in_cover[model.t])  # a vertex cover
        assert not np.any(is_atom[cover]), f"seed {seed}: atoms in the cover"  # contexts only
        assert len(cover) <= n_contexts


def test_paper_example_1_through_every_engine() -> None:
    graph = paper_example_1()
    engines = (
        [make_engine("brute-force"), make_engine("pgmpy")]
        + [NativeEngine(method=m) for m in ("auto", "exact", "lbp")]
        + [NativeEngine(method="sampler", sweeps=4000)]
    )
    for engine in engines:
        result = engine.infer(graph)
        assert result.marginals["a1"] == pytest.approx(0.3179, abs=1e-3), engine


def test_loopy_bp_is_exact_on_a_forest() -> None:
    rng = np.random.default_rng(5)
    names = [f"v{i}" for i in range(14)]
    priors = {name: float(rng.uniform(0.05, 0.95)) for name in names}
    factors = []
    for i in range(1, 14):
        if i in (5, 10):
            continue  # three trees
        parent = int(rng.integers(0, i)) if i < 5 else int(rng.integers(5, i)) if i < 10 else int(rng.integers(10, i))
        factors.append((names[parent], names[i], rng.uniform(1e-3, 1.0, size=(2, 2))))
    graph = FactorGraph.from_factors(priors, factors)
    reference = brute_force_marginals(graph)
    result = NativeEngine(method="lbp").infer(graph)
    assert result.exact and result.converged
    assert _max_error(result, reference) <= 1e-9


def test_isolated_variables_keep_their_prior_exactly() -> None:
    priors = {"a0": 0.5, "a1": 0.5, "c0": 0.9, "c1": 0.9, "a2": 0.5, "c2": 0.99}
    table = np.array([[0.8, 0.8], [0.2, 0.8]])
    graph = FactorGraph.from_factors(priors, [("c0", "a0", table), ("c1", "a1", table)])  # 2 components + 2 isolated
    for engine in (NativeEngine(), NativeEngine(method="lbp"), NativeEngine(method="sampler"), make_engine("pgmpy")):
        result = engine.infer(graph)
        assert result.marginals["a2"] == 0.5
        assert result.marginals["c2"] == 0.99
    empty = FactorGraph.from_factors({"a0": 0.5}, [])
    assert NativeEngine().infer(empty).marginals == {"a0": 0.5}
    assert make_engine("pgmpy").infer(empty).marginals == {"a0": 0.5}


def test_clamped_extreme_probabilities_give_finite_results() -> None:
    rng = np.random.default_rng(13)
    for version in (1, 2, 3):
        graph = random_graph(5, 4, version, rng, extreme=1.0, agreement=0.5)  # every p is 0 or 1
        reference = brute_force_marginals(graph)
        for engine in (
            NativeEngine(),
            NativeEngine(method="lbp"),
            NativeEngine(method="sampler"),
            make_engine("pgmpy"),
        ):
            result = engine.infer(graph)
            values = np.array(list(result.marginals.values()))
            assert np.all(np.isfinite(values)) and np.all((values >= 0) & (values <= 1))
            if result.exact:
                assert _max_error(result, reference) <= 1e-9
                assert math.isfinite(result.log_partition)


def _dense_contradictory_graph(seed: int = 2) -> FactorGraph:
    # two camps of contexts, one entailing every atom, the other contradicting them, with a
    # little label noise: a bimodal posterior; plain loopy BP settles in the wrong mode
    return random_graph(
        14, 16, 3, np.random.default_rng(seed), camps=True, agreement=0.9, use_priors=True, context_prior=0.9
    )


@pytest.mark.parametrize("seed", [0, 2])
def test_default_approximation_on_dense_contradictory_graph(seed: int) -> None:
    graph = _dense_contradictory_graph(seed)
    exact = NativeEngine(method="exact").infer(graph)
    assert exact.details["components"][0]["cover"] <= 16
    # max_exact_cover=0 forces the approximate path the default takes on larger covers
    approximate = NativeEngine(max_exact_cover=0).infer(graph)
    assert not approximate.exact
    assert _max_error(approximate, exact) <= 0.05
    plain_bp = NativeEngine(method="lbp").infer(graph)
    assert _max_error(plain_bp, exact) > 0.5  # the case is hard for plain loopy BP
    sampler = NativeEngine(method="sampler").infer(graph)
    assert _max_error(sampler, exact) <= 0.05


def test_sampler_on_frustrated_random_labels() -> None:
    """Random labels with priors: loopy BP does not converge; the default samples instead."""
    graph = random_graph(16, 28, 2, np.random.default_rng(12), agreement=0.5, use_priors=True)
    exact = NativeEngine(method="exact").infer(graph)
    approximate = NativeEngine(max_exact_cover=0).infer(graph)
    assert approximate.algorithm == "tempered-gibbs", approximate.details
    assert _max_error(approximate, exact) <= 0.05
    assert _max_error(NativeEngine(method="lbp").infer(graph), exact) > 0.3


def test_default_keeps_loopy_bp_on_an_agreeing_graph() -> None:
    graph = random_graph(20, 24, 2, np.random.default_rng(4), agreement=0.95)
    exact = NativeEngine(method="exact", max_exact_cover=24).infer(graph)
    approximate = NativeEngine(max_exact_cover=0).infer(graph)
    assert approximate.algorithm == "loopy-bp", approximate.details
    assert approximate.converged
    assert _max_error(approximate, exact) <= 0.02


def test_loopy_bp_convergence_does_not_depend_on_rounding() -> None:
    """Whether a start converges must not hinge on the last bits of the arithmetic.

    On the graph above, loopy BP from the flip of the zero-start state runs undamped until its
    message change first grows, then damped; where that switch falls is chaotic, and from some
    switch points the damped iteration is caught in a limit cycle. Perturbing h by a few ulps
    (as another numpy build or CPU does) made about a quarter of such runs fail, which sent the
    default engine to the sampler on some machines. A start that fails is now run again damped
    from its first iteration, a stable path, so every one of these runs converges.
    """
    graph = random_graph(20, 24, 2, np.random.default_rng(4), agreement=0.95)
    model = ising_model(graph)
    settings = dict(damping=0.5, tolerance=1e-7, max_iterations=300)  # the engine's defaults
    settled = (loopy_bp(model, **settings).log_odds[0] > 0).astype(float)
    rng = np.random.default_rng(0)
    for _ in range(12):
        h = model.h * (1.0 + 1e-15 * rng.standard_normal(len(model.h)))
        perturbed = IsingModel(h, model.const, model.s, model.t, model.J)
        result = loopy_bp(perturbed, starts=(1.0 - settled)[None, :], **settings)
        assert result.converged.all(), result


def test_exact_method_refuses_large_covers() -> None:
    graph = random_graph(8, 10, 2, np.random.default_rng(1))
    with pytest.raises(InferenceError, match="max_exact_cover"):
        NativeEngine(method="exact", max_exact_cover=3).infer(graph)


def test_pgmpy_refuses_wide_components() -> None:
    graph = random_graph(10, 20, 3, np.random.default_rng(1))
    with pytest.raises(InferenceError, match="refuses"):
        make_engine("pgmpy").infer(graph)


def test_bp_multistart_reports_bethe_and_starts() -> None:
    graph = _dense_contradictory_graph()
    model = ising_model(graph)
    v = model.num_variables
    result = loopy_bp(model, starts=np.vstack([np.full(v, np.nan), np.ones(v), np.zeros(v)]))
    assert result.log_odds.shape == (3, v) and result.bethe.shape == (3,)
    assert np.all(np.isfinite(result.bethe))


def test_engine_options_are_validated() -> None:
    with pytest.raises(ValueError):
        NativeEngine(method="magic")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        NativeEngine(damping=1.0)
    with pytest.raises(ValueError, match="unknown option no_such_option; it accepts method, "):
        make_engine("native", no_such_option=1)
    with pytest.raises(ValueError, match="option sweeps must be an integer, got 2.5"):
        make_engine("native", sweeps=2.5)
    make_engine("native", damping=0)  # an int where a float is expected is fine


def test_dense_and_sparse_loopy_bp_agree() -> None:
    """Both message layouts, damped or adaptive, reach the same fixed point and Bethe value."""
    graph = random_graph(20, 30, 3, np.random.default_rng(8), agreement=0.85)
    model = ising_model(graph)
    v = model.num_variables
    starts = np.vstack([np.full(v, np.nan), np.ones(v), np.zeros(v)])
    runs = [
        loopy_bp(model, starts=starts, dense=dense, adaptive=adaptive, tolerance=1e-10, max_iterations=2000)
        for dense in (True, False)
        for adaptive in (True, False)
    ]
    assert {run.layout for run in runs} == {"dense", "sparse"}
    for run in runs:
        assert run.converged.all()
        assert np.abs(run.log_odds - runs[0].log_odds).max() <= 1e-6
        assert np.abs(run.bethe - runs[0].bethe).max() <= 1e-6


def test_bethe_log_partition_is_exact_on_a_tree() -> None:
    """On a tree the Bethe free energy at the BP fixed point is −log Z (closed form check)."""
    rng = np.random.default_rng(21)
    names = [f"v{i}" for i in range(9)]
    priors = {name: float(rng.uniform(0.1, 0.9)) for name in names}
    factors = [(names[int(rng.integers(0, i))], names[i], rng.uniform(0.05, 1.0, size=(2, 2))) for i in range(1, 9)]
    graph = FactorGraph.from_factors(priors, factors)
    model = ising_model(graph)
    result = loopy_bp(model, damping=0.0, tolerance=1e-12, max_iterations=100)
    assert result.converged.all()
    assert result.bethe[0] == pytest.approx(brute_force_marginals(graph).log_partition, abs=1e-9)
    # the closed form also holds away from a fixed point: it is a function of any messages
    to_t, to_s = rng.normal(size=(1, len(model.s))), rng.normal(size=(1, len(model.s)))
    assert np.isfinite(bethe_log_partition(model, rng.normal(size=(1, model.num_variables)), to_t, to_s)).all()


def test_frustration_is_zero_for_consistent_relations_and_finds_the_truth() -> None:
    """Relations that all agree with one truth assignment: no frustration; the gauge is it.

    (Two camps without label noise: every relation agrees with "atoms and camp A true, camp B
    false".)
    """
    rng = np.random.default_rng(9)
    graph = random_graph(8, 10, 3, rng, camps=True, agreement=1.0, use_priors=True)
    model = ising_model(graph)
    share, gauge = frustration_gauge(model)
    assert share == pytest.approx(0.0, abs=1e-9)
    assert np.all(gauge[model.s] * gauge[model.t] * model.J >= 0)
    names = graph.variables
    camp_a = [i for i, n in enumerate(names) if n.startswith("a") or (n.startswith("c") and int(n[1:]) % 2 == 0)]
    truth = -np.ones(len(names))
    truth[camp_a] = 1.0
    assert np.array_equal(gauge, truth) or np.array_equal(gauge, -truth)
    assert frustration(ising_model(random_graph(8, 10, 3, rng, agreement=0.5))) > 0.2
    # the dense (Prim) and sparse (scipy spanning tree) constructions agree
    for version in (1, 2, 3):
        model = ising_model(random_graph(12, 15, version, rng, agreement=0.6, neutral=0.3))
        dense_share, dense_gauge = frustration_gauge(model, dense=True)
        sparse_share, sparse_gauge = frustration_gauge(model, dense=False)
        assert dense_share == pytest.approx(sparse_share, abs=1e-12)
        assert np.array_equal(dense_gauge, sparse_gauge)


def _camps_graph_where_bp_picks_the_wrong_mode() -> FactorGraph:
    # FR3 30 atoms x 18 contexts, two camps, priors: loopy BP from zero messages settles in the
    # mode that holds ~3% of the mass (error 0.96); a too-cold tempering ladder stays there too
    return random_graph(30, 18, 3, np.random.default_rng(4), camps=True, agreement=0.9, use_priors=True)


def test_default_recovers_the_heavy_mode_of_a_bimodal_graph() -> None:
    graph = _camps_graph_where_bp_picks_the_wrong_mode()
    exact = NativeEngine(method="exact").infer(graph)
    assert _max_error(NativeEngine(method="lbp").infer(graph), exact) > 0.9
    approximate = NativeEngine(max_exact_cover=0).infer(graph)
    component = approximate.details["components"][0]
    assert approximate.algorithm == "tempered-gibbs", component
    assert "rival" in component["sampler_reason"]
    assert _max_error(approximate, exact) <= 0.05
    assert approximate.converged and component["replica_std_error"] <= 0.01


def test_collapsed_sampler_is_exact_with_a_one_variable_cover() -> None:
    """A one-variable cover: its Rao-Blackwellised conditional is its exact marginal.

    (Paper Example 1: the atom is the cover; the contexts are summed out, so P(atom) is exact
    at every sweep, and the contexts' estimates average their exact conditionals.)
    """
    graph = paper_example_1()
    model = ising_model(graph)
    cover, _ = vertex_cover(model)
    assert len(cover) == 1
    result = collapsed_tempered_gibbs(model, cover, np.random.default_rng(0), min_sweeps=50, dtype=np.float64)
    exact, _ = exact_by_cover(model, cover)
    assert abs(result.p[cover[0]] - exact[cover[0]]) <= 1e-12
    single = collapsed_tempered_gibbs(model, cover, np.random.default_rng(0), min_sweeps=50)  # float32 chains
    assert abs(single.p[cover[0]] - exact[cover[0]]) <= 1e-6
    assert np.abs(result.p - exact).max() <= 0.01
    assert result.stopped_by == "std-error" and result.spread <= 0.005


def test_sampler_stops_on_its_time_budget_and_says_so() -> None:
    graph = random_graph(40, 60, 3, np.random.default_rng(3), agreement=0.5, use_priors=True)
    engine = NativeEngine(method="sampler", time_budget=0.3, min_sweeps=10**6, sweeps=10**6)
    result = engine.infer(graph)
    component = result.details["components"][0]
    assert component["stopped_by"] == "time budget"
    assert 0 < component["sweeps"] < 10**6  # stopped by the clock, not by its sweep limits
    assert result.iterations == component["sweeps"]
    assert result.converged == (component["replica_std_error"] <= 0.01)
    assert not result.exact


def test_default_on_a_large_agreeing_fr3_graph_uses_checked_loopy_bp() -> None:
    """FR3 60 x 120 (about 14k factors): dense loopy BP, checked from the extra starts."""
    graph = random_graph(60, 120, 3, np.random.default_rng(0), agreement=0.85)
    result = NativeEngine().infer(graph)
    component = result.details["components"][0]
    assert result.algorithm == "loopy-bp" and result.converged and not result.exact
    assert component["bp_layout"] == "dense" and component["bp_starts"] == 4
    assert component["rival_fixed_points"] == 0
    assert component["frustration"] < 0.3


def test_sampler_with_huge_couplings_keeps_exact_conditionals() -> None:
    """|J| = 50 and cavities of 70: e^{60 + 50} overflows float32, so the chains must not use it.

    One cover variable (c0) with three summed-out neighbours: its Rao-Blackwellised estimate is
    its exact marginal, σ(0.3) here, whatever the sampler does.
    """
    table = np.exp(np.array([[0.0, 70.0], [0.0, 120.0]]))  # J = 120 − 70 = 50, h_a += 70
    prior_c0 = 1.0 / (1.0 + np.exp(150.0 - 0.3))  # h_c0 = 0.3 − 150 cancels 3 × 50
    graph = FactorGraph.from_factors(
        {"c0": prior_c0, "a0": 0.5, "a1": 0.5, "a2": 0.5}, [("c0", f"a{i}", table) for i in range(3)]
    )
    exact = brute_force_marginals(graph)
    assert exact.marginals["c0"] == pytest.approx(1.0 / (1.0 + np.exp(-0.3)), abs=1e-9)
    model = ising_model(graph)
    result = collapsed_tempered_gibbs(model, np.array([0]), np.random.default_rng(0), min_sweeps=20)
    assert np.all(np.isfinite(result.p))
    assert abs(result.p[0] - exact.marginals["c0"]) <= 1e-6


def test_sampler_with_huge_couplings_stays_finite_and_accurate() -> None:
    """Tables with ratios up to e^40 (|J| up to 80, beyond float32's exp range at the clip)."""
    rng = np.random.default_rng(17)
    names = [f"c{i}" for i in range(4)] + [f"a{i}" for i in range(6)]
    priors = {name: 0.7 for name in names}
    factors = []
    for c in names[:4]:
        for a in names[4:]:
            table = np.exp(rng.uniform(-20.0, 20.0, size=(2, 2)))
            factors.append((c, a, table))
    graph = FactorGraph.from_factors(priors, factors)
    exact = brute_force_marginals(graph)
    result = NativeEngine(method="sampler").infer(graph)
    values = np.array(list(result.marginals.values()))
    assert np.all(np.isfinite(values))
    assert _max_error(result, exact) <= 0.05


def test_chromatic_fallback_sampler_matches_exact() -> None:
    """The fallback for components too large for the collapsed sampler's dense matrices."""
    graph = random_graph(10, 8, 3, np.random.default_rng(6), agreement=0.7, use_priors=True)
    model = ising_model(graph)
    exact, _ = exact_by_cover(model, vertex_cover(model)[0])
    result = chromatic_tempered_gibbs(model, np.random.default_rng(0), sweeps=1500, time_budget=20.0)
    assert np.abs(result.p - exact).max() <= 0.05
    assert result.stopped_by == "sweeps" and result.sweeps == 1600  # burn-in 100 + 1500


def test_both_samplers_report_undefined_diagnostics_alike() -> None:
    """One replica: no standard error across replicas; one temperature: no swap proposed.

    Both samplers report ``None`` for what is undefined (the collapsed one used to say inf,
    the chromatic one NaN), and the engine passes it on as null without claiming convergence.
    """
    graph = random_graph(6, 8, 3, np.random.default_rng(1), agreement=0.5, use_priors=True)
    model = ising_model(graph)
    cover, _ = vertex_cover(model)
    for replicas, temperatures in ((1, 4), (3, 1), (1, 1)):
        settings = dict(replicas=replicas, temperatures=temperatures)
        collapsed = collapsed_tempered_gibbs(model, cover, np.random.default_rng(0), max_sweeps=60, **settings)
        chromatic = chromatic_tempered_gibbs(model, np.random.default_rng(0), sweeps=60, burn_in=10, **settings)
        for result in (collapsed, chromatic):
            assert (result.spread is None) == (replicas == 1), (settings, result)
            assert (result.swap_rate is None) == (temperatures == 1), (settings, result)
            assert result.spread is None or math.isfinite(result.spread)
            assert result.swap_rate is None or 0.0 <= result.swap_rate <= 1.0
            assert np.all(np.isfinite(result.p))
    # with one replica the collapsed sampler cannot stop on the standard error: it runs on
    assert collapsed_tempered_gibbs(model, cover, np.random.default_rng(0), max_sweeps=60, replicas=1).sweeps == 60

    result = NativeEngine(method="sampler", replicas=1, sweeps=60).infer(graph)
    component = result.details["components"][0]
    assert component["replica_std_error"] is None and component["swap_rate"] is not None
    assert not result.converged
    line = dumps_line({"details": result.details})
    assert "Infinity" not in line and "NaN" not in line


def test_the_native_engine_defaults_are_the_samplers():
    import inspect

    from fact_reasoner.inference.native import NativeEngine

    engine = inspect.signature(NativeEngine).parameters
    sampler = inspect.signature(collapsed_tempered_gibbs).parameters
    assert engine["sweeps"].default == sampler["max_sweeps"].default == 4000
    for name in ("min_sweeps", "replicas", "temperatures", "beta_min", "time_budget", "target_std_error"):
        assert engine[name].default == sampler[name].default, name
