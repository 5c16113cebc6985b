"""``--coherence``: atom–atom pairs, their factor tables, the coherence score, and the pipeline.

The numbers are worked by hand in each test's docstring.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import fact_reasoner
from fact_reasoner import FactReasoner, PipelineConfig
from fact_reasoner.atoms.frames import atom_frame, comparability, comparable_pair_mask, frame_overlap, light_stem
from fact_reasoner.errors import RecordFailed
from fact_reasoner.graph.build import build_graph, plan_graph
from fact_reasoner.graph.coherence import coherence_score
from fact_reasoner.graph.coherence_graph import atom_pair_relations
from fact_reasoner.graph.coherence_pairs import plan_atom_pairs, select_atom_pairs
from fact_reasoner.graph.factors import atom_contradiction_table, atom_entailment_table
from fact_reasoner.inference import brute_force_marginals
from fact_reasoner.schema import Atom, Context, Relation, RelationType
from fact_reasoner.settings.graph_options import GraphOptions

GOLDEN = Path(__file__).parent / "data" / "coherence_off_golden.json"


def _rel(source: str, target: str, relation: str, p: float, failed: bool = False) -> Relation:
    return Relation(source=source, target=target, relation=relation, probability=p, failed=failed)


ATOMS = [
    Atom(id="a0", text="Ann was born in 1949."),
    Atom(id="a1", text="Ann was 30 years old in 1985."),
    Atom(id="a2", text="Ann was a painter."),
]
CONTEXT = Context(id="c0", text="Ann (born 1949) is a painter.")

#: three atoms, every ordered pair judged once: a0/a1 contradict (0.7 one way, 0.95 the other),
#: a0 entails a2 (0.8) and not back (neutral), a1→a2 failed, a2→a1 a weak contradiction (0.4)
THREE_ATOM_RELATIONS = [
    _rel("c0", "a0", "entailment", 0.9),
    _rel("c0", "a2", "entailment", 0.8),
    _rel("a0", "a1", "contradiction", 0.7),
    _rel("a1", "a0", "contradiction", 0.95),
    _rel("a0", "a2", "entailment", 0.8),
    _rel("a2", "a0", "neutral", 0.9),
    _rel("a1", "a2", "neutral", 0.0, failed=True),
    _rel("a2", "a1", "contradiction", 0.4),
]


def _three_atom_plan(version=2):
    return plan_atom_pairs(plan_graph(ATOMS, [CONTEXT], version), None, -1.0)


# -- tables -----------------------------------------------------------------------------------


def test_atom_tables_are_the_mixture_of_relation_and_no_constraint() -> None:
    """With p = 0.9: the forbidden state weighs p·0 + (1−p)·1 = 0.1, every other p + (1−p) = 1.
    Contradiction forbids (1, 1); entailment X ⇒ Y forbids (X=1, Y=0)."""
    np.testing.assert_allclose(atom_contradiction_table(0.9), [[1, 1], [1, 0.1]])
    np.testing.assert_allclose(atom_entailment_table(0.9), [[1, 1], [0.1, 1]])
    # a weak judgement never rewards the state it forbids (the paper's table would, for p < 0.5:
    # [[p, p], [p, 1 − p]] gives (1, 1) the largest weight at p = 0.3)
    weak = atom_contradiction_table(0.3)
    assert weak[1, 1] == pytest.approx(0.7) and weak[1, 1] < weak.max()


# -- pairs ------------------------------------------------------------------------------------


def test_similarity_gate_keeps_pairs_at_or_above_the_threshold() -> None:
    """Embeddings (1, 0), (0.8, 0.6), (0, 2): cos(a0, a1) = 0.8, cos(a0, a2) = 0, cos(a1, a2) = 0.6
    (the third is not unit length: cosine normalises). At 0.6: a0–a1 and a1–a2 kept (both
    directions: 4 ordered pairs), a0–a2 pruned (2 ordered pairs)."""
    embeddings = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 2.0]])
    pairs, pruned = select_atom_pairs(["a0", "a1", "a2"], embeddings, 0.6)
    assert pairs == (("a0", "a1"), ("a1", "a0"), ("a1", "a2"), ("a2", "a1"))
    assert pruned == 2
    every, none_pruned = select_atom_pairs(["a0", "a1", "a2"], None, -1.0)
    assert len(every) == 6 and none_pruned == 0
    assert select_atom_pairs(["a0"], None, 0.5) == ((), 0)
    with pytest.raises(ValueError, match="one embedding per atom"):
        select_atom_pairs(["a0", "a1"], None, 0.5)


def test_plan_atom_pairs_uses_the_embedder_and_needs_one_when_gating() -> None:
    class Fixed:
        def encode(self, texts):
            return np.array([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0]])[: len(texts)]

    plan = plan_graph(ATOMS, [CONTEXT], 2)
    gated = plan_atom_pairs(plan, Fixed(), 0.5)
    assert gated.atom_pairs == (("a0", "a1"), ("a1", "a0")) and gated.atom_pairs_pruned == 4
    assert gated.pairs == plan.pairs  # the atom–context pairs are untouched
    with pytest.raises(ValueError, match="needs a sentence embedder"):
        plan_atom_pairs(plan, None, 0.5)


# -- the comparability gate -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "second", "reason"),
    [
        # same attribute, different value of one type: kept
        ("He was born in 1949.", "He was born in 1942.", "values"),
        ("Curie died in Paris.", "She died in London in 1934.", "values"),  # {Paris} vs {London, 1934}
        ("He won two Grammy Awards.", "He won three Grammy Awards.", "values"),  # number words as 2, 3
        ("She was born on 7 November 1867.", "She was born on 8 November 1867.", "values"),
        ("He was French.", "She is American.", "values"),  # empty frames, skeletons {pron, be} both
        ("She won the Nobel Prize.", "She never won the Nobel Prize.", "negation"),
        # the false alarms the gate is for: different facts about one subject
        ("Marie Curie was born in Vienna.", "Marie Curie was born in 1867.", "same values"),  # name vs number
        ("Jean Daullé was a French engraver.", "Jean Daullé was born in Abbeville.", "frames"),
        # a refinement, not a disagreement: one atom has no value the other lacks
        ("He was born in 1867.", "He was born on 7 November 1867.", "same values"),
        # the month is a date's part, not a name to set against a place
        ("He was born on May 4, 1996.", "He was born in Tours.", "same values"),
        # the subject's name is not a value ("Jean Daullé" vs "He")
        ("Jean Daullé was born in 1703.", "He was born in Abbeville.", "same values"),
        # two named subjects that differ: two films, not one attribute
        ("A Bronx Tale was released in 1993.", "Just Cause was released in 1995.", "subjects"),
        # a year is a date, an age is a number: no disagreement of one kind
        ("She died in 1966.", "She died at the age of 72.", "same values"),
        ("He died on August 28, 2020.", "He died at the age of 43.", "same values"),  # 28 is a day
        # more than one sentence: not one fact, the gate keeps the pair
        ("He was born in 1949. He was a painter.", "He was a painter.", "long"),
        # known miss (module docstring): an arithmetic contradiction
        ("Ann was born in 1949.", "Ann was 30 years old in 1985.", "frames"),
        # function words differ although both frames are empty: {be, in} vs {pron, be}
        ("London is in England.", "He was French.", "frames"),
    ],
)
def test_comparability_on_hand_made_pairs(first: str, second: str, reason: str) -> None:
    assert comparability(atom_frame(first), atom_frame(second)) == reason
    assert comparability(atom_frame(second), atom_frame(first)) == reason  # symmetric


def test_atom_frame_parts() -> None:
    """Frames are stemmed content words; the opening capitalised run is the subject, not a
    value; names inside are values; years and months are dates, other digits and number words
    numbers; "never" negates; one sentence unless a lower-case word ends one before a capital."""
    frame = atom_frame("Marie Curie never received two awards from the University of Paris in May 1903.")
    assert frame.frame == {"receiv", "award"}
    assert frame.subject == {"Marie", "Curie"}
    assert (frame.numbers, frame.dates) == ({"2"}, {"month-5", "1903"})
    assert frame.names == {"University", "Paris"}
    assert frame.negated is True and frame.sentences == 1
    # "may" in lower case is a modal verb, not a month; "1,200" is the year 1200; "He" is no subject
    modal = atom_frame("He may have been born in 1,200 BC.")
    assert (modal.dates, modal.numbers, modal.subject) == ({"1200"}, set(), set())
    # an initial is not a sentence end; "... Vieira. He ..." is
    assert atom_frame("Joey D. Vieira is an actor.").sentences == 1
    assert atom_frame("Joey D. Vieira is an actor. He was born in 1937.").sentences == 2
    assert [light_stem(w) for w in ("died", "death", "won", "marriage", "married")] == [
        "death",
        "death",
        "win",
        "marry",
        "marry",
    ]


def test_frame_overlap_is_jaccard() -> None:
    """{birth, city} vs {birth}: 1/2; {play, season} vs {set, career, high, season}: 1/5; an empty
    frame against a non-empty one: 0."""
    assert frame_overlap(atom_frame("He was born in a city."), atom_frame("He was born.")) == pytest.approx(0.5)
    assert frame_overlap(
        atom_frame("He played for four seasons."), atom_frame("He set career highs in the 2011 season.")
    ) == pytest.approx(0.2)
    assert frame_overlap(atom_frame("He was French."), atom_frame("He was born.")) == 0.0
    # at the threshold: 0.5 passes (≥), so the 1949 / 1942 pair with one extra word is kept
    assert comparability(atom_frame("He was born in a city in 1949."), atom_frame("He was born in 1942.")) == "values"
    assert (
        comparability(atom_frame("He was born in a city in 1949."), atom_frame("He was born in 1942."), min_overlap=0.6)
        == "frames"
    )


GATE_ATOMS = [
    Atom(id="b0", text="Ann was born in 1949."),
    Atom(id="b1", text="Ann was born in 1942."),
    Atom(id="b2", text="Ann was a painter."),
    Atom(id="b3", text="Ann was born in Vienna."),
]
GATE_CONTEXT = {"id": "c0", "text": "Ann had a dog."}


def test_comparable_mask_and_plan_counts() -> None:
    """Four atoms, six unordered pairs in triu order (0,1) (0,2) (0,3) (1,2) (1,3) (2,3): only
    b0–b1 (1949 vs 1942) is comparable; b0–b3 and b1–b3 are a year against a place, b2 has
    another frame. The plan judges 2 ordered pairs and prunes 10, all as incomparable; no
    embedder is needed with min_similarity −1."""
    mask = comparable_pair_mask([a.text for a in GATE_ATOMS])
    assert mask.tolist() == [True, False, False, False, False, False]
    plan = plan_atom_pairs(plan_graph(GATE_ATOMS, [], 2), None, -1.0, "comparable")
    assert plan.atom_pairs == (("b0", "b1"), ("b1", "b0"))
    assert (plan.atom_pairs_pruned, plan.atom_pairs_incomparable) == (10, 0 + 10)
    # the same atoms under `similar` with no similarity gate: all 12 ordered pairs
    every = plan_atom_pairs(plan_graph(GATE_ATOMS, [], 2), None, -1.0, "similar")
    assert len(every.atom_pairs) == 12 and every.atom_pairs_pruned == every.atom_pairs_incomparable == 0
    with pytest.raises(ValueError, match="unknown coherence pair rule"):
        plan_atom_pairs(plan_graph(GATE_ATOMS, [], 2), None, -1.0, "all")  # type: ignore[arg-type]


def test_comparable_then_similarity_gate_counts_each_reason() -> None:
    """Embeddings that put b0 and b1 far apart (cos 0): the comparable pair b0–b1 then fails the
    similarity gate at 0.5, so nothing is judged: 10 ordered pairs incomparable + 2 dissimilar."""

    class Far:
        calls = 0

        def encode(self, texts):
            Far.calls += 1
            return np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 1.0]])[: len(texts)]

    plan = plan_atom_pairs(plan_graph(GATE_ATOMS, [], 2), Far(), 0.5, "comparable")
    assert plan.atom_pairs == () and (plan.atom_pairs_pruned, plan.atom_pairs_incomparable) == (12, 10)
    assert Far.calls == 1
    # no comparable pair at all: the embedder is not called (nothing left for it to prune)
    plan_atom_pairs(plan_graph(GATE_ATOMS[2:], [], 2), Far(), 0.5, "comparable")
    assert Far.calls == 1


def test_select_atom_pairs_checks_the_candidate_mask() -> None:
    with pytest.raises(ValueError, match="one candidate flag per unordered pair"):
        select_atom_pairs(["a0", "a1", "a2"], None, -1.0, np.array([True]))


def test_pipeline_comparable_gate_prunes_false_alarms_and_counts_them() -> None:
    """The default rule (comparable) on GATE_ATOMS with precomputed judgements that call every
    ordered pair a contradiction (0.8), as the cross-encoder does for different facts about one
    subject: only b0–b1 is judged and reported, coherence = 1 − 0.8 = 0.2; the counters say 2
    ordered pairs judged, 10 pruned as incomparable, 0 as dissimilar. Under `similar` (no
    similarity gate) all 6 unordered pairs are reported."""
    relations = [_rel(a.id, b.id, "contradiction", 0.8) for a in GATE_ATOMS for b in GATE_ATOMS if a.id != b.id]
    record = {
        "input": "Tell me about Ann.",
        "output": " ".join(a.text for a in GATE_ATOMS),
        "atoms": [a.model_dump(exclude_none=True) for a in GATE_ATOMS],
        # a passage that relates to no atom: a record needs evidence to be scored (#43)
        "contexts": [GATE_CONTEXT],
        "relations": [r.model_dump(exclude_none=True) for r in relations],
    }
    config = PipelineConfig(version=2, nli="precomputed", use_cache=False, coherence=True, coherence_min_similarity=-1)
    assert config.graph.coherence_pairs == "comparable"
    row = FactReasoner(config).assess(record).model_dump(mode="json")
    assert [p["atoms"] for p in row["contradicting_pairs"]] == [["b0", "b1"]]
    assert row["coherence"] == pytest.approx(0.2)
    counters = row["counters"]
    assert counters["coherence_pairs"] == 2
    assert counters["coherence_pairs_pruned"] == 10
    assert (counters["coherence_pairs_incomparable"], counters["coherence_pairs_dissimilar"]) == (10, 0)
    assert row["settings"]["graph"]["coherence_pairs"] == "comparable"
    similar = _similar_config()
    every = FactReasoner(similar).assess(record).model_dump(mode="json")
    assert len(every["contradicting_pairs"]) == 6 and every["counters"]["coherence_pairs_incomparable"] == 0


def test_comparable_gate_with_nothing_comparable_gives_coherence_one_and_counts_it() -> None:
    """No comparable pair: nothing is planned, so coherence is 1 from zero judged pairs — that is
    the gate's verdict (counted: 6 ordered pairs incomparable), not a missing judgement."""
    atoms = GATE_ATOMS[1:]  # 1942, painter, Vienna: no two comparable
    record = {
        "input": "Tell me about Ann.",
        "output": " ".join(a.text for a in atoms),
        "atoms": [a.model_dump(exclude_none=True) for a in atoms],
        "contexts": [GATE_CONTEXT],
        "relations": [],
    }
    config = PipelineConfig(version=2, nli="precomputed", use_cache=False, coherence=True, coherence_min_similarity=-1)
    row = FactReasoner(config).assess(record).model_dump(mode="json")
    assert row["coherence"] == 1.0 and row["contradicting_pairs"] == []
    assert (row["counters"]["coherence_pairs"], row["counters"]["coherence_pairs_incomparable"]) == (0, 6)


