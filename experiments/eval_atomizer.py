#!/usr/bin/env python3
"""Atomizer (and Reviser) against the human atoms of FActScore ChatGPT dev biographies.

    nice -n 5 python -m experiments.eval_atomizer --topics heldout --out runs/atoms/after.jsonl
    python -m experiments.eval_atomizer --summarise runs/atoms/before.jsonl runs/atoms/after.jsonl
    python -m experiments.eval_atomizer --examples [--set atomizer_prompt_version=v1 …]

``--examples`` atomizes and revises a few short answers (those of issue #34, the benchmark's
four-sentence paragraph, the quick start) and prints every atom with its checks.

``--topics heldout`` takes the 14 biographies held out of the NLI training
(``fact_reasoner/models/nli-minilm-l6/MODEL_CARD.md``); ``--bios N`` the N shortest annotated
ones. One JSON line per biography is appended to ``--out`` as soon as it is done, and a rerun
skips the topics already there (resumable); the model calls go through ``--cache-file``
(default: ``<out>.calls.sqlite``), so an interrupted biography is answered from the cache.

Per biography: the atoms as atomized and as revised, seconds to atomize and to revise, the
model's token counters, and the number of human atoms (IR included: they are atoms of the text
too). From these ``--summarise`` computes, per file:

- atoms produced, and atoms per human atom;
- ungrounded atoms (:func:`fact_reasoner.atoms.grounding.ungrounded_terms`: a number or proper name
  that neither the response nor the question states) and atoms with an unresolved reference
  (:func:`fact_reasoner.atoms.grounding.unresolved_reference`), both after revision, and clauses
  that state nothing (:func:`fact_reasoner.atoms.grounding.claimless_clause`); the same for the
  human atoms, as a yardstick of the checks themselves;
- matched atoms: greedy one-to-one on token F1 (lower-cased word tokens, punctuation dropped),
  a pair counts when F1 ≥ ``--threshold`` (0.6); precision = matched / model atoms, recall =
  matched / human atoms. Human atoms keep the response's pronouns ("He started his career …"),
  so atoms are compared *before* revision.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

from fact_reasoner.atoms.grounding import check_atom, claimless_clause

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: the 14 ChatGPT dev topics held out of the NLI training (MODEL_CARD.md of nli-minilm-l6)
HELDOUT_TOPICS = (
    "Antonio Gasalla",
    "Chadwick Boseman",
    "Darrius Heyward-Bey",
    "James B. Donovan",
    "Jean Daullé",
    "Kang Ji-hwan",
    "Maneka Gandhi",
    "Milton Diamond",
    "Osama bin Laden",
    "Regina Martínez Pérez",
    "Roselyn Sánchez",
    "Sajid Nadiadwala",
    "Teresa Palmer",
    "Ylona Garcia",
)


def tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def token_f1(a: str, b: str) -> float:
    ta, tb = Counter(tokens(a)), Counter(tokens(b))
    common = sum((ta & tb).values())
    if not common:
        return 0.0
    p, r = common / sum(ta.values()), common / sum(tb.values())
    return 2 * p * r / (p + r)


def greedy_match(model: list[str], human: list[str], threshold: float) -> list[tuple[str, str, float]]:
    """One-to-one pairs, best F1 first, each at least ``threshold``."""
    scored = sorted(((token_f1(m, h), i, j) for i, m in enumerate(model) for j, h in enumerate(human)), reverse=True)
    used_m, used_h, pairs = set(), set(), []
    for f1, i, j in scored:
        if f1 < threshold:
            break
        if i not in used_m and j not in used_h:
            used_m.add(i)
            used_h.add(j)
            pairs.append((model[i], human[j], f1))
    return pairs


def load_records(topics: str, bios: int) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in (DATA / "factscore_bios_dev" / "ChatGPT.jsonl").open()]
    annotated = [r for r in records if r.get("annotations")]
    if topics == "heldout":
        chosen = [r for r in annotated if r["topic"] in HELDOUT_TOPICS]
        if len(chosen) != len(HELDOUT_TOPICS):
            raise SystemExit(f"found {len(chosen)} of the {len(HELDOUT_TOPICS)} held-out topics in the data")
        return sorted(chosen, key=lambda r: r["topic"])
    return sorted(annotated, key=lambda r: (len(r["annotations"]), r["topic"]))[:bios]


def human_atoms(record: dict[str, Any]) -> list[str]:
    return [a["text"] for s in record["annotations"] for a in s.get("human-atomic-facts") or []]


def run(args: argparse.Namespace) -> None:
    from fact_reasoner.cache import ModelCache
    from fact_reasoner.llm import make_llm
    from fact_reasoner.settings.config import PipelineConfig
    from fact_reasoner.stages import Stages

    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    options: dict[str, Any] = {"backend": args.backend, "model": args.model, "threads": args.threads}
    options.update(dict(item.split("=", 1) for item in args.set))
    config = PipelineConfig(**options)
    done = set()
    for line in out.open() if out.exists() else []:
        row = json.loads(line)
        if row["settings"] != config.settings()["models"]:
            raise SystemExit(f"{out} was written with other settings: {row['settings']}; use another --out")
        done.add(row["topic"])
    llm = make_llm(config, cache=ModelCache(args.cache_file or out.with_suffix(".calls.sqlite")))
    stages = Stages(config, llm=llm)
    atomizer, reviser = stages.atomizer(), stages.reviser()
    for record in load_records(args.topics, args.bios):
        if record["topic"] in done or (args.only and record["topic"] not in args.only):
            continue
        before = llm.stats()
        load = os.getloadavg()[0]
        start = time.perf_counter()
        atoms = atomizer.atomize(record["output"], question=record["input"])
        atomize_s = time.perf_counter() - start
        start = time.perf_counter()
        revised = reviser.revise(atoms, record["output"]) if config.models.revise else atoms
        revise_s = time.perf_counter() - start
        after = llm.stats()
        row = {
            "topic": record["topic"],
            "settings": config.settings()["models"],
            "sentences": len(record["annotations"]),
            "human_atoms": human_atoms(record),
            "atoms": [a.text for a in atoms],
            "revised": [a.text for a in revised],
            "atomizer_failures": sum(1 for a in atoms if getattr(a, "atomizer_failure", None)),
            "reviser_failures": sum(1 for a in revised if getattr(a, "reviser_failure", None)),
            "atomize_seconds": round(atomize_s, 2),
            "revise_seconds": round(revise_s, 2),
            "load_1min": round(load, 2),
            "llm": {k: round(after[k] - before.get(k, 0), 3) for k in after if isinstance(after[k], (int, float))},
        }
        with out.open("a") as handle:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(
            f"{record['topic']}: {len(atoms)} atoms ({len(row['human_atoms'])} human), "
            f"atomize {atomize_s:.1f} s, revise {revise_s:.1f} s (load {load:.1f})",
            flush=True,
        )


#: the answers of issue #34 (a user's first tries) and the benchmark's four-sentence paragraph
EXAMPLES = (
    (
        "Who was Ada Lovelace?",
        "Ada Lovelace is often called the first computer programmer because of her notes on Babbage's "
        "Analytical Engine.",
    ),
    (
        "Tell me about Mount Everest.",
        "Mount Everest is the highest mountain on Earth. It was first climbed in 1953. "
        "It lies on the border between Nepal and India.",
    ),
    (
        "Who was Albert Einstein?",
        "Albert Einstein was a German-born theoretical physicist. He was born in Ulm in 1879. "
        "He developed the theory of relativity, one of the two pillars of modern physics. "
        "He received the Nobel Prize in Physics in 1921 and died in Princeton in 1955.",
    ),
    (
        "Question: Who was Marie Curie?",
        "Marie Curie was a physicist who was born in Warsaw. She discovered penicillin.",
    ),
    (  # issue #43's: an object pronoun, a possessive to resolve, a clause without a claim
        "Tell me about Mount Everest and the Great Wall of China.",
        "Mount Everest is the highest mountain on Earth. It was first climbed in 1953 by George Mallory. "
        "Its height is 8,849 metres. The Great Wall of China was built mainly to keep out invaders.",
    ),
)


def examples(args: argparse.Namespace) -> None:
    """Atomize and revise :data:`EXAMPLES`; print each atom with its checks."""
    from fact_reasoner.cache import ModelCache
    from fact_reasoner.llm import make_llm
    from fact_reasoner.settings.config import PipelineConfig
    from fact_reasoner.stages import Stages

    options: dict[str, Any] = {"backend": args.backend, "model": args.model, "threads": args.threads}
    options.update(dict(item.split("=", 1) for item in args.set))
    config = PipelineConfig(**options)
    llm = make_llm(config, cache=ModelCache(args.cache_file) if args.cache_file else None)
    stages = Stages(config, llm=llm)
    print(json.dumps(config.settings()["models"]))
    for question, response in EXAMPLES:
        before = llm.stats()
        start = time.perf_counter()
        atoms = stages.atomizer().atomize(response, question=question)
        revised = stages.reviser().revise(atoms, response) if config.models.revise else atoms
        seconds = time.perf_counter() - start
        after = llm.stats()
        generated = sum(after[k] - before.get(k, 0) for k in after if k.endswith("_generated_tokens"))
        print(f"\n{response}\n  ({seconds:.1f} s, {generated:.0f} tokens generated, load {os.getloadavg()[0]:.1f})")
        for atom, final in zip(atoms, revised):
            check = check_atom(final.text, response, question)
            marks = [
                m
                for m in (
                    check.reason,
                    check.unresolved and f"unresolved {check.unresolved!r}",
                    claimless_clause(final.text),
                )
                if m
            ]
            shown = atom.text if final.text == atom.text else f"{atom.text} -> {final.text}"
            print(f"  - {shown}" + (f"   [{'; '.join(marks)}]" if marks else ""))


def summarise(path: Path, threshold: float) -> dict[str, Any]:
    """The figures of one results file (module docstring)."""
    records = {
        r["topic"]: r for r in (json.loads(line) for line in (DATA / "factscore_bios_dev" / "ChatGPT.jsonl").open())
    }
    rows = [json.loads(line) for line in path.open()]
    totals: Counter[str] = Counter()
    examples: dict[str, list[str]] = {"ungrounded": [], "unresolved": [], "fragments": []}
    for row in rows:
        record = records[row["topic"]]
        human = row["human_atoms"]
        checks = [check_atom(a, record["output"], record["input"]) for a in row["revised"]]
        human_checks = [check_atom(a, record["output"], record["input"]) for a in human]
        totals["bios"] += 1
        totals["sentences"] += row["sentences"]
        totals["human_atoms"] += len(human)
        totals["atoms"] += len(row["revised"])
        totals["matched"] += len(greedy_match(row["atoms"], human, threshold))
        totals["ungrounded"] += sum(not c.grounded for c in checks)
        totals["unresolved"] += sum(c.unresolved is not None for c in checks)
        fragments = [a for a in row["revised"] if claimless_clause(a)]
        totals["fragments"] += len(fragments)
        totals["human_ungrounded"] += sum(not c.grounded for c in human_checks)
        totals["human_unresolved"] += sum(c.unresolved is not None for c in human_checks)
        totals["atomizer_failures"] += row["atomizer_failures"]
        totals["reviser_failures"] += row["reviser_failures"]
        examples["ungrounded"] += [
            f"{row['topic']}: {a} ({c.reason})" for a, c in zip(row["revised"], checks) if not c.grounded
        ]
        examples["unresolved"] += [f"{row['topic']}: {a}" for a, c in zip(row["revised"], checks) if c.unresolved]
        examples["fragments"] += [f"{row['topic']}: {a}" for a in fragments]
        for key in ("atomize_seconds", "revise_seconds"):
            totals[key] += row[key]
        for key in ("atomizer_calls", "reviser_calls", "atomizer_generated_tokens", "reviser_generated_tokens"):
            totals[key] += row["llm"].get(f"{key}", 0)
    loads = [row["load_1min"] for row in rows]
    return {
        "file": str(path),
        **totals,
        "atoms_per_human_atom": totals["atoms"] / totals["human_atoms"] if totals["human_atoms"] else None,
        "precision": totals["matched"] / totals["atoms"] if totals["atoms"] else None,
        "recall": totals["matched"] / totals["human_atoms"] if totals["human_atoms"] else None,
        "load_1min_range": [min(loads), max(loads)] if loads else None,
        "examples": examples,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", choices=("heldout", "shortest"), default="heldout")
    parser.add_argument("--bios", type=int, default=2, help="with --topics shortest: how many")
    parser.add_argument("--only", action="append", default=[], metavar="TOPIC", help="only this topic (repeatable)")
    parser.add_argument("--threshold", type=float, default=0.6)
    parser.add_argument("--backend", default="local")
    parser.add_argument("--model", default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="DEST=VALUE",
        help="a pipeline setting by its name, e.g. atomizer_prompt_version=v1 (repeatable)",
    )
    parser.add_argument("--out", type=Path, help="results (JSON lines, appended; topics already there are skipped)")
    parser.add_argument("--cache-file", type=Path, default=None, help="model-call cache (default: <out>.calls.sqlite)")
    parser.add_argument("--summarise", type=Path, nargs="+", metavar="RESULTS", help="print the figures of these files")
    parser.add_argument(
        "--examples", action="store_true", help="atomize and revise the issue's short answers and print the atoms"
    )
    args = parser.parse_args(argv)
    if args.examples:
        examples(args)
        return 0
    if args.summarise:
        for path in args.summarise:
            print(json.dumps(summarise(path, args.threshold), indent=1, ensure_ascii=False))
        return 0
    if args.out is None:
        parser.error("--out is required (or --summarise)")
    run(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
