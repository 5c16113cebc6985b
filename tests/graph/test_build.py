"""Graph builder: factor tables, FR1/FR2/FR3 planning, deduplication, reconciliation, clamping."""

import math

import numpy as np
import pytest

from fact_reasoner.graph.build import build_graph, plan_graph, reconcile_context_pair
from fact_reasoner.graph.factors import (
    clamp_probability,
    contradiction_factor,
    entailment_factor,
    equivalence_factor,
    relation_tables,
)
from fact_reasoner.inference import brute_force_marginals
from fact_reasoner.schema import Atom, Context, Relation, RelationType
from fact_reasoner.settings.graph_options import GraphOptions


def rel(source, target, relation, p, **extra):
    return Relation(source=source, target=target, relation=relation, probability=p, **extra)


#: every relation a factor: these tests are about the tables and the builder, their texts ("x",
#: "first") are placeholders the same-attribute rule would read as other attributes, and their
#: probabilities go below 0.5
EVERY = {"contradictions": "any", "min_relation_probability": 0.0}
#: the paper's graph: its Table 1, every relation a factor
PAPER = {"factor_tables": "paper"} | EVERY


def test_tables_match_design_rows():
    p = 0.8
    # row-major order (X=0,Y=0), (X=0,Y=1), (X=1,Y=0), (X=1,Y=1)
    assert entailment_factor(p).ravel().tolist() == pytest.approx([p, p, 1 - p, p])
    assert contradiction_factor(p).ravel().tolist() == pytest.approx([p, p, p, 1 - p])
    assert equivalence_factor(p).ravel().tolist() == pytest.approx([p, 1 - p, 1 - p, p])
    assert entailment_factor(p, prior=0.5).ravel().tolist() == pytest.approx([0.5, 0.5, 1 - p, p])
    assert contradiction_factor(p, prior=0.9).ravel().tolist() == pytest.approx([0.1, 0.9, p, 1 - p])


def test_vectorised_tables_equal_scalar_ones():
    probs = np.array([0.7, 0.6, 0.95, 0.8])
    codes = np.array([0, 1, 2, 0])
    priors = np.array([0.5, 0.9, 0.5, 0.9])
    expected = [entailment_factor(0.7), contradiction_factor(0.6), equivalence_factor(0.95), entailment_factor(0.8)]
    assert np.allclose(relation_tables(codes, probs, None), expected)
    expected = [
        entailment_factor(0.7, 0.5),
        contradiction_factor(0.6, 0.9),
        equivalence_factor(0.95),
        entailment_factor(0.8, 0.9),
    ]
    assert np.allclose(relation_tables(codes, probs, priors), expected)


def test_paper_example_1():
    atoms = [Atom(id="a1", text="the atom")]
    contexts = [Context(id="c1", text="first"), Context(id="c2", text="second")]
    plan = plan_graph(atoms, contexts, 2)
    built = build_graph(
        plan,
        [rel("c1", "a1", "entailment", 0.8), rel("c2", "a1", "contradiction", 0.9)],
        GraphOptions(version=2, context_prior=0.99, **PAPER),
    )
    assert brute_force_marginals(built.graph).marginals["a1"] == pytest.approx(0.3179, abs=1e-3)


def test_fr1_uses_each_atoms_own_contexts_and_keeps_duplicates():
    atoms = [Atom(id="a0", text="x", contexts=["c0", "c1"]), Atom(id="a1", text="y", contexts=["c2"])]
    contexts = [Context(id="c0", text="same"), Context(id="c1", text="other"), Context(id="c2", text="same")]
    plan = plan_graph(atoms, contexts, 1)
    assert plan.pairs == (("c0", "a0"), ("c1", "a0"), ("c2", "a1"))
    assert [c.id for c in plan.contexts] == ["c0", "c1", "c2"]  # duplicate text kept in FR1


def test_fr2_deduplicates_contexts_and_relates_every_pair():
    atoms = [Atom(id="a0", text="x"), Atom(id="a1", text="y"), Atom(id="a2", text="x")]
    contexts = [Context(id="c0", text="same"), Context(id="c1", text="other"), Context(id="c2", text="same")]
    plan = plan_graph(atoms, contexts, 2)
    assert [a.id for a in plan.atoms] == ["a0", "a1"]
    assert plan.atom_duplicates == {"a2": "a0"}
    assert plan.context_duplicates == {"c2": "c0"}
    assert len(plan.pairs) == 2 * 2


