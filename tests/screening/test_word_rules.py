"""The relation screen's word rules and the relation floor, through the graph they feed
(``--entailments same-subject``, ``--contradictions same-attribute``, ``--min-relation-probability``):
what each keeps as a factor, sets aside and counts, and how supplied relations pass."""

import pytest

from fact_reasoner.graph.build import plan_graph
from fact_reasoner.inference import brute_force_marginals
from fact_reasoner.schema import Atom, Context, Relation, RelationType
from fact_reasoner.screening.relations import UnusedRelation
from fact_reasoner.settings.graph_options import GraphOptions
from fact_reasoner.stages import screen_and_build


def rel(source, target, relation, p, **extra):
    return Relation(source=source, target=target, relation=relation, probability=p, **extra)


#: every relation a factor (placeholder texts the same-attribute rule would read as other attributes)
EVERY = {"contradictions": "any", "min_relation_probability": 0.0}
#: the paper's graph: its Table 1, every relation a factor
PAPER = {"factor_tables": "paper"} | EVERY
EINSTEIN_BORN = "Albert Einstein was born in 1879."
EINSTEIN_DIED = "Albert Einstein died on 18 April 1955 in Princeton."


def _einstein(atom_text: str, context_text: str, **options):
    plan = plan_graph([Atom(id="a0", text=atom_text)], [Context(id="c0", text=context_text)], 2)
    relations = [rel("c0", "a0", "contradiction", 0.87)]  # what the shipped cross-encoder says
    return screen_and_build(plan, relations, GraphOptions(version=2, **options))


def test_min_relation_probability_drops_weak_relations_only():
    atoms = [Atom(id="a1", text="weakly entailed"), Atom(id="a2", text="strongly entailed")]
    contexts = [Context(id="c1", text="first"), Context(id="c2", text="second")]
    plan = plan_graph(atoms, contexts, 3)
    relations = [
        rel("c1", "a1", "entailment", 0.45),  # a 3-way arg-max below 0.5
        rel("c1", "a2", "entailment", 0.9),
        rel("c1", "c2", "contradiction", 0.4),
        rel("c2", "c1", "neutral", 0.9),
    ]
    paper = brute_force_marginals(screen_and_build(plan, relations, GraphOptions(version=3, **PAPER)).graph).marginals
    # the paper's table (p, p, 1-p, p) with p = 0.45 makes "entailment" evidence against a1
    assert paper["a1"] < 0.5 < paper["a2"]
    built = screen_and_build(plan, relations, GraphOptions(**(PAPER | {"version": 3, "min_relation_probability": 0.5})))
    assert built.graph.source.tolist() == [2] and built.graph.target.tolist() == [1]  # c1 -> a2 only
    marginals = brute_force_marginals(built.graph).marginals
    assert marginals["a1"] == 0.5 and marginals["a2"] == pytest.approx(paper["a2"], abs=0.05)


def test_a_contradiction_about_another_attribute_adds_no_factor_and_is_counted():
    built = _einstein(EINSTEIN_BORN, EINSTEIN_DIED)
    assert GraphOptions().contradictions == "same-attribute"
    assert built.graph.num_factors == 0
    counters = built.rule_counters()
    assert (counters["contradictions_same_attribute"], counters["contradictions_other_attribute"]) == (0, 1)
    assert brute_force_marginals(built.graph).marginals["a0"] == 0.5  # as if the pair were neutral
    # the paper's rule: the same judgement is evidence against the true atom
    every = _einstein(EINSTEIN_BORN, EINSTEIN_DIED, contradictions="any", entailments="any")
    assert every.graph.num_factors == 1 and every.rule_counters() == {}
    assert brute_force_marginals(every.graph).marginals["a0"] < 0.5


def test_a_contradiction_about_the_same_attribute_stays_a_factor():
    built = _einstein("Albert Einstein was born in 1880.", "Albert Einstein was born in Ulm in 1879.")
    assert built.graph.num_factors == 1
    assert built.factor_relations[0].relation == RelationType.CONTRADICTION
    counters = built.rule_counters()
    assert (counters["contradictions_same_attribute"], counters["contradictions_other_attribute"]) == (1, 0)
    assert brute_force_marginals(built.graph).marginals["a0"] < 0.5