# -- factors on the three-atom record ---------------------------------------------------------


def test_three_atom_factors_worked_by_hand() -> None:
    """Pair a0–a1: contradiction both ways, p = max(0.7, 0.95) = 0.95 → one factor (a0, a1).
    a0 → a2 entailment 0.8 → a directed factor a0 ⇒ a2; a2 → a0 neutral → nothing.
    Pair a1–a2: a1 → a2 failed (nothing), a2 → a1 contradiction 0.4 → factor (a1, a2), 0.4,
    listed from the atom the plan lists first. With min_relation_probability 0.5 the 0.4 goes."""
    plan = _three_atom_plan()
    factors = atom_pair_relations(plan.atom_pairs, THREE_ATOM_RELATIONS)
    assert factors == [
        ("a0", "a1", RelationType.CONTRADICTION, 0.95),
        ("a0", "a2", RelationType.ENTAILMENT, 0.8),
        ("a1", "a2", RelationType.CONTRADICTION, 0.4),
    ]
    assert atom_pair_relations(plan.atom_pairs, THREE_ATOM_RELATIONS, 0.5) == factors[:2]

    built = build_graph(plan, THREE_ATOM_RELATIONS, GraphOptions(version=2, min_relation_probability=0.0))
    g = built.graph
    assert built.atom_factors == 3 and g.num_factors == 2 + 3  # c0→a0, c0→a2, then the atoms'
    np.testing.assert_allclose(g.tables[2], [[1, 1], [1, 0.05]])
    np.testing.assert_allclose(g.tables[3], [[1, 1], [0.2, 1]])
    np.testing.assert_allclose(g.tables[4], [[1, 1], [1, 0.6]])
    assert [g.variables[i] for i in g.source[2:]] == ["a0", "a0", "a1"]
    assert [g.variables[i] for i in g.target[2:]] == ["a1", "a2", "a2"]
    assert built.atom_pairs_missing == 0
    assert "atom_premise" not in built.ignored_relations  # used, so not counted as ignored
    # the same tables with the paper's family (atom–atom tables have no prior rows)
    paper = GraphOptions(version=2, factor_tables="paper", min_relation_probability=0.0)
    np.testing.assert_allclose(build_graph(plan, THREE_ATOM_RELATIONS, paper).graph.tables[2:], g.tables[2:])
    # the default drops the 0.4 (min_relation_probability 0.5)
    assert build_graph(plan, THREE_ATOM_RELATIONS).atom_factors == 2


