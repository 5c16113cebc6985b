"""Turn FActScore human-labelled biographies into FactReasoner input records.

Input (the FActScore release format, see ``shared/data/README.md``):

- ``--generations FILE``: one generation per line, ``{input, output, topic, cat, annotations}``
  where ``annotations`` is a list of sentences, each with ``human-atomic-facts: [{text, label}]``
  (label S / NS / IR), or ``null`` when the model declined to answer;
- ``--passages FILE``: one line per human atom, ``{name: topic, sent: atom text, passages:
  [{title, text: "<s>…</s><s>…</s>"}]}`` (Wikipedia passages retrieved by BM25).

Output: one input record per annotated generation (JSONL)::

    {input, output, topic, cat,
     atoms: [{id: "a0", text, label: "S"|"NS", contexts: ["c_a0_0", …], sentence: i}],
     contexts: [{id: "c_a0_0", title, text}]}

IR atoms are dropped (as in the paper); generations whose annotations are null are skipped and
counted; sentences without human atoms are skipped and counted. Context ids follow IBM's
``c_<atom>_<j>`` scheme; the same passage given to two atoms appears twice (FR1 keeps both,
FR2/FR3 merge them by exact text).

``--retriever bm25`` replaces the given passages by the project's own BM25 retriever
(:mod:`fact_reasoner.retrieval`) over ``--topic-passages`` (``{topic: [{title, text}]}``),
restricted to the atom's topic, ``--top-k`` per atom.

``--topics FILE`` keeps only some topics, e.g. the topics a trained NLI model never saw
(``--topics /work/nli_ckpt/splits.json --topics-key heldout_topics``): evaluate a model only on
biographies it was not trained on.

Usage::

    python -m experiments.prepare_factscore \\
        --generations ../shared/data/factscore_bios_dev/ChatGPT.jsonl \\
        --passages ../shared/data/factscore_bios_dev/passages_bm25_ChatGPT_dev.jsonl \\
        --out runs/factscore/chatgpt_dev.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KEPT_LABELS = ("S", "NS")
_SENTENCE_MARKS = re.compile(r"</?s>")
_SPACES = re.compile(r"\s+")


class PreparationError(ValueError):
    """A line of an input file that does not have the expected format (names file and line)."""


def passage_text(marked: str) -> str:
    """Plain text of a passage whose sentences are wrapped in ``<s>…</s>``.

    Marks become single spaces so sentences stay separated, then spaces are collapsed:
    ``"<s>A.</s><s>B.</s>"`` → ``"A. B."``.
    """
    return _SPACES.sub(" ", _SENTENCE_MARKS.sub(" ", marked)).strip()


def _read_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    if not path.exists():
        raise FileNotFoundError(f"file not found: {path}")
    with open(path, encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except json.JSONDecodeError as error:
                raise PreparationError(f"{path}:{number}: invalid JSON at column {error.colno}: {error.msg}") from None
            if not isinstance(data, dict):
                raise PreparationError(f"{path}:{number}: expected a JSON object, got {type(data).__name__}")
            yield number, data


def _require(data: dict, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in data:
        raise PreparationError(f"{where}: missing field {key!r}")
    value = data[key]
    if not isinstance(value, kind):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise PreparationError(f"{where}: field {key!r} should be {names}, got {type(value).__name__}")
    return value


def read_passages(path: Path) -> dict[tuple[str, str], deque[list[dict[str, str]]]]:
    """``(topic, atom text) → queue of passage lists`` (an atom text may occur twice per topic).

    Each passage becomes ``{title, text}`` with plain text (sentence marks removed).
    """
    by_atom: dict[tuple[str, str], deque[list[dict[str, str]]]] = defaultdict(deque)
    for number, data in _read_jsonl(path):
        where = f"{path}:{number}"
        name = _require(data, "name", str, where)
        sent = _require(data, "sent", str, where)
        passages = _require(data, "passages", list, where)
        cleaned = []
        for j, passage in enumerate(passages):
            if not isinstance(passage, dict) or not isinstance(passage.get("text"), str):
                raise PreparationError(f"{where}: passages[{j}] needs a string 'text'")
            cleaned.append({"title": passage.get("title") or name, "text": passage_text(passage["text"])})
        by_atom[(name, sent)].append(cleaned)
    return by_atom


@dataclass
class PreparationStats:
    generations: int = 0
    records: int = 0
    skipped_topics: int = 0
    null_annotations: int = 0
    sentences_without_atoms: int = 0
    atoms_by_label: dict[str, int] = field(default_factory=lambda: {"S": 0, "NS": 0, "IR": 0})
    atoms_without_passages: int = 0
    contexts: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def human_atoms(annotations: list, where: str, stats: PreparationStats) -> list[dict[str, Any]]:
    """The S/NS human atoms of one generation, ``{id, text, label, sentence}``, IR dropped."""
    atoms: list[dict[str, Any]] = []
    for i, sentence in enumerate(annotations):
        if not isinstance(sentence, dict):
            raise PreparationError(f"{where}: annotations[{i}] should be an object")
        facts = sentence.get("human-atomic-facts")
        if facts is None:
            stats.sentences_without_atoms += 1
            continue
        if not isinstance(facts, list):
            raise PreparationError(f"{where}: annotations[{i}].human-atomic-facts should be a list")
        for j, fact in enumerate(facts):
            label = fact.get("label") if isinstance(fact, dict) else None
            text = fact.get("text") if isinstance(fact, dict) else None
            if not isinstance(text, str) or label not in ("S", "NS", "IR"):
                raise PreparationError(
                    f"{where}: annotations[{i}].human-atomic-facts[{j}] needs text and label S/NS/IR, got {fact!r}"
                )
            stats.atoms_by_label[label] += 1
            if label in KEPT_LABELS:
                atoms.append({"id": f"a{len(atoms)}", "text": text, "label": label, "sentence": i})
    return atoms


def attach_given_passages(
    record: dict[str, Any],
    passages: dict[tuple[str, str], deque[list[dict[str, str]]]],
    stats: PreparationStats,
) -> None:
    """Give each atom the passages listed for it (ids ``c_<atom>_<j>``), in rank order."""
    contexts: list[dict[str, Any]] = []
    for atom in record["atoms"]:
        queue = passages.get((record["topic"], atom["text"]))
        found = queue.popleft() if queue else None
        if queue is not None and not queue and found is not None:
            queue.append(found)  # keep the last list for a further repeat of the same atom text
        if not found:
            stats.atoms_without_passages += 1
            atom["contexts"] = []
            continue
        ids = []
        for j, passage in enumerate(found):
            context_id = f"c_{atom['id']}_{j}"
            contexts.append({"id": context_id, "title": passage["title"], "text": passage["text"]})
            ids.append(context_id)
        atom["contexts"] = ids
    record["contexts"] = contexts
    stats.contexts += len(contexts)


class TopicBM25:
    """The project's BM25 retriever (``fact_reasoner.retrieval``) over ``{topic: [passages]}``."""

    def __init__(self, topic_passages: dict[str, list[dict[str, str]]]):
        from fact_reasoner.retrieval.bm25 import BM25Index

        records = []
        for topic, passages in topic_passages.items():
            for j, passage in enumerate(passages):
                records.append(
                    {
                        "id": f"{topic}#{j}",
                        "text": passage_text(passage["text"]),
                        "title": passage.get("title") or topic,
                        "topic": topic,
                        "metadata": {},
                    }
                )
        self._index = BM25Index.from_records(records)
        self.identity = f"topic-bm25:{len(records)}"

    def retrieve(self, query: str, k: int, *, topic: str | None = None):
        return self._index.search(query, k, topic, source="bm25")


