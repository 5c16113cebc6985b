"""PNG plots of agreement with gold: reliability diagram, predicted vs gold precision per
response, distributions of atom posteriors by gold label (matplotlib, Agg backend).

    python -m experiments.plots runs/factscore/out/chatgpt_dev.TAG.*.jsonl --out-dir experiments/results/plots
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fact_reasoner.report.plots import PLOTS
from fact_reasoner.report.rows import group_rows, read_rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Plots of agreement with gold labels")
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--out-dir", type=Path, required=True)
    parser.add_argument("--prefix", default="", help="file name prefix")
    args = parser.parse_args(argv)
    try:
        groups = group_rows(read_rows(args.results))
    except (FileNotFoundError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, plot in PLOTS.items():
        path = args.out_dir / f"{args.prefix}{name}.png"
        path.write_bytes(plot(groups))
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
