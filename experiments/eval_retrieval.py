"""Retrieval quality and speed on the FActScore ChatGPT dev biographies (bm25, chroma, hybrid).

Corpus: ``topic_passages_dev.json`` (the distinct Wikipedia passages per person). Queries: the
human atoms of ``ChatGPT.jsonl`` (labels S and NS by default, as in the FactReasoner paper; IR
dropped). Gold: the passages ``passages_bm25_ChatGPT_dev.jsonl`` lists for each atom (FActScore's
own BM25 over the person's article), matched to our chunks by passage text (a hash of the text
without ``<s>`` marks). Passages are indexed whole (``--chunk-size`` above the longest passage,
no overlap) so a chunk is a passage.

Metrics per atom, averaged (k = 1 and 5):
- R@k: the fraction of the atom's gold passages found in our top k (at most 1/|gold| at k = 1);
- Hit@k: 1 if any gold passage is in our top k;
- First@k: 1 if the gold list's first (best BM25) passage is in our top k.
Queries: the atom text, and the topic (person) + atom text (FActScore's own query, via
``fact_reasoner.retrieval.records.topic_query``); each with and without the topic filter.
With the topic filter a random ranking of the person's n passages gets E[R@k] = min(k, n)/n,
reported as ``random``.

    nice -n 19 .venv-dev/bin/python -m experiments.eval_retrieval --out experiments/results/retrieval_dev.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from collections import defaultdict
from pathlib import Path
from statistics import mean

from fact_reasoner.embeddings import shared_embedder
from fact_reasoner.retrieval.base import RetrievedContext
from fact_reasoner.retrieval.corpus import document_hash
from fact_reasoner.retrieval.records import topic_query
from fact_reasoner.retrieval.retrievers import (
    BM25Retriever,
    ChromaRetriever,
    HybridRetriever,
    reciprocal_rank_fusion,
)
from fact_reasoner.retrieval.store import build_index

ROOT = Path(__file__).resolve().parents[1]

DATA = ROOT.parent / "shared" / "data" / "factscore_bios_dev"


def load_atoms(data: Path, labels: set[str]) -> list[dict]:
    gold: dict[tuple[str, str], list[str]] = {}
    with (data / "passages_bm25_ChatGPT_dev.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            gold.setdefault((row["name"], row["sent"]), [document_hash(p["text"]) for p in row["passages"]])
    atoms = []
    with (data / "ChatGPT.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            for annotation in record.get("annotations") or []:
                for fact in annotation.get("human-atomic-facts") or []:
                    if fact["label"] not in labels:
                        continue
                    key = (record["topic"], fact["text"])
                    if key not in gold:
                        raise SystemExit(f"no gold passages for {key}")
                    atoms.append(
                        {"topic": record["topic"], "text": fact["text"], "label": fact["label"], "gold": gold[key]}
                    )
    return atoms


def score(ranked_hashes: list[str], gold: list[str], k: int) -> dict[str, float]:
    top = ranked_hashes[:k]
    gold_set = set(gold)
    return {
        f"R@{k}": len(gold_set & set(top)) / len(gold_set),
        f"Hit@{k}": float(bool(gold_set & set(top))),
        f"First@{k}": float(gold[0] in top),
    }


def minmax_fusion(rankings: list[list[RetrievedContext]], k: int, weight: float = 0.5) -> list[RetrievedContext]:
    """The alternative to RRF: scores min-max normalised per ranking, then weight·dense + (1−weight)·lexical."""
    fused: dict[str, float] = defaultdict(float)
    first: dict[str, RetrievedContext] = {}
    for ranking, w in zip(rankings, (weight, 1 - weight)):
        if not ranking:
            continue
        low, high = min(r.score for r in ranking), max(r.score for r in ranking)
        for r in ranking:
            fused[r.id] += w * ((r.score - low) / (high - low) if high > low else 1.0)
            first.setdefault(r.id, r)
    return [first[i] for i in sorted(fused, key=lambda i: -fused[i])[:k]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--store", type=Path, default=Path("/tmp/fact_reasoner_eval_retrieval_store"))
    parser.add_argument("--labels", default="S,NS", help="atom labels to use (default S,NS; add IR for all)")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--quick", action="store_true", help="atom queries only (skip the topic-prefixed ones)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for index embedding (default 1)")
    args = parser.parse_args()
    if not args.data.exists():
        raise SystemExit(f"data folder {args.data} not found")

    labels = set(args.labels.split(","))
    atoms = load_atoms(args.data, labels)
    passages_per_topic = {t: len(v) for t, v in json.loads((args.data / "topic_passages_dev.json").read_text()).items()}
    print(
        f"{len(atoms)} atoms ({args.labels}) over {len(passages_per_topic)} topics, "
        f"{sum(passages_per_topic.values())} passages",
        flush=True,
    )

    # --- index build (fresh store); the model load is timed apart from the embedding
    if args.store.exists():
        shutil.rmtree(args.store)
    started = time.perf_counter()
    shared_embedder().encode(["load the model"])
    seconds_model = time.perf_counter() - started
    report = build_index(
        [args.data / "topic_passages_dev.json"],
        args.store,
        "bios_dev",
        chunk_size=4000,
        chunk_overlap=0,
        batch_size=32,
        threads=args.threads,
        progress=False,
    )
    build = {"model_load_s": seconds_model, **report.as_dict()}
    print(json.dumps(build, indent=2), flush=True)
    assert report.chunks_total == sum(passages_per_topic.values()), "expected one chunk per passage"

    dense = ChromaRetriever(args.store, "bios_dev")
    lexical = BM25Retriever(args.store, "bios_dev")
    hybrid = HybridRetriever(dense, lexical)
    retrievers = {"bm25": lexical, "chroma": dense, "hybrid": hybrid}

    rows = []
    depth = 20
    variants = [(True, False), (False, False), (True, True), (False, True)]  # (topic filter, topic in query)
    if args.quick:
        variants = variants[:2]
    for topic_filter, topic_in_query in variants:
        rankings_for_fusion: dict[str, list] = {"chroma": [], "bm25": []}
        for name, retriever in retrievers.items():
            per_atom = []
            started = time.perf_counter()
            for atom in atoms:
                topic = atom["topic"] if topic_filter else None
                want = depth if name in rankings_for_fusion else args.k
                query = topic_query(atom["text"], atom["topic"]) if topic_in_query else atom["text"]
                results = retriever.retrieve(query, want, topic=topic)
                if name in rankings_for_fusion:
                    rankings_for_fusion[name].append(results)
                hashes = [r.metadata["doc_hash"] for r in results]
                per_atom.append(score(hashes, atom["gold"], 1) | score(hashes, atom["gold"], args.k))
            seconds = time.perf_counter() - started
            row = {
                "retriever": name,
                "topic_filter": topic_filter,
                "topic_in_query": topic_in_query,
                "queries": len(atoms),
                "qps": len(atoms) / seconds,
                "depth": depth if name in rankings_for_fusion else args.k,
            }
            row |= {key: mean(m[key] for m in per_atom) for key in per_atom[0]}
            rows.append(row)
            print(json.dumps(row), flush=True)
        # fusion alternatives on the same (already retrieved) rankings: no extra queries
        for label, fuse in (
            ("rrf(60) [=hybrid]", lambda r: reciprocal_rank_fusion(r, args.k)),
            ("minmax 0.5/0.5", lambda r: minmax_fusion(r, args.k, 0.5)),
        ):
            per_atom = []
            for atom, d, b in zip(atoms, rankings_for_fusion["chroma"], rankings_for_fusion["bm25"]):
                hashes = [r.metadata["doc_hash"] for r in fuse([d, b])]
                per_atom.append(score(hashes, atom["gold"], 1) | score(hashes, atom["gold"], args.k))
            row = {"retriever": f"fusion {label}", "topic_filter": topic_filter, "topic_in_query": topic_in_query}
            row |= {key: mean(m[key] for m in per_atom) for key in per_atom[0]}
            rows.append(row)
            print(json.dumps(row), flush=True)
        if topic_filter and not topic_in_query:
            random_row = {"retriever": "random", "topic_filter": True, "topic_in_query": False}
            for k in (1, args.k):
                random_row[f"R@{k}"] = mean(
                    min(k, passages_per_topic[a["topic"]]) / passages_per_topic[a["topic"]] for a in atoms
                )
            rows.append(random_row)

    print("\n| retriever | topic filter | query | R@1 | R@5 | Hit@1 | Hit@5 | First@1 | First@5 | queries/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        cells = [
            f"{row[k]:.3f}" if k in row else ""
            for k in ("R@1", f"R@{args.k}", "Hit@1", f"Hit@{args.k}", "First@1", f"First@{args.k}")
        ]
        qps = f"{row['qps']:.0f}" if "qps" in row else ""
        query = "topic + atom" if row["topic_in_query"] else "atom"
        print(
            f"| {row['retriever']} | {'yes' if row['topic_filter'] else 'no'} | {query} | {' | '.join(cells)} | {qps} |"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(
            json.dumps({"atoms": len(atoms), "labels": sorted(labels), "build": build, "rows": rows}, indent=2)
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
