"""The Ising form of a pairwise binary factor graph, and the scalar maths shared by the engines.

Every pairwise binary model is rewritten exactly (no approximation) as::

    log P̃(x) = const + Σ_v h_v x_v + Σ_{(s,t)} J_st x_s x_t ,   x ∈ {0, 1}^V

with, for a factor table L = log table_e and a prior p_v,
``h_v = log(p_v/(1−p_v)) + Σ_e [L10 − L00 (v = source) or L01 − L00 (v = target)]``,
``J_e = L11 − L10 − L01 + L00`` and ``const = Σ_v log(1 − p_v) + Σ_e L00``. Parallel factors
on the same pair are merged (their J's add up), so every pair appears once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy import sparse

from ...graph.factor_graph import FactorGraph
from ..base import InferenceError


@dataclass(frozen=True)
class IsingModel:
    """log P̃(x) = const + h·x + Σ_e J_e x_s(e) x_t(e), with s < t and no repeated pair."""

    h: np.ndarray
    const: float
    s: np.ndarray
    t: np.ndarray
    J: np.ndarray

    @property
    def num_variables(self) -> int:
        return len(self.h)

    def log_weight(self, x: np.ndarray) -> np.ndarray:
        """log P̃(x) − const for states ``x`` of shape (..., V)."""
        return x @ self.h + (x[..., self.s] * x[..., self.t]) @ self.J

    @cached_property
    def dense_coupling(self) -> np.ndarray:
        """Symmetric dense J (V × V), zero where there is no edge; computed once."""
        j = np.zeros((self.num_variables, self.num_variables))
        j[self.s, self.t] = self.J
        j[self.t, self.s] = self.J
        return j

    @cached_property
    def dense_exp_coupling(self) -> np.ndarray:
        """e^J for :attr:`dense_coupling` (1 where there is no edge)."""
        return np.exp(self.dense_coupling)

    def coupling_matrix(self) -> sparse.csr_matrix:
        """Symmetric sparse J (V × V)."""
        v = self.num_variables
        rows = np.concatenate([self.s, self.t])
        cols = np.concatenate([self.t, self.s])
        return sparse.csr_matrix((np.concatenate([self.J, self.J]), (rows, cols)), shape=(v, v))


def ising_model(graph: FactorGraph) -> IsingModel:
    """The exact Ising form of ``graph`` (formula in the module docstring)."""
    p = graph.prior
    if np.any((p <= 0) | (p >= 1)):
        raise InferenceError("unary priors must lie strictly between 0 and 1")
    if graph.num_factors and np.any(graph.tables <= 0):
        raise InferenceError("factor tables must be strictly positive (clamp the probabilities)")
    h = np.log(p) - np.log1p(-p)
    const = float(np.log1p(-p).sum())
    s, t = graph.source.astype(np.int64), graph.target.astype(np.int64)
    if graph.num_factors == 0:
        empty = np.zeros(0, dtype=np.int64)
        return IsingModel(h, const, empty, empty, np.zeros(0))
    log_t = np.log(graph.tables)
    l00, l01, l10, l11 = log_t[:, 0, 0], log_t[:, 0, 1], log_t[:, 1, 0], log_t[:, 1, 1]
    const += float(l00.sum())
    h = h + np.bincount(s, l10 - l00, minlength=len(h)) + np.bincount(t, l01 - l00, minlength=len(h))
    coupling = l11 - l10 - l01 + l00
    lo, hi = np.minimum(s, t), np.maximum(s, t)
    key = lo * len(h) + hi
    unique, inverse = np.unique(key, return_inverse=True)
    merged = np.bincount(inverse, coupling, minlength=len(unique))
    return IsingModel(h, const, unique // len(h), unique % len(h), merged)


def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + e^x), stable for any x."""
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e^{−x}), without overflow for any x."""
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0, e) / (1.0 + e)


def coupling_message(cavity: np.ndarray, exp_coupling: np.ndarray) -> np.ndarray:
    """softplus(θ + J) − softplus(θ) = log((1 + e^θ e^J) / (1 + e^θ)); overwrites ``cavity``.

    The change in a variable's log-odds that a neighbour with log-odds θ passes through the
    coupling J: the loopy BP message, and the collapsed sampler's term for a summed-out
    neighbour. One exp and one log per message. θ is clipped to ±60: beyond that the message
    equals J (or 0) to within e^{−60 + |J|}, far below any tolerance used.
    """
    odds = np.exp(np.clip(cavity, -60.0, 60.0, out=cavity), out=cavity)  # cavity is a temporary
    ratio = odds * exp_coupling
    ratio += 1.0
    odds += 1.0
    ratio /= odds
    return np.log(ratio, out=ratio)