def test_two_contradicting_atoms_posterior_by_hand() -> None:
    """Two atoms (prior 0.5), no context, contradiction p = 0.9. Unnormalised weights
    00: 0.25, 01: 0.25, 10: 0.25, 11: 0.25 · 0.1 = 0.025; Z = 0.775;
    P(a0) = (0.25 + 0.025) / 0.775 = 0.354839 — neither can stay at 0.5, P(both) = 0.0323."""
    atoms = [Atom(id="a0", text="x was born in 1949."), Atom(id="a1", text="x was born in 1950.")]
    plan = plan_atom_pairs(plan_graph(atoms, [], 2), None, -1.0)
    built = build_graph(plan, [_rel("a0", "a1", "contradiction", 0.9)], GraphOptions(version=2))
    marginals = brute_force_marginals(built.graph).marginals
    assert marginals["a0"] == pytest.approx(0.275 / 0.775, abs=1e-6)
    assert marginals["a1"] == pytest.approx(0.275 / 0.775, abs=1e-6)
    assert built.atom_pairs_missing == 1  # a1 → a0 was never judged


def test_confident_contradiction_stops_two_supported_atoms_from_both_being_true() -> None:
    """Each atom entailed by its own context (p = 0.99, context prior 0.9): alone each is
    ≈ 0.90. With a contradiction p = 0.99 between them, P(both true) is pushed down so far
    that at least one of them must fall, and their sum stays ≤ 1 + P(both) ≈ 1."""
    atoms = [Atom(id="a0", text="born in 1949"), Atom(id="a1", text="born in 1950")]
    contexts = [Context(id="c0", text="one"), Context(id="c1", text="two")]
    relations = [
        _rel("c0", "a0", "entailment", 0.99),
        _rel("c1", "a1", "entailment", 0.99),
        _rel("a0", "a1", "contradiction", 0.99),
    ]
    plain = plan_graph(atoms, contexts, 2)
    before = brute_force_marginals(build_graph(plain, relations).graph).marginals
    after_built = build_graph(plan_atom_pairs(plain, None, -1.0), relations)
    after = brute_force_marginals(after_built.graph).marginals
    assert before["a0"] > 0.85 and before["a1"] > 0.85
    assert after["a0"] + after["a1"] < 1.1  # P(a0) + P(a1) = 1 + P(both) − P(neither)


