"""Plots of agreement with gold labels (matplotlib, Agg backend), each as PNG bytes.

- reliability diagram: per assessor, acc(B_b) against conf(B_b) over the equal-width bins of
  :func:`fact_reasoner.measures.reliability_bins`, with the ECE of the table in the legend;
- predicted vs gold factual precision over the gold-labelled atoms, one point per response,
  with the MAE of the table in the legend;
- distributions of the atom posteriors P(a_i) by gold label;
- the conformal filter's retention of true claims against α, and its realised error against α,
  over random half/half calibration/test splits of the responses (:func:`plot_conformal`).
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


#: the α of the conformal curve (those half the responses are too few for are left out)
CONFORMAL_ALPHAS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)
#: random calibration/test splits per α of the conformal curve (seed 0: the page is reproducible)
CONFORMAL_SPLITS = 100


def labelled_answers(rows: list[dict[str, Any]]) -> list[Any]:
    """The responses whose every atom has a gold S/NS label and a posterior, as conformal
    ``Claims`` (posterior, truth); the others cannot be calibrated on or measured and are left
    out."""
    from ..conformal.maths import Claims

    out = []
    for row in rows:
        atoms = row.get("atoms") or []
        if row.get("abstained") or not all(a.get("label") in ("S", "NS") for a in atoms):
            continue
        if not all(isinstance(a.get("probability"), (int, float)) and 0 <= a["probability"] <= 1 for a in atoms):
            continue  # no posterior to filter by (a baseline's failed judgement)
        out.append(Claims(tuple(float(a["probability"]) for a in atoms), tuple(a["label"] == "S" for a in atoms)))
    return out


def plot_conformal(groups: dict[str, list[dict[str, Any]]]) -> bytes:
    """The conformal filter on these responses (:mod:`fact_reasoner.conformal.evaluation`): for
    each α of :data:`CONFORMAL_ALPHAS` the plain threshold fitted on half the responses, drawn
    at random :data:`CONFORMAL_SPLITS` times, applied to the other half — the mean retention of
    true claims (left) and the mean realised error against the line error = α (right), for the
    ``response`` guarantee (solid) and the ``claims`` guarantee (dashed)."""
    from ..conformal.evaluation import retention_curve

    plt = _pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(10.4, 4.4))
    right.plot([0, 0.5], [0, 0.5], color="#999", linestyle="--", linewidth=1, label="error = α")
    drawn = False
    for index, (label, rows) in enumerate(groups.items()):
        answers = labelled_answers(rows)
        colour = f"C{index % 10}"
        for guarantee, style in (("response", "-"), ("claims", "--")):
            curve = retention_curve(answers, CONFORMAL_ALPHAS, guarantee, splits=CONFORMAL_SPLITS, seed=0)
            if not curve:
                continue
            drawn = True
            alphas = [e.alpha for e in curve]
            name = f"{label}, {guarantee}"
            left.plot(alphas, [e.retention for e in curve], style, marker="o", color=colour, label=name)
            right.plot(alphas, [e.error for e in curve], style, marker="o", color=colour, label=name)
    for axis, what in ((left, "retention of true claims"), (right, "realised error")):
        axis.set_xlabel("α (the error the filter guarantees)")
        axis.set_ylabel(what)
        axis.set_xlim(0, 0.52)
        axis.set_ylim(0, 1.0 if axis is left else 0.55)
    left.set_title("Claims kept: retention against α")
    right.set_title("Realised error on the held-out half")
    if drawn:  # the runs' labels can be long (the settings that tell two runs apart): below the panels
        left.legend(fontsize=7, loc="upper left", bbox_to_anchor=(0.0, -0.16))
    else:
        left.text(0.26, 0.5, "too few labelled responses for any α", ha="center", fontsize=8)
    right.legend(handles=right.get_lines()[:1], fontsize=7, loc="upper left")
    figure.suptitle(f"Conformal filter over {CONFORMAL_SPLITS} random half/half splits of the responses", fontsize=10)
    return _png(figure)


PLOTS = {
    "reliability": plot_reliability,
    "precision_scatter": plot_precision_scatter,
    "score_distributions": plot_score_distributions,
    "conformal": plot_conformal,
}
