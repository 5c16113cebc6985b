"""Stage 2's mix: the claim-vs-evidence rows of a stage-1 mix, for a short domain fine-tune.

    .venv-dev/bin/python -m experiments.nli_training.stage2_mix runs/nli_ce/mix.json \
        --config experiments/nli_training/config_stage2.json --out runs/nli_ce/mix_stage2.json

Stage 1 teaches NLI from all sets; stage 2 spends one short epoch, at a low learning rate, on what
the engine judges — atomic claims against encyclopedia or web evidence. The config's ``submix``
names source prefixes kept whole (``keep``) and prefixes sampled to a number of rows
(``sample``, seeded). Validation rows are filtered the same way; the held-out sets are copied
unchanged, so the numbers reported after stage 2 are on the same pairs as after stage 1.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


def stage2_rows(rows: list[dict], keep: list[str], sample: dict[str, int], seed: int) -> list[dict]:
    """Rows whose source starts with a ``keep`` prefix, plus ``sample[prefix]`` seeded rows per prefix."""
    rng = random.Random(seed)
    chosen = [r for r in rows if any(r["source"].startswith(p) for p in keep)]
    for prefix, n in sorted(sample.items()):
        pool = [r for r in rows if r["source"].startswith(prefix)]
        chosen += rng.sample(pool, min(n, len(pool)))
    rng.shuffle(chosen)
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mix", type=Path, help="the stage-1 mix (mix.py --out)")
    parser.add_argument("--config", type=Path, default=HERE / "config_stage2.json")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    config = json.loads(args.config.read_text())
    spec = config["submix"]
    mix = json.loads(args.mix.read_text())
    seed = config["seed"]
    train = stage2_rows(mix["train"], spec["keep"], spec["sample"], seed)
    validation = [
        r for r in mix["validation"] if any(r["source"].startswith(p) for p in spec["keep"] + list(spec["sample"]))
    ]
    out = dict(mix, train=train, validation=validation, stage2=spec)
    args.out.write_text(json.dumps(out, ensure_ascii=False))
    counts = Counter(r["source"] for r in train)
    for source, n in sorted(counts.items()):
        print(f"{source:28s} {n:6d}")
    print(f"{'total':28s} {len(train):6d}  (validation {len(validation)})")


if __name__ == "__main__":
    main()
