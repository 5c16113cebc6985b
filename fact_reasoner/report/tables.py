"""Tables of agreement with gold S/NS labels per assessor (and rarity tier): Markdown and CSV,
and the paper's published numbers beside them.

Definitions (per assessor, over a dataset of R responses and N gold-labelled atoms):

- factual precision Pr_r = #{atoms predicted S} / n_r, reported as the mean over responses;
  gold precision likewise with gold labels;
- F1 (atom level, S positive) = 2·TP / (2·TP + FP + FN), pooled over all atoms;
  accuracy = (TP + TN) / N;
- F1@K: per response 2·Pr·R@K / (Pr + R@K), R@K = min(S/K, 1), with one K for the dataset
  (the median number of atoms per response, rounded half up), reported as the mean;
- MAE = (1/R) Σ_r |Pr_r − gold Pr_r|;
- Brier score = (1/N) Σ_i (P(a_i) − y_i)², y_i = 1 for gold S;
- expected calibration error, 10 equal-width bins B_b = [b/10, (b+1)/10) (the last bin
  includes 1): ECE = Σ_b (|B_b| / N) · |mean_{i∈B_b} y_i − mean_{i∈B_b} P(a_i)|.

Predictions come from each atom's ``prediction`` field (FR: ``scores.is_supported(P)``; the
FactScore baseline: "any context entails"), probabilities from ``probability``.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from ..scores import (
    GoldAtoms,
    brier_score,
    expected_calibration_error,
    f1_at_k,
    mean_absolute_error,
    resolve_k,
)
from .rows import tier_of

# Paper v2 (arXiv 2502.18573), Table 3: 157 FActScore ChatGPT biographies, Wikipedia contexts.
# (Pr, F1, F1@K, MAE) per NLI/LLM model and assessor; gold precision 0.62.
PUBLISHED_TABLE3: dict[str, dict[str, tuple[float, float, float, float]]] = {
    "granite-8b": {"FactScore": (0.59, 0.70, 0.57, 0.17), "FR1": (0.43, 0.70, 0.43, 0.22),
                   "FR2": (0.62, 0.78, 0.61, 0.12), "FR3": (0.60, 0.78, 0.59, 0.13)},
    "llama-70b": {"FactScore": (0.59, 0.73, 0.58, 0.16), "FR1": (0.42, 0.71, 0.42, 0.23),
                  "FR2": (0.60, 0.83, 0.59, 0.11), "FR3": (0.60, 0.83, 0.59, 0.11)},
    "mixtral": {"FactScore": (0.59, 0.74, 0.58, 0.16), "FR1": (0.44, 0.72, 0.44, 0.21),
                "FR2": (0.63, 0.83, 0.62, 0.11), "FR3": (0.64, 0.83, 0.62, 0.11)},
}
PUBLISHED_GOLD_PRECISION = 0.62


@dataclass
class Summary:
    """One line of the results table (see the module docstring for each definition)."""

    assessor: str
    tier: str = "all"
    records: int = 0
    atoms: int = 0
    k: int | None = None
    precision: float = math.nan
    gold_precision: float = math.nan
    f1: float = math.nan
    accuracy: float = math.nan
    f1_k: float = math.nan
    mae: float = math.nan
    brier: float = math.nan
    ece: float = math.nan
    extra: dict[str, Any] = field(default_factory=dict)


def summarize_rows(rows: Sequence[dict[str, Any]], assessor: str, tier: str = "all", k: int | None = None) -> Summary:
    """The table line for ``rows`` (one assessor); ``k`` defaults to the rows' median atoms."""
    records = [GoldAtoms.of(r) for r in rows]
    records = [r for r in records if r.truths]
    summary = Summary(assessor=assessor, tier=tier, records=len(records))
    if not records:
        return summary
    if k is None:
        k = resolve_k("median", 0, statistics.median(r.num_atoms for r in records))
    predicted = [p for r in records for p in r.predicted]
    truths = [y for r in records for y in r.truths]
    probabilities = [p for r in records for p in r.probabilities]
    tp = sum(p and y for p, y in zip(predicted, truths))
    fp = sum(p and not y for p, y in zip(predicted, truths))
    fn = sum((not p) and y for p, y in zip(predicted, truths))
    precisions = [sum(r.predicted) / len(r.predicted) for r in records]
    golds = [sum(r.truths) / len(r.truths) for r in records]
    summary.atoms = len(truths)
    summary.k = k
    summary.precision = statistics.fmean(precisions)
    summary.gold_precision = statistics.fmean(golds)
    summary.f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else math.nan
    summary.accuracy = sum(p == y for p, y in zip(predicted, truths)) / len(truths)
    summary.f1_k = statistics.fmean(f1_at_k(sum(r.predicted), len(r.predicted), k) for r in records)
    summary.mae = mean_absolute_error(golds, precisions)
    summary.brier = brier_score(truths, probabilities)
    summary.ece = expected_calibration_error(truths, probabilities)
    return summary


def summary_table(groups: dict[str, list[dict[str, Any]]], by_tier: bool = True) -> list[Summary]:
    """One line per assessor over all rows, then (``by_tier``) one per assessor × rarity tier.

    K is the median number of atoms over the whole dataset, per assessor, also for the tiers."""
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
        overall = summarize_rows(rows, label)
        lines.append(overall)
        if by_tier:
            for tier in tiers:
                lines.append(summarize_rows([r for r in rows if tier_of(r) == tier], label, tier, overall.k))
    return lines


# -- rendering -------------------------------------------------------------------------------

COLUMNS = [
    ("assessor", "assessor"), ("tier", "tier"), ("records", "bios"), ("atoms", "atoms"), ("k", "K"),
    ("precision", "Pr"), ("gold_precision", "gold Pr"), ("f1", "F1 (S)"), ("accuracy", "acc"),
    ("f1_k", "F1@K"), ("mae", "MAE"), ("brier", "Brier"), ("ece", "ECE"),
]


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.3f}"
    return "–" if value is None else str(value)


def to_markdown(lines: Sequence[Summary]) -> str:
    header = "| " + " | ".join(title for _, title in COLUMNS) + " |"
    rule = "|" + "|".join("---" if key in ("assessor", "tier") else "---:" for key, _ in COLUMNS) + "|"
    body = ["| " + " | ".join(_cell(getattr(line, key)) for key, _ in COLUMNS) + " |" for line in lines]
    return "\n".join([header, rule, *body]) + "\n"


def to_csv(lines: Sequence[Summary]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([key for key, _ in COLUMNS])
    for line in lines:
        writer.writerow(["" if isinstance(v, float) and math.isnan(v) else v for v in (getattr(line, k) for k, _ in COLUMNS)])
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


def summaries_as_dicts(lines: Sequence[Summary]) -> list[dict[str, Any]]:
    return [asdict(line) for line in lines]
