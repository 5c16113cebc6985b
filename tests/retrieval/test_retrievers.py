"""Retrieval without embeddings: corpus reading, chunking, BM25, RRF, cache, ids, errors, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("bm25s")

from fact_reasoner.io import RecordError
from fact_reasoner.retrieval import (
    CachedRetriever,
    RetrievalCache,
    RetrievalError,
    RetrievedContext,
    make_retriever,
    register_retriever,
    retrieve_for_record,
)
from fact_reasoner.retrieval.base import RETRIEVERS
from fact_reasoner.retrieval.corpus import CorpusError, Document, chunk_document, read_documents
from fact_reasoner.retrieval.llm_tools import parse_query, parse_summary
from fact_reasoner.retrieval.retrievers import BM25Retriever, SuppliedRetriever, reciprocal_rank_fusion
from fact_reasoner.retrieval.store import build_index
from fact_reasoner.schema import Atom, Context
from fact_reasoner.settings.config import PipelineConfig

BIOS = [
    {
        "topic": "Marie Curie",
        "title": "Marie Curie",
        "text": "Marie Curie was a Polish physicist and chemist. "
        "She conducted pioneering research on radioactivity. She won the Nobel Prize in Physics in 1903.",
    },
    {
        "topic": "Alan Turing",
        "title": "Alan Turing",
        "text": "Alan Turing was an English mathematician. "
        "He was born in Maida Vale, London, in 1912.\n\nTuring is considered the father of theoretical computer science.",
    },
    {
        "topic": "Ada Lovelace",
        "title": "Ada Lovelace",
        "text": "Ada Lovelace was an English mathematician and writer. "
        "She wrote about the Analytical Engine of Charles Babbage.",
    },
]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture()
def bm25_store(tmp_path: Path) -> tuple[Path, Path]:
    corpus = write_jsonl(tmp_path / "bios.jsonl", BIOS)
    store = tmp_path / "store"
    build_index([corpus], store, "bios", dense=False, progress=False)
    return store, corpus


# ---------------------------------------------------------------- corpus and chunking


def test_chunks_are_whole_sentences_within_size_with_overlap() -> None:
    sentences = [f"Sentence number {i} says something about topic {i}." for i in range(30)]
    document = Document(text=" ".join(sentences), title="T", topic="t")
    chunks = chunk_document(document, chunk_size=200, chunk_overlap=60)
    assert len(chunks) > 3
    for chunk in chunks:
        assert len(chunk.text) <= 200
        # every chunk is made of whole sentences of the document
        assert all(
            part.strip() + "." in sentences or part.strip() in sentences
            for part in chunk.text.split(". ")
            if part.strip()
        )
    for previous, following in zip(chunks, chunks[1:]):
        last_sentence = previous.text.rsplit(". ", 1)[-1]
        assert following.text.startswith(last_sentence.rstrip(".")), "consecutive chunks share trailing sentences"
    # every sentence is in some chunk, in order
    joined = " ".join(c.text for c in chunks)
    assert all(s in joined for s in sentences)
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert len({c.id for c in chunks}) == len(chunks)


def test_chunking_without_overlap_partitions_the_text() -> None:
    document = Document(text=" ".join(f"Fact {i} is true." for i in range(50)))
    chunks = chunk_document(document, chunk_size=120, chunk_overlap=0)
    assert " ".join(c.text for c in chunks) == document.text


def test_sentence_markers_are_boundaries_and_removed() -> None:
    document = Document(text="<s>First part of the passage.</s><s>Second part.</s>", title="X")
    (chunk,) = chunk_document(document, chunk_size=1000, chunk_overlap=0)
    assert chunk.text == "First part of the passage. Second part."


def test_long_sentence_is_cut_at_words() -> None:
    document = Document(text="word " * 300)
    chunks = chunk_document(document, chunk_size=100, chunk_overlap=20)
    assert all(len(c.text) <= 100 for c in chunks)
    assert sum(c.text.count("word") for c in chunks) >= 300


def test_read_three_formats(tmp_path: Path) -> None:
    jsonl = write_jsonl(tmp_path / "a.jsonl", [{"text": "Alpha text.", "title": "A", "topic": "x"}])
    topic_json = tmp_path / "b.json"
    topic_json.write_text(json.dumps({"Bob": [{"title": "Bob", "text": "<s>Bob is a builder.</s>"}]}))
    plain = tmp_path / "notes.txt"
    plain.write_text("Plain paragraph one.\n\nParagraph two.")
    documents = list(read_documents([jsonl, topic_json, plain]))
    assert [(d.title, d.topic) for d in documents] == [("A", "x"), ("Bob", "Bob"), ("notes", None)]


@pytest.mark.parametrize(
    ("name", "content", "expected", "kept", "bad"),
    [
        ("bad.jsonl", '{"text": "ok"}\n\n{"text": "broken"\n{"text": "after"}\n', "bad.jsonl:3: invalid JSON", 2, 1),
        (
            "nofield.jsonl",
            '{"text": "ok"}\n{"title": "no text"}\n',
            "nofield.jsonl:2: missing or non-string 'text'",
            1,
            1,
        ),
        (
            "ctrl.jsonl",
            '{"text": "ok"}\n{"text": "tab\there"}\n',
            "ctrl.jsonl:2: invalid JSON at column 14: Invalid control character",
            1,
            1,
        ),
        (
            "bad.json",
            '{"topic": [\n {"title": "x", "text": 5}, {"title": "y", "text": "fine"}]}',
            "bad.json:1: topic 'topic' item 0: missing or non-string 'text'",
            1,
            1,
        ),
        ("list.json", '[{"text": "a"},\n 7,\n {"text": "b"}]', "list.json:2: expected a JSON object", 2, 1),
        # not one JSON value but opening with "{": read line by line, as a JSON records file is
        ("syntax.json", '{\n "a": [\n }', "syntax.json:3: invalid JSON", 0, 3),
        ("scalar.json", '"just a string"', "expected a JSON object", 0, 1),
        ("latin1.txt", b"caf\xe9\n", "latin1.txt:1: not UTF-8 text", 0, 1),
    ],
)
def test_a_bad_corpus_line_is_named_by_file_and_line_and_the_others_are_read(
    tmp_path: Path, name: str, content: str | bytes, expected: str, kept: int, bad: int
) -> None:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    read = list(read_documents([path]))
    failures = [str(item) for item in read if isinstance(item, RecordError)]
    assert len(failures) == bad and all(f.startswith(str(tmp_path)) for f in failures), failures
    assert any(expected in failure for failure in failures), failures
    assert len([item for item in read if isinstance(item, Document)]) == kept


def test_missing_corpus_file(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="no such file"):
        list(read_documents([tmp_path / "absent.jsonl"]))


# ---------------------------------------------------------------- BM25, re-indexing


def test_bm25_ranks_lexical_match_first_and_filters_by_topic(bm25_store) -> None:
    store, _ = bm25_store
    retriever = BM25Retriever(store, "bios")
    results = retriever.retrieve("Nobel Prize in Physics", 3)
    assert results[0].title == "Marie Curie"
    assert results[0].source == "bm25"
    assert results == sorted(results, key=lambda r: -r.score)
    # "English mathematician" matches Turing and Lovelace; the topic keeps only Lovelace's
    assert {r.title for r in retriever.retrieve("English mathematician", 5)} == {"Alan Turing", "Ada Lovelace"}
    filtered = retriever.retrieve("English mathematician", 5, topic="Ada Lovelace")
    assert [r.title for r in filtered] == ["Ada Lovelace"]
    assert retriever.retrieve("English mathematician", 5, topic="Nobody") == []


def test_reindex_is_idempotent_and_adds_only_new_documents(bm25_store, tmp_path: Path) -> None:
    store, corpus = bm25_store
    layout_manifest = store / "fact_reasoner" / "bios" / "manifest.json"
    before = json.loads(layout_manifest.read_text())
    again = build_index([corpus], store, "bios", dense=False, progress=False)
    assert again.chunks_added == 0 and again.chunks_total == before["chunks"]
    assert json.loads(layout_manifest.read_text())["fingerprint"] == before["fingerprint"]

    extra = write_jsonl(
        tmp_path / "more.jsonl",
        BIOS[:1]
        + [{"topic": "Grace Hopper", "title": "Grace Hopper", "text": "Grace Hopper developed the first compiler."}],
    )
    report = build_index([extra], store, "bios", dense=False, progress=False)
    assert report.chunks_added == 1 and report.chunks_total == before["chunks"] + 1
    assert json.loads(layout_manifest.read_text())["fingerprint"] != before["fingerprint"]
    assert BM25Retriever(store, "bios").retrieve("compiler", 1)[0].title == "Grace Hopper"


# ---------------------------------------------------------------- fusion


def _ranked(ids: list[str], source: str) -> list[RetrievedContext]:
    return [RetrievedContext(id=i, text=f"text {i}", score=10 - n, source=source) for n, i in enumerate(ids)]


def test_reciprocal_rank_fusion_scores() -> None:
    fused = reciprocal_rank_fusion([_ranked(["a", "b", "c"], "chroma"), _ranked(["c", "a"], "bm25")], k=3)
    # a: 1/61 + 1/62; c: 1/63 + 1/61; b: 1/62
    assert [r.id for r in fused] == ["a", "c", "b"]
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1].score == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2].score == pytest.approx(1 / 62)
    assert all(r.source == "hybrid" for r in fused)
    assert fused[0].metadata["fused_from"] == "chroma#1,bm25#2"


# ---------------------------------------------------------------- ids, cache, factory


def test_retrieve_for_record_ids(bm25_store) -> None:
    store, _ = bm25_store
    retriever = BM25Retriever(store, "bios")
    atoms = [
        Atom(id="a0", text="Turing was an English mathematician."),
        Atom(id="a1", text="Lovelace was an English mathematician."),
    ]
    contexts, per_atom = retrieve_for_record(
        atoms, "Which English mathematicians?", retriever, 2, include_question=True
    )
    ids = [c.id for c in contexts]
    assert per_atom == {"a0": ["c_a0_0", "c_a0_1"], "a1": ["c_a1_0", "c_a1_1"]}
    assert ids[:4] == ["c_a0_0", "c_a0_1", "c_a1_0", "c_a1_1"]
    assert [i for i in ids if i.startswith("c_q_")] == ["c_q_0", "c_q_1"]
    by_id = {c.id: c for c in contexts}
    # the same passage retrieved for two atoms is kept twice (FR1), with the store id recorded
    assert by_id["c_a0_0"].title == by_id["c_a1_1"].title == "Alan Turing"
    assert by_id["c_a0_0"].text == by_id["c_a1_1"].text
    assert by_id["c_a0_0"].model_extra["retrieval_source"] == "bm25"
    assert isinstance(by_id["c_a0_0"], Context)

    contexts, per_atom = retrieve_for_record(atoms, None, retriever, 1, include_question=True)
    assert [c.id for c in contexts] == ["c_a0_0", "c_a1_0"]


def test_cache_hit_on_rerun_and_miss_after_reindex(bm25_store, tmp_path: Path) -> None:
    store, _ = bm25_store
    cache_path = tmp_path / "cache" / "retrieval.sqlite"
    atoms = [Atom(id="a0", text="Curie won the Nobel Prize."), Atom(id="a1", text="Lovelace wrote about engines.")]

    first = CachedRetriever(BM25Retriever(store, "bios"), RetrievalCache(cache_path))
    contexts_first, _ = retrieve_for_record(atoms, None, first, 2, include_question=False)
    assert (first.hits, first.misses) == (0, 2)

    # a new process: new retriever, same cache file
    rerun = CachedRetriever(BM25Retriever(store, "bios"), RetrievalCache(cache_path))
    contexts_rerun, _ = retrieve_for_record(atoms, None, rerun, 2, include_question=False)
    assert (rerun.hits, rerun.misses) == (2, 0)
    assert contexts_rerun == contexts_first
    assert rerun.stats() == {"cache_hits": 2, "cache_misses": 0}

    # another k is another key
    rerun.retrieve(atoms[0].text, 1)
    assert rerun.misses == 1

    # the index changed: its fingerprint is in the key, so the old answers are not reused
    extra = write_jsonl(
        tmp_path / "more.jsonl",
        [{"topic": "Pierre", "title": "Pierre Curie", "text": "Pierre Curie won the Nobel Prize."}],
    )
    build_index([extra], store, "bios", dense=False, progress=False)
    after = CachedRetriever(BM25Retriever(store, "bios"), RetrievalCache(cache_path))
    results = after.retrieve(atoms[0].text, 2)
    assert after.misses == 1 and "Pierre Curie" in {r.title for r in results}


def test_make_retriever_from_config(bm25_store, tmp_path: Path) -> None:
    store, _ = bm25_store
    config = PipelineConfig(service_type="bm25", store=str(store), collection="bios", cache_dir=tmp_path / "c")
    retriever = make_retriever(config)
    assert isinstance(retriever, CachedRetriever) and isinstance(retriever.inner, BM25Retriever)
    assert (tmp_path / "c" / "retrieval.sqlite").exists()
    uncached = make_retriever(config.with_options(use_cache=False))
    assert isinstance(uncached, BM25Retriever)

    with pytest.raises(RetrievalError, match="needs --store"):
        make_retriever(PipelineConfig(service_type="bm25", cache_dir=tmp_path / "c"))
    with pytest.raises(RetrievalError, match="no chunks for collection 'other'"):
        make_retriever(config.with_options(collection="other"))
    with pytest.raises(RetrievalError, match="invalid collection name"):
        make_retriever(config.with_options(collection="a b"))
    with pytest.raises(RetrievalError, match="unknown service type 'web'"):
        make_retriever(config.with_options(service_type="web"))


class KeywordRetriever:
    """A user's own retriever for the extension-point test: a list of passages, substring match."""

    def __init__(self, passages: list[str]) -> None:
        self.passages = passages

    @property
    def identity(self) -> str:
        return f"keyword:{len(self.passages)}"

    def retrieve(self, query: str, k: int, *, topic: str | None = None) -> list[RetrievedContext]:
        words = set(query.lower().split())
        hits = [p for p in self.passages if words & set(p.lower().split())]
        return [RetrievedContext(id=str(i), text=p, score=1.0, source="keyword") for i, p in enumerate(hits[:k])]