def test_the_rule_reads_each_sentence_and_leaves_entailments_and_context_pairs_alone():
    atoms = [Atom(id="a0", text="Albert Einstein was born in 1880."), Atom(id="a1", text=EINSTEIN_BORN)]
    contexts = [
        Context(id="c0", text=f"Einstein was a physicist. {EINSTEIN_DIED} He was born in Ulm in 1879."),
        Context(id="c1", text=EINSTEIN_DIED),
    ]
    relations = [
        rel("c0", "a0", "contradiction", 0.9),  # the passage's third sentence gives another birth year
        rel("c1", "a0", "contradiction", 0.9),  # death only: another attribute
        rel("c1", "a1", "entailment", 0.6),  # entailments are never touched
        rel("c0", "c1", "contradiction", 0.8),  # nor context-context relations (FR3)
    ]
    built = screen_and_build(plan_graph(atoms, contexts, 3), relations, GraphOptions(version=3))
    kept = {(f.source, f.target, f.relation.value) for f in built.factor_relations}
    assert kept == {("c0", "a0", "contradiction"), ("c1", "a1", "entailment"), ("c0", "c1", "contradiction")}
    assert built.rule_counters()["contradictions_other_attribute"] == 1


def test_failed_and_weak_contradictions_are_not_counted_by_the_rule():
    plan = plan_graph([Atom(id="a0", text=EINSTEIN_BORN)], [Context(id="c0", text=EINSTEIN_DIED)], 2)
    failed = screen_and_build(plan, [rel("c0", "a0", "contradiction", 0.9, failed=True, reason="timeout")])
    weak = screen_and_build(
        plan, [rel("c0", "a0", "contradiction", 0.4)], GraphOptions(version=2, min_relation_probability=0.5)
    )
    assert failed.rule_counters()["contradictions_other_attribute"] == 0
    assert weak.rule_counters()["contradictions_other_attribute"] == 0


# -- the factor tables (--factor-tables) ------------------------------------------------------------


def test_the_output_counts_the_contradictions_the_rule_made_neutral():
    from fact_reasoner import FactReasoner, PipelineConfig

    record = {
        "output": "Albert Einstein was born in 1879. He was born in 1880.",
        "atoms": [{"id": "a0", "text": EINSTEIN_BORN}, {"id": "a1", "text": "Albert Einstein was born in 1880."}],
        "contexts": [
            {"id": "c0", "text": EINSTEIN_DIED},
            {"id": "c1", "text": "Albert Einstein was born in Ulm in 1879."},
        ],
        "relations": [
            {"source": "c0", "target": "a0", "relation": "contradiction", "probability": 0.87},
            {"source": "c0", "target": "a1", "relation": "contradiction", "probability": 0.8},
            {"source": "c1", "target": "a0", "relation": "entailment", "probability": 0.95},
            {"source": "c1", "target": "a1", "relation": "contradiction", "probability": 0.9},
        ],
    }
    # supplied relations are data: the judge-noise rules apply to them only when asked
    config = PipelineConfig(version=2, nli="precomputed", use_cache=False, filter_supplied_relations=True)
    result = FactReasoner(config).assess(record)
    assert result.counters["contradictions_same_attribute"] == 1  # c1 → a1: 1879 against 1880
    assert result.counters["contradictions_other_attribute"] == 2  # the death passage against both
    assert result.counters["factors"] == 2
    assert result.settings["graph"]["contradictions"] == "same-attribute"
    assert result.settings["graph"]["factor_tables"] == "priors"
    verdicts = {atom.id: atom.prediction.value for atom in result.atoms}
    assert verdicts == {"a0": "S", "a1": "NS"}
    paper = FactReasoner(config.with_options(contradictions="any")).assess(record)
    assert "contradictions_other_attribute" not in paper.counters and paper.counters["factors"] == 4


def test_supplied_relations_are_used_as_given_by_default():
    """The same-attribute rule and the floor filter the project's own judge; a record's relations
    are data: by default each supplied entailment or contradiction is a factor."""
    from fact_reasoner import FactReasoner, PipelineConfig

    record = {
        "output": "Albert Einstein was born in 1879.",
        "atoms": [{"id": "a0", "text": EINSTEIN_BORN}],
        "contexts": [{"id": "c0", "text": EINSTEIN_DIED}],
        "relations": [{"source": "c0", "target": "a0", "relation": "contradiction", "probability": 0.87}],
    }
    given = FactReasoner(PipelineConfig(version=2, nli="precomputed", use_cache=False)).assess(record)
    assert given.counters["factors"] == 1 and "contradictions_other_attribute" not in given.counters
    assert given.atoms[0].prediction.value == "NS"
    filtered = FactReasoner(
        PipelineConfig(version=2, nli="precomputed", use_cache=False, filter_supplied_relations=True)
    ).assess(record)
    assert filtered.counters["factors"] == 0 and filtered.counters["contradictions_other_attribute"] == 1
    assert filtered.atoms[0].probability == pytest.approx(0.5)


