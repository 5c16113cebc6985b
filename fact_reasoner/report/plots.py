"""Plots of agreement with gold labels (matplotlib, Agg backend), each as PNG bytes.

- reliability diagram: per assessor, acc(B_b) against conf(B_b) over the equal-width bins of
  :func:`fact_reasoner.measures.reliability_bins`, with the ECE of the table in the legend;
- predicted vs gold factual precision over the gold-labelled atoms, one point per response,
  with the MAE of the table in the legend;
- distributions of the atom posteriors P(a_i) by gold label.
"""

from __future__ import annotations

import io
import math
from typing import Any

from ..measures import reliability_bins
from ..scores import GoldAtoms, summarize_rows


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
        ece = summarize_rows(rows).atom_ece  # the table's ECE
        axis.plot(
            [b.mean_probability for b in bins],
            [b.fraction_true for b in bins],
            marker="o",
            label=f"{label} (ECE {ece:.3f})",
        )
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
        gold = [a.gold_precision for a in points]
        predicted = [a.precision for a in points]
        mae = summarize_rows(rows).mae_factuality_score if points else math.nan  # the table's MAE
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
    figure, axes = plt.subplots(
        rows_n, columns, figsize=(3.6 * columns, 2.8 * rows_n), squeeze=False, constrained_layout=True
    )
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
    for axis in list(axes.flat)[len(groups) :]:
        axis.axis("off")
    figure.suptitle("Distribution of atom posteriors by gold label", fontsize=10)
    return _png(figure)


PLOTS = {
    "reliability": plot_reliability,
    "precision_scatter": plot_precision_scatter,
    "score_distributions": plot_score_distributions,
}
