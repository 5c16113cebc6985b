"""Tables of agreement with gold S/NS labels, per assessor (and rarity tier), Markdown and CSV.

    python -m experiments.tables runs/factscore/out/chatgpt_dev.TAG.*.jsonl \\
        --out experiments/results/chatgpt_dev_TAG

writes ``PREFIX.md`` (our table, per-tier table, and the paper's published Table 3 beside it)
and ``PREFIX.csv`` (our lines) and ``PREFIX.published.csv``. Definitions of every column are in
:mod:`fact_reasoner.report.tables` (Pr, F1 of S atoms, accuracy, mean of the responses' F1@K,
MAE of precision, Brier score, ECE over 10 equal-width bins); every figure is
:func:`fact_reasoner.scores.summarize_rows` of the rows as written.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fact_reasoner.report import tables as rt
from fact_reasoner.report.rows import group_rows, read_rows, restrict_to_common


def groups_for(paths: Sequence[Path]) -> tuple[dict, int]:
    """Rows per assessor, restricted to the responses every assessor has finished."""
    return restrict_to_common(group_rows(read_rows(paths)))


def lines_for(paths: Sequence[Path]) -> list[rt.TableLine]:
    return rt.summary_table(groups_for(paths)[0])


def render(paths: Sequence[Path], title: str | None = None) -> str:
    """The Markdown text: overall lines, per-tier lines, then the published numbers."""
    groups, left_out = groups_for(paths)
    lines = rt.summary_table(groups)
    overall = [line for line in lines if line.tier == "all"]
    tiers = [line for line in lines if line.tier != "all"]
    note = f"({left_out} response(s) not finished by every assessor are left out.)\n" if left_out else ""
    parts = [
        f"## {title}\n" if title else "",
        "Ours (same atoms, contexts and NLI for every assessor):\n",
        note,
        rt.to_markdown(overall),
    ]
    if tiers:
        parts += ["\nBy rarity tier (cat[0]; each response keeps the K it was scored with):\n", rt.to_markdown(tiers)]
    parts += ["\nModel calls per response (mean over the responses above):\n", calls_markdown(groups)]
    parts += ["\n", rt.published_markdown()]
    return "\n".join(p for p in parts if p)


def calls_markdown(groups: dict[str, list[dict[str, Any]]]) -> str:
    """Per assessor, the mean per response of the LLM requests its pipeline sent
    (``counters.pipeline_llm_calls``: queries, judgements, claim extraction, retries; a cached
    reply counts) and of the NLI pairs it judged (``counters.pipeline_nli_pairs`` for a pipeline,
    ``counters.nli_pairs`` for FR and the NLI baselines), and the claims it could not judge."""
    lines = ["| assessor | responses | LLM calls | NLI pairs | failed claims |", "|---|---|---|---|---|"]
    for assessor, rows in groups.items():
        counters = [row.get("counters") or {} for row in rows]
        if not counters:
            continue

        def mean(*keys: str, of: list[dict[str, Any]] = counters) -> str:
            values = [next((c[k] for k in keys if k in c), 0) for c in of]
            return f"{statistics.fmean(values):.1f}"

        lines.append(
            f"| {assessor} | {len(rows)} | {mean('pipeline_llm_calls')} | "
            f"{mean('pipeline_nli_pairs', 'nli_pairs')} | {mean('failed_atoms')} |"
        )
    return "\n".join(lines) + "\n"


def write_tables(paths: Sequence[Path], prefix: Path, title: str | None = None) -> str:
    prefix.parent.mkdir(parents=True, exist_ok=True)
    markdown = render(paths, title or prefix.name)
    prefix.with_name(prefix.name + ".md").write_text(markdown)
    prefix.with_name(prefix.name + ".csv").write_text(rt.to_csv(lines_for(paths)))
    prefix.with_name(prefix.name + ".published.csv").write_text(rt.published_csv())
    return markdown


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Tables of agreement with gold labels")
    parser.add_argument("results", type=Path, nargs="+", help="result JSONL files (one assessor each, or mixed)")
    parser.add_argument("--out", type=Path, help="write OUT.md, OUT.csv and OUT.published.csv")
    parser.add_argument("--title")
    args = parser.parse_args(argv)
    try:
        text = write_tables(args.results, args.out, args.title) if args.out else render(args.results, args.title)
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