def make_keyword_retriever(config: PipelineConfig) -> KeywordRetriever:
    return KeywordRetriever(["paris is in france", "berlin is in germany"])


def test_extension_point_registry_and_module_path(tmp_path: Path) -> None:
    register_retriever("keyword-test", make_keyword_retriever)
    try:  # registered for this test only: later tests see the built-in retrievers alone
        config = PipelineConfig(service_type="keyword-test", cache_dir=tmp_path)
        retriever = make_retriever(config)
        assert [r.text for r in retriever.retrieve("paris", 3)] == ["paris is in france"]
        by_path = make_retriever(
            config.with_options(service_type=f"{__name__}:make_keyword_retriever", use_cache=False)
        )
        assert isinstance(by_path, KeywordRetriever)
        with pytest.raises(ValueError, match="built-in"):
            register_retriever("bm25", make_keyword_retriever)
    finally:
        RETRIEVERS.unregister("keyword-test")


def test_supplied_retriever() -> None:
    with pytest.raises(RetrievalError, match="has none"):
        SuppliedRetriever().retrieve("anything", 3)
    contexts = [
        Context(id="c1", text="Paris is the capital of France."),
        Context(id="c2", text="Berlin is in Germany."),
    ]
    results = SuppliedRetriever(contexts).retrieve("capital of France", 2)
    assert [r.id for r in results] == ["c1"] and results[0].source == "supplied"


