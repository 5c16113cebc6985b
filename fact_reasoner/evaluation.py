"""Agreement of assessors with gold S/NS labels: dataset tables, calibration and plots.

Input: output rows (one JSON object per assessed response, as written by ``fact-reasoner`` or
``experiments/run_biographies.py``), each with ``atoms: [{id, label, probability, prediction}]``.
The FR rows carry ``version`` (1/2/3); baseline rows carry ``assessor``. Atoms without a gold
label are ignored by every gold metric.

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

Predictions come from each atom's ``prediction`` field (FR: ``scores.is_supported(P)``; the FactScore baseline:
"any context entails"), probabilities from ``probability``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .scores import (
    brier_score,
    expected_calibration_error,
    f1_at_k,
    is_supported,
    mean_absolute_error,
    reliability_bins,
    resolve_k,
)

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


# -- per-assessor summaries ------------------------------------------------------------------


def assessor_name(row: dict[str, Any]) -> str:
    """``assessor`` when the row names one (baselines), else ``FR<version>``."""
    if row.get("assessor"):
        return str(row["assessor"])
    if row.get("version") is not None:
        return f"FR{row['version']}"
    return "unknown"


def tier_of(row: dict[str, Any]) -> str | None:
    """The rarity tier ``cat[0]`` of a FActScore row (``very rare`` … ``very freq``), if any."""
    cat = row.get("cat")
    return str(cat[0]) if isinstance(cat, (list, tuple)) and cat else None


@dataclass
class GoldAtoms:
    """The gold-labelled atoms of one response: predictions, probabilities, truths."""

    predicted: list[bool]
    probabilities: list[float]
    truths: list[bool]
    num_atoms: int  # all atoms, labelled or not (for K)

    @classmethod
    def of(cls, row: dict[str, Any]) -> "GoldAtoms":
        predicted, probabilities, truths = [], [], []
        for atom in row.get("atoms") or []:
            label = atom.get("label")
            if label not in ("S", "NS"):
                continue
            p = float(atom["probability"])
            prediction = atom.get("prediction")
            predicted.append(prediction == "S" if prediction in ("S", "NS") else is_supported(p))
            probabilities.append(p)
            truths.append(label == "S")
        return cls(predicted, probabilities, truths, len(row.get("atoms") or []))


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


def group_rows(named_rows: Iterable[tuple[str, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """``(source name, row)`` pairs → ``{label: rows}``; the label is the assessor name, with the
    source name added when one assessor comes from several sources (e.g. two NLI backends)."""
    by_source: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for source, row in named_rows:
        by_source.setdefault((assessor_name(row), source), []).append(row)
    counts: dict[str, int] = {}
    for assessor, _ in by_source:
        counts[assessor] = counts.get(assessor, 0) + 1
    groups: dict[str, list[dict[str, Any]]] = {}
    for (assessor, source), rows in by_source.items():
        label = assessor if counts[assessor] == 1 else f"{assessor} [{source}]"
        groups[label] = rows
    return dict(sorted(groups.items(), key=lambda item: _assessor_order(item[0])))


def restrict_to_common(groups: dict[str, list[dict[str, Any]]]) -> tuple[dict[str, list[dict[str, Any]]], int]:
    """Keep only responses (by ``record_key``) present in every group, so that assessors are
    compared on the same responses (e.g. when a run was stopped before FR3 finished).
    Returns the restricted groups and how many distinct responses were left out."""
    keys = [{r.get("record_key") for r in rows} for rows in groups.values()]
    if not keys:
        return groups, 0
    common = set.intersection(*keys)
    every = set.union(*keys)
    return {label: [r for r in rows if r.get("record_key") in common] for label, rows in groups.items()}, len(every - common)


def _assessor_order(label: str) -> tuple[int, str]:
    order = {"FactScore": 0, "NLI-vote": 1, "FR1": 2, "FR2": 3, "FR3": 4}
    return (order.get(label.split(" [")[0], 9), label)


def read_rows(paths: Sequence[str | Path]) -> list[tuple[str, dict[str, Any]]]:
    """Rows of result JSONL files as ``(file stem, row)``; a bad line names file and line."""
    out = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"results file not found: {path}")
        stem = path.name.removesuffix(".jsonl")
        with open(path, encoding="utf-8") as handle:
            for number, raw in enumerate(handle, start=1):
                if not raw.strip():
                    continue
                try:
                    row = json.loads(raw)
                except json.JSONDecodeError as error:
                    raise ValueError(f"{path}:{number}: invalid JSON: {error.msg}") from None
                if not isinstance(row, dict) or not isinstance(row.get("atoms"), list):
                    raise ValueError(f"{path}:{number}: not a result row (no 'atoms' list)")
                out.append((stem, row))
    return out


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


# -- plots (matplotlib, Agg) -----------------------------------------------------------------


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    _pyplot().close(figure)
    return buffer.getvalue()


def plot_reliability(groups: dict[str, list[dict[str, Any]]]) -> bytes:
    """Reliability diagram: observed fraction of gold S vs mean P(a_i), 10 bins, per assessor."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(5.2, 4.6))
    axis.plot([0, 1], [0, 1], color="#999", linestyle="--", linewidth=1, label="perfect calibration")
    for label, rows in groups.items():
        atoms = [GoldAtoms.of(r) for r in rows]
        probabilities = [p for a in atoms for p in a.probabilities]
        truths = [y for a in atoms for y in a.truths]
        bins = [b for b in reliability_bins(truths, probabilities) if b.count]
        if not bins:
            continue
        ece = expected_calibration_error(truths, probabilities)
        axis.plot([b.mean_probability for b in bins], [b.fraction_true for b in bins], marker="o",
                  label=f"{label} (ECE {ece:.3f})")
    axis.set_xlabel("predicted P(atom true)")
    axis.set_ylabel("fraction of atoms labelled S")
    axis.set_xlim(0, 1)
    axis.set_ylim(0, 1)
    axis.set_title("Reliability diagram (10 bins)")
    axis.legend(fontsize=7, loc="upper left")
    return _png(figure)


