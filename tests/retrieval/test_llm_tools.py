"""Query builder and context summariser: record wiring (fast) and with the real local LLM (slow)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("bm25s")

from fact_reasoner.retrieval import retrieve_for_record
from fact_reasoner.retrieval.llm_tools import ContextSummariser, QueryBuilder
from fact_reasoner.retrieval.retrievers import SuppliedRetriever
from fact_reasoner.schema import Atom, Context

CONTEXTS = [
    Context(id="p1", title="Marie Curie", text="Marie Curie won the Nobel Prize in Physics in 1903 with Pierre Curie."),
    Context(id="p2", title="Curie (unit)", text="The curie is a unit of radioactivity named after Marie Curie."),
    Context(id="p3", title="Nobel Prize", text="The Nobel Prize is awarded in Stockholm every December."),
]


def word_overlap_judge(messages: list[dict[str, str]]) -> str:
    """A user's own rule-based 'model' (the plain ``messages -> str`` interface): a passage is
    relevant when it mentions the year of the claim; the summary is the passage's first clause."""
    prompt = messages[-1]["content"]
    if "Query:" in prompt.splitlines()[-1]:
        claim = prompt.rsplit("Claim:", 1)[1].split("\n")[0]
        return "Query: " + " ".join(w for w in claim.split() if w[:1].isupper() or w[:1].isdigit())
    claim = prompt.rsplit("Claim:", 1)[1].split("\n")[0]
    passage = prompt.rsplit("Passage", 1)[1].split(":", 1)[1].rsplit("JSON:", 1)[0].strip()
    if "unit" in passage:
        return "not JSON at all"  # an unparsable answer must keep the passage
    years = [w.strip(".") for w in claim.split() if w.strip(".").isdigit()]
    relevant = any(year in passage for year in years)
    return json.dumps(
        {"relevant": relevant, "summary": passage.split(" with ")[0] if relevant else "", "confidence": 0.8}
    )


def test_summariser_drops_irrelevant_and_keeps_ids_contiguous() -> None:
    atoms = [Atom(id="a0", text="Marie Curie won the Nobel Prize in 1903.")]
    retriever = SuppliedRetriever(CONTEXTS)
    plain, _ = retrieve_for_record(atoms, None, retriever, 3, include_question=False)
    assert [c.model_extra["store_id"] for c in plain] == ["p1", "p3", "p2"]

    contexts, per_atom = retrieve_for_record(
        atoms,
        None,
        retriever,
        3,
        include_question=False,
        query_builder=QueryBuilder(word_overlap_judge),
        summariser=ContextSummariser(word_overlap_judge),
    )
    # p3 (no 1903) is dropped; p2's unparsable answer keeps it unchanged, flagged
    assert per_atom == {"a0": ["c_a0_0", "c_a0_1"]}
    first, second = contexts
    assert first.text == "Marie Curie won the Nobel Prize in Physics in 1903"
    assert first.model_extra["original_text"] == CONTEXTS[0].text
    assert first.model_extra["relevance"] == 0.8
    assert first.model_extra["query"] == "Marie Curie Nobel Prize 1903."
    assert second.model_extra["store_id"] == "p2" and second.text == CONTEXTS[1].text
    assert "no JSON object" in second.model_extra["summary_failed"]


def test_failed_call_keeps_context() -> None:
    def broken(messages: list[dict[str, str]]) -> str:
        raise TimeoutError("server down")

    (summary,) = ContextSummariser(broken).summarise_many([("claim", "the passage", None)])
    assert summary.relevant and summary.failed and summary.summary == "the passage"
    assert "server down" in summary.reason
    assert QueryBuilder(broken).build("Curie won in 1903.") == "Curie won in 1903."


@pytest.mark.slow
def test_with_local_llm(tmp_path) -> None:
    from fact_reasoner.llm import make_llm
    from fact_reasoner.settings.config import PipelineConfig

    try:
        llm = make_llm(PipelineConfig(backend="local", cache_dir=tmp_path, use_cache=False))
        query = QueryBuilder(llm).build("Marie Curie won the Nobel Prize in Physics in 1903.")
    except Exception as error:  # model not assembled on this machine
        pytest.skip(f"local LLM unavailable: {error}")
    assert "Curie" in query and len(query) < 120
    summariser = ContextSummariser(llm)
    relevant, irrelevant = summariser.summarise_many(
        [
            ("Marie Curie won the Nobel Prize in Physics in 1903.", CONTEXTS[0].text, CONTEXTS[0].title),
            (
                "Marie Curie won the Nobel Prize in Physics in 1903.",
                "Lake Titicaca is a large freshwater lake in the Andes on the border of Bolivia and Peru.",
                "Lake Titicaca",
            ),
        ]
    )
    assert not relevant.failed and relevant.relevant and "1903" in relevant.summary
    assert not irrelevant.failed and not irrelevant.relevant
