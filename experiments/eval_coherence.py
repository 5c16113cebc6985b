"""How well ``--coherence`` finds contradictions inside one response, and how often it cries wolf.

Three kinds of response, all run through the real pipeline (``FactReasoner`` with
``coherence=True``, no contexts, so only the atom–atom pairs are judged):

- ``wiki``: WikiContradict (``shared/data/contradictions/wiki_contradict_refined.jsonl``): the
  two contradicting passages ``context1`` and ``context2`` of one question as the two atoms of
  one response. Positive: the pair must be reported.
- ``planted``: a FActScore dev biography (``shared/data/factscore_bios_dev/ChatGPT.jsonl``, the
  human atoms of the annotated ones) plus one extra atom: a copy of one of its atoms with a
  year (or, lacking one, another number) changed. Positive: the pair (that atom, the copy).
- ``control``: the same biographies unchanged. Any reported pair is a false alarm.

A pair is *reported* when it is among ``contradicting_pairs`` with P(contradiction) ≥
``--threshold`` (0.5). Recall = positives whose planted pair is reported; false-alarm rate =
controls with any reported pair (equivalently coherence < 1 − threshold).

    python -m experiments.eval_coherence --nli cross-encoder --out experiments/results/coherence_eval.json
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import time
from pathlib import Path
from typing import Any

from fact_reasoner import FactReasoner, PipelineConfig

DATA = Path("/work/shared/data")
WIKI = DATA / "contradictions" / "wiki_contradict_refined.jsonl"
BIOS = DATA / "factscore_bios_dev" / "ChatGPT.jsonl"

_YEAR = re.compile(r"\b(1[5-9]\d\d|20[0-2]\d)\b")
_NUMBER = re.compile(r"\b\d+\b")


def wiki_records(limit: int | None) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in WIKI.read_text().splitlines() if line.strip()]
    out = []
    for i, row in enumerate(rows[:limit]):
        out.append(
            {
                "kind": "wiki",
                "planted": ["a0", "a1"],
                "record": {
                    "input": row["question"],
                    "output": f"{row['context1']} {row['context2']}",
                    "atoms": [{"id": "a0", "text": row["context1"]}, {"id": "a1", "text": row["context2"]}],
                    "contexts": [],
                },
                "source": f"wiki line {i + 1}",
            }
        )
    return out


def plant(text: str, rng: random.Random) -> tuple[str, str] | None:
    """``text`` with its first year moved by 3–15 years (or another number changed), and the kind."""
    year = _YEAR.search(text)
    if year:
        value = int(year.group()) + rng.choice([-1, 1]) * rng.randint(3, 15)
        return text[: year.start()] + str(value) + text[year.end() :], "year"
    number = _NUMBER.search(text)
    if number:
        value = int(number.group())
        changed = value + rng.randint(2, 9) if value < 10 else value * 2 + rng.randint(1, 9)
        return text[: number.start()] + str(changed) + text[number.end() :], "number"
    return None


def bio_records(limit: int | None, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for line_no, line in enumerate(BIOS.read_text().splitlines(), 1):
        row = json.loads(line)
        if not row.get("annotations"):
            continue
        texts = [
            fact["text"]
            for sentence in row["annotations"]
            for fact in sentence.get("human-atomic-facts") or []
            if fact.get("label") in ("S", "NS")
        ]
        texts = list(dict.fromkeys(texts))
        candidates = [(i, planted) for i, t in enumerate(texts) if (planted := plant(t, rng))]
        if len(texts) < 3 or not candidates:
            continue
        atoms = [{"id": f"a{i}", "text": t} for i, t in enumerate(texts)]
        index, (changed, how) = rng.choice(candidates)
        base = {"input": row["input"], "output": row["output"], "topic": row["topic"], "contexts": []}
        source = f"ChatGPT.jsonl line {line_no}"
        out.append({"kind": "control", "planted": None, "record": base | {"atoms": atoms}, "source": source})
        extra = {"id": "planted", "text": changed}
        out.append(
            {
                "kind": f"planted-{how}",
                "planted": [f"a{index}", "planted"],
                "record": base | {"atoms": atoms + [extra]},
                "source": source,
            }
        )
        if limit and len(out) >= 2 * limit:
            break
    return out


def evaluate(cases: list[dict[str, Any]], config: PipelineConfig, threshold: float) -> list[dict[str, Any]]:
    assessor = FactReasoner(config)
    rows = []
    for case in cases:
        row = assessor.assess(case["record"]).model_dump(mode="json")
        reported = [p for p in row["contradicting_pairs"] if p["probability"] >= threshold]
        planted = set(case["planted"] or [])
        found = [p for p in row["contradicting_pairs"] if set(p["atoms"]) == planted]
        rows.append(
            {
                "kind": case["kind"],
                "source": case["source"],
                "atoms": len(case["record"]["atoms"]),
                "coherence": row["coherence"],
                "reported": len(reported),
                "planted_probability": found[0]["probability"] if found else None,
                "planted_reported": bool(found and found[0]["probability"] >= threshold),
                "pairs": row["counters"]["coherence_pairs"],
                "pruned": row["counters"]["coherence_pairs_pruned"],
            }
        )
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for kind in sorted({r["kind"] for r in rows}):
        group = [r for r in rows if r["kind"] == kind]
        entry: dict[str, Any] = {"n": len(group), "mean_pairs": sum(r["pairs"] for r in group) / len(group)}
        entry["mean_pruned"] = sum(r["pruned"] for r in group) / len(group)
        if kind == "control":
            entry["false_alarms"] = sum(r["reported"] > 0 for r in group)
            entry["false_alarm_rate"] = entry["false_alarms"] / len(group)
        else:
            entry["recalled"] = sum(r["planted_reported"] for r in group)
            entry["recall"] = entry["recalled"] / len(group)
            entry["any_probability"] = sum(r["planted_probability"] is not None for r in group)
            entry["other_pairs_reported"] = sum(r["reported"] - r["planted_reported"] for r in group)
        summary[kind] = entry
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nli", default="cross-encoder")
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--min-similarity", type=float, default=None, help="default: the config's")
    parser.add_argument("--wiki-limit", type=int, default=None)
    parser.add_argument("--bio-limit", type=int, default=None)
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    options: dict[str, Any] = {"version": 2, "nli": args.nli, "coherence": True}
    if args.min_similarity is not None:
        options["coherence_min_similarity"] = args.min_similarity
    config = PipelineConfig(**options)
    cases = wiki_records(args.wiki_limit) + bio_records(args.bio_limit, args.seed)
    start = time.perf_counter()
    rows = evaluate(cases, config, args.threshold)
    seconds = time.perf_counter() - start
    summary = summarise(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "settings": config.settings(),
                "threshold": args.threshold,
                "seconds": seconds,
                "summary": summary,
                "rows": rows,
            },
            indent=1,
        )
        + "\n"
    )
    print(json.dumps(summary, indent=1))  # noqa: T201 - a command-line report
    print(f"{len(rows)} responses in {seconds:.1f} s")  # noqa: T201
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
