"""Evaluate any NLI backend on the held-out pairs the training recipe never sees.

    # the shipped cross-encoder (default) or any model directory
    .venv/bin/python experiments/nli_training/evaluate.py [--nli-model DIR] --out results.json
    # the shipped alignment classifier (or --nli-model DIR from train_align.py)
    .venv/bin/python experiments/nli_training/evaluate.py --nli align
    # any backend the pipeline can build, e.g. the local LLM judge
    .venv/bin/python experiments/nli_training/evaluate.py --nli llm --nli-prompt-version v1

Held-out sets (rebuilt by ``data.build`` from the same config and seed as training):

- ``heldout_vitaminc`` and ``heldout_fr_pairs``: 3-way accuracy (and per-class recall);
- ``heldout_factscore``: ChatGPT dev atoms of the held-out topics, each judged against every
  one of its (≤ 5) BM25 passages. Predicted S iff ``max over passages P(entailment) > 0.5``
  (primary rule); also reported: S iff some passage's arg-max label is entailment, and the
  AUROC of the max entailment probability. Metrics: accuracy, F1(S), balanced accuracy.
- speed: pairs per second at batch 32 (the backend's own batching) on the first 320 held-out
  (atom, passage) pairs, measured first, on a fresh backend (model loaded by one unrelated
  pair), with the 1-minute load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from data import LABELS, DataConfig, build  # noqa: E402


def three_way(backend, rows: list[dict], chunk: int = 64) -> dict:
    pairs = [(r["premise"], r["hypothesis"]) for r in rows]
    judgements = []
    for start in range(0, len(pairs), chunk):
        judgements += backend.judge(pairs[start : start + chunk])
    gold = [r["label"] for r in rows]
    pred = [j.label.value for j in judgements]
    correct = sum(g == p for g, p in zip(gold, pred))
    recall = {
        label: round(sum(g == p == label for g, p in zip(gold, pred)) / max(gold.count(label), 1), 4)
        for label in LABELS
    }
    return {
        "n": len(rows),
        "accuracy": round(correct / max(len(rows), 1), 4),
        "recall": recall,
        "predicted": dict(Counter(pred)),
        "failed": sum(j.failed for j in judgements),
    }


def auroc(scores: list[float], positives: list[bool]) -> float:
    """Probability that a random positive scores above a random negative (ties count half)."""
    pos = [s for s, y in zip(scores, positives) if y]
    neg = [s for s, y in zip(scores, positives) if not y]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def binary_metrics(gold_s: list[bool], pred_s: list[bool]) -> dict:
    tp = sum(g and p for g, p in zip(gold_s, pred_s))
    tn = sum((not g) and (not p) for g, p in zip(gold_s, pred_s))
    fp = sum((not g) and p for g, p in zip(gold_s, pred_s))
    fn = sum(g and (not p) for g, p in zip(gold_s, pred_s))
    precision = tp / max(tp + fp, 1)
    recall = tp / max(tp + fn, 1)
    specificity = tn / max(tn + fp, 1)
    return {
        "accuracy": round((tp + tn) / max(len(gold_s), 1), 4),
        "f1_S": round(2 * precision * recall / max(precision + recall, 1e-12), 4),
        "balanced_accuracy": round((recall + specificity) / 2, 4),
        "recall_S": round(recall, 4),
        "recall_NS": round(specificity, 4),
        "predicted_S": sum(pred_s),
    }


def factscore(backend, atoms: list[dict], chunk: int = 64) -> dict:
    pairs, owner = [], []
    for i, atom in enumerate(atoms):
        for passage in atom["passages"]:
            pairs.append((passage, atom["atom"]))
            owner.append(i)
    judgements = []
    for start in range(0, len(pairs), chunk):
        judgements += backend.judge(pairs[start : start + chunk])
    max_entail = [0.0] * len(atoms)
    any_argmax_entail = [False] * len(atoms)
    for i, j in zip(owner, judgements):
        max_entail[i] = max(max_entail[i], j.probabilities.get("entailment", 0.0) if not j.failed else 0.0)
        any_argmax_entail[i] |= (not j.failed) and j.label.value == "entailment"
    gold_s = [a["label"] == "S" for a in atoms]
    return {
        "n_atoms": len(atoms),
        "n_pairs": len(pairs),
        "gold": dict(Counter(a["label"] for a in atoms)),
        "max_entailment_gt_0.5": binary_metrics(gold_s, [p > 0.5 for p in max_entail]),
        "any_argmax_entailment": binary_metrics(gold_s, any_argmax_entail),
        "auroc_max_entailment": round(auroc(max_entail, gold_s), 4),
        "failed_pairs": sum(j.failed for j in judgements),
    }


def records_atoms(path: Path, limit: int | None = None) -> list[dict]:
    """Atoms labelled S/NS of prepared input records, each with the texts of its contexts."""
    out = []
    with open(path, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    for record in records[:limit] if limit else records:
        texts = {c["id"]: c["text"] for c in record["contexts"]}
        for atom in record["atoms"]:
            if atom.get("label") in ("S", "NS"):
                passages = [texts[i] for i in atom.get("contexts") or texts]
                out.append({"topic": record.get("topic"), "atom": atom["text"], "label": atom["label"],
                            "passages": passages})
    return out


def speed(backend, atoms: list[dict], n: int = 320) -> dict:
    pairs = [(p, a["atom"]) for a in atoms for p in a["passages"]][:n]
    backend.judge([("A warm-up premise loads the model.", "Nothing else is memoised.")])
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    for start in range(0, len(pairs), 32):
        backend.judge(pairs[start : start + 32])
    seconds = time.perf_counter() - started
    return {
        "pairs": len(pairs),
        "seconds": round(seconds, 2),
        "pairs_per_s": round(len(pairs) / seconds, 1),
        "loadavg_1min_before": load_before,
        "loadavg_1min_after": os.getloadavg()[0],
        "cpu_count": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(HERE / "config.json"))
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--nli", default="cross-encoder", help="cross-encoder | align | llm | any name make_nli knows")
    parser.add_argument("--nli-model", default=None, help="model dir / id (cross-encoder, align: default = the shipped one)")
    parser.add_argument("--nli-prompt-version", default="v1")
    parser.add_argument("--backend", default="local", help="LLM backend for --nli llm")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--max-length", type=int, default=None, help="cross-encoder window (tokens)")
    parser.add_argument("--batch-size", type=int, default=32, help="cross-encoder batch size")
    parser.add_argument("--onnx", action="store_true", help="cross-encoder through ONNX Runtime")
    parser.add_argument("--no-cache", action="store_true", help="do not use the model-call cache")
    parser.add_argument("--max-atoms", type=int, default=None, help="evaluate only the first N held-out atoms")
    parser.add_argument("--max-pairs", type=int, default=None, help="only the first N pairs of each 3-way set")
    parser.add_argument("--records", type=Path,
                        help="take the S/NS atoms and their passages from these prepared input records "
                        "(experiments/prepare_factscore.py) instead of the held-out split — e.g. to score "
                        "exactly the pairs a run_biographies.py run judged")
    parser.add_argument("--max-records", type=int, help="with --records: only the first N records")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--out", default=None, help="write the metrics as JSON here")
    args = parser.parse_args()

    from fact_reasoner.config import PipelineConfig
    from fact_reasoner.pipeline import FactReasoner

    config = json.loads(Path(args.config).read_text())
    splits = build(DataConfig(data_dir=Path(args.data_dir), seed=config["seed"], **config.get("data", {})))
    pipeline_config = PipelineConfig(
        nli=args.nli,
        nli_model=args.nli_model,
        nli_prompt_version=args.nli_prompt_version,
        backend=args.backend,
        threads=args.threads,
        use_cache=False if args.nli in ("cross-encoder", "align") else not args.no_cache,
    )
    if args.nli == "cross-encoder":
        from fact_reasoner.nli.cross_encoder import CrossEncoderNLI

        backend = CrossEncoderNLI(
            args.nli_model, max_length=args.max_length, batch_size=args.batch_size,
            threads=args.threads, use_onnx=args.onnx,
        )
    else:
        backend = FactReasoner(pipeline_config).model_nli()
    atoms = records_atoms(args.records, args.max_records) if args.records else splits["heldout_factscore"]
    atoms = atoms[: args.max_atoms] if args.max_atoms else atoms
    limit = args.max_pairs
    results: dict = {
        "backend": getattr(backend, "name", args.nli),
        "model": getattr(backend, "model_id", args.nli_model),
        "max_length": getattr(backend, "max_length", None),
        "heldout_topics": splits["heldout_topics"],
    }
    if not args.skip_speed:
        # First, on a fresh backend: nothing memoised yet (the call cache is off unless asked).
        results["speed_batch32"] = speed(backend, atoms)
        print("speed", json.dumps(results["speed_batch32"]), flush=True)
    started = time.perf_counter()
    results["vitaminc"] = three_way(backend, splits["heldout_vitaminc"][:limit])
    print("vitaminc", json.dumps(results["vitaminc"]), flush=True)
    results["fr_pairs"] = three_way(backend, splits["heldout_fr_pairs"][:limit])
    print("fr_pairs", json.dumps(results["fr_pairs"]), flush=True)
    results["factscore"] = factscore(backend, atoms)
    print("factscore", json.dumps(results["factscore"]), flush=True)
    results["eval_seconds"] = round(time.perf_counter() - started, 1)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