def attach_retrieved_passages(
    record: dict[str, Any], retriever: TopicBM25, top_k: int, stats: PreparationStats, topic_in_query: bool = False
) -> None:
    """Contexts from our own retriever, restricted to the record's topic (optionally with the
    topic's name prefixed to each atom's query, FActScore-style)."""
    from fact_reasoner.retrieval import retrieve_for_record
    from fact_reasoner.schema import Atom

    atoms = [Atom(id=a["id"], text=a["text"]) for a in record["atoms"]]
    contexts, per_atom = retrieve_for_record(
        atoms, None, retriever, top_k, False, topic=record["topic"], topic_filter=True, topic_in_query=topic_in_query
    )
    for atom in record["atoms"]:
        atom["contexts"] = per_atom.get(atom["id"], [])
        stats.atoms_without_passages += not atom["contexts"]
    record["contexts"] = [{"id": c.id, "title": c.title, "text": c.text} for c in contexts]
    stats.contexts += len(contexts)


def read_topics(path: Path, key: str | None = None) -> set[str]:
    """Topics to keep: a JSON list, a JSON object's list under ``key`` (e.g. the NLI training's
    ``splits.json`` with ``heldout_topics``), or a text file with one topic per line."""
    if not path.exists():
        raise FileNotFoundError(f"file not found: {path}")
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return {line.strip() for line in text.splitlines() if line.strip()}
    if isinstance(data, dict):
        if key is None or key not in data:
            raise PreparationError(
                f"{path}: a JSON object; name the list of topics with --topics-key (keys: {', '.join(sorted(data))})"
            )
        data = data[key]
    if not isinstance(data, list) or not all(isinstance(t, str) for t in data):
        raise PreparationError(f"{path}: expected a list of topic names")
    return set(data)


