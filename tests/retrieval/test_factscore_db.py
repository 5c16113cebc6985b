"""FActScore's Wikipedia SQLite file as a corpus: a small file of the same schema, built here
(``documents(title PRIMARY KEY, text)``, passages joined by FActScore's separator), indexed by
``fact-reasoner index`` and served per topic article."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.helpers import require_extra

require_extra("retrieval")

from fact_reasoner import PipelineConfig
from fact_reasoner.cli import main
from fact_reasoner.errors import RecordFailed, StageUnavailable
from fact_reasoner.retrieval import make_retriever, retrieve_for_record
from fact_reasoner.retrieval.factscore_db import (
    SPECIAL_SEPARATOR,
    TopicBM25Retriever,
    article_passages,
    is_factscore_db,
    split_passages,
)
from fact_reasoner.schema import Atom
from fact_reasoner.stages import Stages

CURIE = [
    "<s>Marie Curie Maria Salomea Skłodowska-Curie (7 November 1867 – 4 July 1934) was a Polish and naturalised-"
    "French physicist and chemist. She was born in Warsaw.</s>",
    "<s>Nobel Prizes. She was the first woman to win a Nobel Prize and the only person to win in two sciences.</s>",
]
PIERRE = [
    "<s>Pierre Curie (15 May 1859 – 19 April 1906) was a French physicist. He was born in Paris.</s>",
    "<s>He met Maria Skłodowska, who was born in Warsaw, in 1894.</s>",
]


def long_article(paragraphs: int = 3, words: int = 200) -> str:
    """Plain paragraphs (one per line), without FActScore's separator: our splitter cuts them."""
    return "\n".join(" ".join(f"p{p}w{w}" for w in range(words)) for p in range(paragraphs))


def build_db(path: Path) -> Path:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE documents (title PRIMARY KEY, text);")
        db.executemany(
            "INSERT INTO documents VALUES (?, ?)",
            [
                ("Marie Curie", SPECIAL_SEPARATOR.join(CURIE)),
                ("Pierre Curie", SPECIAL_SEPARATOR.join(PIERRE)),
                ("Long Article", long_article()),
            ],
        )
    return path


@pytest.fixture()
def enwiki(tmp_path: Path, capsys) -> Path:
    database = build_db(tmp_path / "enwiki.db")
    code = main(["index", "--corpus", str(database), "--store", str(tmp_path / "store"), "--collection", "enwiki"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    assert report["articles_read"] == 3 and report["passages"] == 2 + 2 + 3
    assert "3/3" in captured.err  # the progress bar counted the articles
    return tmp_path / "store"


def test_split_passages_packs_paragraphs_like_factscore_and_cuts_at_the_limit():
    paragraphs = ["a " * 100, "b " * 200, "c " * 10]
    passages = split_passages(paragraphs, max_words=256)
    assert [len(p.split()) for p in passages] == [256, 54]
    # order kept, nothing lost; the second paragraph is cut where the first passage is full
    assert " ".join(passages).split() == " ".join(paragraphs).split()
    assert passages[0].split()[-1] == "b" and passages[1].split()[0] == "b"
    assert split_passages(["w " * 600], max_words=256) == ["w " * 255 + "w", "w " * 255 + "w", "w " * 87 + "w"]
    assert split_passages([]) == []


def test_article_passages_keeps_factscores_passages_and_splits_others():
    assert article_passages(SPECIAL_SEPARATOR.join(CURIE)) == [
        "Marie Curie Maria Salomea Skłodowska-Curie (7 November 1867 – 4 July 1934) was a Polish and naturalised-"
        "French physicist and chemist. She was born in Warsaw.",
        "Nobel Prizes. She was the first woman to win a Nobel Prize and the only person to win in two sciences.",
    ]
    passages = article_passages(long_article())
    assert [len(p.split()) for p in passages] == [256, 256, 88]
    assert passages[1].split()[0] == "p1w56"  # the second paragraph continues where the first passage ended


def test_is_factscore_db(tmp_path: Path):
    assert is_factscore_db(build_db(tmp_path / "enwiki.db"))
    (tmp_path / "x.db").write_text("not sqlite")
    assert not is_factscore_db(tmp_path / "x.db")
    with sqlite3.connect(tmp_path / "other.db") as db:
        db.execute("CREATE TABLE pages (name, body)")
    assert not is_factscore_db(tmp_path / "other.db")


def test_the_topic_filter_restricts_retrieval_to_the_topics_article(enwiki: Path, tmp_path: Path):
    config = PipelineConfig(
        service_type="bm25", store=str(enwiki), collection="enwiki", topic_filter=True, cache_dir=tmp_path / "cache"
    )
    retriever = make_retriever(config)
    atoms = [Atom(id="a0", text="born in Warsaw"), Atom(id="a1", text="Nobel Prize")]
    found = retrieve_for_record(
        atoms, None, retriever, 5, include_question=False, topic="Pierre Curie", topic_filter=True
    )
    assert {c.title for c in found.contexts} == {"Pierre Curie"}  # Marie Curie's article is never used
    assert found.contexts[0].text.startswith("He met Maria Skłodowska, who was born in Warsaw")
    assert len(found.per_atom["a1"]) == 2  # k passages whatever their score, as FActScore returns
    curie = retrieve_for_record(
        atoms, None, retriever, 1, include_question=False, topic="Marie Curie", topic_filter=True
    )
    assert "born in Warsaw" in curie.contexts[0].text and "Nobel" in curie.contexts[1].text
    assert all(c.title == "Marie Curie" for c in curie.contexts)


def test_a_topic_without_an_article_gives_nothing_and_is_counted(enwiki: Path):
    retriever = TopicBM25Retriever(enwiki, "enwiki")
    assert retriever.retrieve("born", 3, topic="Nobody Known") == []
    assert retriever.stats() == {"missing_topics": 1}


def test_a_record_without_a_topic_fails(enwiki: Path):
    with pytest.raises(RecordFailed, match="has no topic"):
        TopicBM25Retriever(enwiki, "enwiki").retrieve("born in Warsaw", 3)


def test_the_collection_is_served_only_with_bm25_and_the_topic_filter(enwiki: Path, tmp_path: Path):
    for options in ({"service_type": "bm25"}, {"service_type": "hybrid", "topic_filter": True}):
        config = PipelineConfig(store=str(enwiki), collection="enwiki", cache_dir=tmp_path, **options)
        with pytest.raises(StageUnavailable, match="--service-type bm25 --topic-filter"):
            Stages(config).retriever()


def test_a_db_is_indexed_on_its_own(tmp_path: Path, capsys):
    database = build_db(tmp_path / "enwiki.db")
    other = tmp_path / "notes.txt"
    other.write_text("Some notes.")
    code = main(["index", "--corpus", str(database), str(other), "--store", str(tmp_path / "s"), "--quiet"])
    assert code == 2 and "index a FActScore database on its own" in capsys.readouterr().err
