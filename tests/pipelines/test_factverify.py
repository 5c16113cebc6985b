"""FactVerify (SAFE) on the bundled Eiffel Tower example, with a scripted OpenAI-compatible server."""

from __future__ import annotations

import pytest

from fact_reasoner.llm.testing import ScriptedServer
from fact_reasoner.pipelines import make_pipeline
from fact_reasoner.pipelines.factverify import parse_query, parse_rating
from tests.pipelines.scripted import eiffel, prompts, served_config

TOWER_BUILT = "The tower was built between 1887 and 1889"  # c_a0_0
WROUGHT_IRON = "The wrought-iron lattice tower"  # c_a2_0


def two_atoms():
    """The Eiffel record with atoms a0 (completed in 1889) and a4 (built in 1500) only (and
    their relations)."""
    record = eiffel().model_dump(mode="json", exclude_none=True)
    kept = {"a0", "a4"}
    return eiffel(
        atoms=[a for a in record["atoms"] if a["id"] in kept],
        relations=[r for r in record["relations"] if r["target"] in kept],
    )


def test_two_search_steps_then_a_rating_per_atom():
    """Steps = 2, one passage per step (BM25 over the record's 2 contexts).

    a0: query "1889 World's Fair Paris" → c_a0_0; "Gustave Eiffel company" → c_a2_0; rated
    [Supported]. a4: "Eiffel Tower construction 1887" → c_a0_0; "1889 World's Fair" → c_a0_0
    again (not added twice); rated [Not Supported]. 6 calls; precision = 1 / 2.
    """
    script = [
        "```\n1889 World's Fair Paris\n```",
        "Query: Gustave Eiffel company",
        "The knowledge says it was completed in 1889. [Supported]",
        "```\nEiffel Tower construction 1887\n```",
        "```\n1889 World's Fair\n```",
        "It was built between 1887 and 1889. [Not Supported]",
    ]
    with ScriptedServer(script) as server:
        config = served_config("factverify", server.base_url, factverify_steps=2, factverify_results=1)
        result = make_pipeline(config).assess(two_atoms(), k="half")
    sent = prompts(server)
    assert len(sent) == 6
    assert "KNOWLEDGE:\nN/A" in sent[0] and "STATEMENT: The Eiffel Tower was completed in 1889." in sent[0]
    assert TOWER_BUILT in sent[1] and WROUGHT_IRON not in sent[1]  # step 2 sees step 1's passage
    assert TOWER_BUILT in sent[2] and WROUGHT_IRON in sent[2] and "[Not Supported]" in sent[2]
    assert "KNOWLEDGE:\nN/A" in sent[3] and "STATEMENT: The Eiffel Tower was built in 1500." in sent[3]
    assert TOWER_BUILT in sent[5] and WROUGHT_IRON not in sent[5]
    assert result.factuality_score == pytest.approx(0.5)
    a0, a4 = (a.model_dump() for a in result.atoms)
    assert a0["queries"] == ["1889 World's Fair Paris", "Gustave Eiffel company"]
    assert a0["evidence_ids"] == ["c_a0_0", "c_a2_0"] and a0["judgement"] == "supported"
    assert a4["evidence_ids"] == ["c_a0_0"] and a4["judgement"] == "unsupported"
    assert a0["llm_calls"] == a4["llm_calls"] == 3
    assert result.counters["pipeline_llm_calls"] == 6
    assert result.settings["pipeline"] == {
        "name": "factverify",
        "judge": "llm",
        "factverify_steps": 2,
        "factverify_results": 1,
    }


def test_an_unreadable_query_fails_its_atom_only():
    """a0's first query is unreadable twice → a0 fails after 2 calls; a4 goes on: its query
    "1500" matches no context, so it has no knowledge and is NS without a rating call (3 calls);
    precision over the one judged atom = 0 / 1."""
    script = ["Let me think about this.\nMaybe search something.", "Hmm.\nNot sure.", "```\n1500\n```", "[Supported]"]
    with ScriptedServer(script) as server:
        config = served_config("factverify", server.base_url, factverify_steps=1, factverify_results=1)
        result = make_pipeline(config).assess(two_atoms())
    assert len(server.requests) == 3
    row = result.model_dump(mode="json")
    assert [f["id"] for f in row["failed_atoms"]] == ["a0"]
    assert "search query of step 1" in row["failed_atoms"][0]["failure"]
    assert [a.id for a in result.atoms] == ["a4"]
    assert result.atoms[0].prediction.value == "NS" and result.factuality_score == 0.0
    assert result.atoms[0].model_dump()["queries"] == ["1500"]
    assert result.counters["failed_atoms"] == 1


def test_the_nli_judge_rates_the_knowledge_the_llm_queries_found():
    """Queries from the LLM, rating by the record's relations: a0 ⇐ c_a0_0 entailment 0.95 → S;
    a4 ⇐ c_a0_0 contradiction → NS. 2 LLM calls (one query each), 2 NLI pairs."""
    with ScriptedServer(["```\nEiffel Tower 1889\n```", "```\nbuilt 1887 1889\n```"]) as server:
        config = served_config(
            "factverify", server.base_url, factverify_steps=1, factverify_results=1, pipeline_judge="nli"
        )
        result = make_pipeline(config).assess(two_atoms())
    assert len(server.requests) == 2
    assert [a.prediction.value for a in result.atoms] == ["S", "NS"]
    assert result.atoms[0].probability == pytest.approx(0.95)
    assert result.counters["pipeline_nli_pairs"] == 2 and result.counters["pipeline_llm_calls"] == 2


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("```\nfoo bar\n```", "foo bar"),
        ("Here:\n```text\nfoo\n```", "foo"),
        ("query: baz", "baz"),
        ('"one line"', "one line"),
        ("two\nlines", None),
        ("``` ```", None),
    ],
)
def test_the_query_is_read_from_a_code_block(reply, expected):
    assert parse_query(reply) == expected


def test_the_last_bracketed_rating_wins():
    assert parse_rating("[Supported]? No: [Not Supported]") is False
    assert parse_rating("Final: [supported]") is True
    assert parse_rating("unsupported") is False
    assert parse_rating("I don't know") is None