# ---------------------------------------------------------------- LLM reply parsing


def test_parse_query() -> None:
    assert parse_query("Query: Marie Curie Nobel 1903\nextra", "fallback") == "Marie Curie Nobel 1903"
    assert parse_query('  "Turing born 1912"  ', "fallback") == "Turing born 1912"
    assert parse_query("   \n", "the atom") == "the atom"


def test_parse_summary() -> None:
    relevant = parse_summary('Sure: {"relevant": true, "summary": "Curie won in 1903.", "confidence": 1.7}', "passage")
    assert (relevant.relevant, relevant.summary, relevant.confidence, relevant.failed) == (
        True,
        "Curie won in 1903.",
        1.0,
        False,
    )
    irrelevant = parse_summary('{"relevant": "no", "summary": "", "confidence": 0.8}', "passage")
    assert (irrelevant.relevant, irrelevant.confidence) == (False, 0.8)
    broken = parse_summary("I think it is relevant", "the passage")
    assert broken.relevant and broken.failed and broken.summary == "the passage"
    empty = parse_summary('{"relevant": true, "summary": " ", "confidence": 0.5}', "the passage")
    assert empty.summary == "the passage"


# ---------------------------------------------------------------- CLI


def test_index_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fact_reasoner.cli import main

    corpus = write_jsonl(tmp_path / "bios.jsonl", BIOS)
    store = tmp_path / "store"
    argv = [
        "index",
        "--corpus",
        str(corpus),
        "--store",
        str(store),
        "--collection",
        "bios",
        "--no-dense",
        "--quiet",
        "--chunk_size",
        "300",
        "--chunk-overlap",
        "50",
    ]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["chunks_added"] == report["chunks_total"] == 3
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["chunks_added"] == 0

    # one bad line: named, the others indexed, exit 1 (the policy of every command's input)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "A fine sentence about bridges."}\nnot json\n{"text": "Another good one."}\n')
    argv = ["index", "--corpus", str(bad), "--store", str(store), "--collection", "mixed", "--no-dense", "--quiet"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.err.splitlines()[0] == f"error: {bad}:2: invalid JSON at column 1: Expecting value"
    report = json.loads(captured.out)
    assert (report["documents_read"], report["unreadable"], report["chunks_total"]) == (2, 1, 2)
    # nothing readable: nothing indexed, exit 2
    worse = tmp_path / "worse.jsonl"
    worse.write_text("not json\n")
    assert main(["index", "--corpus", str(worse), "--store", str(store), "--collection", "none", "--no-dense"]) == 2
    err = capsys.readouterr().err
    assert f"error: {worse}:1: invalid JSON" in err and "1 unreadable line(s), no chunk to index" in err


def test_topic_in_query_and_topic_filter(bm25_store) -> None:
    from fact_reasoner.retrieval.records import topic_query

    assert topic_query("He was a mathematician.", "Ada Lovelace") == "Ada Lovelace He was a mathematician."
    assert topic_query("Ada Lovelace was a writer.", "ada lovelace") == "Ada Lovelace was a writer."
    store, _ = bm25_store
    retriever = BM25Retriever(store, "bios")
    atoms = [Atom(id="a0", text="She was an English mathematician in London.")]
    plain, _ = retrieve_for_record(atoms, None, retriever, 1, False, topic="Ada Lovelace")
    prefixed, _ = retrieve_for_record(atoms, None, retriever, 1, False, topic="Ada Lovelace", topic_in_query=True)
    assert plain[0].title == "Alan Turing"  # no filter, no prefix: the topic is ignored
    assert prefixed[0].title == "Ada Lovelace"
    filtered, per_atom = retrieve_for_record(atoms, None, retriever, 5, False, topic="Ada Lovelace", topic_filter=True)
    assert [c.title for c in filtered] == ["Ada Lovelace"] and per_atom == {"a0": ["c_a0_0"]}
    # a store indexed without this topic: the filter finds nothing (hence topic_filter is opt-in)
    assert retrieve_for_record(atoms, None, retriever, 5, False, topic="Nobody", topic_filter=True) == ([], {"a0": []})


def test_a_retrieved_context_names_the_document_it_came_from(tmp_path: Path) -> None:
    """The output lists each retrieved context's source (#44: it showed `source: None`): the
    corpus file and the document's id, and the service that found it."""
    corpus = write_jsonl(tmp_path / "bios.jsonl", [dict(BIOS[0], id="curie"), BIOS[1]])
    store = tmp_path / "store"
    build_index([corpus], store, "bios", dense=False, progress=False)
    retriever = BM25Retriever(store, "bios")
    atoms = [Atom(id="a0", text="Marie Curie researched radioactivity."), Atom(id="a1", text="Turing was English.")]
    contexts, _ = retrieve_for_record(atoms, None, retriever, 1, False)
    dumped = [c.model_dump(exclude_none=True) for c in contexts]
    assert [(c["source"], c["retrieval_source"], c["title"]) for c in dumped] == [
        ("bios.jsonl#curie", "bm25", "Marie Curie"),
        ("bios.jsonl", "bm25", "Alan Turing"),  # a document without an id: its file
    ]
