"""Evaluate an NLI backend on the held-out sets of the training mix (never trained on).

    # the shipped cross-encoder (default), a trained checkpoint or an exported folder
    .venv/bin/python -m experiments.nli_training.evaluate --mix runs/nli_ce/mix.json [--nli-model DIR]
    # the other judges on exactly the same pairs
    .venv/bin/python -m experiments.nli_training.evaluate --mix runs/nli_ce/mix.json --nli align --sets factscore
    .venv/bin/python -m experiments.nli_training.evaluate --mix runs/nli_ce/mix.json --nli llm --sets factscore

Measures (``--sets``, default all):

- ``mnli_mismatched``, ``snli_test``: 3-way accuracy (arg-max label), per-class recall;
- ``fever_dev``: 2-way support vs refute on gold evidence: predicted "supports" iff
  P(entailment) > P(contradiction); accuracy;
- ``wice_dev``: claim vs the whole cited page (the backend's own windows): entailed iff
  P(entailment) > 0.5; balanced accuracy, F1, AUROC of P(entailment);
- ``factscore``: the ChatGPT atoms of the 14 held-out topics, each against every one of its
  (≤ 5) BM25 passages: S iff max over passages of P(entailment) > 0.5; accuracy, F1(S),
  balanced accuracy, AUROC of the max entailment probability — the engine's question;
- speed: pairs per second at batch 32 on the first 320 FActScore (atom, passage) pairs, on a
  fresh backend (model loaded by one unrelated pair), nothing memoised, with the load average.

``--records FILE`` takes the FActScore atoms and passages from prepared input records instead
(``experiments/prepare_factscore.py``), e.g. to score exactly the pairs a biography run judged.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

SETS = ("factscore", "wice_dev", "fever_dev", "mnli_mismatched", "snli_test")
THREE_WAY = ("entailment", "neutral", "contradiction")


def judge_all(backend, pairs: list[tuple[str, str]], chunk: int = 64):
    out = []
    for start in range(0, len(pairs), chunk):
        out += backend.judge(pairs[start : start + chunk])
    return out


def auroc(scores: list[float], positives: list[bool]) -> float:
    """P(a random positive scores above a random negative), ties counting half (rank form)."""
    import numpy as np
    from scipy.stats import rankdata

    scores_a = np.asarray(scores, dtype=float)
    y = np.asarray(positives, dtype=bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if not n_pos or not n_neg:
        return float("nan")
    ranks = rankdata(scores_a)
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def binary_metrics(gold: list[bool], predicted: list[bool]) -> dict:
    tp = sum(g and p for g, p in zip(gold, predicted))
    tn = sum(not g and not p for g, p in zip(gold, predicted))
    fp = sum(not g and p for g, p in zip(gold, predicted))
    fn = sum(g and not p for g, p in zip(gold, predicted))
    precision = tp / max(tp + fp, 1)
    recall = tp / max(tp + fn, 1)
    specificity = tn / max(tn + fp, 1)
    return {
        "n": len(gold),
        "accuracy": round((tp + tn) / max(len(gold), 1), 4),
        "f1_positive": round(2 * precision * recall / max(precision + recall, 1e-12), 4),
        "balanced_accuracy": round((recall + specificity) / 2, 4),
        "recall_positive": round(recall, 4),
        "recall_negative": round(specificity, 4),
        "predicted_positive": sum(predicted),
    }


def three_way(backend, rows: list[dict]) -> dict:
    judgements = judge_all(backend, [(r["premise"], r["hypothesis"]) for r in rows])
    gold = [r["label"] for r in rows]
    predicted = [j.label.value for j in judgements]
    return {
        "n": len(rows),
        "accuracy": round(sum(g == p for g, p in zip(gold, predicted)) / max(len(rows), 1), 4),
        "recall": {
            label: round(sum(g == p == label for g, p in zip(gold, predicted)) / max(gold.count(label), 1), 4)
            for label in THREE_WAY
        },
        "predicted": dict(Counter(predicted)),
        "failed": sum(j.failed for j in judgements),
    }


def support_vs_refute(backend, rows: list[dict]) -> dict:
    judgements = judge_all(backend, [(r["premise"], r["hypothesis"]) for r in rows])
    gold = [r["label"] == "entailment" for r in rows]
    predicted = [j.probabilities.get("entailment", 0.0) > j.probabilities.get("contradiction", 0.0) for j in judgements]
    return binary_metrics(gold, predicted) | {"failed": sum(j.failed for j in judgements)}


def entailed_or_not(backend, rows: list[dict]) -> dict:
    judgements = judge_all(backend, [(r["premise"], r["hypothesis"]) for r in rows])
    gold = [r["label"] == "entailment" for r in rows]
    p = [j.probabilities.get("entailment", 0.0) if not j.failed else 0.0 for j in judgements]
    return binary_metrics(gold, [x > 0.5 for x in p]) | {
        "auroc": round(auroc(p, gold), 4),
        "failed": sum(j.failed for j in judgements),
    }


def factscore_pairs(atoms: list[dict]) -> tuple[list[tuple[str, str]], list[int]]:
    pairs, owner = [], []
    for i, atom in enumerate(atoms):
        for passage in atom["passages"]:
            pairs.append((passage, atom["atom"]))
            owner.append(i)
    return pairs, owner


def factscore(backend, atoms: list[dict]) -> dict:
    pairs, owner = factscore_pairs(atoms)
    judgements = judge_all(backend, pairs)
    max_entail = [0.0] * len(atoms)
    for i, j in zip(owner, judgements):
        if not j.failed:
            max_entail[i] = max(max_entail[i], j.probabilities.get("entailment", 0.0))
    gold = [a["label"] == "S" for a in atoms]
    return {
        "n_atoms": len(atoms),
        "n_pairs": len(pairs),
        "gold": dict(Counter(a["label"] for a in atoms)),
        "max_entailment_gt_0.5": binary_metrics(gold, [p > 0.5 for p in max_entail]),
        "auroc_max_entailment": round(auroc(max_entail, gold), 4),
        "failed_pairs": sum(j.failed for j in judgements),
        "max_entailment": max_entail,
    }


def records_atoms(path: Path, limit: int | None = None) -> list[dict]:
    """Atoms labelled S/NS of prepared input records, each with the texts of its contexts."""
    with open(path, encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    out = []
    for record in records[:limit] if limit else records:
        texts = {c["id"]: c["text"] for c in record["contexts"]}
        for atom in record["atoms"]:
            if atom.get("label") in ("S", "NS"):
                passages = [texts[i] for i in atom.get("contexts") or texts]
                out.append(
                    {"topic": record.get("topic"), "atom": atom["text"], "label": atom["label"], "passages": passages}
                )
    return out


def speed(make_backend, atoms: list[dict], n: int = 320) -> dict:
    backend = make_backend()
    pairs = factscore_pairs(atoms)[0][:n]
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
        "loadavg_1min_before": round(load_before, 2),
        "loadavg_1min_after": round(os.getloadavg()[0], 2),
        "cpu_count": os.cpu_count(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mix", type=Path, help="the mix written by mix.py / train.py (held-out sets inside)")
    parser.add_argument(
        "--mix-config", type=Path, default=HERE / "mix.json", help="build the mix from this config instead"
    )
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--nli", default="cross-encoder", help="cross-encoder | align | llm")
    parser.add_argument("--nli-model", help="model folder (cross-encoder: checkpoint or exported folder)")
    parser.add_argument("--nli-prompt-version", default="v1")
    parser.add_argument("--backend", default="local", help="LLM backend for --nli llm")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--max-length", type=int, help="cross-encoder window (tokens)")
    parser.add_argument("--runtime", default="auto", choices=("auto", "onnx", "torch"), help="cross-encoder runtime")
    parser.add_argument("--max-windows", type=int, help="cross-encoder: score only the N windows sharing most words")
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, from {', '.join(SETS)}")
    parser.add_argument("--max-pairs", type=int, help="only the first N rows of each 3-way / 2-way set")
    parser.add_argument(
        "--records", type=Path, help="FActScore atoms from prepared records instead of the held-out topics"
    )
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument(
        "--cache", action="store_true", help="use the model-call cache (default: off, so speed is honest)"
    )
    parser.add_argument("--out", type=Path, help="write the metrics as JSON here")
    args = parser.parse_args()

    from fact_reasoner.config import PipelineConfig
    from fact_reasoner.nli.cache import CachedNLI
    from fact_reasoner.stages import Stages

    if args.mix:
        mix = json.loads(args.mix.read_text())
    else:
        from experiments.nli_training.mix import build_mix

        mix = build_mix(json.loads(args.mix_config.read_text()), args.data_dir)
    held = mix["heldout"]

    def make_backend():
        if args.nli == "cross-encoder":
            from fact_reasoner.nli.cross_encoder import CrossEncoderNLI

            model = CrossEncoderNLI(
                args.nli_model,
                max_length=args.max_length,
                threads=args.threads,
                runtime=args.runtime,
                max_windows=args.max_windows,
            )
            return CachedNLI(model)  # memo only: each distinct pair once
        config = PipelineConfig(
            nli=args.nli,
            nli_model=args.nli_model,
            nli_prompt_version=args.nli_prompt_version,
            backend=args.backend,
            threads=args.threads,
            use_cache=args.cache,
        )
        return Stages(config).nli()

    atoms = records_atoms(args.records) if args.records else held["factscore"]
    wanted = [s.strip() for s in args.sets.split(",") if s.strip()]
    backend = make_backend()
    results: dict = {"backend": backend.identity, "sets": wanted, "heldout_topics": mix.get("heldout_topics")}
    if not args.skip_speed:
        results["speed_batch32"] = speed(make_backend, atoms)
        print("speed", json.dumps(results["speed_batch32"]), flush=True)
    started = time.perf_counter()
    for name in wanted:
        if name == "factscore":
            result = factscore(backend, atoms)
        elif name == "wice_dev":
            result = entailed_or_not(backend, held[name][: args.max_pairs])
        elif name == "fever_dev":
            result = support_vs_refute(backend, held[name][: args.max_pairs])
        elif name in ("mnli_mismatched", "snli_test"):
            result = three_way(backend, held[name][: args.max_pairs])
        else:
            raise SystemExit(f"unknown set {name!r}: use {', '.join(SETS)}")
        results[name] = result
        shown = {k: v for k, v in result.items() if k != "max_entailment"}
        print(name, json.dumps(shown), flush=True)
    results["eval_seconds"] = round(time.perf_counter() - started, 1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