def test_fr3_pair_count_is_nm_plus_m_m_minus_1():
    atoms = [Atom(id=f"a{i}", text=f"atom {i}") for i in range(4)]
    contexts = [Context(id=f"c{j}", text=f"context {j}") for j in range(5)]
    plan = plan_graph(atoms, contexts, 3)
    assert len(plan.pairs) == 4 * 5 + 5 * 4


def test_relation_on_a_merged_duplicate_applies_to_the_kept_context():
    atoms = [Atom(id="a0", text="x")]
    contexts = [Context(id="c0", text="same"), Context(id="c1", text="same")]
    plan = plan_graph(atoms, contexts, 2)
    built = build_graph(plan, [rel("c1", "a0", "entailment", 0.9)])
    assert built.graph.num_factors == 1
    assert built.factor_relations[0].source == "c0"


@pytest.mark.parametrize(
    "forward, backward, expected",
    [
        (("entailment", 0.7), ("entailment", 0.9), ("equivalence", 0.9, "c1")),
        (("entailment", 0.6), ("contradiction", 0.8), ("contradiction", 0.8, "c1")),
        (("contradiction", 0.8), ("neutral", 0.95), None),  # neutral wins on probability: dropped
        (("neutral", 0.6), ("entailment", 0.55), None),
        (("entailment", 0.7), ("neutral", 0.7), ("entailment", 0.7, "c0")),  # tie keeps forward
        (("entailment", 0.7), None, ("entailment", 0.7, "c0")),
    ],
)
def test_fr3_reconciliation(forward, backward, expected):
    f = rel("c0", "c1", *forward) if forward else None
    b = rel("c1", "c0", *backward) if backward else None
    winner = reconcile_context_pair(f, b)
    if expected is None:
        assert winner is None
    else:
        relation, probability, source = expected
        assert (winner.relation.value, winner.probability, winner.source) == (relation, probability, source)


def test_failed_relations_never_become_factors():
    atoms = [Atom(id="a0", text="x")]
    contexts = [Context(id="c0", text="c")]
    plan = plan_graph(atoms, contexts, 2)
    built = build_graph(plan, [rel("c0", "a0", "entailment", 0.99, failed=True, reason="timeout")])
    assert built.graph.num_factors == 0
    assert built.failed_pairs == 1
    assert brute_force_marginals(built.graph).marginals["a0"] == 0.5


@pytest.mark.parametrize("p", [0.0, 1.0])
@pytest.mark.parametrize("tables", ["paper", "priors"])
def test_extreme_probabilities_are_clamped(p, tables):
    atoms = [Atom(id="a0", text="x")]
    contexts = [Context(id="c0", text="c"), Context(id="c1", text="d")]
    plan = plan_graph(atoms, contexts, 3)
    relations = [
        rel("c0", "a0", "entailment", p),
        rel("c1", "a0", "contradiction", p),
        rel("c0", "c1", "contradiction", p),
    ]
    built = build_graph(plan, relations, GraphOptions(version=3, factor_tables=tables, **EVERY))
    assert built.graph.tables.min() > 0
    result = brute_force_marginals(built.graph)
    assert all(math.isfinite(v) and 0 <= v <= 1 for v in result.marginals.values())
    assert math.isfinite(result.log_partition)


def test_clamp_rejects_nan():
    with pytest.raises(ValueError):
        clamp_probability(float("nan"))
    assert clamp_probability(0.0) == 1e-6


def test_priors_and_options_validated():
    with pytest.raises(ValueError):
        GraphOptions(min_relation_probability=1.0)
    with pytest.raises(ValueError):
        GraphOptions(context_prior=1.0)
    with pytest.raises(ValueError):
        GraphOptions(version=4)


def test_priors_tables_use_the_target_prior_per_relation():
    atoms = [Atom(id="a0", text="x")]
    contexts = [Context(id="c0", text="c"), Context(id="c1", text="d")]
    plan = plan_graph(atoms, contexts, 3)
    built = build_graph(
        plan,
        [rel("c0", "a0", "entailment", 0.8), rel("c0", "c1", "entailment", 0.7)],
        GraphOptions(version=3, factor_tables="priors", context_prior=0.9),
    )
    tables = {built.factor_relations[i].target: built.graph.tables[i] for i in range(2)}
    assert tables["a0"].ravel().tolist() == pytest.approx([0.5, 0.5, 0.2, 0.8])
    assert tables["c1"].ravel().tolist() == pytest.approx([0.1, 0.9, 0.3, 0.7])


