"""FActScore on the bundled Eiffel Tower example, with a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import math

import pytest
from pydantic import ValidationError

from fact_reasoner.errors import RecordFailed
from fact_reasoner.llm.testing import ScriptedServer
from fact_reasoner.pipelines import make_pipeline
from fact_reasoner.pipelines.factscore import parse_true_false
from fact_reasoner.report.rows import assessor_name
from fact_reasoner.settings.config import PipelineConfig
from tests.helpers import REPO_ROOT
from tests.pipelines.scripted import eiffel, free_port, prompts, served_config

TOWER_BUILT = "The tower was built between 1887 and 1889"  # c_a0_0
WROUGHT_IRON = "The wrought-iron lattice tower"  # c_a2_0


def test_one_true_or_false_question_per_atom_with_its_own_passages():
    """Atoms a0, a1, a4 list c_a0_0; a2, a3 list c_a2_0. Replies T, T, T, F, F:
    S = 3 of n = 5, precision = 3 / 5 = 0.6; K = half = max(5 // 2, 1) = 2, R@2 = min(3/2, 1) = 1,
    F1@2 = 2·0.6·1 / 1.6 = 0.75."""
    record = eiffel()
    with ScriptedServer(["True", "True.", "true", "False", "False, it was 1889."]) as server:
        pipeline = make_pipeline(served_config("factscore", server.base_url))
        result = pipeline.assess(record, k="half")
    sent = prompts(server)
    assert len(sent) == 5
    for prompt, atom in zip(sent, record.atoms or []):
        assert prompt.endswith(f"Input: {atom.text} True or False?\nOutput:")
        assert "about Eiffel Tower" in prompt
    for i in (0, 1, 4):
        assert TOWER_BUILT in sent[i] and WROUGHT_IRON not in sent[i]
    for i in (2, 3):
        assert WROUGHT_IRON in sent[i] and TOWER_BUILT not in sent[i]
    assert result.factuality_score == pytest.approx(0.6)
    assert (result.k, result.recall_k, result.f1_k) == (2, 1.0, pytest.approx(0.75))
    assert [a.prediction.value for a in result.atoms] == ["S", "S", "S", "NS", "NS"]
    assert [a.probability for a in result.atoms] == [1.0, 1.0, 1.0, 0.0, 0.0]
    a4 = result.atoms[4].model_dump()
    assert a4["judgement"] == "unsupported"
    assert a4["evidence_ids"] == ["c_a0_0"]
    assert a4["raw_judgement"] == "False, it was 1889."
    assert a4["model_calls"] == a4["llm_calls"] == 1
    assert result.counters["pipeline_llm_calls"] == 5
    assert result.counters["llm_calls"] == 5
    assert result.counters["failed_atoms"] == 0
    assert result.settings["pipeline"] == {"name": "factscore", "judge": "llm"}
    assert result.num_contexts == 2


def test_an_unreadable_answer_is_asked_again_then_the_atom_fails_and_is_counted():
    """a1 answers 'maybe' then 'no idea' (neither True nor False): failed, left out of the scores.
    The others: a0 T, a2 T, a3 F, a4 F → precision = 2 / 4 = 0.5 (not 2/5 nor 3/5)."""
    with ScriptedServer(["True", "maybe", "no idea", "True", "False", "False"]) as server:
        result = make_pipeline(served_config("factscore", server.base_url)).assess(eiffel(), k="half")
    bodies = [r["body"] for r in server.requests]
    assert len(bodies) == 6
    assert bodies[1]["messages"] == bodies[2]["messages"]  # the retry asks the same question
    assert (bodies[1]["seed"], bodies[1]["temperature"]) == (42, 0.0)
    assert (bodies[2]["seed"], bodies[2]["temperature"]) == (43, 0.7)
    assert result.factuality_score == pytest.approx(0.5)
    assert [a.id for a in result.atoms] == ["a0", "a2", "a3", "a4"]
    row = result.model_dump(mode="json")
    (failed,) = row["failed_atoms"]
    assert failed["id"] == "a1" and failed["judgement"] == "failed"
    assert failed["raw_judgement"] == "no idea" and failed["llm_calls"] == 2
    assert "neither True nor False" in failed["failure"]
    assert result.counters["failed_atoms"] == 1
    assert result.counters["pipeline_llm_calls"] == 6


def test_a_record_whose_every_answer_is_unreadable_fails():
    with ScriptedServer(["I cannot say"]) as server:
        pipeline = make_pipeline(served_config("factscore", server.base_url))
        with pytest.raises(RecordFailed, match="every one of the 5 claim"):
            pipeline.assess(eiffel())
    assert len(server.requests) == 10  # each atom asked twice


def test_a_server_that_is_down_fails_the_record_as_unreachable():
    pipeline = make_pipeline(served_config("factscore", f"http://127.0.0.1:{free_port()}/v1"))
    with pytest.raises(RecordFailed, match="factscore: the language model could not be asked") as caught:
        pipeline.assess(eiffel())
    assert caught.value.unreachable


def test_the_nli_judge_takes_the_largest_entailment_probability_of_the_atoms_passages():
    """The record's own relations (--nli auto): a0 ent 0.95, a1 ent 0.9, a2 ent 0.96, a3 ent
    0.92 → S; a4 is contradicted by c_a0_0 (P(ent) = (1 − p)/2 < 0.5) → NS. Precision 4/5."""
    record = eiffel()
    a4_relation = next(r for r in record.relations or [] if r.target == "a4")
    assert a4_relation.relation.value == "contradiction"
    pipeline = make_pipeline(served_config("factscore", "http://127.0.0.1:9/v1", pipeline_judge="nli"))
    result = pipeline.assess(record, k="half")
    assert result.factuality_score == pytest.approx(0.8)
    assert [round(a.probability, 3) for a in result.atoms] == [
        0.95,
        0.9,
        0.96,
        0.92,
        round((1 - a4_relation.probability) / 2, 3),
    ]
    assert result.counters["pipeline_llm_calls"] == 0 and result.counters["pipeline_nli_pairs"] == 5
    assert result.atoms[0].model_dump()["raw_judgement"].startswith("max P(entailment) = 0.950 (c_a0_0)")
    assert result.settings["pipeline"] == {"name": "factscore", "judge": "nli"}


def test_a_record_without_passages_is_not_scored_and_the_model_is_not_asked():
    """No evidence, no score: scored, the claim would be NS and the record's precision 0 for
    nothing checked."""
    from fact_reasoner.errors import NoEvidence

    record = eiffel(contexts=[], relations=None, atoms=[{"id": "a0", "text": "The Eiffel Tower is in Paris."}])
    with ScriptedServer(["True"]) as server:
        with pytest.raises(NoEvidence, match="no retriever is set"):
            make_pipeline(served_config("factscore", server.base_url)).assess(record)
    assert server.requests == []


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("True", True),
        ("false.", False),
        ("It is TRUE, not false", True),
        ("False - true would be wrong", False),
        ("yes", None),
    ],
)
def test_true_or_false_is_read_from_the_first_of_the_two_words(reply, expected):
    assert parse_true_false(reply) is expected


def test_a_baseline_row_records_only_the_settings_it_uses_and_applies_the_length_penalty():
    """The FActScore pipeline builds no graph and runs no engine: its rows have no FR version and
    their settings have no
    `graph` or `engine` group, and of `scores` only K and γ — γ is applied (FActScore's own length
    penalty: 8 judged claims of 9 with γ = 10 give precision × exp(1 − 10/8))."""
    record = json.loads(
        (REPO_ROOT / "fact_reasoner" / "examples" / "bios_with_relations.jsonl").read_text().splitlines()[0]
    )
    plain = PipelineConfig(pipeline="factscore", pipeline_judge="nli", nli="precomputed", use_cache=False)
    row = make_pipeline(plain).assess(record).model_dump(mode="json")
    assert set(row["settings"]) == {"pipeline", "scores", "models", "retrieval"}
    # no graph: no FR version, and the report names the row by its pipeline
    assert row["version"] is None and assessor_name(row) == "factscore"
    assert row["settings"]["scores"] == {"k": "median"}
    penalised = make_pipeline(plain.with_options(gamma=10.0)).assess(record).model_dump(mode="json")
    assert penalised["settings"]["scores"] == {"k": "median", "gamma": 10.0}
    judged = len(penalised["atoms"])
    assert judged == 8 and penalised["unpenalized_factuality_score"] == row["factuality_score"]
    assert penalised["length_penalty"] == pytest.approx(math.exp(1 - 10 / judged))
    assert penalised["factuality_score"] == pytest.approx(row["factuality_score"] * math.exp(1 - 10 / judged))


@pytest.mark.parametrize("setting", [{"skip_uncheckable": True}, {"abstention": "on"}])
def test_a_baseline_refuses_the_settings_that_need_the_checkworthy_stage(setting):
    """--skip-uncheckable and --abstention on need FactReasoner's checkworthy stage: with a
    baseline they are an error naming the flag, not silently ignored."""
    with pytest.raises(ValidationError, match="checkworthy stage, which --pipeline factscore does not run"):
        PipelineConfig(pipeline="factscore", **setting)
    assert PipelineConfig(**setting).scores  # FactReasoner takes them


def test_a_verdict_without_its_probability_is_refused_not_scored_as_zero():
    from fact_reasoner.pipelines.base import AtomJudgement
    from fact_reasoner.schema import Atom

    atom = Atom(id="a0", text="The tower is in Paris.")
    with pytest.raises(ValueError, match="a0: a verdict"):
        AtomJudgement(atom, True, None)
    assert AtomJudgement(atom, None, None, failure="no reply").failed  # a failed one has none
