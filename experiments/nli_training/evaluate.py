"""Evaluate an NLI backend on the held-out sets of the training mix (never trained on).

    # the shipped cross-encoder (default), a trained checkpoint or an exported folder
    .venv-dev/bin/python -m experiments.nli_training.evaluate --mix runs/nli_ce/mix.json [--nli-model DIR]
    # the other judges on exactly the same pairs
    .venv-dev/bin/python -m experiments.nli_training.evaluate --mix runs/nli_ce/mix.json --nli align --sets factscore
    .venv-dev/bin/python -m experiments.nli_training.evaluate --mix runs/nli_ce/mix.json --nli llm --sets factscore

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

Every set also writes its per-item outputs (gold and predicted labels or probabilities), so
that two judges can be compared item by item:

    .venv-dev/bin/python -m experiments.nli_training.evaluate compare NEW.json OLD.json

prints, per set and measure, both values and the paired bootstrap of NEW − OLD (1,000
resamples of the items, seed 13; :func:`fact_reasoner.measures.paired_bootstrap`) with its 95 %
interval — "not worse beyond chance" when the interval reaches 0 or above.

``--records FILE`` takes the FActScore atoms and passages from prepared input records instead
(``experiments/prepare_factscore.py``), e.g. to score exactly the pairs a biography run judged.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

from fact_reasoner.measures import auroc, balanced_accuracy

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

SETS = ("factscore", "wice_dev", "fever_dev", "mnli_mismatched", "snli_test")
#: the per-item outputs each set writes (so that a comparison can be recomputed from the files)
PER_ITEM = ("gold", "predicted_labels", "predicted_supports", "entailment", "gold_supported", "max_entailment")
THREE_WAY = ("entailment", "neutral", "contradiction")


def judge_all(backend, pairs: list[tuple[str, str]], chunk: int = 64):
    out = []
    for start in range(0, len(pairs), chunk):
        out += backend.judge(pairs[start : start + chunk])
    return out


def binary_metrics(gold: list[bool], predicted: list[bool]) -> dict:
    """Accuracy, F1, balanced accuracy (:func:`fact_reasoner.measures.balanced_accuracy`, a
    class absent from ``gold`` counting recall 0) and the recalls of a set's binary verdicts."""
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
        "balanced_accuracy": round(balanced_accuracy(gold, predicted, absent=0.0), 4),
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
        "gold": gold,
        "predicted_labels": predicted,
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
    return binary_metrics(gold, predicted) | {
        "failed": sum(j.failed for j in judgements),
        "gold": gold,
        "predicted_supports": predicted,
    }