# -- the score --------------------------------------------------------------------------------


def test_coherence_score_by_hand() -> None:
    """coherence = 1 − max p: pairs at 0.2 and 0.9 → 0.1; none → 1 (nothing contradicts)."""
    assert coherence_score([0.2, 0.9]) == pytest.approx(0.1)
    assert coherence_score([]) == 1.0
    assert coherence_score([0.4]) == pytest.approx(0.6)
    with pytest.raises(ValueError, match="outside"):
        coherence_score([1.5])
    with pytest.raises(ValueError, match="outside"):
        coherence_score([math.nan])


# -- the pipeline -----------------------------------------------------------------------------


def _similar_config(**options) -> PipelineConfig:
    """Coherence on precomputed relations, every atom pair judged (the `similar` gate at -1),
    every relation a factor (the record's weak 0.4 contradiction is part of what is checked)."""
    settings = dict(
        version=2,
        nli="precomputed",
        use_cache=False,
        coherence=True,
        coherence_min_similarity=-1,
        coherence_pairs="similar",
        min_relation_probability=0.0,
    )
    return PipelineConfig(**(settings | options))


def _record(relations) -> dict:
    return {
        "input": "Tell me about Ann.",
        "output": "Ann was born in 1949. She was 30 in 1985. She was a painter.",
        "atoms": [a.model_dump(exclude_none=True) for a in ATOMS],
        "contexts": [CONTEXT.model_dump(exclude_none=True)],
        "relations": [r.model_dump(exclude_none=True) for r in relations],
    }


