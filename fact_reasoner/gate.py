"""The quality gate of ``--fail-under``: a CI job fails when a dataset scores below a threshold.

``fact-reasoner … --fail-under X`` compares the mean factual precision of the records (the
summary's ``mean_factuality_score``: abstentions, which have none, are left out) with X;
``fact-reasoner ragas … --fail-under faithfulness=X`` (repeatable) each metric's mean. The gate
fails — the command exits with :data:`GATE_FAILED` — when a mean is below its threshold or
there is no score to take a mean of, and says which records pulled it down, lowest first.
Records that could not be assessed make the gate fail too (the command's exit status stays 1,
"a record failed"): a gate never passes on numbers that are missing.

Exit statuses of both commands: 0 done (gate passed), 1 a record failed, 2 the run could not be
done or stopped, 3 the gate failed, 130 interrupted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = ["GATE_FAILED", "GateResult", "evaluate_gate"]

#: the exit status of a command whose gate failed
GATE_FAILED = 3


@dataclass(frozen=True)
class GateResult:
    """The gate's decision and the lines that explain it."""

    passed: bool
    below_threshold: bool
    lines: tuple[str, ...]


def evaluate_gate(
    thresholds: Mapping[str, float],
    scores: Mapping[str, Sequence[tuple[str, float | None]]],
    failed: Sequence[str] = (),
    *,
    worst: int = 5,
) -> GateResult:
    """Compare each metric's mean with its threshold.

    ``scores[metric]`` lists ``(record id, score)`` for every record written (None or NaN: the
    record has no score for it, e.g. an abstention); ``failed`` names the records that could not
    be assessed. For each metric m with threshold X_m, over the records with a score:
    mean_m = (1/R_m) Σ_r s_{r,m}; the gate passes iff no record failed and, for every m,
    R_m > 0 and mean_m ≥ X_m. A failing metric lists its ``worst`` lowest records.

    >>> evaluate_gate({"p": 0.7}, {"p": [("a", 0.9), ("b", 0.4)]}).passed   # mean 0.65 < 0.7
    False
    >>> evaluate_gate({"p": 0.6}, {"p": [("a", 0.9), ("b", 0.4)]}).passed   # 0.65 ≥ 0.6
    True
    """
    lines: list[str] = []
    below = False
    for metric, threshold in thresholds.items():
        if metric not in scores:
            raise KeyError(f"no scores for {metric!r}")
        present = [(rid, float(s)) for rid, s in scores[metric] if s is not None and not math.isnan(float(s))]
        if not present:
            below = True
            lines.append(f"gate FAILED: {metric}: no record has a score to compare with {threshold:g}")
            continue
        mean = sum(s for _, s in present) / len(present)
        if mean >= threshold:
            lines.append(f"gate passed: {metric} mean {mean:.4f} ≥ {threshold:g} ({len(present)} record(s))")
            continue
        below = True
        lines.append(f"gate FAILED: {metric} mean {mean:.4f} < {threshold:g} ({len(present)} record(s)); lowest:")
        for rid, score in sorted(present, key=lambda item: item[1])[:worst]:
            lines.append(f"  {score:.4f}  {rid}")
    if failed:
        lines.append(f"gate FAILED: {len(failed)} record(s) could not be assessed and have no score:")
        lines += [f"  {rid}" for rid in failed[:worst]]
        if len(failed) > worst:
            lines.append(f"  … and {len(failed) - worst} more")
    return GateResult(passed=not below and not failed, below_threshold=below, lines=tuple(lines))