def entailed_or_not(backend, rows: list[dict]) -> dict:
    judgements = judge_all(backend, [(r["premise"], r["hypothesis"]) for r in rows])
    gold = [r["label"] == "entailment" for r in rows]
    p = [j.probabilities.get("entailment", 0.0) if not j.failed else 0.0 for j in judgements]
    return binary_metrics(gold, [x > 0.5 for x in p]) | {
        "auroc": round(auroc(gold, p), 4),
        "failed": sum(j.failed for j in judgements),
        "gold": gold,
        "entailment": p,
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
        "auroc_max_entailment": round(auroc(gold, max_entail), 4),
        "failed_pairs": sum(j.failed for j in judgements),
        "gold_supported": gold,
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


def measures_of(name: str, result: dict) -> dict[str, tuple]:
    """The measures of one set as ``{measure: (function, per-item columns)}``, for
    :func:`fact_reasoner.measures.paired_bootstrap`."""
    import numpy as np

    def accuracy(gold, predicted):
        return float(np.mean(np.asarray(gold) == np.asarray(predicted)))

    def above_half(gold, score):
        return balanced_accuracy(gold, np.asarray(score, dtype=float) > 0.5)

    if name == "factscore":
        columns = (result["gold_supported"], result["max_entailment"])
        return {"balanced_accuracy": (above_half, columns), "auroc": (auroc, columns)}
    if name == "wice_dev":
        columns = (result["gold"], result["entailment"])
        return {"balanced_accuracy": (above_half, columns), "auroc": (auroc, columns)}
    if name == "fever_dev":
        return {"accuracy": (accuracy, (result["gold"], result["predicted_supports"]))}
    return {"accuracy": (accuracy, (result["gold"], result["predicted_labels"]))}


def compare(new: dict, old: dict, resamples: int = 1000, seed: int = 13) -> list[dict]:
    """Per set and measure: the new judge's value, the old one's, and the paired bootstrap of
    new − old over the items both judged (:func:`fact_reasoner.measures.paired_bootstrap`)."""
    from fact_reasoner.measures import paired_bootstrap

    rows = []
    for name in SETS:
        if name not in new or name not in old:
            continue
        for measure, (function, first) in measures_of(name, new[name]).items():
            _, second = measures_of(name, old[name])[measure]
            if len(first[0]) != len(second[0]) or list(first[0]) != list(second[0]):
                raise SystemExit(
                    f"{name}: the two files judged different items; evaluate both with the same --max-pairs"
                )
            interval = paired_bootstrap(function, first, second, resamples=resamples, seed=seed)
            rows.append(
                {
                    "set": name,
                    "measure": measure,
                    "n": len(first[0]),
                    "new": round(function(*first), 4),
                    "old": round(function(*second), 4),
                }
                | interval.as_dict()
                | {"not_worse": interval.reaches_zero_or_above}
            )
    return rows


def compare_markdown(rows: list[dict], new_name: str, old_name: str) -> str:
    out = [
        f"| set | measure | n | {new_name} | {old_name} | difference | 95 % interval | not worse beyond chance |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['set']} | {r['measure']} | {r['n']} | {r['new']:.4f} | {r['old']:.4f} | {r['difference']:+.4f} | "
            f"[{r['low']:+.4f}, {r['high']:+.4f}] | {'yes' if r['not_worse'] else '**no**'} |"
        )
    return "\n".join(out) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "compare":
        return compare_main(sys.argv[2:])
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
    parser.add_argument(
        "--nli-sentences",
        choices=("off", "contradictions", "all"),
        default="contradictions",
        help="cross-encoder: judge short passages sentence by sentence (CrossEncoderNLI's `sentences`)",
    )
    parser.add_argument("--sets", default=",".join(SETS), help=f"comma-separated, from {', '.join(SETS)}")
    parser.add_argument("--max-pairs", type=int, help="only the first N rows of each 3-way / 2-way set")
    parser.add_argument(
        "--records", type=Path, help="FActScore atoms from prepared records instead of the held-out topics"
    )
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument(
        "--cache", action="store_true", help="use the model-call cache (default: off, so speed is honest)"
    )
    parser.add_argument(
        "--screen-flags",
        help="screen every verdict as the graph would (experiments.screen_eval.ScreenedNLI) with these graph "
        "flags, e.g. '--entailments sentence --contradictions sentence'",
    )
    parser.add_argument("--out", type=Path, help="write the metrics as JSON here")
    args = parser.parse_args()

    from fact_reasoner.nli.cache import CachedNLI
    from fact_reasoner.settings.config import PipelineConfig
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
                sentences=args.nli_sentences,
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
    if args.screen_flags is not None:
        import shlex

        from experiments.screen_ablation import config_from_flags
        from experiments.screen_eval import ScreenedNLI

        backend = ScreenedNLI(backend, config_from_flags(shlex.split(args.screen_flags)).graph)
    results: dict = {
        "backend": backend.identity,
        "screen": args.screen_flags,
        "sets": wanted,
        "heldout_topics": mix.get("heldout_topics"),
    }
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
        shown = {k: v for k, v in result.items() if k not in PER_ITEM}
        print(name, json.dumps(shown), flush=True)
    results["eval_seconds"] = round(time.perf_counter() - started, 1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))


def compare_main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.nli_training.evaluate compare",
        description="Paired bootstrap of NEW − OLD on every set both --out files hold (the per-item outputs).",
    )
    parser.add_argument("new", type=Path, help="--out file of the new judge")
    parser.add_argument("old", type=Path, help="--out file of the judge it would replace")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--names", default="new,old", help="column names (default: new,old)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    rows = compare(json.loads(args.new.read_text()), json.loads(args.old.read_text()), args.resamples, args.seed)
    new_name, old_name = args.names.split(",")
    print(compare_markdown(rows, new_name, old_name))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
