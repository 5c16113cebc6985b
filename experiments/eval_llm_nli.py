#!/usr/bin/env python3
"""Accuracy and speed of the LLM NLI judge on the shared NLI sets and on FActScore S/NS.

    nice -n 19 python -m experiments.eval_llm_nli --n 40 --fs-atoms 30 --versions v1 \
        --out outputs/eval_llm_nli.json [--backend local --model qwen2.5-coder-1.5b-instruct]

Sets (from ../shared/data), a stratified random subsample of ``--n`` items each (seed 0):
- ``vitaminc``: evidence ⇒ claim; supports/refutes/not enough info → entailment/contradiction/neutral.
- ``fr_pairs``: IBM's 882 balanced premise/hypothesis pairs, gold entailment/neutral/contradiction.
- ``factcheck``: evidence ⇒ claim; completely-support → entailment, refute → contradiction,
  irrelevant → neutral; partially-support is left out (no 3-way gold). Evidence is cut to
  ``--max-premise-chars`` characters.
- ``factscore``: FActScore ChatGPT dev human atoms (S/NS, IR dropped), balanced, vs their top
  ``--fs-passages`` BM25 Wikipedia passages: predicted S iff the judge says entailment for
  at least one passage (the max over passages of P(entailment) is also kept, for AUC-free
  threshold checks).

Each set is also scored after contextual calibration (``--calibrate`` in the judge: label
probabilities divided by those of content-free pairs), from the same model calls.

Speed: every set is judged once against an empty cache file (cold: real model calls) and once
more against the same file (warm: every call a cache hit); pairs/s for both. Accuracy: share of
pairs whose label equals gold, with a 95 % Wilson interval; failures count as wrong.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from fact_reasoner.cache import ModelCache
from fact_reasoner.llm import make_llm
from fact_reasoner.nli.llm_judge import LLMJudgeNLI, LLMJudgeOptions, calibrated
from fact_reasoner.settings.config import PipelineConfig

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval for k successes in n trials."""
    if n == 0:
        return (math.nan, math.nan)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def stratified(items: list[dict], key: str, n: int, rng: random.Random) -> list[dict]:
    by: dict[str, list[dict]] = {}
    for item in items:
        by.setdefault(item[key], []).append(item)
    per = max(1, n // len(by))
    chosen = []
    for label in sorted(by):
        chosen.extend(rng.sample(by[label], min(per, len(by[label]))))
    rng.shuffle(chosen)
    return chosen


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open() if line.strip()]


def load_sets(args, rng: random.Random) -> dict[str, list[dict]]:
    nli = DATA / "nli"
    sets: dict[str, list[dict]] = {}
    vmap = {"supports": "entailment", "refutes": "contradiction", "not enough info": "neutral"}
    sets["vitaminc"] = stratified(
        [
            {"premise": r["evidence"], "hypothesis": r["claim"], "gold": vmap[r["label"]]}
            for r in read_jsonl(nli / "vitaminc_sample.jsonl")
        ],
        "gold",
        args.n,
        rng,
    )
    sets["fr_pairs"] = stratified(
        [
            {"premise": r["premise"], "hypothesis": r["hypothesis"], "gold": r["gold"]}
            for r in read_jsonl(nli / "factreasoner_nli_pairs.jsonl")
        ],
        "gold",
        args.n,
        rng,
    )
    fmap = {"completely-support": "entailment", "refute": "contradiction", "irrelevant": "neutral"}
    sets["factcheck"] = stratified(
        [
            {"premise": r["evidence"][: args.max_premise_chars], "hypothesis": r["claim"], "gold": fmap[r["stance"]]}
            for r in read_jsonl(nli / "factcheck_stance.jsonl")
            if r["stance"] in fmap and r["evidence"].strip()
        ],
        "gold",
        args.n,
        rng,
    )
    labels = {}
    for record in read_jsonl(DATA / "factscore_bios_dev" / "ChatGPT.jsonl"):
        for sentence in record.get("annotations") or []:
            for atom in sentence.get("human-atomic-facts") or []:
                if atom["label"] in ("S", "NS"):
                    labels[(record["topic"], atom["text"])] = atom["label"]
    atoms = []
    for row in read_jsonl(DATA / "factscore_bios_dev" / "passages_bm25_ChatGPT_dev.jsonl"):
        label = labels.get((row["name"], row["sent"]))
        if label and row["passages"]:
            passages = [
                p["text"].replace("<s>", "").replace("</s>", " ").strip() for p in row["passages"][: args.fs_passages]
            ]
            atoms.append({"hypothesis": row["sent"], "passages": passages, "gold": label, "topic": row["name"]})
    sets["factscore"] = stratified(atoms, "gold", args.fs_atoms, rng)
    return sets


