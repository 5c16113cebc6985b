"""Dataset preparation of the FActScore biographies (experiments/prepare_factscore.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments import prepare_factscore as prep
from tests.helpers import REPO_ROOT

ROOT = REPO_ROOT
DATA = ROOT.parent / "shared" / "data" / "factscore_bios_dev"

needs_data = pytest.mark.skipif(not DATA.exists(), reason=f"shared data folder absent: {DATA}")


def _slice(src: Path, dst: Path, lines: int) -> Path:
    with open(src, encoding="utf-8") as handle:
        dst.write_text("".join(next(handle) for _ in range(lines)), encoding="utf-8")
    return dst


def test_passage_text_strips_sentence_marks() -> None:
    assert prep.passage_text("<s>A b.</s><s>C  d.</s>") == "A b. C d."
    # a passage cut mid-sentence starts without <s>
    assert prep.passage_text('" on his album.</s><s>Family.</s>') == '" on his album. Family.'


@needs_data
def test_prepare_slice_of_real_files(tmp_path: Path) -> None:
    generations = _slice(DATA / "ChatGPT.jsonl", tmp_path / "gen.jsonl", 3)  # line 1 has null annotations
    records, stats = prep.prepare(generations, DATA / "passages_bm25_ChatGPT_dev.jsonl")
    assert stats.generations == 3 and stats.null_annotations == 1 and len(records) == 2
    raw = [json.loads(line) for line in generations.read_text().splitlines()]
    for record, source in zip(records, raw[1:]):
        gold = [f for s in source["annotations"] for f in s["human-atomic-facts"] if f["label"] != "IR"]
        assert [a["text"] for a in record["atoms"]] == [f["text"] for f in gold]
        assert [a["label"] for a in record["atoms"]] == [f["label"] for f in gold]
        assert [a["id"] for a in record["atoms"]] == [f"a{i}" for i in range(len(gold))]
        assert record["topic"] == source["topic"] and record["cat"] == source["cat"]
        context_ids = {c["id"] for c in record["contexts"]}
        for atom in record["atoms"]:
            assert atom["contexts"], atom
            assert all(c.startswith(f"c_{atom['id']}_") and c in context_ids for c in atom["contexts"])
        assert all("<s>" not in c["text"] and "</s>" not in c["text"] for c in record["contexts"])
    # the records are valid input records for the pipeline
    from fact_reasoner.schema import InputRecord

    first = InputRecord.model_validate(records[0])
    assert first.atoms[0].text == "Joey D. Vieira is an American." and first.atoms[0].label.value == "S"
    assert first.contexts[0].title == "Joey D. Vieira"
    assert first.contexts[0].text.startswith("Joey D. Vieira Joseph Douglas Vieira")


@needs_data
def test_prepare_with_our_bm25_retriever(tmp_path: Path) -> None:
    from tests.helpers import require_extra

    require_extra("retrieval")
    generations = _slice(DATA / "ChatGPT.jsonl", tmp_path / "gen.jsonl", 2)
    corpus = json.loads((DATA / "topic_passages_dev.json").read_text())
    records, _ = prep.prepare(generations, retriever=prep.TopicBM25(corpus), top_k=2)
    record = records[0]
    topic_texts = {prep.passage_text(p["text"]) for p in corpus[record["topic"]]}
    assert all(len(a["contexts"]) <= 2 for a in record["atoms"])
    assert record["contexts"] and all(c["text"] in topic_texts for c in record["contexts"])


def test_errors_name_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"topic": "X", "input": "q", "output": "o", "annotations": null}\n{not json\n')
    passages = tmp_path / "p.jsonl"
    passages.write_text("")
    with pytest.raises(prep.PreparationError, match=r"bad\.jsonl:2: invalid JSON"):
        prep.prepare(bad, passages)
    bad.write_text(
        '{"topic": "X", "input": "q", "output": "o", "annotations": [{"human-atomic-facts": [{"text": "t", "label": "Q"}]}]}\n'
    )
    with pytest.raises(prep.PreparationError, match=r"bad\.jsonl:1: .*label S/NS/IR"):
        prep.prepare(bad, passages)
    assert (
        prep.main(
            [
                "--generations",
                str(tmp_path / "missing.jsonl"),
                "--passages",
                str(passages),
                "--out",
                str(tmp_path / "o.jsonl"),
            ]
        )
        == 2
    )


@needs_data
def test_topic_filter(tmp_path: Path) -> None:
    generations = _slice(DATA / "ChatGPT.jsonl", tmp_path / "gen.jsonl", 4)
    topics_file = tmp_path / "splits.json"
    topics_file.write_text(json.dumps({"heldout_topics": ["Joey D. Vieira"]}))
    with pytest.raises(prep.PreparationError, match="--topics-key"):
        prep.read_topics(topics_file)
    topics = prep.read_topics(topics_file, "heldout_topics")
    records, stats = prep.prepare(generations, DATA / "passages_bm25_ChatGPT_dev.jsonl", topics=topics)
    assert [r["topic"] for r in records] == ["Joey D. Vieira"] and stats.skipped_topics == 3
