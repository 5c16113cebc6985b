"""Side-by-side table of behavioural-suite results, one column per judge.

Reads the ``--json`` files that ``python -m experiments.behaviour`` writes and prints a
Markdown table of one part (``heldout`` by default): each capability's accuracy with its
threshold, then the share of neutral items labelled contradiction::

    python -m experiments.nli_training.behaviour_table v3=runs/nli/v3.behaviour.json \\
        v4=runs/nli/v4b.behaviour.json --part heldout [--view graph|judge]

``--view graph`` (the default) is the suite through the graph, where the ship rule's
thresholds apply; ``--view judge`` the judge alone, where a capability below the first
column's (the judge it would replace) is marked ↓. A capability below its threshold is marked
with ✗.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def table(results: dict[str, dict], part: str, view: str = "graph") -> str:
    """The Markdown table of ``part`` for ``{column name: behaviour JSON}``, through the graph
    (``view`` ``graph``) or of the judge alone (``judge``)."""
    key = "parts" if view == "graph" else "judge_alone"
    parts = {name: result.get(key, result["parts"])[part] for name, result in results.items()}
    first = next(iter(parts.values()))
    what = "through the graph" if view == "graph" else "judge alone"
    lines = [
        f"| capability ({part} part, {what}) | threshold | " + " | ".join(parts) + " |",
        "|---|---:|" + "---:|" * len(parts),
    ]
    for capability, spec in first["capabilities"].items():
        cells = []
        baseline = spec["accuracy"]
        for scored in parts.values():
            c = scored["capabilities"][capability]
            worse = view == "judge" and c["accuracy"] < baseline
            cells.append(f"{c['accuracy']:.3f}" + ("" if c["passed"] else " ✗") + (" ↓" if worse else ""))
        lines.append(f"| {capability} (n={spec['n']}) | ≥ {spec['threshold']:.2f} | " + " | ".join(cells) + " |")
    cells = []
    for scored in parts.values():
        share = scored["spurious_contradiction"]
        cells.append(f"{share:.3f}" + ("" if share <= scored["spurious_contradiction_limit"] else " ✗"))
    limit = first["spurious_contradiction_limit"]
    lines.append(
        f"| spurious contradictions (n={first['neutral_items']} neutral) | ≤ {limit:.2f} | " + " | ".join(cells) + " |"
    )
    passed = ["pass" if scored["passed"] else "fail" for scored in parts.values()]
    lines.append("| **all thresholds** | | " + " | ".join(passed) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("columns", nargs="+", help="NAME=PATH of a behaviour --json file")
    parser.add_argument("--part", default="heldout", choices=("heldout", "train"))
    parser.add_argument("--view", default="graph", choices=("graph", "judge"))
    args = parser.parse_args()
    results = {}
    for column in args.columns:
        name, _, path = column.partition("=")
        if not path:
            parser.error(f"{column!r}: give NAME=PATH")
        results[name] = json.loads(Path(path).read_text())
    print(table(results, args.part, args.view))


if __name__ == "__main__":
    main()
