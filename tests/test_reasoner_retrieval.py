"""The pipeline retrieves contexts for records that have none (index → retrieve → NLI → graph)."""

import json

import pytest

from fact_reasoner import FactReasoner, PipelineConfig
from fact_reasoner.cli import main
from fact_reasoner.nli import PrecomputedNLI
from fact_reasoner.schema import Relation
from tests.helpers import require_extra

CURIE = "Marie Curie was born in Warsaw in 1867. She won Nobel Prizes in physics and chemistry."
FLEMING = "Penicillin was discovered in 1928 by Alexander Fleming."


@pytest.fixture()
def store(tmp_path):
    require_extra("retrieval")
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps({"title": "Marie Curie", "topic": "Marie Curie", "text": CURIE})
        + "\n"
        + json.dumps({"title": "Penicillin", "topic": "Penicillin", "text": FLEMING})
        + "\n"
    )
    code = main(
        [
            "index",
            "--corpus",
            str(corpus),
            "--store",
            str(tmp_path / "store"),
            "--collection",
            "bios",
            "--no-dense",
            "--quiet",
        ]
    )
    assert code == 0
    return tmp_path / "store"


def test_records_without_contexts_get_retrieved_ones(store, tmp_path):
    atoms = {"a0": "Marie Curie was born in Warsaw.", "a1": "Marie Curie discovered penicillin."}
    # NLI verdicts keyed by text: the pipeline looks pairs up by (premise, hypothesis) text
    texts = {"p0": CURIE, "p1": FLEMING} | atoms
    nli = PrecomputedNLI(
        [
            Relation(source="p0", target="a0", relation="entailment", probability=0.9),
            Relation(source="p1", target="a1", relation="contradiction", probability=0.8),
        ],
        texts,
    )
    config = PipelineConfig(
        version=1,
        service_type="bm25",
        store=str(store),
        collection="bios",
        top_k=1,
        nli="llm",
        cache_dir=tmp_path / "cache",
    )
    record = {
        "input": "Tell me about Marie Curie.",
        "output": "…",
        "topic": "Marie Curie",
        "atoms": [{"id": k, "text": v} for k, v in atoms.items()],
    }
    result = FactReasoner(config, nli=nli).assess(record)
    by_id = {a.id: a for a in result.atoms}
    assert by_id["a0"].evidence[0].context == "c_a0_0" and by_id["a0"].probability > 0.5
    assert by_id["a1"].evidence[0].context == "c_a1_0" and by_id["a1"].probability < 0.5
    assert "retrieve" in result.timings
    # the second run is answered from the retrieval cache
    again = FactReasoner(config, nli=nli).assess(record)
    assert again.counters.get("retrieval_cache_hits", 0) >= 2
    assert [a.probability for a in again.atoms] == [a.probability for a in result.atoms]
