"""The training mix: every set's loader, caps, held-out parts, de-duplication and synthetic rows.

    .venv-dev/bin/python -m experiments.nli_training.mix --config experiments/nli_training/mix.json \
        --out runs/nli_mix.json

prints the mix (pairs per set and label, synthetic rows, held-out sets) and writes one JSON file
with ``train``, ``validation`` (for the learning curve), ``heldout`` (the sets reported on:
``mnli_mismatched``, ``snli_test``, ``fever_dev``, ``wice_dev`` and ``factscore`` — the ChatGPT
atoms of the held-out topics with all their passages) and ``mix`` (the printed table as data).

Rules, in order:

1. Held-out rows are taken first; a training row that repeats a held-out pair, or a held-out
   claim (FEVER, WiCE, FActScore atoms of held-out topics), is dropped — so no reported number
   has been trained on.
2. Pairs are de-duplicated across sets on normalised (premise, hypothesis); the first set in
   ``LOADERS`` order keeps the pair. Where copies disagree, a 3-way label refines a compatible
   "not_entailment" (contradiction ⊂ not entailed); any other disagreement drops the pair.
3. ``caps`` takes a seeded random subset of a set (0 leaves it out: see JOCI in ``sources.CSV_SETS``);
   ``repeat`` lists sets whose rows are seen that many times per epoch (claim-vs-Wikipedia rows:
   what the engine judges).
4. Synthetic contradictions: a year, number, month or nationality changed, or the main verb
   negated, in the claim of an entailed claim-vs-evidence pair (``data.contradict``).
5. Validation: up to ``validation_per_set`` rows of each set, whole groups, never trained on.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter, defaultdict
from pathlib import Path

from experiments.nli_training.data import contradict, factscore_heldout, factscore_topic_split
from experiments.nli_training.sources import LOADERS, NLI_DIR_LOADERS, Example, factscore_train, load, stable_fraction

HERE = Path(__file__).resolve().parent

ROOT = HERE.parents[1]

#: sets whose entailed rows are a claim against evidence: sources of synthetic contradictions
CLAIM_SETS = (
    "fever_rte_dev",
    "fever_ggkorn",
    "docnli_fever",
    "climate_fever",
    "fool_me_twice",
    "sufficient_facts",
    "wice",
    "covidfact",
    "healthver",
    "citation_integrity",
    "vitaminc",
    "factscore",
)

_NORM = re.compile(r"[^a-z0-9]+")


def normalise(text: str) -> str:
    return _NORM.sub(" ", text.lower()).strip()


def pair_key(example: Example) -> str:
    return normalise(example.premise) + "\x00" + normalise(example.hypothesis)


def _family(source: str) -> str:
    for prefix in CLAIM_SETS:
        if source.startswith(prefix):
            return prefix
    return source


def build_mix(config: dict, data_dir: Path) -> dict:
    seed = config["seed"]
    max_words = config["max_premise_words"]
    caps: dict[str, int] = config.get("caps", {})
    repeat: dict[str, int] = config.get("repeat", {})

    loaded: dict[str, list[Example]] = {}
    for name in list(LOADERS) + list(NLI_DIR_LOADERS):
        loaded[name] = load(name, data_dir, max_words)
    train_topics, held_topics = factscore_topic_split(data_dir, seed, config["factscore_held_fraction"])
    loaded["factscore"] = factscore_train(
        data_dir,
        train_topics,
        max_words,
        config.get("factscore_min_overlap", 0.5),
        config.get("factscore_negatives_per_atom", 2),
    )
    heldout_factscore = factscore_heldout(data_dir, held_topics)

    # 1. held-out rows, and what training must not repeat
    heldout: dict[str, list[dict]] = defaultdict(list)
    held_pairs: set[str] = set()
    held_claims: set[str] = {normalise(a["atom"]) for a in heldout_factscore}
    for rows in loaded.values():
        for e in rows:
            if e.split != "train":
                heldout[e.split].append(e.as_dict())
                held_pairs.add(pair_key(e))
                if e.split in ("fever_dev", "wice_dev"):
                    held_claims.add(normalise(e.hypothesis))

    # 2. de-duplicate the training rows; drop pairs whose label differs between copies
    first: dict[str, tuple[str, Example]] = {}
    conflicting: set[str] = set()
    dropped: Counter = Counter()
    for name, rows in loaded.items():
        for e in rows:
            if e.split != "train":
                continue
            key = pair_key(e)
            if key in held_pairs or normalise(e.hypothesis) in held_claims:
                dropped[f"{name}: repeats a held-out pair or claim"] += 1
                continue
            if key in first:
                kept = first[key][1]
                if kept.label != e.label:
                    labels = {kept.label, e.label}
                    if labels in ({"neutral", "not_entailment"}, {"contradiction", "not_entailment"}):
                        # compatible: the 3-way label says more than "not entailed"
                        specific = (labels - {"not_entailment"}).pop()
                        first[key] = (first[key][0], Example(**{**kept.as_dict(), "label": specific}))
                    else:
                        conflicting.add(key)
                dropped[f"{name}: duplicate pair"] += 1
                continue
            first[key] = (name, e)
    for key in conflicting:
        dropped[f"{first[key][0]}: same pair, two labels"] += 1
    by_set: dict[str, list[Example]] = defaultdict(list)
    for key, (name, e) in first.items():
        if key not in conflicting:
            by_set[name].append(e)

    # 3. caps (seeded subsets, whole groups first shuffled)
    rng = random.Random(seed)
    for name, rows in by_set.items():
        cap = caps.get(name)
        if cap is not None and len(rows) > cap:
            rng.shuffle(rows)
            dropped[f"{name}: over its cap of {cap}"] += len(rows) - cap
            by_set[name] = rows[:cap]

    # 5. validation: whole groups of each set, chosen by a hash of the group; a group chosen for
    # one set (a FEVER claim in several sets) leaves the training rows of every set
    validation: list[Example] = []
    per_set = config.get("validation_per_set", 100)
    chosen_by_set: dict[str, set[str]] = {}
    for name, rows in by_set.items():
        groups = sorted({e.group for e in rows}, key=lambda g: stable_fraction(g, f"validation:{seed}"))
        chosen: set[str] = set()
        count = 0
        for group in groups:
            if count >= per_set or len(chosen) >= len(groups) // 5:
                break
            chosen.add(group)
            count += sum(e.group == group for e in rows)
        chosen_by_set[name] = chosen
    chosen_all = set().union(*chosen_by_set.values())
    for name, rows in by_set.items():
        validation += [e for e in rows if e.group in chosen_by_set[name]]
        kept = [e for e in rows if e.group not in chosen_all]
        other = len(rows) - len(kept) - sum(e.group in chosen_by_set[name] for e in rows)
        if other:
            dropped[f"{name}: group chosen for another set's validation"] += other
        by_set[name] = kept

    # 4. synthetic contradictions from entailed claim-vs-evidence training rows
    n_synthetic = config.get("synthetic_contradictions", 0)
    entailed = [
        e for name, rows in by_set.items() if _family(name) in CLAIM_SETS for e in rows if e.label == "entailment"
    ]
    rng.shuffle(entailed)
    made: list[Example] = []
    seen = {pair_key(e) for rows in by_set.values() for e in rows}
    negations = 0
    for e in entailed:
        if len(made) >= n_synthetic:
            break
        changed = contradict(
            e.hypothesis,
            rng,
            tuple(config.get("synthetic_rules", ("year", "number", "month", "nationality", "negation"))),
        )
        if not changed:
            continue
        if changed[1] == "negation":
            if negations >= n_synthetic * config.get("max_negation_share", 0.25):
                continue
            negations += 1
        row = Example(e.premise, changed[0], "contradiction", f"synthetic_{changed[1]}", group=e.group, synthetic=True)
        if (
            pair_key(row) not in seen
            and pair_key(row) not in held_pairs
            and normalise(row.hypothesis) not in held_claims
        ):
            seen.add(pair_key(row))
            made.append(row)
    by_set["synthetic_contradiction"] = made

    train: list[dict] = []
    for name, rows in by_set.items():
        times = max(1, int(repeat.get(name, 1)))
        for e in rows:
            train += [e.as_dict()] * times
    random.Random(seed).shuffle(train)

    table = {}
    for name, rows in sorted(by_set.items()):
        labels = Counter(e.label for e in rows)
        table[name] = {
            "pairs": len(rows),
            "repeat": max(1, int(repeat.get(name, 1))),
            "synthetic": sum(e.synthetic for e in rows),
            **{label: labels.get(label, 0) for label in ("entailment", "neutral", "contradiction", "not_entailment")},
        }
    heldout["factscore"] = heldout_factscore
    return {
        "config": config,
        "train": train,
        "validation": [e.as_dict() for e in validation],
        "heldout": dict(heldout),
        "heldout_topics": sorted(held_topics),
        "mix": table,
        "dropped": dict(sorted(dropped.items())),
    }


def describe(mix: dict) -> str:
    lines = ["set                         pairs  x  synth  entail neutral contra  not_ent"]
    totals = Counter()
    for name, row in mix["mix"].items():
        lines.append(
            f"{name:26s} {row['pairs']:6d} {row['repeat']:2d} {row['synthetic']:6d} {row['entailment']:7d} "
            f"{row['neutral']:7d} {row['contradiction']:6d} {row['not_entailment']:8d}"
        )
        for key in ("pairs", "synthetic", "entailment", "neutral", "contradiction", "not_entailment"):
            totals[key] += row[key] * (row["repeat"] if key != "pairs" else 1)
    lines.append(
        f"{'total (distinct pairs)':26s} {totals['pairs']:6d}    {totals['synthetic']:6d} {totals['entailment']:7d} "
        f"{totals['neutral']:7d} {totals['contradiction']:6d} {totals['not_entailment']:8d}"
    )
    lines.append(f"training rows per epoch (with repeats): {len(mix['train'])}; validation: {len(mix['validation'])}")
    lines.append("held out (reported on, never trained on):")
    for name, rows in mix["heldout"].items():
        labels = Counter(r["label"] for r in rows)
        lines.append(f"    {name:18s} {len(rows):6d} {dict(labels)}")
    lines.append("dropped:")
    for reason, count in mix["dropped"].items():
        lines.append(f"    {count:6d}  {reason}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default=str(HERE / "mix.json"))
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--out", required=True, help="write the mix here (JSON)")
    args = parser.parse_args()
    config = json.loads(Path(args.config).read_text())
    mix = build_mix(config, Path(args.data_dir))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(mix, ensure_ascii=False))
    print(describe(mix))


if __name__ == "__main__":
    main()