@pytest.mark.parametrize("engine", ["native", "brute-force", "pgmpy"])
@pytest.mark.parametrize("version", [1, 2, 3])
def test_pipeline_output_fields(engine: str, version: int) -> None:
    """The three-atom record end to end: coherence = 1 − 0.95 = 0.05; the contradicting pairs
    are a0–a1 (0.95) then a1–a2 (0.4), with texts and both posteriors; the counters say 6
    ordered pairs judged, none pruned, 3 atom–atom factors; the evidence lists stay contexts."""
    config = _similar_config(version=version, engine=engine)
    row = FactReasoner(config).assess(_record(THREE_ATOM_RELATIONS)).model_dump(mode="json")
    assert row["coherence"] == pytest.approx(0.05)
    pairs = row["contradicting_pairs"]
    assert [p["atoms"] for p in pairs] == [["a0", "a1"], ["a1", "a2"]]
    assert [p["probability"] for p in pairs] == [0.95, 0.4]
    assert pairs[0]["texts"] == [ATOMS[0].text, ATOMS[1].text]
    posterior = {a["id"]: a["probability"] for a in row["atoms"]}
    assert pairs[0]["posteriors"] == [pytest.approx(posterior["a0"]), pytest.approx(posterior["a1"])]
    counters = row["counters"]
    assert (counters["coherence_pairs"], counters["coherence_pairs_pruned"], counters["coherence_factors"]) == (6, 0, 3)
    assert counters["coherence_pairs_missing"] == 0
    assert not any(k.startswith("ignored_relations_atom") for k in counters)
    assert all(link["context"] == "c0" for atom in row["atoms"] for link in atom["evidence"])
    assert row["settings"]["graph"]["coherence"] is True
    # the exact answer, whatever the engine
    plan = plan_atom_pairs(plan_graph(ATOMS, [CONTEXT], version), None, -1.0)
    options = GraphOptions(version=version, min_relation_probability=0.0)
    exact = brute_force_marginals(build_graph(plan, THREE_ATOM_RELATIONS, options).graph)
    for atom_id, p in posterior.items():
        assert p == pytest.approx(exact.marginals[atom_id], abs=1e-6)
    assert posterior["a1"] < 0.5 < posterior["a0"]  # a0 has evidence, a1 has only the contradiction