def test_a_supplied_label_with_probability_at_most_half_is_an_input_error():
    from fact_reasoner.errors import RecordFailed

    atoms = [Atom(id="a1", text="the atom")]
    contexts = [Context(id="c1", text="first"), Context(id="c2", text="second")]
    plan = plan_graph(atoms, contexts, 2)
    weak = [rel("c1", "a1", "entailment", 0.8), rel("c2", "a1", "contradiction", 0.4)]
    with pytest.raises(RecordFailed, match=r"c2->a1 is contradiction with probability 0.4 \(1 such"):
        screen_and_build(plan, weak, GraphOptions(version=2), supplied=True)
    # the judge's own weak labels are dropped by the floor; asked to, supplied ones too
    for built in (
        screen_and_build(plan, weak, GraphOptions(version=2)),
        screen_and_build(plan, weak, GraphOptions(version=2, filter_supplied_relations=True), supplied=True),
    ):
        assert built.graph.num_factors == 1
        assert built.unused_relations == (
            UnusedRelation(
                "c2",
                "a1",
                RelationType.CONTRADICTION,
                0.4,
                "below the floor",
                rule="--min-relation-probability",
                sentence="second",
            ),
        )
        assert built.rule_counters()["relations_below_floor"] == 1
    # a neutral label at any probability is fine
    screen_and_build(plan, [rel("c2", "a1", "neutral", 0.4)], GraphOptions(version=2), supplied=True)


def test_an_entailment_from_a_passage_about_someone_else_adds_no_factor():
    atoms = [
        Atom(id="a0", text="Marie Curie discovered penicillin."),
        Atom(id="a1", text="Marie Curie was a physicist."),
    ]
    contexts = [
        Context(id="c0", text="Penicillin was discovered in 1928 by the Scottish physician Alexander Fleming."),
        Context(id="c1", text="She was a Polish and naturalised-French physicist.", title="Marie Curie"),
    ]
    plan = plan_graph(atoms, contexts, 2)
    relations = [rel("c0", "a0", "entailment", 0.88), rel("c1", "a1", "entailment", 0.9)]
    assert GraphOptions().entailments == "same-subject"  # the default
    built = screen_and_build(plan, relations, GraphOptions(version=2))
    assert [(f.source, f.target) for f in built.factor_relations] == [("c1", "a1")]  # the title names her
    assert built.unused_relations == (
        UnusedRelation(
            "c0",
            "a0",
            RelationType.ENTAILMENT,
            0.88,
            "the passage never names Marie Curie",
            rule="--entailments same-subject",
            sentence="Penicillin was discovered in 1928 by the Scottish physician Alexander Fleming.",
        ),
    )
    counters = built.rule_counters()
    assert (counters["entailments_same_subject"], counters["entailments_other_subject"]) == (1, 1)
    assert screen_and_build(plan, relations, GraphOptions(version=2, entailments="any")).graph.num_factors == 2


def test_a_topic_that_names_no_one_is_no_subject_and_no_opening_a_claim_is_no_name():
    """A record's topic "General knowledge quiz" once became the subject the same-subject rule
    looked for ("the passage never names General knowledge quiz"), and "No" opening a claim its
    name: neither names anyone, so the rule has nothing to look for and keeps the entailment."""
    atoms = [
        Atom(id="a0", text="The summit is 8,849 metres high."),
        Atom(id="a1", text="No mountain is taller than the summit."),
    ]
    contexts = [Context(id="c0", text="Its summit is 8,849 metres high.")]
    plan = plan_graph(atoms, contexts, 2, topic="General knowledge quiz")
    relations = [rel("c0", "a0", "entailment", 0.85), rel("c0", "a1", "entailment", 0.8)]
    built = screen_and_build(plan, relations, GraphOptions(version=2))
    assert [(f.source, f.target) for f in built.factor_relations] == [("c0", "a0"), ("c0", "a1")]
    assert built.rule_counters()["entailments_subject_unknown"] == 2
    named = plan_graph(atoms[:1], contexts, 2, topic="Mount Everest")
    aside = screen_and_build(named, relations[:1], GraphOptions(version=2))
    assert aside.unused_relations[0].reason == "the passage never names Mount Everest"
