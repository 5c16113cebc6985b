#!/usr/bin/env python3
"""Atomizer (and Reviser) against the human atoms of FActScore ChatGPT dev biographies.

    nice -n 19 python -m experiments.eval_atomizer --bios 2 --version v1 --out outputs/eval_atomizer.json

Takes the ``--bios`` shortest annotated biographies (fewest sentences) so the run fits a small
CPU. For each: seconds to atomize (cold cache), seconds to revise, number of model atoms vs
human atoms (IR included: they are atoms of the text too), and how many match one-to-one.

Matching: greedy one-to-one on token F1 (lower-cased word tokens, punctuation dropped);
a pair counts as a match when F1 ≥ ``--threshold`` (0.6). Reported: matched, precision =
matched / model atoms, recall = matched / human atoms. Human atoms keep the response's
pronouns ("He started his career …"), so atoms are compared *before* revision.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
from collections import Counter
from pathlib import Path

from fact_reasoner.atomizer import Atomizer
from fact_reasoner.cache import ModelCache
from fact_reasoner.config import PipelineConfig
from fact_reasoner.llm import make_llm
from fact_reasoner.reviser import Reviser

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bios", type=int, default=2)
    parser.add_argument("--version", default="v1")
    parser.add_argument("--threshold", type=float, default=0.6)
    parser.add_argument("--backend", default="local")
    parser.add_argument("--model", default=None)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--no-revise", action="store_true")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--cache-file", type=Path, default=None, help="reuse this call cache (default: a fresh one)")
    args = parser.parse_args(argv)
    records = [json.loads(line) for line in (DATA / "factscore_bios_dev" / "ChatGPT.jsonl").open()]
    annotated = sorted((r for r in records if r.get("annotations")), key=lambda r: (len(r["annotations"]), r["topic"]))
    config = PipelineConfig(backend=args.backend, model=args.model, threads=args.threads)
    llm = make_llm(
        config, cache=ModelCache(args.cache_file or Path(tempfile.mkdtemp(prefix="eval_atomizer_")) / "calls.sqlite")
    )
    atomizer = Atomizer(llm, prompt_version=args.version)
    reviser = Reviser(llm)
    rows = []
    for record in annotated[: args.bios]:
        human = [a["text"] for s in record["annotations"] for a in s.get("human-atomic-facts") or []]
        start = time.perf_counter()
        atoms = atomizer.atomize(record["output"], question=record["input"])
        atomize_s = time.perf_counter() - start
        revise_s, revised = None, None
        if not args.no_revise:
            start = time.perf_counter()
            revised = reviser.revise(atoms, record["output"])
            revise_s = time.perf_counter() - start
        pairs = greedy_match([a.text for a in atoms], human, args.threshold)
        row = {
            "topic": record["topic"],
            "sentences": len(record["annotations"]),
            "human_atoms": len(human),
            "model_atoms": len(atoms),
            "matched": len(pairs),
            "precision": len(pairs) / len(atoms) if atoms else float("nan"),
            "recall": len(pairs) / len(human) if human else float("nan"),
            "atomize_seconds": atomize_s,
            "revise_seconds": revise_s,
            "atomizer_failures": sum(1 for a in atoms if getattr(a, "atomizer_failure", None)),
            "reviser_failures": sum(1 for a in revised or [] if getattr(a, "reviser_failure", None)),
            "examples": [
                {"model": a.text, "revised": (revised[i].text if revised else None)} for i, a in enumerate(atoms[:8])
            ],
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
    summary = {
        "version": args.version,
        "model": llm.model,
        "bios": len(rows),
        "human_atoms": sum(r["human_atoms"] for r in rows),
        "model_atoms": sum(r["model_atoms"] for r in rows),
        "matched": sum(r["matched"] for r in rows),
        "seconds_per_response_atomize": sum(r["atomize_seconds"] for r in rows) / len(rows),
        "seconds_per_sentence_atomize": sum(r["atomize_seconds"] for r in rows) / sum(r["sentences"] for r in rows),
        "llm_stats": llm.stats(),
        "rows": rows,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
