"""Tables of agreement with gold S/NS labels, one line per assessor (and rarity tier), as
Markdown or CSV, with the paper's published numbers beside them.

Every number of a line is a field of :func:`fact_reasoner.scores.summarize_rows` over that
line's rows (the formulas are there); nothing is recomputed here:

- bios: ``num_records``, the responses;
- claims: ``num_atoms``, every atom judged;
- gold atoms (CSV ``atoms``): ``num_gold_atoms``, the atoms with a gold S/NS label, over which
  the atom-level columns (F1 (S), acc, bal acc, Brier, ECE) are computed;
- K: ``k``, the K values the responses were scored with;
- Pr: ``mean_factuality_score``, mean of the responses' factual precision S / n;
- gold Pr: ``mean_gold_factuality_score``, the same with the gold labels;
- F1 (S): ``atom_f1_supported``, atom-level F1 with S positive, pooled: 2·TP / (2·TP + FP + FN);
- acc: ``atom_accuracy``, atom-level accuracy (TP + TN) / N;
- bal acc: ``atom_balanced_accuracy``, (TP / (TP + FN) + TN / (TN + FP)) / 2 — 0.5 for
  "S for everything", which F1 (S) rewards when most atoms are S;
- F1@K: ``mean_f1_k``, mean of the responses' written F1@K;
- MAE: ``mae_factuality_score``, (1/R) Σ_r |Pr_r − gold Pr_r|;
- Brier: ``atom_brier_score``, (1/N) Σ_i (P(a_i) − y_i)², y_i = 1 for gold S;
- ECE: ``atom_ece``, Σ_b (|B_b| / N)·|acc(B_b) − conf(B_b)| over 10 equal-width bins.

Predictions are each atom's written ``prediction`` (FR: ``scores.is_supported(P)``; the
FactScore baseline: "any context entails"), probabilities its ``probability``.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..scores import DatasetSummary, describe_k, summarize_rows
from .rows import tier_of

# Paper v2 (arXiv 2502.18573), Table 3: 157 FActScore ChatGPT biographies, Wikipedia contexts.
# (Pr, F1, F1@K, MAE) per NLI/LLM model and assessor; gold precision 0.62.
PUBLISHED_TABLE3: dict[str, dict[str, tuple[float, float, float, float]]] = {
    "granite-8b": {
        "FactScore": (0.59, 0.70, 0.57, 0.17),
        "FR1": (0.43, 0.70, 0.43, 0.22),
        "FR2": (0.62, 0.78, 0.61, 0.12),
        "FR3": (0.60, 0.78, 0.59, 0.13),
    },
    "llama-70b": {
        "FactScore": (0.59, 0.73, 0.58, 0.16),
        "FR1": (0.42, 0.71, 0.42, 0.23),
        "FR2": (0.60, 0.83, 0.59, 0.11),
        "FR3": (0.60, 0.83, 0.59, 0.11),
    },
    "mixtral": {
        "FactScore": (0.59, 0.74, 0.58, 0.16),
        "FR1": (0.44, 0.72, 0.44, 0.21),
        "FR2": (0.63, 0.83, 0.62, 0.11),
        "FR3": (0.64, 0.83, 0.62, 0.11),
    },
}
PUBLISHED_GOLD_PRECISION = 0.62


@dataclass(frozen=True)
class TableLine:
    """One line of the results table: an assessor, a tier ("all" for every row) and the summary."""

    assessor: str
    tier: str
    summary: DatasetSummary


def table_line(rows: Sequence[dict[str, Any]], assessor: str, tier: str = "all") -> TableLine:
    """The table line of ``rows`` (one assessor): :func:`~fact_reasoner.scores.summarize_rows`."""
    return TableLine(assessor, tier, summarize_rows(rows))


def summary_table(groups: dict[str, list[dict[str, Any]]], by_tier: bool = True) -> list[TableLine]:
    """One line per assessor over all rows, then (``by_tier``) one per assessor × rarity tier.

    Each response keeps the K it was scored with (the run's choice, e.g. the whole dataset's
    median number of atoms), also in the tier lines."""
    lines = []
    tiers: list[str] = []
    for rows in groups.values():
        for row in rows:
            tier = tier_of(row)
            if tier is not None and tier not in tiers:
                tiers.append(tier)
    tier_order = ["very rare", "rare", "medium", "freq", "very freq"]
    tiers.sort(key=lambda t: (tier_order.index(t) if t in tier_order else 99, t))
    for label, rows in groups.items():
        lines.append(table_line(rows, label))
        if by_tier:
            for tier in tiers:
                lines.append(table_line([r for r in rows if tier_of(r) == tier], label, tier))
    return lines


# -- rendering -------------------------------------------------------------------------------

#: (CSV column, title, summary field) in table order; assessor and tier come from the line.
COLUMNS = [
    ("assessor", "assessor", None),
    ("tier", "tier", None),
    ("records", "bios", "num_records"),
    ("claims", "claims", "num_atoms"),
    ("atoms", "gold atoms", "num_gold_atoms"),
    ("k", "K", "k"),
    ("precision", "Pr", "mean_factuality_score"),
    ("gold_precision", "gold Pr", "mean_gold_factuality_score"),
    ("f1", "F1 (S)", "atom_f1_supported"),
    ("accuracy", "acc", "atom_accuracy"),
    ("balanced_accuracy", "bal acc", "atom_balanced_accuracy"),
    ("f1_k", "F1@K", "mean_f1_k"),
    ("mae", "MAE", "mae_factuality_score"),
    ("brier", "Brier", "atom_brier_score"),
    ("ece", "ECE", "atom_ece"),
]


def line_values(line: TableLine) -> list[Any]:
    """The line's raw values in :data:`COLUMNS` order (``k`` a tuple, a missing figure None)."""
    return [getattr(line, key) if field is None else getattr(line.summary, field) for key, _, field in COLUMNS]