def all_topics(generations: Path) -> set[str]:
    """Every topic of a generations file."""
    with open(generations, encoding="utf-8") as handle:
        return {json.loads(line).get("topic") for line in handle if line.strip()} - {None}


def prepare(
    generations: Path,
    passages: Path | None = None,
    *,
    retriever: TopicBM25 | None = None,
    top_k: int = 5,
    topics: set[str] | None = None,
    topic_in_query: bool = False,
) -> tuple[list[dict[str, Any]], PreparationStats]:
    """Input records for every annotated generation of ``generations`` (see module doc);
    only those whose topic is in ``topics`` when given (others count as ``skipped_topics``)."""
    if (passages is None) == (retriever is None):
        raise ValueError("give either the passages file or a retriever")
    given = read_passages(passages) if passages is not None else None
    stats = PreparationStats()
    records = []
    for number, data in _read_jsonl(generations):
        where = f"{generations}:{number}"
        stats.generations += 1
        topic = _require(data, "topic", str, where)
        if topics is not None and topic not in topics:
            stats.skipped_topics += 1
            continue
        annotations = data.get("annotations")
        if annotations is None:
            stats.null_annotations += 1
            continue
        if not isinstance(annotations, list):
            raise PreparationError(f"{where}: field 'annotations' should be a list or null")
        atoms = human_atoms(annotations, where, stats)
        if not atoms:
            continue
        record: dict[str, Any] = {
            "input": _require(data, "input", str, where),
            "output": _require(data, "output", str, where),
            "topic": topic,
            "cat": data.get("cat"),
            "source_line": number,
            "atoms": atoms,
        }
        if given is not None:
            attach_given_passages(record, given, stats)
        else:
            attach_retrieved_passages(record, retriever, top_k, stats, topic_in_query)
        records.append(record)
    stats.records = len(records)
    return records, stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generations", type=Path, required=True, help="FActScore labelled generations (JSONL)")
    parser.add_argument("--passages", type=Path, help="per-atom passages (JSONL: name, sent, passages)")
    parser.add_argument(
        "--retriever",
        choices=["given", "bm25"],
        default="given",
        help="given: the --passages file (default); bm25: our BM25 over --topic-passages",
    )
    parser.add_argument("--topic-passages", type=Path, help="{topic: [{title, text}]} corpus for --retriever bm25")
    parser.add_argument("--top-k", type=int, default=5, help="contexts per atom with --retriever bm25 (default 5)")
    parser.add_argument(
        "--topic-in-query",
        action="store_true",
        help="with --retriever bm25: prefix the topic's name to each atom's query",
    )
    parser.add_argument(
        "--topics",
        type=Path,
        help="keep only these topics (text file, one per line; or JSON list / object, see --topics-key)",
    )
    parser.add_argument("--topics-key", help="key of the topic list in a JSON object (e.g. heldout_topics)")
    parser.add_argument(
        "--other-topics",
        action="store_true",
        help="keep the topics --topics does NOT list (e.g. the dev topics that are not held out)",
    )
    parser.add_argument("--out", type=Path, required=True, help="output JSONL of input records")
    args = parser.parse_args(argv)
    try:
        topics = read_topics(args.topics, args.topics_key) if args.topics else None
        if args.other_topics:
            if topics is None:
                parser.error("--other-topics needs --topics")
            topics = all_topics(args.generations) - topics
        if args.retriever == "given":
            if args.passages is None:
                parser.error("--retriever given needs --passages FILE")
            records, stats = prepare(args.generations, args.passages, topics=topics)
        else:
            if args.topic_passages is None:
                parser.error("--retriever bm25 needs --topic-passages FILE")
            if not args.topic_passages.exists():
                raise FileNotFoundError(f"file not found: {args.topic_passages}")
            try:
                corpus = json.loads(args.topic_passages.read_text(encoding="utf-8"))
            except json.JSONDecodeError as error:
                raise PreparationError(f"{args.topic_passages}:{error.lineno}: invalid JSON: {error.msg}") from None
            if not isinstance(corpus, dict):
                raise PreparationError(f"{args.topic_passages}: expected an object {{topic: [passages]}}")
            records, stats = prepare(
                args.generations,
                retriever=TopicBM25(corpus),
                top_k=args.top_k,
                topics=topics,
                topic_in_query=args.topic_in_query,
            )
    except (PreparationError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(json.dumps(stats.as_dict()), file=sys.stderr)
    print(f"wrote {stats.records} records to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
