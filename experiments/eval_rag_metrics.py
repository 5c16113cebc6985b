"""Measure the RAG metrics against labelled data (HaluBench subset, WikiEval pairs).

- HaluBench (``../shared/data/rag/halubench_dev.csv``, PASS = faithful / FAIL = hallucinated):
  faithfulness of each answer against its context split into chunks; rows alternate between a
  tuning half (even positions, used to choose the PASS threshold that maximises balanced
  accuracy) and a test half (odd positions, where balanced accuracy is reported); ROC AUC on
  the test half and on all rows.
- WikiEval (``WikiEval_samples_10.jsonl``): how often ``answer`` gets a higher faithfulness
  than ``ungrounded_answer`` (contexts = context_v1), and a higher answer relevance than
  ``poor_answer``; ties are counted apart.

Seconds per sample are wall-clock for the whole metric computation (atoms, NLI, inference).

    nice -n 19 .venv-dev/bin/python -m experiments.eval_rag_metrics --halubench 40 --wikieval \
        --atomizer sentence --max-context-words 300 --out experiments/results/rag_metrics.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from fact_reasoner import measures
from fact_reasoner.metrics import AnswerRelevance, Faithfulness, MetricContext
from fact_reasoner.settings.config import PipelineConfig

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "rag"


def chunk_words(text: str, size: int) -> list[str]:
    """Split ``text`` into chunks of at most ``size`` words (paragraph breaks kept inside)."""
    words = text.split()
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)] or [text]


def make_context(args) -> MetricContext:
    config = PipelineConfig(
        version=2,
        backend=args.backend,
        model=args.model,
        threads=args.threads,
        nli=args.nli,
        nli_prompt_version=args.nli_prompt_version,
    )
    # the judge is built by the pipeline's factory; one that cannot be built stops the run
    return MetricContext(config, atomizer=args.atomizer)


def balanced_accuracy(scores, labels, threshold) -> float:
    """Mean of recall on PASS (score ≥ t) and on FAIL (score < t): the shared measure
    (:func:`fact_reasoner.measures.balanced_accuracy`) of the verdicts at threshold t."""
    return measures.balanced_accuracy([label == 1 for label in labels], [score >= threshold for score in scores])


def best_threshold(scores, labels) -> float:
    """The threshold of the highest balanced accuracy (the nearest to 0.5 among equals); with
    one class only, where no threshold has one, the lowest candidate."""
    values = sorted(set(scores))
    candidates = [values[0] - 1e-9] + [(a + b) / 2 for a, b in zip(values, values[1:])] + [values[-1] + 1e-9]
    if len(set(labels)) < 2:
        return candidates[0]
    return max(candidates, key=lambda t: (balanced_accuracy(scores, labels, t), -abs(t - 0.5)))


def run_halubench(args, context) -> dict:
    frame = pd.read_csv(DATA / "halubench_dev.csv")
    frame["words"] = frame["context"].str.split().str.len()
    if args.max_context_words:
        frame = frame[frame["words"] <= args.max_context_words]
    frame = frame.head(args.halubench).reset_index(drop=True)
    metric = Faithfulness(no_claims_score=1.0)
    rows = []
    for i, row in frame.iterrows():
        sample = {
            "question": row["question"],
            "response": str(row["answer"]),
            "retrieved_contexts": chunk_words(row["context"], args.chunk_words),
        }
        start = time.perf_counter()
        try:
            result = metric.score(sample, context)
            score, error = result.score, None
        except Exception as exc:  # recorded, never dropped
            score, error = float("nan"), f"{type(exc).__name__}: {exc}"
        seconds = time.perf_counter() - start
        rows.append(
            {
                "position": i,
                "source": row["source"],
                "label": row["label"],
                "score": score,
                "seconds": seconds,
                "error": error,
                "verdicts": result.verdict_counts if error is None else None,
            }
        )
        print(
            f"halubench {i + 1}/{len(frame)} {row['label']} score={score:.3f} {seconds:.1f}s",
            file=sys.stderr,
            flush=True,
        )
    scored = [r for r in rows if not math.isnan(r["score"])]
    labels = [1 if r["label"] == "PASS" else 0 for r in scored]
    scores = [r["score"] for r in scored]
    tune = [j for j, r in enumerate(scored) if r["position"] % 2 == 0]
    test = [j for j, r in enumerate(scored) if r["position"] % 2 == 1]
    threshold = best_threshold([scores[j] for j in tune], [labels[j] for j in tune])
    return {
        "rows": len(rows),
        "scored": len(scored),
        "errors": sum(r["error"] is not None for r in rows),
        "pass": sum(labels),
        "fail": len(labels) - sum(labels),
        "threshold_from_tune_half": threshold,
        "balanced_accuracy_tune": balanced_accuracy([scores[j] for j in tune], [labels[j] for j in tune], threshold),
        "balanced_accuracy_test": balanced_accuracy([scores[j] for j in test], [labels[j] for j in test], threshold),
        "balanced_accuracy_test_at_0.5": balanced_accuracy([scores[j] for j in test], [labels[j] for j in test], 0.5),
        "roc_auc_test": measures.auroc([labels[j] == 1 for j in test], [scores[j] for j in test]),
        "roc_auc_all": measures.auroc([label == 1 for label in labels], scores),
        "seconds_per_sample": float(np.mean([r["seconds"] for r in rows])) if rows else float("nan"),
        "per_row": rows,
    }


def run_wikieval(args, context) -> dict:
    rows = [json.loads(line) for line in (DATA / "WikiEval_samples_10.jsonl").read_text().splitlines() if line.strip()]
    faithfulness, relevance = Faithfulness(no_claims_score=1.0), AnswerRelevance()
    out = []
    for i, row in enumerate(rows):
        question = row["question"].removeprefix("Question:").strip()
        contexts = [c for ctx in row["context_v1"] for c in chunk_words(ctx, args.chunk_words)]
        record = {"index": i}
        start = time.perf_counter()
        for key in ("answer", "ungrounded_answer", "poor_answer"):
            answer = row[key].removeprefix("Answer:").strip()
            sample = {"question": question, "response": answer, "retrieved_contexts": contexts}
            if key != "poor_answer":
                try:
                    record[f"faithfulness_{key}"] = faithfulness.score(sample, context).score
                except Exception as exc:
                    record[f"faithfulness_{key}"], record["error"] = float("nan"), f"{type(exc).__name__}: {exc}"
            if key != "ungrounded_answer" and not args.no_relevance:
                try:
                    record[f"relevance_{key}"] = relevance.score(sample, context).score
                except Exception as exc:
                    record[f"relevance_{key}"], record["error"] = float("nan"), f"{type(exc).__name__}: {exc}"
        record["seconds"] = time.perf_counter() - start
        out.append(record)
        print(f"wikieval {i + 1}/{len(rows)} {json.dumps(record)}", file=sys.stderr, flush=True)

    def compare(a: str, b: str) -> dict:
        pairs = [(r.get(a, float("nan")), r.get(b, float("nan"))) for r in out]
        pairs = [(x, y) for x, y in pairs if not (math.isnan(x) or math.isnan(y))]
        return {
            "pairs": len(pairs),
            "wins": sum(x > y for x, y in pairs),
            "ties": sum(x == y for x, y in pairs),
            "losses": sum(x < y for x, y in pairs),
        }

    return {
        "faithfulness_answer_vs_ungrounded": compare("faithfulness_answer", "faithfulness_ungrounded_answer"),
        "relevance_answer_vs_poor": compare("relevance_answer", "relevance_poor_answer"),
        "seconds_per_question": float(np.mean([r["seconds"] for r in out])) if out else float("nan"),
        "per_row": out,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--halubench", type=int, default=0, help="number of HaluBench rows (0: skip)")
    p.add_argument(
        "--max-context-words", type=int, default=0, help="only rows whose context has at most this many words"
    )
    p.add_argument("--wikieval", action="store_true")
    p.add_argument("--no-relevance", action="store_true", help="WikiEval: skip answer relevance")
    p.add_argument("--chunk-words", type=int, default=150)
    p.add_argument("--atomizer", default="auto", choices=("auto", "llm", "sentence"))
    p.add_argument("--backend", default="local")
    p.add_argument("--model")
    p.add_argument("--threads", type=int)
    p.add_argument("--nli", default="auto")
    p.add_argument("--nli-prompt-version", default="v1")
    p.add_argument("--out", type=Path, default=ROOT / "experiments" / "results" / "rag_metrics.json")
    args = p.parse_args(argv)
    context = make_context(args)
    report: dict = {"settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    start = time.perf_counter()
    if args.halubench:
        report["halubench"] = run_halubench(args, context)
    if args.wikieval:
        report["wikieval"] = run_wikieval(args, context)
    report["atomizer"] = context.atomizer_name
    report["nli"] = context.nli.name
    # pairs asked of the judge, and those its model answered (the rest came from the pair cache)
    report["nli_pairs"] = context.nli.requested
    report["nli_pairs_judged"] = context.nli.backend_pairs
    report["seconds_total"] = time.perf_counter() - start
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, default=str))
    summary = {
        k: {kk: vv for kk, vv in v.items() if kk != "per_row"} if isinstance(v, dict) else v for k, v in report.items()
    }
    print(json.dumps(summary, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