def plot_precision_scatter(groups: dict[str, list[dict[str, Any]]]) -> bytes:
    """Predicted vs gold factual precision, one point per biography and assessor."""
    plt = _pyplot()
    figure, axis = plt.subplots(figsize=(5.2, 4.6))
    axis.plot([0, 1], [0, 1], color="#999", linestyle="--", linewidth=1)
    for label, rows in groups.items():
        points = [GoldAtoms.of(r) for r in rows]
        points = [a for a in points if a.truths]
        gold = [sum(a.truths) / len(a.truths) for a in points]
        predicted = [sum(a.predicted) / len(a.predicted) for a in points]
        mae = mean_absolute_error(gold, predicted) if points else math.nan
        axis.scatter(gold, predicted, s=14, alpha=0.7, label=f"{label} (MAE {mae:.3f})")
    axis.set_xlabel("gold factual precision")
    axis.set_ylabel("predicted factual precision")
    axis.set_xlim(-0.02, 1.02)
    axis.set_ylim(-0.02, 1.02)
    axis.set_title("Predicted vs gold precision per response")
    axis.legend(fontsize=7, loc="upper left")
    return _png(figure)


def plot_score_distributions(groups: dict[str, list[dict[str, Any]]]) -> bytes:
    """Histograms of P(a_i) for gold-S and gold-NS atoms, one panel per assessor."""
    plt = _pyplot()
    count = max(len(groups), 1)
    columns = min(count, 3)
    rows_n = math.ceil(count / columns)
    figure, axes = plt.subplots(rows_n, columns, figsize=(3.6 * columns, 2.8 * rows_n), squeeze=False,
                               constrained_layout=True)
    edges = [i / 20 for i in range(21)]
    for axis, (label, rows) in zip(axes.flat, groups.items()):
        atoms = [GoldAtoms.of(r) for r in rows]
        s = [p for a in atoms for p, y in zip(a.probabilities, a.truths) if y]
        ns = [p for a in atoms for p, y in zip(a.probabilities, a.truths) if not y]
        axis.hist([s, ns], bins=edges, label=["gold S", "gold NS"], color=["#2a9d8f", "#e76f51"], stacked=False)
        axis.set_title(label, fontsize=9)
        axis.set_xlabel("P(atom true)", fontsize=8)
        axis.tick_params(labelsize=7)
        axis.legend(fontsize=7)
    for axis in list(axes.flat)[len(groups):]:
        axis.axis("off")
    figure.suptitle("Distribution of atom posteriors by gold label", fontsize=10)
    return _png(figure)


PLOTS = {
    "reliability": plot_reliability,
    "precision_scatter": plot_precision_scatter,
    "score_distributions": plot_score_distributions,
}
