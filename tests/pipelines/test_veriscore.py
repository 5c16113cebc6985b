"""VeriScore on the bundled examples, with a scripted OpenAI-compatible server."""

from __future__ import annotations

import pytest

from fact_reasoner.errors import RecordFailed
from fact_reasoner.llm.testing import ScriptedServer
from fact_reasoner.pipelines import make_pipeline
from fact_reasoner.pipelines.veriscore import NO_CLAIMS, parse_claims, parse_supported
from tests.pipelines.scripted import SHORT_ANSWER, eiffel, example, prompts, served_config

CURIE = "Marie Sklodowska Curie (1867-1934)"  # context c0 of short_answer.jsonl
PENICILLIN = "Penicillin was discovered in 1928"  # context c1


def test_verifiable_claims_are_extracted_per_sentence_then_each_is_verified_against_its_evidence():
    """short_answer.jsonl has no atoms: its 2 sentences give 2 extraction calls (3 claims), then
    one verification per claim with the passages BM25 finds for it among the record's 2 contexts.
    Replies Supported, Supported, Unsupported → precision = 2 / 3."""
    record = example(SHORT_ANSWER)
    script = [
        "- Marie Curie was a physicist.\n- Marie Curie was born in Warsaw.",
        "1. Marie Curie discovered penicillin.",
        "Supported",
        "Supported",
        "Unsupported",
    ]
    with ScriptedServer(script) as server:
        result = make_pipeline(served_config("veriscore", server.base_url)).assess(record, k="half")
    sent = prompts(server)
    assert len(sent) == 5
    assert "SENTENCE: Marie Curie was a physicist who was born in Warsaw." in sent[0]
    assert "SENTENCE: She discovered penicillin." in sent[1]
    assert "TEXT BEFORE: Marie Curie was a physicist who was born in Warsaw." in sent[1]
    assert "CLAIM: Marie Curie was a physicist." in sent[2]
    # "physicist", "Warsaw": only c0 shares a word; "penicillin": both (c0 by the name, c1 by penicillin)
    assert CURIE in sent[2] and PENICILLIN not in sent[2]
    assert CURIE in sent[3] and PENICILLIN not in sent[3]
    assert "CLAIM: Marie Curie discovered penicillin." in sent[4] and PENICILLIN in sent[4]
    assert [a.text for a in result.atoms] == [
        "Marie Curie was a physicist.",
        "Marie Curie was born in Warsaw.",
        "Marie Curie discovered penicillin.",
    ]
    assert result.factuality_score == pytest.approx(2 / 3)
    assert result.atoms[2].model_dump()["evidence_ids"] == ["c1", "c0"]
    row = result.model_dump(mode="json")
    assert row["claims_source"] == "extracted"
    assert result.counters["claim_llm_calls"] == 2
    assert result.counters["pipeline_llm_calls"] == 5
    assert result.settings["pipeline"] == {"name": "veriscore", "judge": "llm", "veriscore_claims": "given"}


def test_given_atoms_are_verified_as_they_are_without_extraction():
    """--veriscore-claims given on the Eiffel record: no extraction, 5 verifications, each with
    the atom's own context; Supported ×3, Unsupported ×2 → 3 / 5."""
    with ScriptedServer(["Supported", "Supported", "Supported", "Unsupported", "Not supported."]) as server:
        result = make_pipeline(served_config("veriscore", server.base_url)).assess(eiffel())
    sent = prompts(server)
    assert len(sent) == 5 and all(p.startswith("Decide whether the CLAIM") for p in sent)
    assert result.factuality_score == pytest.approx(0.6)
    assert result.model_dump(mode="json")["claims_source"] == "given"
    assert [a.id for a in result.atoms] == ["a0", "a1", "a2", "a3", "a4"]


def test_extract_ignores_the_given_atoms_and_a_sentence_may_have_no_verifiable_claim():
    """--veriscore-claims extract on the Eiffel record: 3 sentences, the last one answered
    'No verifiable claim.' → 1 claim from sentence 1 only, judged Supported → 1 / 1."""
    script = ["- The Eiffel Tower was completed in 1889.", "I think it is pretty.", NO_CLAIMS, NO_CLAIMS, "Supported"]
    with ScriptedServer(script) as server:
        config = served_config("veriscore", server.base_url, veriscore_claims="extract")
        result = make_pipeline(config).assess(eiffel())
    # sentence 2: an unreadable reply, asked again, then "no claim"; sentence 3: no claim
    assert len(server.requests) == 5
    assert [a.text for a in result.atoms] == ["The Eiffel Tower was completed in 1889."]
    assert result.factuality_score == 1.0
    assert result.counters["claim_llm_calls"] == 4


def test_an_extraction_that_stays_unreadable_fails_the_record():
    with ScriptedServer(["Sure! Here you go."]) as server:
        pipeline = make_pipeline(served_config("veriscore", server.base_url))
        with pytest.raises(RecordFailed, match="claims of sentence 1 could not be read"):
            pipeline.assess(example(SHORT_ANSWER))
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("reply", "expected"),
    [("Supported", True), ("Unsupported", False), ("not supported", False), ("It is supported.", True), ("?", None)],
)
def test_supported_is_read_without_mistaking_unsupported_for_it(reply, expected):
    assert parse_supported(reply) is expected


def test_claims_are_read_from_list_lines():
    assert parse_claims("Claims:\n- A.\n* B.\n2) C.") == ["A.", "B.", "C."]
    assert parse_claims(NO_CLAIMS) == []
    assert parse_claims("A. B.") is None
