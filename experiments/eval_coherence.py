"""How well ``--coherence`` finds contradictions inside one response, and how often it cries wolf.

Three kinds of response, all run through the real pipeline (``FactReasoner`` with
``coherence=True``, no contexts, so only the atom–atom pairs are judged):

- ``wiki``: WikiContradict (``shared/data/contradictions/wiki_contradict_refined.jsonl``): the
  two contradicting passages ``context1`` and ``context2`` of one question as the two atoms of
  one response. Positive: the pair must be reported.
- ``planted-year`` / ``planted-number`` / ``planted-place``: a FActScore dev biography
  (``shared/data/factscore_bios_dev/ChatGPT.jsonl``, the human atoms of the annotated ones)
  plus one extra atom: a copy of one of its atoms with a year moved, another number changed,
  or a place after in/at/from/near replaced by another city — one response per kind the
  biography allows. Positive: the pair (that atom, the copy).
- ``control``: the same biographies unchanged. Any reported pair is a false alarm.

Each response is assessed once per pair gate given with ``--gates`` (``RULE:MIN_SIMILARITY``,
e.g. ``similar:0.3`` — the gate before ``--coherence-pairs`` existed — and ``comparable:0.3``);
NLI judgements are cached, so a pair judged under one gate is not judged again.

A pair is *reported* when it is among ``contradicting_pairs`` with P(contradiction) ≥
``--threshold`` (0.5). Recall = positives whose planted pair is reported; false-alarm rate =
controls with any reported pair (equivalently coherence < 1 − threshold).

    python -m experiments.eval_coherence --nli cross-encoder --gates similar:0.3,comparable:0.3 \
        --bio-limit 25 --wiki-limit 100 --out experiments/results/coherence_eval.json
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
#: a capitalised place after in/at/from/near (not the sentence's first word)
_PLACE = re.compile(r"\b(?:in|at|from|near) ((?:[A-Z][\w'’-]+)(?:,? [A-Z][\w'’-]+)*)")
_CITIES = ["Paris", "London", "Berlin", "Madrid", "Chicago", "Tokyo", "Vienna", "Moscow", "Cairo", "Sydney"]
_MONTH_WORDS = {
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
}


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


def plant(text: str, how: str, rng: random.Random) -> str | None:
    """``text`` with one value changed, or None when it has none of that kind: ``year`` (the first
    year moved by 3–15 years), ``number`` (the first number that is not a year, changed), ``place``
    (the first capitalised name after in/at/from/near, not a month, replaced by another city)."""
    if how == "year":
        year = _YEAR.search(text)
        if not year:
            return None
        value = int(year.group()) + rng.choice([-1, 1]) * rng.randint(3, 15)
        return text[: year.start()] + str(value) + text[year.end() :]
    if how == "number":
        for number in _NUMBER.finditer(text):
            if _YEAR.fullmatch(number.group()):
                continue
            value = int(number.group())
            changed = value + rng.randint(2, 9) if value < 10 else value * 2 + rng.randint(1, 9)
            return text[: number.start()] + str(changed) + text[number.end() :]
        return None
    for place in _PLACE.finditer(text):
        name = place.group(1)
        if name.split()[0].rstrip(",") in _MONTH_WORDS:
            continue
        city = rng.choice([c for c in _CITIES if c not in text])
        return text[: place.start(1)] + city + text[place.end(1) :]
    return None


def bio_records(limit: int | None, seed: int) -> list[dict[str, Any]]:
    """Per usable biography: the control, then one planted response per kind it allows.
    ``limit`` counts biographies."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    bios = 0
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
        plants = []
        for how in ("year", "number", "place"):
            candidates = [(i, changed) for i, t in enumerate(texts) if (changed := plant(t, how, rng))]
            candidates = [(i, changed) for i, changed in candidates if changed not in texts]
            if candidates:
                plants.append((how, *rng.choice(candidates)))
        if len(texts) < 3 or not plants:
            continue
        atoms = [{"id": f"a{i}", "text": t} for i, t in enumerate(texts)]
        base = {"input": row["input"], "output": row["output"], "topic": row["topic"], "contexts": []}
        source = f"ChatGPT.jsonl line {line_no}"
        out.append({"kind": "control", "planted": None, "record": base | {"atoms": atoms}, "source": source})
        for how, index, changed in plants:
            extra = {"id": "planted", "text": changed}
            out.append(
                {
                    "kind": f"planted-{how}",
                    "planted": [f"a{index}", "planted"],
                    "planted_texts": [texts[index], changed],
                    "record": base | {"atoms": atoms + [extra]},
                    "source": source,
                }
            )
        bios += 1
        if limit and bios >= limit:
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
                "incomparable": row["counters"].get("coherence_pairs_incomparable", 0),
                "seconds": row["timings"].get("total", 0.0),
            }
        )
    return rows


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for kind in sorted({r["kind"] for r in rows}):
        group = [r for r in rows if r["kind"] == kind]
        entry: dict[str, Any] = {"n": len(group), "mean_pairs": sum(r["pairs"] for r in group) / len(group)}
        entry["mean_pruned"] = sum(r["pruned"] for r in group) / len(group)
        entry["mean_incomparable"] = sum(r["incomparable"] for r in group) / len(group)
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
    parser.add_argument(
        "--gates",
        default="similar:0.3,comparable:0.3",
        help="comma-separated RULE:MIN_SIMILARITY (RULE: comparable or similar), one assessment each",
    )
    parser.add_argument("--wiki-limit", type=int, default=None)
    parser.add_argument("--bio-limit", type=int, default=None, help="biographies (each gives 1 control + 1-3 plants)")
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--cache-dir", type=Path, default=None, help="NLI call cache (default: the config's)")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    cases = wiki_records(args.wiki_limit) + bio_records(args.bio_limit, args.seed)
    runs = []
    for gate in args.gates.split(","):
        rule, _, similarity = gate.partition(":")
        options: dict[str, Any] = {"version": 2, "nli": args.nli, "coherence": True, "coherence_pairs": rule}
        if similarity:
            options["coherence_min_similarity"] = float(similarity)
        if args.cache_dir is not None:
            options["cache_dir"] = args.cache_dir
        config = PipelineConfig(**options)
        start = time.perf_counter()
        rows = evaluate(cases, config, args.threshold)
        seconds = time.perf_counter() - start
        summary = summarise(rows)
        runs.append({"gate": gate, "settings": config.settings(), "seconds": seconds, "summary": summary, "rows": rows})
        print(gate, json.dumps(summary, indent=1))  # noqa: T201 - a command-line report
        print(f"{gate}: {len(rows)} responses in {seconds:.1f} s", flush=True)  # noqa: T201
    args.out.parent.mkdir(parents=True, exist_ok=True)
    planted = [
        {"source": c["source"], "kind": c["kind"], "texts": c["planted_texts"]} for c in cases if "planted_texts" in c
    ]
    args.out.write_text(json.dumps({"threshold": args.threshold, "runs": runs, "plants": planted}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