def test_coherence_is_one_when_pairs_were_judged_and_none_contradicts() -> None:
    relations = [_rel("c0", "a0", "entailment", 0.9)] + [
        _rel(a.id, b.id, "neutral", 0.9) for a in ATOMS for b in ATOMS if a.id != b.id
    ]
    config = _similar_config()
    row = FactReasoner(config).assess(_record(relations)).model_dump(mode="json")
    assert row["coherence"] == 1.0 and row["contradicting_pairs"] == []


def test_record_without_atom_judgements_fails_loudly() -> None:
    """Precomputed relations with no atom–atom pair: a coherence of 1 would be made up."""
    config = _similar_config()
    with pytest.raises(RecordFailed, match="none of the 6 atom pair"):
        FactReasoner(config).assess(_record(THREE_ATOM_RELATIONS[:2]))


def test_pipeline_gates_pairs_with_the_stage_embedder() -> None:
    """A fixed embedder: a0 and a1 close (cos ≈ 0.995), a2 orthogonal to both → 2 ordered pairs
    judged, 4 pruned; the a1–a2 contradiction is never judged, so only a0–a1 is reported."""

    class Fixed:
        def encode(self, texts):
            return np.array([[1.0, 0.0], [1.0, 0.1], [0.0, 1.0]])[: len(texts)]

    config = _similar_config(coherence_min_similarity=0.5)
    assessor = FactReasoner(config)
    assessor.stages._embedder = Fixed()
    row = assessor.assess(_record(THREE_ATOM_RELATIONS)).model_dump(mode="json")
    assert (row["counters"]["coherence_pairs"], row["counters"]["coherence_pairs_pruned"]) == (2, 4)
    assert [p["atoms"] for p in row["contradicting_pairs"]] == [["a0", "a1"]]


