"""--nli-mode all|fast (fact_reasoner.graph.pair_selection): which NLI pairs are judged.

The constructed record (window 1, plan order a0 a1 a2 a3):

    context  text                                   retrieved by
    c0       Marie Curie was a physicist.           a0
    c1       Marie Curie was born in Warsaw.        a1
    c2       Curie won two Nobel Prizes.            a2
    c3       Pierre Curie married Marie in 1895.    a3
    c4       Curie is a famous scientist.           nobody (a question context)
    c5       marie curie WAS a physicist!           a3   -> near-duplicate of c0 (merged)
    c6       Marie Curie was born in Warsaw.        a2   -> exact duplicate of c1 (plan_graph)

So c0 is owned by {a0, a3}, c1 by {a1, a2}, c2 by {a2}, c3 by {a3}, c4 by nobody. FR2 after
exact deduplication has 4 atoms × 6 contexts = 24 pairs; merging c5 into c0 leaves 4 × 5 = 20
(nli_pruned_duplicate = 4). Of those 20, by hand:

    own        a0c0 a1c1 a2c1 a2c2 a3c0 a3c3                     6
    unowned    a0c4 a1c4 a2c4 a3c4                               4
    neighbour  a0c1 (a1) a1c0 (a0) a1c2 (a2) a2c0 (a3) a2c3 (a3)
               a3c1 (a2) a3c2 (a2)                               7
    gate       a0c2 (|0−2| = 2), a0c3 (3), a1c3 (2)               3

With cosines a0·c2 = 0.8, a0·c3 = 0.1, a1·c3 = 0.5 and threshold 0.5, a0c2 and a1c3 pass
(≥, the boundary counts) and a0c3 is pruned: 6 + 4 + 7 + 2 = 19 judged, 1 pruned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from fact_reasoner import FactReasoner, PipelineConfig
from fact_reasoner.graph.build import plan_graph
from fact_reasoner.graph.pair_selection import (
    PairSelection,
    Similarities,
    embedding_similarities,
    lexical_similarities,
    merge_near_duplicates,
    normalised_words,
    reverse_needed,
    reverse_pairs_needed,
    select_pairs,
)
from fact_reasoner.inference import BruteForceEngine
from fact_reasoner.nli import NLIJudgement, PrecomputedNLI
from fact_reasoner.schema import Atom, Context, Relation
from fact_reasoner.stages import judge_and_infer

CONTEXT_TEXTS = {
    "c0": "Marie Curie was a physicist.",
    "c1": "Marie Curie was born in Warsaw.",
    "c2": "Curie won two Nobel Prizes.",
    "c3": "Pierre Curie married Marie in 1895.",
    "c4": "Curie is a famous scientist.",
    "c5": "marie curie WAS a physicist!",
    "c6": "Marie Curie was born in Warsaw.",
}
ATOM_TEXTS = {
    "a0": "Curie was a physicist.",
    "a1": "Curie was born in Warsaw.",
    "a2": "Curie won the Nobel Prize.",
    "a3": "Curie married Pierre Curie.",
}
OWN = {"a0": ["c0"], "a1": ["c1"], "a2": ["c2", "c6"], "a3": ["c3", "c5"]}


def _atoms() -> list[Atom]:
    return [Atom(id=i, text=t, contexts=OWN[i]) for i, t in ATOM_TEXTS.items()]


def _contexts() -> list[Context]:
    return [Context(id=i, text=t) for i, t in CONTEXT_TEXTS.items()]


def _similarities(plan, atom_context: dict[tuple[str, str], float], context_context: float = 0.9) -> Similarities:
    """0 for every atom–context pair but those given; ``context_context`` for every context pair."""
    atoms = [a.id for a in plan.atoms]
    contexts = [c.id for c in plan.contexts]
    ac = np.zeros((len(atoms), len(contexts)))
    for (a, c), value in atom_context.items():
        ac[atoms.index(a), contexts.index(c)] = value
    cc = np.full((len(contexts), len(contexts)), context_context)
    return Similarities(ac, cc)


GATE = {("a0", "c2"): 0.8, ("a0", "c3"): 0.1, ("a1", "c3"): 0.5}


def test_fast_fr2_prunes_exactly_the_pairs_worked_out_by_hand():
    atoms, contexts = _atoms(), _contexts()
    plan = plan_graph(atoms, contexts, version=2)
    assert [c.id for c in plan.contexts] == ["c0", "c1", "c2", "c3", "c4", "c5"]  # c6: exact duplicate
    selection = select_pairs(plan, atoms, _similarities(plan, GATE), mode="fast", threshold=0.5)
    judged = set(selection.plan.pairs)
    all_pairs = {(c, a) for a in ATOM_TEXTS for c in ["c0", "c1", "c2", "c3", "c4"]}
    assert all_pairs - judged == {("c3", "a0")}
    assert judged <= all_pairs  # c5 is never judged: it was merged into c0
    assert selection.counts == {
        "nli_pairs_all": 24,
        "nli_merged_contexts": 1,
        "nli_pruned_duplicate": 4,
        "nli_kept_own": 6,
        "nli_kept_unowned": 4,
        "nli_kept_neighbour": 7,
        "nli_kept_similar": 2,
        "nli_pruned_similarity": 1,
    }
    # every pair `all` would judge is either judged or counted by the reason it was not
    pruned = sum(n for k, n in selection.counts.items() if k.startswith("nli_pruned_"))
    assert len(selection.plan.pairs) + pruned == selection.counts["nli_pairs_all"]
    assert selection.merged_contexts == {"c0": ["c5"]}
    assert selection.plan.context_duplicates == {"c6": "c1", "c5": "c0"}
    # the order of the survivors is the order `all` lists them in (atom-major)
    assert list(selection.plan.pairs) == [p for p in plan.pairs if p in judged]


def test_window_zero_leaves_neighbours_to_the_gate():
    """With no neighbour window the 7 neighbour pairs are gated; their cosine is 0 → pruned."""
    atoms, contexts = _atoms(), _contexts()
    plan = plan_graph(atoms, contexts, version=2)
    selection = select_pairs(plan, atoms, _similarities(plan, GATE), mode="fast", threshold=0.5, neighbour_window=0)
    assert selection.counts["nli_kept_neighbour"] == 0
    assert selection.counts["nli_pruned_similarity"] == 1 + 7


def test_all_mode_returns_the_plan_unchanged():
    atoms, contexts = _atoms(), _contexts()
    for version in (1, 2, 3):
        plan = plan_graph(atoms, contexts, version=version)
        selection = select_pairs(plan, atoms, None, mode="all", threshold=0.5)
        assert selection.plan is plan and selection.deferred_reverse == () and selection.counts == {}


def test_fast_leaves_fr1_alone():
    atoms, contexts = _atoms(), _contexts()
    plan = plan_graph(atoms, contexts, version=1)
    assert select_pairs(plan, atoms, None, mode="fast", threshold=0.5).plan is plan


def test_atoms_without_context_lists_own_nothing_so_every_context_is_judged():
    """A record whose atoms list no contexts: every context is 'unowned', fast judges all pairs."""
    atoms = [Atom(id=i, text=t) for i, t in ATOM_TEXTS.items()]
    contexts = [Context(id=i, text=t) for i, t in CONTEXT_TEXTS.items() if i not in ("c5", "c6")]
    plan = plan_graph(atoms, contexts, version=2)
    selection = select_pairs(plan, atoms, _similarities(plan, {}), mode="fast", threshold=0.5)
    assert selection.plan.pairs == plan.pairs
    assert selection.counts["nli_kept_unowned"] == 20 and selection.counts["nli_pruned_similarity"] == 0


def test_a_dropped_duplicate_atom_lends_its_contexts_to_the_kept_one():
    atoms = [Atom(id="a0", text="X.", contexts=["c0"]), Atom(id="a1", text="X.", contexts=["c1"])]
    contexts = [Context(id="c0", text="first"), Context(id="c1", text="second")]
    plan = plan_graph(atoms, contexts, version=2)
    sims = Similarities(np.zeros((1, 2)), np.zeros((2, 2)))
    selection = select_pairs(plan, atoms, sims, mode="fast", threshold=0.5, neighbour_window=0)
    assert set(selection.plan.pairs) == {("c0", "a0"), ("c1", "a0")}


def test_bad_inputs_fail_clearly():
    atoms, contexts = _atoms(), _contexts()
    plan = plan_graph(atoms, contexts, version=2)
    with pytest.raises(ValueError, match="needs the similarities"):
        select_pairs(plan, atoms, None, mode="fast", threshold=0.5)
    with pytest.raises(ValueError, match=r"expected \(4, 6\) and \(6, 6\)"):
        select_pairs(plan, atoms, Similarities(np.zeros((4, 5)), np.zeros((5, 5))), mode="fast", threshold=0.5)
    stray = [*atoms[:3], Atom(id="a3", text=ATOM_TEXTS["a3"], contexts=["c9"])]
    with pytest.raises(ValueError, match="'a3' lists unknown context 'c9'"):
        select_pairs(plan, stray, _similarities(plan, {}), mode="fast", threshold=0.5)


# -- near duplicates -------------------------------------------------------------------------


def test_near_duplicates_are_the_same_words_in_the_same_order():
    assert normalised_words("Ｍarie  CURIE, (physicist).") == "marie curie physicist"  # NFKC folds the wide M
    kept, merged = merge_near_duplicates(
        [
            Context(id="k", text="Curie was born in 1867."),
            Context(id="m", text="curie was born in 1867"),
            Context(id="date", text="Curie was born in 1868."),  # one word differs: not merged
            Context(id="order", text="In 1867 Curie was born."),  # same words, other order: not merged
        ]
    )
    assert [c.id for c in kept] == ["k", "date", "order"] and merged == {"m": "k"}


def test_an_exact_duplicate_of_a_merged_context_points_at_the_kept_one():
    atoms = [Atom(id="a0", text="Curie was a physicist.", contexts=["c0", "c1", "c2"])]
    contexts = [
        Context(id="c0", text="Curie, physicist."),
        Context(id="c1", text="curie physicist"),
        Context(id="c2", text="curie physicist"),  # exact duplicate of c1
    ]
    plan = plan_graph(atoms, contexts, version=2)
    selection = select_pairs(plan, atoms, Similarities(np.zeros((1, 2)), np.zeros((2, 2))), mode="fast", threshold=0.5)
    assert selection.plan.context_duplicates == {"c2": "c0", "c1": "c0"}
    assert selection.plan.pairs == (("c0", "a0"),)
    assert selection.plan.texts["c2"] == "Curie, physicist."


# -- the similarity gates --------------------------------------------------------------------


def test_embedding_similarities_are_the_cosines_of_the_unit_vectors():
    """a = (1, 0); c0 = (0.8, 0.6) → cos 0.8; c1 = (0, 1) → cos 0; c0·c1 = 0.6."""
    sims = embedding_similarities(np.array([[1.0, 0.0]]), np.array([[0.8, 0.6], [0.0, 1.0]]))
    np.testing.assert_allclose(sims.atom_context, [[0.8, 0.0]])
    np.testing.assert_allclose(sims.context_context, [[1.0, 0.6], [0.6, 1.0]])


def test_lexical_similarity_is_the_jaccard_of_word_sets():
    """{curie, was, born} vs {curie, died}: 1 shared of 4 → 0.25."""
    sims = lexical_similarities(["Curie was born."], ["curie died", ""])
    np.testing.assert_allclose(sims.atom_context, [[0.25, 0.0]])
    np.testing.assert_allclose(np.diag(sims.context_context), [1.0, 0.0])


# -- the reverse direction -------------------------------------------------------------------


def _rel(source: str, target: str, relation: str, p: float = 0.9, failed: bool = False) -> Relation:
    return Relation(source=source, target=target, relation=relation, probability=p, failed=failed)


def test_reverse_is_judged_only_after_entailment_or_no_usable_judgement():
    assert reverse_needed(_rel("x", "y", "entailment"))  # an equivalence is possible
    assert reverse_needed(_rel("x", "y", "neutral", failed=True))  # the reverse is the only evidence
    assert reverse_needed(None)
    assert not reverse_needed(_rel("x", "y", "contradiction"))  # symmetric: same kind of factor
    assert not reverse_needed(_rel("x", "y", "neutral"))


def test_fast_fr3_orders_each_context_pair_longer_first_and_gates_them():
    atoms, contexts = _atoms(), _contexts()
    plan = plan_graph(atoms, contexts, version=3)
    sims = _similarities(plan, GATE, context_context=0.9)
    ids = [c.id for c in plan.contexts]
    for x, y in (("c2", "c4"), ("c4", "c2")):  # one context pair under the gate
        sims.context_context[ids.index(x), ids.index(y)] = 0.2
    selection = select_pairs(plan, atoms, sims, mode="fast", threshold=0.5)
    # 5 contexts after the merge → 10 unordered pairs; c2–c4 gated away (both directions counted)
    assert selection.counts["nli_pruned_context_similarity"] == 2
    assert len(selection.deferred_reverse) == 9
    forward = {f for f, _ in selection.deferred_reverse}
    # c3 (35 characters) is longer than c0 (28): it is the first premise
    assert ("c3", "c0") in forward and ("c0", "c3") not in forward
    assert all(len(CONTEXT_TEXTS[p]) >= len(CONTEXT_TEXTS[h]) for p, h in forward)
    assert selection.counts["nli_pairs_all"] == 4 * 6 + 6 * 5
    assert selection.counts["nli_pruned_duplicate"] == (4 * 6 + 6 * 5) - (4 * 5 + 5 * 4)
    relations = [_rel("c3", "c0", "entailment"), _rel("c1", "c0", "contradiction"), _rel("c1", "c2", "neutral")]
    needed = reverse_pairs_needed(relations, selection.deferred_reverse)
    # c3→c0 entailment: reverse judged; c1→c0 contradiction and c1→c2 neutral: not; the six
    # pairs with no relation at all: judged
    assert ("c0", "c3") in needed and ("c0", "c1") not in needed and ("c2", "c1") not in needed
    assert len(needed) == 1 + 6


# -- through the pipeline ----------------------------------------------------------------------


class TableJudge:
    """A scripted NLI backend: a fixed verdict per (premise, hypothesis) text pair, neutral
    (0.9) otherwise; it records every pair it was asked about."""

    name = identity = "table-judge"

    def __init__(self, verdicts: dict[tuple[str, str], tuple[str, float]]):
        self.verdicts = verdicts
        self.asked: list[tuple[str, str]] = []

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        self.asked += list(pairs)
        out = []
        for pair in pairs:
            label, p = self.verdicts.get(pair, ("neutral", 0.9))
            rest = (1 - p) / 2
            probs = {"entailment": rest, "contradiction": rest, "neutral": rest} | {label: p}
            out.append(NLIJudgement.from_probabilities(probs))
        return out


class VectorEmbedder:
    """A fake sentence embedder with known unit vectors per text (cosines worked out below)."""

    def __init__(self, vectors: dict[str, Sequence[float]]):
        self.vectors = vectors

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([self.vectors[t] for t in texts], dtype=float).reshape(len(texts), -1)


def _unit(angle_cos: float) -> tuple[float, float]:
    return (angle_cos, math.sqrt(1 - angle_cos**2))


#: every text on (1, 0) except c2 and c3: a0 = (1, 0); c2 = (0.8, 0.6); c3 = (0.1, 0.995);
#: a1 = (0.6, 0.8) so a1·c3 = 0.06 + 0.796 = 0.856; a0·c3 = 0.1 (pruned at 0.35)
VECTORS = {t: (1.0, 0.0) for t in [*CONTEXT_TEXTS.values(), *ATOM_TEXTS.values()]} | {
    CONTEXT_TEXTS["c2"]: (0.8, 0.6),
    CONTEXT_TEXTS["c3"]: _unit(0.1),
    ATOM_TEXTS["a1"]: (0.6, 0.8),
}


def _record() -> dict:
    return {
        "input": "Tell me about Marie Curie.",
        "output": " ".join(ATOM_TEXTS.values()),
        "atoms": [{"id": a.id, "text": a.text, "contexts": a.contexts} for a in _atoms()],
        "contexts": [{"id": c.id, "text": c.text} for c in _contexts()],
    }


VERDICTS = {
    (CONTEXT_TEXTS["c0"], ATOM_TEXTS["a0"]): ("entailment", 0.95),
    (CONTEXT_TEXTS["c1"], ATOM_TEXTS["a1"]): ("entailment", 0.9),
    (CONTEXT_TEXTS["c3"], ATOM_TEXTS["a0"]): ("entailment", 0.8),  # the pair fast prunes
    (CONTEXT_TEXTS["c0"], CONTEXT_TEXTS["c2"]): ("entailment", 0.7),
    (CONTEXT_TEXTS["c2"], CONTEXT_TEXTS["c0"]): ("entailment", 0.6),
    (CONTEXT_TEXTS["c1"], CONTEXT_TEXTS["c2"]): ("contradiction", 0.8),
}


def _assess(version: int, **options):
    judge = TableJudge(VERDICTS)
    config = PipelineConfig(version=version, nli="cross-encoder", use_cache=False, **options)
    assessor = FactReasoner(config, nli=judge, engine=BruteForceEngine(), embedder=VectorEmbedder(VECTORS))
    return assessor.assess(_record()), judge


def test_all_is_the_plan_and_posteriors_from_before_the_setting():
    """`--nli-mode all` (and IBM's `all_pairs`) judges plan_graph's pairs in plan_graph's order and
    gives bit-identical posteriors to judging and inferring that plan directly (the path from
    before pair selection existed); the settings, hence resume fingerprints, are unchanged."""
    for version in (2, 3):
        plan = plan_graph(_atoms(), _contexts(), version=version)
        direct_judge = TableJudge(VERDICTS)
        direct = judge_and_infer(plan, direct_judge, BruteForceEngine())
        for mode in ("all", "all_pairs"):
            result, judge = _assess(version, nli_mode=mode)
            texts = plan.texts
            assert judge.asked == [(texts[p], texts[h]) for p, h in plan.pairs]
            assert {a.id: a.probability for a in result.atoms} == {
                a: float(direct.inference.marginals[a]) for a in ("a0", "a1", "a2", "a3")
            }
            assert result.counters["nli_pairs"] == len(plan.pairs)
            assert not any(k.startswith(("nli_pruned", "nli_kept")) for k in result.counters)
            assert "nli_mode" not in result.settings["models"]
    assert PipelineConfig(nli_mode="all").settings() == PipelineConfig().settings()


def test_fast_fr2_through_the_pipeline_judges_fewer_pairs_and_counts_them():
    result, judge = _assess(2, nli_mode="fast", nli_gate_threshold=0.35)
    asked = set(judge.asked)
    assert (CONTEXT_TEXTS["c3"], ATOM_TEXTS["a0"]) not in asked  # cos 0.1 < 0.35, nobody near owns c3
    assert (CONTEXT_TEXTS["c3"], ATOM_TEXTS["a1"]) in asked  # cos 0.856
    assert CONTEXT_TEXTS["c5"] not in {p for p, _ in judge.asked}  # merged into c0
    assert len(judge.asked) == 19 == result.counters["nli_pairs"]
    assert result.counters["nli_pruned_similarity"] == 1 and result.counters["nli_pruned_duplicate"] == 4
    assert "nli_pruned_reverse" not in result.counters  # FR2 has no context pairs
    assert result.merged_contexts == {"c0": ["c5"]}  # type: ignore[attr-defined]
    assert result.settings["models"]["nli_mode"] == "fast"
    # the pruned pair was an entailment (0.8) of a0 by c3: with all, a0 has two supports, fast one
    everything, _ = _assess(2)
    assert [e.context for e in everything.atoms[0].evidence] == ["c0", "c3"]
    assert [e.context for e in result.atoms[0].evidence] == ["c0"]


def test_fast_fr3_judges_the_reverse_only_after_an_entailment():
    result, judge = _assess(3, nli_mode="fast", nli_gate_threshold=0.35)
    asked = judge.asked
    c = CONTEXT_TEXTS
    # c0 (28 characters) is longer than c2 (27): c0→c2 first; an entailment, so c2→c0 is judged
    assert (c["c0"], c["c2"]) in asked and (c["c2"], c["c0"]) in asked
    assert (c["c1"], c["c2"]) in asked and (c["c2"], c["c1"]) not in asked  # contradiction → not
    # context pairs after the merge: 10 unordered. Cosines: c0, c1, c4 = (1, 0), c2 = (0.8, 0.6),
    # c3 = (0.1, 0.995): c0·c3 = c1·c3 = c4·c3 = 0.1 < 0.35 → 3 gated away (6 directions);
    # c2·c3 = 0.08 + 0.597 = 0.677 passes. 7 judged forward, 1 reverse (after the entailment),
    # 6 reverses skipped (neutral or contradiction forward)
    assert result.counters["nli_pruned_context_similarity"] == 6
    assert result.counters["nli_pruned_reverse"] == 6
    assert len(asked) == result.counters["nli_pairs"] == 19 + 7 + 1
    pruned = sum(v for k, v in result.counters.items() if k.startswith("nli_pruned_"))
    assert result.counters["nli_pairs"] + pruned == result.counters["nli_pairs_all"] == 4 * 6 + 6 * 5
    assert result.counters["missing_pairs"] == 0
    # c0→c2 and c2→c0 both entailments: one equivalence factor (winning probability 0.7); the
    # c1→c2 contradiction stays a factor without its reverse
    config = PipelineConfig(version=3, nli="cross-encoder", use_cache=False, nli_mode="fast", nli_gate_threshold=0.35)
    assessor = FactReasoner(config, nli=TableJudge(VERDICTS), embedder=VectorEmbedder(VECTORS))
    context_factors = {
        (f.source, f.target, f.relation.value, round(f.probability, 6))
        for f in assessor.build(_record()).built.factor_relations
        if f.target.startswith("c")
    }
    assert context_factors == {("c0", "c2", "equivalence", 0.7), ("c1", "c2", "contradiction", 0.8)}


def test_the_ibm_mode_name_and_the_flags():
    from fact_reasoner.settings.cli_options import config_flags

    assert PipelineConfig(nli_mode="all_pairs").models.nli_mode == "all"
    flags = {f.dest: f for f in config_flags()}
    assert "--nli-mode" in flags["nli_mode"].flags and "--nli-gate-threshold" in flags["nli_gate_threshold"].flags
    fast = PipelineConfig(nli_mode="fast").settings()["models"]
    assert {k: fast[k] for k in ("nli_mode", "nli_gate", "nli_neighbour_window")} == {
        "nli_mode": "fast",
        "nli_gate": "embedding",
        "nli_neighbour_window": 1,
    }


def test_precomputed_relations_with_fast_judge_only_the_selected_pairs():
    """A record's own relations are looked up, not judged; fast still lists fewer pairs and the
    pairs it skips are not counted as missing."""
    atoms, contexts = _atoms(), _contexts()
    plan = plan_graph(atoms, contexts, version=2)
    selection: PairSelection = select_pairs(plan, atoms, _similarities(plan, GATE), mode="fast", threshold=0.5)
    relations = [Relation(source=p, target=h, relation="neutral", probability=0.9) for p, h in plan.pairs]
    reasoning = judge_and_infer(selection.plan, PrecomputedNLI(relations, plan.texts), BruteForceEngine())
    assert reasoning.built.missing_pairs == 0 and len(reasoning.judged.relations) == 19
