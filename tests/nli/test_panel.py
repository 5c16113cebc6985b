"""A panel of NLI judges (``--nli a,b``, :mod:`fact_reasoner.nli.panel`): the grammar of
``--nli``, the two ways verdicts combine, failures, the cache, and what the graph and the
output make of a panel's verdicts."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from fact_reasoner.graph.build import build_graph, plan_graph
from fact_reasoner.nli.base import NLIJudgement
from fact_reasoner.nli.cache import CachedNLI
from fact_reasoner.nli.panel import (
    OneJudge,
    PanelNLI,
    contradiction_first,
    entailment_given_no_contradiction,
    judge_alone,
    judge_distribution,
    product_of_experts,
)
from fact_reasoner.schema import Atom, Context, RelationType
from fact_reasoner.settings.config import PipelineConfig
from fact_reasoner.settings.fields import member_names
from fact_reasoner.settings.graph_options import GraphOptions
from fact_reasoner.settings.panel import PanelSpecError, parse_panel
from fact_reasoner.stages import check_judged, judge_plan

from .test_cascade import ScriptedJudge, p

KNOWN = ["auto", "llm", "align", "cross-encoder", "precomputed"]


# -- the grammar -------------------------------------------------------------------------------


def test_a_panel_is_read_member_by_member_and_written_canonically():
    panel = parse_panel(" cross-encoder=runs/v5@contradiction , cross-encoder@entailment", KNOWN)
    assert [(m.name, m.model, m.role) for m in panel.members] == [
        ("cross-encoder", "runs/v5", "contradiction"),
        ("cross-encoder", None, "entailment"),
    ]
    assert panel.combine == "roles" and panel.is_panel
    assert panel.spec == "cross-encoder=runs/v5@contradiction,cross-encoder@entailment"
    assert [m.label for m in panel.members] == ["cross-encoder=runs/v5", "cross-encoder"]
    assert parse_panel("cross-encoder,align", KNOWN).combine == "factors"
    single = parse_panel("cross-encoder", KNOWN)
    assert not single.is_panel and single.combine == "single" and single.spec == "cross-encoder"
    assert member_names("cross-encoder=x@entailment,align") == ["cross-encoder", "align"]


@pytest.mark.parametrize(
    "value, words",
    [
        ("cross-encoder,,align", "an empty judge name"),
        ("cross-encoder,auto", "auto cannot be on a panel"),
        ("precomputed,align", "precomputed cannot be on a panel"),
        ("cross-encoder,nope", "unknown judge 'nope'; choose from: llm, align, cross-encoder"),
        ("cross-encoder,cross-encoder", "cross-encoder is named twice"),
        ("cross-encoder@entailment,align@entailment", "no judge gives contradictions"),
        ("cross-encoder@contradiction", "no judge gives entailments"),
        ("cross-encoder@both,align", "unknown role @both"),
        ("cross-encoder=,align", "cross-encoder= names no model folder"),
    ],
)
def test_a_wrong_panel_is_refused_naming_the_part(value, words):
    with pytest.raises(PanelSpecError, match=words):
        parse_panel(value, KNOWN, ("auto", "precomputed"))


def test_a_one_name_value_keeps_its_settings_and_a_panel_is_written_canonically():
    assert PipelineConfig(nli="cross-encoder").settings()["models"]["nli"] == "cross-encoder"
    default = PipelineConfig().settings()["models"]
    assert default["nli"] == "auto" and "nli_auto" in default
    models = PipelineConfig(nli="cross-encoder , align").settings()["models"]
    assert models["nli"] == "cross-encoder,align"
    assert models["nli_sentences"] == "contradictions"  # an option of one of its judges is recorded
    assert "nli_cascade_band" not in models  # the cascade is not on the panel
    assert "nli_cascade_band" in PipelineConfig(nli="cascade,align").settings()["models"]


def test_nli_model_names_one_judge_of_a_panel_only():
    choice = PipelineConfig(nli="cross-encoder,llm", nli_model="some/dir").models.nli_choice
    assert [m.name for m in choice.judges] == ["cross-encoder", "llm"]
    with pytest.raises(ValueError, match="2 of its judges read a model folder"):
        PipelineConfig(nli="cross-encoder,align", nli_model="some/dir")
    with pytest.raises(ValueError, match="0 of its judges"):  # each named its own: it would be ignored
        PipelineConfig(nli="cross-encoder=a,align=b", nli_model="c")


# -- the two rules -----------------------------------------------------------------------------


def test_the_roles_rule_lets_a_sure_contradiction_decide_and_discounts_entailment_otherwise():
    sure = contradiction_first([0.83], [0.9])
    assert sure == pytest.approx({"contradiction": 0.9, "entailment": 0.1 * 0.83, "neutral": 0.1 * 0.17})
    unsure = contradiction_first([0.83], [0.2])
    assert unsure["entailment"] == pytest.approx(0.8 * 0.83) and unsure["contradiction"] == pytest.approx(0.2)
    means = contradiction_first([0.6, 1.0], [0.1, 0.3])  # several judges of a role: their mean
    assert means["contradiction"] == pytest.approx(0.2) and means["entailment"] == pytest.approx(0.8 * 0.8)
    assert sum(means.values()) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        contradiction_first([], [0.5])


def test_the_roles_rule_reads_no_contradiction_of_the_entailment_judge():
    # version 3's mistaken contradiction of "No mountain rises higher than Everest" is not read:
    # its entailment given no contradiction, 0.04 / 0.09, is what the panel weighs
    assert entailment_given_no_contradiction(p(0.04, 0.91)) == pytest.approx(0.04 / 0.09)
    assert entailment_given_no_contradiction({"entailment": 0.0, "neutral": 0.0, "contradiction": 1.0}) == 0.0
    # a judge trusted for both, alone, gives its own distribution back
    mine = p(0.6, 0.25)
    alone = contradiction_first([entailment_given_no_contradiction(mine)], [mine["contradiction"]])
    assert alone == pytest.approx(mine)


def test_the_product_of_experts_strengthens_agreement_and_weakens_disagreement():
    agree = product_of_experts([p(0.8, 0.1), p(0.7, 0.1)])
    assert agree["entailment"] > 0.8
    disagree = product_of_experts([p(0.8, 0.1), p(0.1, 0.8)])
    assert disagree["entailment"] == pytest.approx(disagree["contradiction"])
    assert product_of_experts([p(1.0, 0.0), p(0.0, 1.0)]) is None  # each certain of another label: no verdict
    # a judge without three probabilities: its probability on its label, the rest shared
    bare = NLIJudgement(RelationType.CONTRADICTION, 0.7)
    assert judge_distribution(bare) == pytest.approx({"entailment": 0.15, "neutral": 0.15, "contradiction": 0.7})


ENTAILER = {"moon": p(0.83, 0.05), "warsaw": p(0.9, 0.02), "both sure": p(0.9, 0.05)}
CONTRADICTER = {"moon": p(0.05, 0.9), "warsaw": p(0.4, 0.1), "both sure": p(0.85, 0.05)}


def _panel(spec: str, *answers: dict) -> PanelNLI:
    panel = parse_panel(spec, ["a", "b"])
    return PanelNLI(panel, [ScriptedJudge(m.name, a) for m, a in zip(panel.members, answers)])


def test_roles_panel_a_sure_contradiction_overrules_the_entailment_judge():
    panel = _panel("a@entailment,b@contradiction", ENTAILER, CONTRADICTER)
    moon, warsaw = panel.judge([("premise", "moon"), ("premise", "warsaw")])
    assert moon.label == RelationType.CONTRADICTION and moon.probability == pytest.approx(0.9)
    # the entailment judge's entailment given no contradiction: 0.9 / (0.9 + 0.08)
    assert warsaw.label == RelationType.ENTAILMENT and warsaw.probability == pytest.approx(0.9 * 0.9 / 0.98)
    assert moon.panel == "roles" and list(moon.judges) == ["a", "b"]
    assert moon.judges["a"].label == RelationType.ENTAILMENT  # each judge's own verdict is kept


def test_factors_panel_combines_by_product_and_each_judge_is_kept():
    panel = _panel("a,b", ENTAILER, CONTRADICTER)
    (both,) = panel.judge([("premise", "both sure")])
    assert both.label == RelationType.ENTAILMENT and both.probability > 0.9
    assert both.panel == "factors"


def test_a_judge_that_fails_fails_the_panels_verdict_with_its_reason():
    failing = {"moon": None, "warsaw": p(0.9, 0.0)}
    panel = _panel("a@entailment,b@contradiction", ENTAILER, failing)
    moon, warsaw = panel.judge([("premise", "moon"), ("premise", "warsaw")])
    assert moon.failed and moon.reason == "b: scripted failure" and moon.judges["a"].label == RelationType.ENTAILMENT
    assert not warsaw.failed


def test_judges_each_certain_of_another_label_fail_the_panels_verdict():
    """A product of 0 for every label was once read as uniform, then as an entailment at 1/3."""
    (pair,) = _panel("a,b", {"x": p(1.0, 0.0)}, {"x": p(0.0, 1.0)}).judge([("premise", "x")])
    assert pair.failed and "certain of a different label" in (pair.reason or "")


class _TwoWay(ScriptedJudge):
    """A checker that says supported (s) or not, never contradicted (nli.base.two_way)."""

    two_way = True


def test_a_two_way_judge_neither_invents_nor_vetoes_a_contradiction():
    """In a product, a two-way judge's P(C) = 0 means "not said": a sure contradiction of the
    three-way judge stands (it was once turned into neutral 0.70), weakened where the checker
    finds support."""
    sure = {"x": p(0.01, 0.98)}
    panel = PanelNLI(parse_panel("a,b", ["a", "b"]), [ScriptedJudge("a", sure), _TwoWay("b", {"x": p(0.3, 0.0)})])
    (pair,) = panel.judge([("premise", "x")])
    assert pair.label == RelationType.CONTRADICTION and pair.probability > 0.95
    # alone, the checker never says contradicted
    assert judge_distribution(NLIJudgement.from_probabilities(p(0.3, 0.0)), two_way=True) == pytest.approx(
        {"entailment": 0.3, "neutral": 0.7, "contradiction": 0.7}
    )


def test_a_roles_panel_whose_contradictions_would_come_from_a_two_way_judge_is_refused():
    from fact_reasoner.errors import SetupError

    with pytest.raises(SetupError, match="no judge of the panel gives contradictions"):
        PanelNLI(parse_panel("a@entailment,b", ["a", "b"]), [ScriptedJudge("a", {}), _TwoWay("b", {})])
    # a role-less two-way judge beside a contradiction judge gives entailments only: c is the other's
    panel = PanelNLI(
        parse_panel("a@contradiction,b", ["a", "b"]),
        [ScriptedJudge("a", {"x": p(0.01, 0.98)}), _TwoWay("b", {"x": p(0.9, 0.0)})],
    )
    (pair,) = panel.judge([("premise", "x")])
    assert pair.label == RelationType.CONTRADICTION and pair.probability == pytest.approx(0.98)


def test_a_panel_reads_a_hypothesis_whole_only_when_every_judge_does():
    from fact_reasoner.nli.base import reads_whole

    class Short(ScriptedJudge):
        def reads_hypothesis(self, text: str) -> bool:
            return len(text) < 10

    panel = PanelNLI(parse_panel("a,b", ["a", "b"]), [ScriptedJudge("a", {}), Short("b", {})])
    assert reads_whole(panel, "short") and not reads_whole(panel, "a longer hypothesis")
    assert not reads_whole(CachedNLI(OneJudge(panel, "a"), None), "a longer hypothesis")


class _Unreachable:
    name = "down"
    identity = "down"

    def judge(self, pairs: Sequence[tuple[str, str]]) -> list[NLIJudgement]:
        return [NLIJudgement.failure("connection refused", transport=True, unreachable=True) for _ in pairs]


def test_a_judge_that_cannot_be_asked_fails_the_record_as_a_single_judge_would():
    panel = PanelNLI(parse_panel("a,b", ["a", "b"]), [ScriptedJudge("a", ENTAILER), _Unreachable()])
    atoms, contexts = [Atom(id="a0", text="moon")], [Context(id="c0", text="premise")]
    plan = plan_graph(atoms, contexts, 2)
    judged = judge_plan(plan, panel)
    assert judged.call_failures and judged.call_failures[0].unreachable
    with pytest.raises(Exception, match="could not be judged"):
        check_judged(judged, len(plan.pairs), 0.0)


# -- the graph and the output ------------------------------------------------------------------


def test_factors_give_each_judge_its_own_factor_on_an_atoms_passage():
    atoms = [Atom(id="a0", text="moon"), Atom(id="a1", text="warsaw")]
    contexts = [Context(id="c0", text="premise"), Context(id="c1", text="other premise")]
    plan = plan_graph(atoms, contexts, 3)
    panel = _panel(
        "a,b",
        ENTAILER | {"other premise": p(0.2, 0.1), "premise": p(0.2, 0.1)},
        CONTRADICTER | {"other premise": p(0.1, 0.2), "premise": p(0.1, 0.2)},
    )
    judged = judge_plan(plan, panel)
    on_atoms = [r for r in judged.relations if r.target in ("a0", "a1")]
    assert len(on_atoms) == 2 * 4 and {r.judge for r in on_atoms} == {"a", "b"}  # a relation per judge
    between = [r for r in judged.relations if r.target in ("c0", "c1")]
    assert len(between) == 2 and {r.judge for r in between} == {None}  # context pairs: the panel's verdict
    built = build_graph(
        plan,
        judged.relations,
        GraphOptions(version=3, min_relation_probability=0.0, contradictions="any", entailments="any"),
    )
    moon = [f for f in built.factor_relations if f.target == "a0" and f.source == "c0"]
    assert sorted((f.judge, f.relation.value) for f in moon) == [("a", "entailment"), ("b", "contradiction")]
    assert built.missing_pairs == 0  # four judged atom pairs, not eight
    # each judge alone: one relation per pair, the judge's own
    alone = judge_alone(judged.relations, "b")
    assert len([r for r in alone if r.target == "a0"]) == 2
    assert next(r for r in alone if (r.source, r.target) == ("c0", "a0")).relation == RelationType.CONTRADICTION


def test_the_cache_keeps_each_judges_verdict(tmp_path):
    from fact_reasoner.cache import ModelCache

    panel = _panel("a@entailment,b@contradiction", ENTAILER, CONTRADICTER)
    cache = ModelCache.in_dir(tmp_path)
    (first,) = CachedNLI(panel, cache).judge([("premise", "moon")])
    (again,) = CachedNLI(_panel("a@entailment,b@contradiction", {}, {}), cache, identity=panel.identity).judge(
        [("premise", "moon")]
    )
    assert again.label == first.label and again.panel == "roles"
    assert {k: (v.label, v.probability) for k, v in again.judges.items()} == {
        k: (v.label, v.probability) for k, v in first.judges.items()
    }


def test_one_judge_of_a_panel_gives_that_judges_verdicts():
    panel = _panel("a,b", ENTAILER, CONTRADICTER)
    (moon,) = OneJudge(panel, "b").judge([("premise", "moon")])
    assert moon.label == RelationType.CONTRADICTION and moon.judges is None


def test_a_wrapper_is_batch_invariant_when_every_judge_it_asks_is():
    """The pair cache and a panel say what their judges say (the progress bar's chunks and
    serve's merging ask): a cached one-item-per-run judge is invariant, a cached batching one not."""
    from fact_reasoner.nli.base import batch_invariant

    class OneItem(ScriptedJudge):
        items_per_run = 1

    assert batch_invariant(CachedNLI(OneItem("a", {}), None))
    assert not batch_invariant(CachedNLI(ScriptedJudge("a", {}), None))
    panel = PanelNLI(parse_panel("a,b", ["a", "b"]), [CachedNLI(OneItem("a", {}), None), ScriptedJudge("b", {})])
    assert not batch_invariant(panel) and not batch_invariant(OneJudge(panel, "a"))