def format_cell(value: Any, digits: int = 3) -> str:
    """A value as table text: floats to ``digits`` decimals, K values as :func:`describe_k`,
    "–" for a missing figure (None, NaN, no K)."""
    if isinstance(value, tuple):
        return describe_k(value) or "–"
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.{digits}f}"
    return "–" if value is None else str(value)


def to_markdown(lines: Sequence[TableLine]) -> str:
    header = "| " + " | ".join(title for _, title, _ in COLUMNS) + " |"
    rule = "|" + "|".join("---" if field is None else "---:" for _, _, field in COLUMNS) + "|"
    body = ["| " + " | ".join(format_cell(v) for v in line_values(line)) + " |" for line in lines]
    return "\n".join([header, rule, *body]) + "\n"


def _csv_value(value: Any) -> Any:
    if isinstance(value, tuple):
        return ";".join(str(v) for v in value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return value


def to_csv(lines: Sequence[TableLine]) -> str:
    """CSV with one column per :data:`COLUMNS` entry; several K values are joined by ";"."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([key for key, _, _ in COLUMNS])
    for line in lines:
        writer.writerow([_csv_value(v) for v in line_values(line)])
    return buffer.getvalue()


def published_markdown() -> str:
    """The paper's Table 3 (published numbers; different NLI/LLM models and 157 biographies)."""
    lines = [
        "Published (paper v2, Table 3; 157 FActScore ChatGPT biographies, gold Pr "
        f"{PUBLISHED_GOLD_PRECISION:.2f}; NLI by the LLMs named, not by our backend):",
        "",
        "| NLI/LLM (published) | assessor | Pr | F1 | F1@K | MAE |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for model, rows in PUBLISHED_TABLE3.items():
        for assessor, (pr, f1, f1k, mae) in rows.items():
            lines.append(f"| {model} | {assessor} | {pr:.2f} | {f1:.2f} | {f1k:.2f} | {mae:.2f} |")
    return "\n".join(lines) + "\n"


def published_csv() -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["source", "nli_model", "assessor", "precision", "f1", "f1_k", "mae"])
    for model, rows in PUBLISHED_TABLE3.items():
        for assessor, values in rows.items():
            writer.writerow(["paper v2 Table 3 (published)", model, assessor, *values])
    return buffer.getvalue()
