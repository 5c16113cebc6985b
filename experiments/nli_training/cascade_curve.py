"""Accuracy and cost of ``--nli cascade`` over band widths, on the held-out FActScore measure.

    python -m experiments.nli_training.cascade_curve --mix runs/nli/mix.json \\
        --bands 0,0.05,0.1,0.2,0.3 --max-second-pairs 600 --out runs/nli/cascade_curve.json

The measure is :func:`experiments.nli_training.evaluate.factscore`'s: the ChatGPT atoms of the
14 held-out topics, each against its (≤ 5) passages, S iff the largest P(entailment) over its
passages is > 0.5; balanced accuracy, F1(S), AUROC of that largest probability.

With half-width ``w``, the cascade (:class:`fact_reasoner.nli.cascade.CascadeNLI`, band
``(0.5 − w, 0.5 + w)``) sends a pair to the second judge iff
``d = min(|P(e) − 0.5|, |P(c) − 0.5|) < w``. So the fast judge runs once, every pair gets its
``d``, and the second judge is asked about the pairs in order of increasing ``d``: the pairs of a
narrow band are a prefix of those of a wider one, and one pass gives every band up to the widest
that ``--max-second-pairs`` covers. A band whose pairs were not all judged by the second judge is
reported as incomplete, never scored.

Cost, per band: the fast judge's seconds for all pairs plus the band's pairs times the second
judge's measured seconds per pair (calls answered from the model-call cache are not timed: with
``--cache-dir`` holding earlier answers, the seconds per pair comes from the uncached calls of
this run, or is reported as unknown).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from experiments.nli_training.evaluate import binary_metrics, factscore_pairs, records_atoms
from fact_reasoner.measures import auroc

HERE = Path(__file__).resolve().parent


def uncertainty_distance(probabilities: dict[str, float]) -> float:
    """``min(|P(e) − 0.5|, |P(c) − 0.5|)``: a pair is inside the band of half-width ``w`` iff
    this is below ``w`` (:func:`fact_reasoner.nli.cascade.is_uncertain`)."""
    return min(abs(probabilities.get(label, 0.0) - 0.5) for label in ("entailment", "contradiction"))


def atom_scores(atoms: list[dict], owner: list[int], entailment: list[float]) -> dict:
    """The FActScore measure from per-pair P(entailment)."""
    best = [0.0] * len(atoms)
    for i, p in zip(owner, entailment):
        best[i] = max(best[i], p)
    gold = [a["label"] == "S" for a in atoms]
    return binary_metrics(gold, [p > 0.5 for p in best]) | {"auroc": round(auroc(gold, best), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mix", type=Path, help="mix.py's output (held-out FActScore atoms)")
    parser.add_argument("--records", type=Path, help="atoms from prepared input records instead")
    parser.add_argument("--fast-model", help="cross-encoder model folder (default: the shipped one)")
    parser.add_argument("--second", default="llm", help="the second judge (an --nli name; default llm)")
    parser.add_argument("--backend", default="local", help="language model backend of an LLM judge")
    parser.add_argument("--cache-dir", type=Path, help="model-call cache of the second judge")
    parser.add_argument("--bands", default="0,0.05,0.1,0.2,0.3", help="half-widths w, comma separated")
    parser.add_argument("--max-second-pairs", type=int, default=600, help="at most this many second-judge pairs")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    from fact_reasoner.nli.cross_encoder import CrossEncoderNLI
    from fact_reasoner.settings.config import PipelineConfig
    from fact_reasoner.stages import Stages

    if args.records:
        atoms = records_atoms(args.records)
    elif args.mix:
        atoms = json.loads(args.mix.read_text())["heldout"]["factscore"]
    else:
        raise SystemExit("give --mix or --records")
    pairs, owner = factscore_pairs(atoms)
    bands = sorted(float(b) for b in args.bands.split(","))

    fast = CrossEncoderNLI(args.fast_model) if args.fast_model else CrossEncoderNLI()
    fast.judge([("A warm-up premise loads the model.", "Nothing else is memoised.")])
    started = time.perf_counter()
    fast_judged = fast.judge(pairs)
    fast_seconds = time.perf_counter() - started
    if any(j.failed for j in fast_judged):
        raise SystemExit("the fast judge failed on some pairs: no curve from a partial judge")
    distance = [uncertainty_distance(j.probabilities) for j in fast_judged]
    order = sorted((i for i in range(len(pairs)) if distance[i] < bands[-1]), key=lambda i: distance[i])
    asked = order[: args.max_second_pairs]
    sizes = {w: sum(d < w for d in distance) for w in bands}
    print(f"fast judge: {len(pairs)} pairs in {fast_seconds:.1f} s; pairs inside each band: {sizes}", flush=True)

    config_kwargs: dict = {"nli": args.second, "backend": args.backend}
    if args.cache_dir:
        config_kwargs["cache_dir"] = str(args.cache_dir)
    second = Stages(PipelineConfig(**config_kwargs)).nli()
    second_entailment: dict[int, float] = {}
    timed_pairs, timed_seconds = 0, 0.0
    for start in range(0, len(asked), 8):
        chunk = asked[start : start + 8]
        t0 = time.perf_counter()
        judged = second.judge([pairs[i] for i in chunk])
        seconds = time.perf_counter() - t0
        if seconds > 0.05 * len(chunk):  # answered by the model, not the cache
            timed_pairs, timed_seconds = timed_pairs + len(chunk), timed_seconds + seconds
        for i, j in zip(chunk, judged):
            if j.failed:
                raise SystemExit(f"the second judge failed on a pair ({j.reason}): no curve from a partial judge")
            second_entailment[i] = j.probabilities.get("entailment", 0.0)
        print(f"second judge: {len(second_entailment)}/{len(asked)} pairs", flush=True)
    second_per_pair = timed_seconds / timed_pairs if timed_pairs else None

    fast_entailment = [j.probabilities.get("entailment", 0.0) for j in fast_judged]
    rows = []
    for w in bands:
        inside = [i for i in range(len(pairs)) if distance[i] < w]
        row: dict = {"band_half_width": w, "second_pairs": len(inside), "share": round(len(inside) / len(pairs), 4)}
        if any(i not in second_entailment for i in inside):
            row["incomplete"] = True
        else:
            chosen = set(inside)  # only this band's pairs take the second judge's verdict
            mixed = [second_entailment[i] if i in chosen else p for i, p in enumerate(fast_entailment)]
            row |= atom_scores(atoms, owner, mixed)
            if second_per_pair is not None:
                row["estimated_seconds"] = round(fast_seconds + len(inside) * second_per_pair, 1)
                row["pairs_per_s"] = round(len(pairs) / row["estimated_seconds"], 2)
        rows.append(row)
        print(json.dumps(row), flush=True)
    result = {
        "fast": fast.identity,
        "second": second.identity,
        "pairs": len(pairs),
        "atoms": len(atoms),
        "fast_seconds": round(fast_seconds, 1),
        "second_seconds_per_pair": None if second_per_pair is None else round(second_per_pair, 2),
        "bands": rows,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