def test_pgmpy_network_has_the_same_factors():
    atoms = [Atom(id="a0", text="x")]
    contexts = [Context(id="c0", text="c")]
    built = build_graph(
        plan_graph(atoms, contexts, 2), [rel("c0", "a0", "contradiction", 0.7)], GraphOptions(version=2, **PAPER)
    )
    network = built.graph.to_pgmpy()
    assert set(network.nodes()) == {"a0", "c0"}
    pair = [f for f in network.get_factors() if len(f.scope()) == 2][0]
    assert pair.scope() == ["c0", "a0"]
    assert pair.values.ravel().tolist() == pytest.approx([0.7, 0.7, 0.7, 0.3])


def test_unknown_relation_endpoint_is_rejected_by_the_record():
    from pydantic import ValidationError

    from fact_reasoner.schema import InputRecord

    with pytest.raises(ValidationError, match="unknown id"):
        InputRecord(
            output="x",
            atoms=[Atom(id="a0", text="x")],
            contexts=[Context(id="c0", text="c")],
            relations=[rel("c9", "a0", "entailment", 0.5)],
        )
    assert RelationType("entailment") is RelationType.ENTAILMENT


def _scalar_factors(plan, relations):
    """The reference semantics, pair by pair, for checking the vectorised builder."""
    aliases = plan.atom_duplicates | plan.context_duplicates
    by_pair = {}
    for r in relations:
        by_pair.setdefault((aliases.get(r.source, r.source), aliases.get(r.target, r.target)), r)
    atoms = {a.id for a in plan.atoms}
    factors, seen = set(), set()
    for premise, hypothesis in plan.pairs:
        r = by_pair.get((premise, hypothesis))
        if hypothesis in atoms:
            if r is not None and not r.failed and r.relation != RelationType.NEUTRAL:
                factors.add((premise, hypothesis, r.relation, r.probability))
            continue
        if frozenset((premise, hypothesis)) in seen:
            continue
        seen.add(frozenset((premise, hypothesis)))
        back = by_pair.get((hypothesis, premise))
        f = r.model_copy(update={"source": premise, "target": hypothesis}) if r else None
        b = back.model_copy(update={"source": hypothesis, "target": premise}) if back else None
        w = reconcile_context_pair(f, b)
        if w is not None:
            factors.add(tuple(w)[:4])
    return factors