def pairs_of(name: str, items: list[dict]) -> list[tuple[str, str]]:
    if name == "factscore":
        return [(p, item["hypothesis"]) for item in items for p in item["passages"]]
    return [(item["premise"], item["hypothesis"]) for item in items]


def score(name: str, items: list[dict], verdicts) -> dict:
    failures = sum(v.failed for v in verdicts)
    if name == "factscore":
        predictions, i = [], 0
        max_entail = []
        for item in items:
            vs = verdicts[i : i + len(item["passages"])]
            i += len(item["passages"])
            predictions.append("S" if any(v.label.value == "entailment" and not v.failed for v in vs) else "NS")
            max_entail.append(max((v.probabilities.get("entailment", 0.0) for v in vs), default=0.0))
        gold = [item["gold"] for item in items]
    else:
        predictions = ["failed" if v.failed else v.label.value for v in verdicts]
        gold = [item["gold"] for item in items]
    correct = sum(p == g for p, g in zip(predictions, gold))
    lo, hi = wilson(correct, len(gold))
    out = {
        "n": len(gold),
        "accuracy": correct / len(gold),
        "ci95": [lo, hi],
        "failures": failures,
        "confusion": {f"{g}->{p}": c for (g, p), c in sorted(Counter(zip(gold, predictions)).items())},
        "predicted": dict(Counter(predictions)),
    }
    if name == "factscore":
        out["rule"] = "S iff entailment from at least one passage"
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--fs-atoms", type=int, default=30)
    parser.add_argument("--fs-passages", type=int, default=3)
    parser.add_argument("--max-premise-chars", type=int, default=1500)
    parser.add_argument("--versions", default="v1")
    parser.add_argument("--sets", default="vitaminc,fr_pairs,factcheck,factscore")
    parser.add_argument("--backend", default="local")
    parser.add_argument("--model", default=None)
    parser.add_argument("--base-url", default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--cache-file",
        type=Path,
        default=None,
        help="reuse this call cache (default: a fresh temporary file, so 'cold' is really cold)",
    )
    args = parser.parse_args(argv)
    if not DATA.exists():
        print(f"no data at {DATA}", file=sys.stderr)
        return 1
    rng = random.Random(0)
    sets = load_sets(args, rng)
    cache_file = args.cache_file or Path(tempfile.mkdtemp(prefix="eval_llm_nli_")) / "calls.sqlite"
    print(f"call cache: {cache_file}", file=sys.stderr)
    config = PipelineConfig(backend=args.backend, model=args.model, base_url=args.base_url, threads=args.threads)
    cache = ModelCache(cache_file)
    llm = make_llm(config, cache=cache)
    results: dict = {"backend": args.backend, "model": llm.model, "sets": {}}
    for version in args.versions.split(","):
        for name in args.sets.split(","):
            items = sets[name]
            pairs = pairs_of(name, items)
            judge = LLMJudgeNLI(llm, LLMJudgeOptions(prompt_version=version))
            start = time.perf_counter()
            verdicts = judge.judge(pairs)
            cold = time.perf_counter() - start
            start = time.perf_counter()
            warm_verdicts = judge.judge(pairs)
            warm = time.perf_counter() - start
            assert warm_verdicts == verdicts, "a warm cache must replay the same verdicts"
            entry = score(name, items, verdicts) | {
                "pairs": len(pairs),
                "cold_pairs_per_s": len(pairs) / cold,
                "warm_pairs_per_s": len(pairs) / warm,
                "judge_stats": judge.stats(),
            }
            prior = judge.content_free_probabilities()
            if prior is not None:
                entry["calibrated"] = score(name, items, [calibrated(v, prior) for v in verdicts]) | {
                    "content_free": prior
                }
            results["sets"][f"{name}/{version}"] = entry
            print(json.dumps({f"{name}/{version}": entry}), flush=True)
    results["llm_stats"] = llm.stats()
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