#: the graph the golden rows were made with: the paper's tables, every relation a factor (the
#: defaults before --factor-tables, --contradictions, --entailments and min_relation_probability 0.5)
PAPER_GRAPH = {"factor_tables": "paper", "contradictions": "any", "entailments": "any", "min_relation_probability": 0.0}


def _stable_rows(**options) -> list[dict]:
    """Output rows of the shipped example records for FR1–FR3 × (native, brute-force) with the
    paper's graph, without what varies run to run (seconds, the per-component diagnostics)."""
    path = Path(fact_reasoner.__file__).parent / "examples" / "bios_with_relations.jsonl"
    rows = []
    for version in (1, 2, 3):
        for engine in ("native", "brute-force"):
            config = PipelineConfig(
                version=version, nli="precomputed", use_cache=False, engine=engine, **(PAPER_GRAPH | options)
            )
            assessor = FactReasoner(config)
            for line in path.read_text().splitlines():
                row = assessor.assess(json.loads(line)).model_dump(mode="json")
                row.pop("timings")
                row["engine"].pop("seconds")
                row["engine"]["details"].pop("components", None)
                # the `pipeline` settings group came after the saved rows (--pipeline, #25); an
                # output without it resumes as FactReasoner's, so it is not a change of result
                assert row["settings"].pop("pipeline", {"name": "factreasoner"}) == {"name": "factreasoner"}
                # `no_evidence` (#43) came after them too: it marks an atom no passage relates to,
                # which the saved rows show as an empty `evidence` list
                for atom in row["atoms"]:
                    if atom.pop("no_evidence", False):
                        assert atom["evidence"] == []
                # `k_rule` and `k_reason` (#51) came after them too: why K is what it is, not K
                assert (row.pop("k_rule"), row.pop("k_reason").split(":")[0]) == ("median", "--k median")
                rows.append(row)
    return rows


def _assert_same(actual, expected, where="row") -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and sorted(actual) == sorted(expected), where
        for key in expected:
            _assert_same(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            _assert_same(a, e, f"{where}[{i}]")
    elif isinstance(expected, float):
        assert actual == pytest.approx(expected, rel=1e-12, abs=1e-12), where
    else:
        assert actual == expected, where


@pytest.mark.parametrize("options", [{}, {"coherence": False}, {"coherence": False, "coherence_min_similarity": 0.9}])
def test_coherence_off_reproduces_the_output_before_it_existed(options) -> None:
    """The golden rows were written by the code before ``--coherence`` existed (commit 36e1bfc):
    every field, the settings (no coherence keys: the resume fingerprint is unchanged) and the
    counters are the same, to 1e-12."""
    expected = json.loads(GOLDEN.read_text())
    for row in expected:
        # the saved rows spell the tables `use_priors: false` and predate `contradictions`: the
        # same graph is today's `factor_tables paper`, `contradictions any`
        graph = row["settings"]["graph"]
        if "use_priors" in graph:
            graph["factor_tables"] = "priors" if graph.pop("use_priors") else "paper"
            graph.setdefault("contradictions", "any")
        # ... and predate `entailments` (#42), whose rule then was `any`
        graph.setdefault("entailments", "any")
        # the reviser's default prompt became v3 (#52); these records carry their atoms, so no
        # reviser runs and no result changes with it
        assert row["settings"]["models"]["reviser_prompt_version"] == "v2"
        row["settings"]["models"]["reviser_prompt_version"] = "v3"
        # ... and the topic rule of the reviser (#59) came after them, on by default: the same
        assert "topic_pronouns" not in row["settings"]["models"]
        row["settings"]["models"]["topic_pronouns"] = True
    actual = _stable_rows(**options)
    _assert_same(actual, expected)