@pytest.mark.parametrize("seed", range(20))
def test_vectorised_builder_matches_pairwise_semantics(seed):
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 6)), int(rng.integers(1, 7))
    atoms = [Atom(id=f"a{i}", text=f"atom {rng.integers(0, 4)}") for i in range(n)]
    contexts = [Context(id=f"c{j}", text=f"ctx {rng.integers(0, 5)}") for j in range(m)]
    ids = [a.id for a in atoms] + [c.id for c in contexts]
    labels = ["entailment", "contradiction", "neutral"]
    relations = []
    for _ in range(int(rng.integers(0, 3 * (n + m) ** 2 // 2 + 1))):
        s, t = rng.choice([c.id for c in contexts]), rng.choice(ids)
        if s == t:
            continue
        p = float(rng.choice([0.6, 0.7, 0.8, rng.uniform()]))  # repeated values make ties
        relations.append(rel(s, t, str(rng.choice(labels)), p, failed=bool(rng.uniform() < 0.1)))
    for version in (1, 2, 3):
        if version == 1:
            for a in atoms:
                a.contexts = sorted({str(x) for x in rng.choice([c.id for c in contexts], size=2)})
        plan = plan_graph(atoms, contexts, version)
        built = build_graph(plan, relations, GraphOptions(version=version, **EVERY))
        got = {tuple(f)[:4] for f in built.factor_relations}  # (no judge: one per pair)
        assert got == _scalar_factors(plan, relations)
        assert len(got) == built.graph.num_factors


def test_summariser_relevance_scales_the_context_prior():
    atoms = [Atom(id="a0", text="x")]
    contexts = [Context(id="c0", text="c", relevance=0.5), Context(id="c1", text="d")]
    plan = plan_graph(atoms, contexts, 3)
    built = build_graph(
        plan,
        [rel("c0", "a0", "entailment", 0.8), rel("c1", "c0", "entailment", 0.7)],
        GraphOptions(version=3, factor_tables="priors", context_prior=0.9),
    )
    prior = dict(zip(built.graph.variables, built.graph.prior))
    assert prior == pytest.approx({"a0": 0.5, "c0": 0.45, "c1": 0.9})
    by_target = {f.target: built.graph.tables[i] for i, f in enumerate(built.factor_relations)}
    assert by_target["c0"].ravel().tolist() == pytest.approx([0.55, 0.45, 0.3, 0.7])
    with pytest.raises(ValueError, match="relevance"):
        build_graph(plan_graph(atoms, [Context(id="c0", text="c", relevance=2)], 2), [])


# -- which atom-context contradictions become factors (--contradictions) ------------------------


def test_the_paper_tables_are_one_flag_away_and_give_example_1():
    """DESIGN.md §4's Example 1 (P = 0.3179) through the command line's flags: the paper's
    tables (--paper-tables, or --factor-tables paper) with every contradiction a factor."""
    from fact_reasoner.cli import build_assess_parser
    from fact_reasoner.settings.cli_options import config_from_args

    parser = build_assess_parser()
    atoms = [Atom(id="a1", text="the atom")]
    contexts = [Context(id="c1", text="first"), Context(id="c2", text="second")]
    relations = [rel("c1", "a1", "entailment", 0.8), rel("c2", "a1", "contradiction", 0.9)]

    def posterior(*argv: str) -> float:
        options = config_from_args(parser.parse_args(["--context-prior", "0.99", "--version", "2", *argv]), parser)
        built = build_graph(plan_graph(atoms, contexts, 2), relations, options.graph)
        return brute_force_marginals(built.graph).marginals["a1"]

    for flag in (["--paper-tables"], ["--factor-tables", "paper"]):
        assert posterior(*flag, "--contradictions", "any") == pytest.approx(0.3179, abs=1e-4)
    # the default tables (priors): the false-context row is [1 - π, π] = [0.5, 0.5]
    #   P(a1=1) ∝ Σ_c1,c2 prior(c1) prior(c2) T_e(c1, 1) T_c(c2, 1)
    #          = (0.01·0.5 + 0.99·0.8)(0.01·0.5 + 0.99·0.1) = 0.797 · 0.104
    #   P(a1=0) ∝ (0.01·0.5 + 0.99·0.2)(0.01·0.5 + 0.99·0.9) = 0.203 · 0.896
    expected = 0.797 * 0.104 / (0.797 * 0.104 + 0.203 * 0.896)
    assert posterior("--contradictions", "any") == pytest.approx(expected, abs=1e-4)
    assert posterior("--use-priors", "--contradictions", "any") == pytest.approx(expected, abs=1e-4)


def test_use_priors_is_still_read_as_the_factor_tables():
    from fact_reasoner.settings.config import PipelineConfig

    assert GraphOptions(use_priors=False).factor_tables == "paper"
    assert GraphOptions(use_priors=True).factor_tables == "priors"
    assert PipelineConfig(use_priors=False).graph.factor_tables == "paper"
    with pytest.raises(ValueError, match="disagree"):
        GraphOptions(use_priors=True, factor_tables="paper")


def test_the_paper_preset_gives_example_1_in_one_flag():
    """``--graph paper``: the paper's tables, every relation, no floor, context prior 0.99 —
    Example 1 gives 0.3179; the defaults give 0.770 (context prior 0.9, priors tables); a setting
    given beside the preset wins."""
    from fact_reasoner.cli import build_assess_parser
    from fact_reasoner.settings.cli_options import config_from_args

    parser = build_assess_parser()
    atoms = [Atom(id="a1", text="the atom")]
    contexts = [Context(id="c1", text="first"), Context(id="c2", text="second")]
    relations = [rel("c1", "a1", "entailment", 0.8), rel("c2", "a1", "contradiction", 0.9)]

    def posterior(*argv: str) -> tuple[float, GraphOptions]:
        options = config_from_args(parser.parse_args(["--version", "2", *argv]), parser).graph
        built = build_graph(plan_graph(atoms, contexts, 2), relations, options, supplied=True)
        return brute_force_marginals(built.graph).marginals["a1"], options

    paper, options = posterior("--graph", "paper")
    assert paper == pytest.approx(0.3179, abs=1e-4)
    assert (options.factor_tables, options.context_prior, options.min_relation_probability) == ("paper", 0.99, 0.0)
    assert (options.contradictions, options.entailments) == ("any", "any")
    default, _ = posterior()
    #   P(a1=1) ∝ (0.1·0.5 + 0.9·0.8)(0.1·0.5 + 0.9·0.1) = 0.77 · 0.14
    #   P(a1=0) ∝ (0.1·0.5 + 0.9·0.2)(0.1·0.5 + 0.9·0.9) = 0.23 · 0.86
    assert default == pytest.approx(0.77 * 0.14 / (0.77 * 0.14 + 0.23 * 0.86), abs=1e-4)
    overridden, options = posterior("--graph", "paper", "--context-prior", "0.9")
    assert options.context_prior == 0.9 and options.factor_tables == "paper"
    assert overridden != pytest.approx(paper, abs=1e-3)
