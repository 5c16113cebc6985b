"""The same-attribute rule on the behavioural suite: which pairs would still become
contradiction factors.

For every item of the judges' behavioural suite (:mod:`experiments.behaviour`) it asks
the judge, and :func:`fact_reasoner.atoms.frames.same_attribute` whether the premise speaks about
the claim's attribute. A pair becomes a contradiction factor in the graph when the judge says
contradiction and, with ``--contradictions same-attribute``, the rule keeps it. Per part and
capability it prints n, the share the judge calls contradiction, the share the rule keeps
(whatever the judge says), and the share that becomes a contradiction factor; and over every
item whose expected label is neutral, the spurious-contradiction rate before and after the
rule::

    python -m experiments.same_attribute_suite --nli cross-encoder --part all --cache-dir runs/cache
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.behaviour import CAPABILITIES, DEFAULT_FACTSCORE_DIR, PARTS, ItemResult, judge_items, suite_items
from fact_reasoner.atoms.frames import same_attribute
from fact_reasoner.settings.cli_options import add_config_arguments, config_from_args
from fact_reasoner.stages import Stages


def rule_rows(results: Sequence[ItemResult]) -> list[dict[str, Any]]:
    """Per capability: n, judged contradiction, kept by the rule, contradiction factor."""
    rows = []
    for name, capability in CAPABILITIES.items():
        mine = [r for r in results if r.item.capability == name]
        if not mine:
            continue
        kept = [same_attribute(r.item.hypothesis, r.item.premise) != "other attribute" for r in mine]
        contradiction = [r.label == "contradiction" for r in mine]
        rows.append(
            {
                "capability": name,
                "expected": capability.expected_text,
                "n": len(mine),
                "judge_contradiction": sum(contradiction) / len(mine),
                "rule_keeps": sum(kept) / len(mine),
                "contradiction_factor": sum(c and k for c, k in zip(contradiction, kept)) / len(mine),
                "neutral": capability.expected == ("neutral",),
                "counts": (len(mine), sum(contradiction), sum(c and k for c, k in zip(contradiction, kept))),
            }
        )
    return rows


def markdown(part: str, rows: list[dict[str, Any]], judge: str) -> str:
    out = [
        f"### {part} part — judge `{judge}`",
        "",
        "| capability | expected | n | judge: contradiction | rule keeps | contradiction factor |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        out.append(
            f"| {row['capability']} | {row['expected']} | {row['n']} | {row['judge_contradiction']:.1%} | "
            f"{row['rule_keeps']:.1%} | {row['contradiction_factor']:.1%} |"
        )
    neutral = [row["counts"] for row in rows if row["neutral"]]
    n, before, after = (sum(c[i] for c in neutral) for i in range(3))
    if n:
        out += [
            "",
            f"Spurious contradictions over the {n} neutral items: {before} ({before / n:.1%}) without the rule, "
            f"{after} ({after / n:.1%}) with `same-attribute`.",
        ]
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", choices=("heldout", "train", "all"), default="all")
    parser.add_argument("--factscore-dir", type=Path, default=DEFAULT_FACTSCORE_DIR)
    parser.add_argument("--markdown", type=Path, help="also write the tables here")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    add_config_arguments(parser, groups=("models", "cache"))
    args = parser.parse_args(argv)
    config = config_from_args(args, parser)
    factscore_dir = args.factscore_dir if (args.factscore_dir / "topic_passages_dev.json").is_file() else None
    items = suite_items(args.part, factscore_dir)
    backend = Stages(config).nli()
    results = judge_items(backend, items)
    judge = getattr(backend, "identity", config.models.nli)
    texts, report = [], {}
    for part in PARTS if args.part == "all" else (args.part,):
        rows = rule_rows([r for r in results if r.item.part == part])
        texts.append(markdown(part, rows, str(judge)))
        report[part] = rows
    text = ("" if factscore_dir else "(template items only: no passages found)\n\n") + "\n".join(texts)
    print(text)
    if args.markdown:
        args.markdown.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
