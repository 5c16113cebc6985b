"""Exact marginals by enumerating every joint state — the reference that tests trust.

Only for small graphs (2^V states); engines are checked against it.
"""

from __future__ import annotations

import time

import numpy as np

from ..graph import FactorGraph
from .base import InferenceError, InferenceResult

MAX_VARIABLES = 22


def log_joint_table(graph: FactorGraph) -> np.ndarray:
    """log of the unnormalised P(x) for all 2^V states; state bits are variable 0 first (MSB).

    log P̃(x) = Σ_v log prior_v(x_v) + Σ_e log table_e(x_s, x_t).
    """
    v = graph.num_variables
    if v > MAX_VARIABLES:
        raise InferenceError(f"brute force limited to {MAX_VARIABLES} variables, got {v}")
    states = ((np.arange(2**v)[:, None] >> np.arange(v - 1, -1, -1)) & 1).astype(np.int8)
    logp = np.log(np.where(states == 1, graph.prior, 1.0 - graph.prior)).sum(axis=1)
    for s, t, table in zip(graph.source, graph.target, graph.tables):
        logp += np.log(table[states[:, s], states[:, t]])
    return logp


def brute_force_marginals(graph: FactorGraph) -> InferenceResult:
    """P(x_v = 1) = Σ_{x: x_v=1} P̃(x) / Z by full enumeration."""
    start = time.perf_counter()
    v = graph.num_variables
    if v == 0:
        return InferenceResult({}, "enumeration", exact=True, log_partition=0.0)
    logp = log_joint_table(graph)
    top = logp.max()
    weights = np.exp(logp - top)
    z = weights.sum()
    states = (np.arange(2**v)[:, None] >> np.arange(v - 1, -1, -1)) & 1
    p_true = (weights[:, None] * states).sum(axis=0) / z
    return InferenceResult(
        marginals=dict(zip(graph.variables, p_true.tolist())),
        algorithm="enumeration",
        exact=True,
        seconds=time.perf_counter() - start,
        log_partition=float(np.log(z) + top),
    )


class BruteForceEngine:
    """Full enumeration as an engine (``--engine brute-force``), for checking small graphs."""

    name = "brute-force"

    def infer(self, graph: FactorGraph) -> InferenceResult:
        return brute_force_marginals(graph)
